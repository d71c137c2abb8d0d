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

/// What convert-xent-to-gpu does, on the ops nested in `root` (a module, or
/// an op inside one): diagnoses options the kernels cannot take, then
/// replaces every xent op by kernel launches (its patterns, xent ops
/// illegal).
LogicalResult convertXentToGPU(Operation *root,
                               const ConvertXentToGPUOptions &options);

/// Adds the patterns that replace xent ops by launches of kernels generated
/// into `@xent_kernels` of the enclosing module. The options are those of
/// `convert-xent-to-gpu` and should be valid for it.
void populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options);

} // namespace xent
} // namespace mlir

#endif // XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
