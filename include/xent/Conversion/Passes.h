//===- Passes.h - Xent conversion passes ------------------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_PASSES_H
#define XENT_CONVERSION_PASSES_H

#include "xent/Conversion/XentToGPU/XentToGPU.h"

#include "mlir/Pass/Pass.h"

namespace mlir::xent {

// Each conversion's header declares its pass; the others are declared here.
#define GEN_PASS_DECL_XENTCOMPRESSGPUBINARIES
#define GEN_PASS_DECL_XENTHOSTCOMPUTETODEVICE
#include "xent/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "xent/Conversion/Passes.h.inc"

} // namespace mlir::xent

#endif // XENT_CONVERSION_PASSES_H
