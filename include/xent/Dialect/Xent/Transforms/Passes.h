//===- Passes.h - Xent transformation passes --------------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMS_PASSES_H
#define XENT_DIALECT_XENT_TRANSFORMS_PASSES_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::xent {

#define GEN_PASS_DECL
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"

} // namespace mlir::xent

#endif // XENT_DIALECT_XENT_TRANSFORMS_PASSES_H
