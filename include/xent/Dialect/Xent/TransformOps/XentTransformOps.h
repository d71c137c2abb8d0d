//===- XentTransformOps.h - Transform dialect extension ---------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Transform-dialect ops for xent: a pattern descriptor for
// `transform.apply_patterns` and ops that run the recognizer and the fusion
// on payload ops, for compilers driven by transform scripts. The GPU
// lowering's op (`transform.xent.convert_to_gpu`) is an extension of its
// own: xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_H
#define XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_H

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir {
class DialectRegistry;

namespace xent {
/// Registers the xent extension of the transform dialect.
void registerTransformDialectExtension(DialectRegistry &registry);
} // namespace xent
} // namespace mlir

#define GET_OP_CLASSES
#include "xent/Dialect/Xent/TransformOps/XentTransformOps.h.inc"

#endif // XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_H
