//===- XentToGPU.h - Lowering of xent ops to fused GPU kernels --*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
#define XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace mlir {
class RewritePatternSet;

namespace xent {

// The pass and its options, ConvertXentToGPUOptions: the knobs of the
// generated kernels, from which the launch geometry is derived in one place.
#define GEN_PASS_DECL_CONVERTXENTTOGPU
#include "xent/Conversion/Passes.h.inc"

/// Adds the patterns that replace xent ops by launches of kernels generated
/// into `@xent_kernels` of the enclosing module. The options are those of
/// `convert-xent-to-gpu` and should be valid for it.
void populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options);

} // namespace xent
} // namespace mlir

#endif // XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
