//===- XentToGPU.h - Lowering of xent ops to fused GPU kernels --*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
#define XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::xent {

/// Knobs of the generated kernels; the launch geometry is derived from them
/// in one place (KernelBuilder.cpp).
struct XentToGPUOptions {
  std::string chip = "sm_90";
  int64_t threads = 512;
  int64_t vectorWidth = 0;
  /// Gradient kernels keep each row on chip when the chip has clusters.
  bool residentRows = true;
};

/// Adds the patterns that replace xent ops by launches of kernels generated
/// into `@xent_kernels` of the enclosing module.
void populateXentToGPUConversionPatterns(RewritePatternSet &patterns,
                                         const XentToGPUOptions &options);

} // namespace mlir::xent

#endif // XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
