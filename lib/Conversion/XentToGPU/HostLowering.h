//===- HostLowering.h - What the conversion's patterns share ---*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of convert-xent-to-gpu that the pattern of each op family
// uses: the kernel module, kernel names and reuse, destinations and the
// host code of a cross-entropy op (HostLowering.cpp), the choice between
// kernel and decomposition and its remark (XentToGPU.cpp), and the lowering
// of the linear family (LinearLowering.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_HOSTLOWERING_H
#define XENT_LIB_CONVERSION_XENTTOGPU_HOSTLOWERING_H

#include "KernelBuilder.h"
#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Remarks.h"

#include <optional>
#include <string>

namespace mlir::xent {

/// The symbol of the gpu.module that holds xent's kernels.
inline constexpr llvm::StringLiteral kKernelModuleName = "xent_kernels";

/// The gpu.module that holds xent's kernels, created on first use.
gpu::GPUModuleOp getOrCreateKernelModule(RewriterBase &rewriter,
                                         ModuleOp module);
/// A kernel name not yet used in `kernels`.
std::string getUniqueName(gpu::GPUModuleOp kernels, StringRef prefix);
/// Builds a kernel named `prefix`_N at the end of `kernels` with `build`,
/// or, where `kernels` already holds one identical to it but for the name,
/// returns that one instead (the new one erased): ops and variants whose
/// kernels differ only in what they take as arguments share one kernel, so
/// a module of several ops compiles each distinct kernel once. The kernels
/// carry their fingerprint (kKernelFingerprintAttrName) until
/// stripKernelFingerprints. The kernel's name is added to `kernelNames`
/// (the names an op launches, for its remark) unless already there.
gpu::GPUFuncOp
buildOrReuseKernel(RewriterBase &rewriter, gpu::GPUModuleOp kernels,
                   StringRef prefix,
                   function_ref<gpu::GPUFuncOp(OpBuilder &, StringRef)> build,
                   SmallVectorImpl<std::string> &kernelNames);
/// Drops the fingerprints buildOrReuseKernel keeps on the kernels under
/// `root`.
void stripKernelFingerprints(Operation *root);

/// Emits at the rewriter's insertion point the `xent.launch` of the kernels
/// of the cross-entropy op `op` (built into `kernels`, or reused where the
/// module holds identical ones), whose results replace the op's; appends
/// the names of the kernels it launches to `kernelNames`.
LaunchOp emitCrossEntropyLaunch(RewriterBase &rewriter,
                                CrossEntropyOpInterface op,
                                gpu::GPUModuleOp kernels,
                                const ConvertXentToGPUOptions &options,
                                SmallVectorImpl<std::string> &kernelNames);

/// The destination `result` is written into directly: its only use
/// materializes it into a writable, restrict buffer of its element type
/// (with any strides, which the kernels write through). Null otherwise.
bufferization::MaterializeInDestinationOp getDestination(Value result);
/// The destination buffer of `sink` (getDestination) as a tensor of
/// `type`, the launch's init for that result: a restrict, writable
/// bufferization.to_tensor, cast to `type` where the buffer's static shape
/// differs.
Value getDestinationTensor(OpBuilder &b, Location loc,
                           bufferization::MaterializeInDestinationOp sink,
                           RankedTensorType type);

/// The loss's scalars as the kernels take them (RowKernelArgs): for each
/// feature the kernels of `config` compute (ignore_index for class indices;
/// label smoothing, z-loss, softcap where present), its value in `runtime`
/// (config.scalars as the launch body has them) or an arith.constant of the
/// attribute at the builder's insertion point; null for the others.
LossScalars getKernelScalars(OpBuilder &b, Location loc,
                             const CrossEntropyConfig &config,
                             const LossScalars &runtime);

/// The features runtime-dispatch launches a kernel without where their
/// run-time value is 0: label smoothing (0) and the softcap (1).
constexpr unsigned kDispatchedFeatures = 2;
/// `spec` without label smoothing (`feature` 0) or without the softcap (1).
KernelSpec withoutFeature(KernelSpec spec, unsigned feature);
/// The run-time operand of `feature` (as withoutFeature numbers them) in
/// `config`, if any.
Value getRuntimeFeature(const CrossEntropyConfig &config, unsigned feature);
/// Emits at `b`'s insertion point, for each dispatched feature from
/// `first` on that `variant` takes at run time, an `scf.if` on its value
/// (`labelSmoothing` or `softcap`, as the kernels take them) != 0 between
/// `variant` with and without it (NaN takes the feature's kernel, which
/// computes NaN as the formula does), and calls `launch` with the variant of
/// each innermost branch.
void dispatchRuntimeFeatures(OpBuilder &b, Location loc,
                             const KernelSpec &variant, Value labelSmoothing,
                             Value softcap,
                             function_ref<void(const KernelSpec &)> launch,
                             unsigned first = 0);

/// Launches `func` with `threads` per block on max(`grid`, 1) blocks (a grid
/// cannot be empty; kernels skip blocks past their work), or with `cluster`
/// (index) on max(`grid`, 1) clusters of that many blocks; `sharedBytes`
/// (i32) of dynamic shared memory where given.
void emitKernelLaunch(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                      Value grid, ValueRange operands, int64_t threads,
                      Value cluster = Value(), Value sharedBytes = Value());

/// The lowering of one op under a mode, and why.
struct LoweringChoice {
  /// The kernels take the op; otherwise its decomposition does, unless
  /// `ruledOut`.
  bool kernel = false;
  /// mode=kernel on an op the kernels cannot take.
  bool ruledOut = false;
  /// The mode, and why the kernels cannot take the op where they do not.
  std::string reason;
};
LoweringChoice chooseLowering(Operation *op,
                              const ConvertXentToGPUOptions &options);

/// The remark's options for `op`: its name, the category, the function.
remark::RemarkOpts getRemarkOpts(Operation *op, StringRef name);

//===----------------------------------------------------------------------===//
// The linear family (LinearLowering.cpp)
//===----------------------------------------------------------------------===//

/// Why the chunked lowering of a linear op cannot take `op` in `module`
/// beyond what every op is checked for (device code, the kernel module),
/// or nothing: a symbol of `module` that the runtime's GEMM functions need
/// is something else.
std::optional<std::string>
getLinearUnsupportedReason(LinearCrossEntropyOpInterface op, ModuleOp module);

/// Checks the linear options (`linear-chunk-rows`, `linear-chunk-mib`);
/// diagnostics go to `module`.
LogicalResult checkLinearOptions(Operation *module,
                                 const ConvertXentToGPUOptions &options);

/// Threads per block of buildConvertRowsKernel's kernel, and the columns
/// each of its threads has in flight.
inline constexpr int64_t kConvertThreads = 256;
inline constexpr int64_t kConvertUnroll = 4;

/// A kernel `name`(src memref<?x?x`from`>, dst memref<?x?x`to`>) (any
/// strides) that writes dst = src converted (extf / truncf): one block of
/// kConvertThreads per row (blocks past the last row return).
gpu::GPUFuncOp buildConvertRowsKernel(OpBuilder &b, Location loc,
                                      StringRef name, Type from, Type to);

/// Adds the pattern that replaces a linear op that takes the kernels by an
/// `xent.launch` of the chunk loop: cuBLASLt GEMMs through the runtime and
/// the cross-entropy kernels in place over each chunk's logits.
void populateLinearLoweringPatterns(RewritePatternSet &patterns,
                                    const ConvertXentToGPUOptions &options);

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_HOSTLOWERING_H
