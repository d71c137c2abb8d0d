//===- KernelBuilder.h - Fused cross-entropy CUDA kernels -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Builds the device side of the xent GPU lowering: gpu.func kernels over a
// logical [O, C, I] view of the logits (O = the dims before the class axis,
// I = the dims after it; a row is one (o, i) pair), one block per row.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H
#define XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H

#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::xent {

/// What one row kernel computes, and the types of its buffers.
struct KernelSpec {
  CrossEntropyConfig config;
  Type logitsType;           // element type of logits (and dlogits)
  Type targetType;           // i32/i64 indices or the probabilities' float
  Type weightType;           // null when unweighted
  Type gradOutputType;       // null when no gradient is computed
  Type lossType;             // null when no loss is written
  Type zLossType;            // null when no z-loss is written
  bool withGrad = false;
  /// The class axis is contiguous (no dim after it, or only static 1s): the
  /// kernels may then read rows with vector loads.
  bool contiguousRows = false;
  /// Loss accumulators (mean / sum) are f32 scratch or result buffers.
  bool reduced() const { return config.reduction != Reduction::none; }
  /// The prologue's kept weight / count (class-index targets under mean).
  bool needsStats() const {
    return config.reduction == Reduction::mean && !config.probabilityTargets;
  }
};

/// The launch geometry of every xent kernel, decided in one place.
struct LaunchGeometry {
  int64_t threads;     // per block, a multiple of 32
  int64_t vectorBytes; // bytes per vector load (16), 0 for scalar loads
  int64_t warps() const { return threads / 32; }
  /// Elements of `type` per vector load (1: scalar).
  int64_t vectorWidth(Type type) const {
    int64_t bytes = type.getIntOrFloatBitWidth() / 8;
    return vectorBytes >= 2 * bytes ? vectorBytes / bytes : 1;
  }
};
LaunchGeometry getLaunchGeometry(const XentToGPUOptions &options,
                                 Type logitsType);

/// Kernel arguments, in order (all memrefs with identity layout and dynamic
/// sizes):
///   row kernel:  x[O,C,I], target[O,I] or [O,C,I], weight[C]?, stats[2]?,
///                grad_output[] or [O,I]?, loss[] or [O,I]?, z[] or [O,I]?,
///                dlogits[O,C,I]?
///   prologue:    target[O,I] or [O,C,I], weight[C]?, stats[2]?, loss[]?,
///                z[]?   (mean / sum only; accumulators are f32)
///   convert:     src[] f32, dst[] of another float type
gpu::GPUFuncOp buildRowKernel(OpBuilder &b, Location loc, StringRef name,
                              const KernelSpec &spec,
                              const LaunchGeometry &geometry);
gpu::GPUFuncOp buildPrologueKernel(OpBuilder &b, Location loc, StringRef name,
                                   const KernelSpec &spec,
                                   const LaunchGeometry &geometry);
gpu::GPUFuncOp buildConvertKernel(OpBuilder &b, Location loc, StringRef name,
                                  Type dstType);

/// Memref types of the row kernel's arguments, shared with the host side.
MemRefType getRowsType(MLIRContext *ctx, Type elementType);     // [O, C, I]
MemRefType getElementsType(MLIRContext *ctx, Type elementType); // [O, I]
MemRefType getScalarType(MLIRContext *ctx, Type elementType);   // []

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H
