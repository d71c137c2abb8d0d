//===- LinearEmitter.h - The linear family's GPU lowering -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The emitter of a linear cross-entropy op's xent.launch, shared by the
// files of its steps: the launch, its body's buffers and the results
// (LinearLowering.cpp), the row chunks, their loss kernels and GEMMs
// (LinearChunks.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_LINEAREMITTER_H
#define XENT_LIB_CONVERSION_XENTTOGPU_LINEAREMITTER_H

#include "HostLowering.h"
#include "KernelBuilder.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {

/// The f32 logits of a chunk fill whole 16-byte vectors of each row (so the
/// kernels' vector path and cuBLASLt's aligned kernels apply); the rounded
/// dlogits likewise.
inline constexpr int64_t kRowAlignBytes = 16;
/// Automatic chunks are a multiple of this many rows.
inline constexpr int64_t kRowQuantum = 128;

/// Emits the launch of one linear op at the rewriter's insertion point.
class LinearEmitter {
public:
  LinearEmitter(RewriterBase &rewriter, LinearCrossEntropyOpInterface op,
                gpu::GPUModuleOp kernels,
                const ConvertXentToGPUOptions &options)
      : b(rewriter), op(op), loc(op.getLoc()), kernels(kernels),
        options(options), f32(rewriter.getF32Type()),
        hiddenType(op.getHidden().getType().getElementType()) {}

  /// The op's results.
  SmallVector<Value> emit();
  ArrayRef<std::string> getKernelNames() const { return kernelNames; }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32Constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value i32Constant(int32_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value dim(Value buffer, int64_t d) {
    return memref::DimOp::create(b, loc, buffer, d);
  }
  Value alloc(Type element, ValueRange sizes) {
    SmallVector<int64_t> shape(sizes.size(), ShapedType::kDynamic);
    return gpu::AllocOp::create(b, loc, MemRefType::get(shape, element),
                                /*asyncToken=*/Type(), ValueRange{}, sizes,
                                ValueRange{})
        .getMemref();
  }
  /// `buffer` as the kernels and the GEMMs take it (dynamic strided).
  Value asArg(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    MemRefType arg =
        getBufferType(b.getContext(), type.getRank(), type.getElementType());
    if (type == arg)
      return buffer;
    return memref::CastOp::create(b, loc, arg, buffer);
  }
  /// `buffer`[offsets…][sizes…] with unit strides.
  Value slice(Value buffer, ArrayRef<OpFoldResult> offsets,
              ArrayRef<OpFoldResult> sizes) {
    SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
    return asArg(
        memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides));
  }
  /// A rank-1 buffer seen as a `rows` x `cols` matrix with the given strides
  /// (in units of the vector's own stride).
  Value asMatrix(Value vector, Value rows, Value cols, Value rowStride,
                 Value colStride);

  Value emitChunkRows(Value numRows, Value paddedClasses);
  /// emitKernelLaunch: max(`grid`, 1) blocks of `threads`, or with
  /// `cluster` that many clusters.
  void launch(gpu::GPUFuncOp func, Value grid, ValueRange operands,
              int64_t threads, Value cluster = Value(),
              Value sharedBytes = Value()) {
    emitKernelLaunch(b, loc, func, grid, operands, threads, cluster,
                     sharedBytes);
  }
  gpu::GPUFuncOp buildConvert(Type from, Type to);
  /// dst = src converted, both rank 2; one block per row.
  void convert(Value src, Value dst);
  void callGemm(Value a, Value bMatrix, Value bias, Value c, bool transA,
                bool transB, Value beta);
  func::FuncOp getGemm(Type ab, Type c, bool bias);
  /// (or reuses an identical one, buildOrReuseKernel).
  gpu::GPUFuncOp
  buildKernel(StringRef prefix,
              function_ref<gpu::GPUFuncOp(OpBuilder &, StringRef)> build) {
    return buildOrReuseKernel(b, kernels, prefix, build, kernelNames);
  }
  /// What the chunks' loss kernel computes; `runtimeScalars` the op's
  /// run-time scalars as the launch body has them.
  KernelSpec getChunkSpec(const LossScalars &runtimeScalars);

  /// The launch's buffers by role, [B, T, ...] flattened to rows; null for
  /// what the op does not have or does not compute.
  struct BodyBuffers {
    Value gradOutput, hidden, weight, bias, target, classWeight;
    /// The op's run-time scalars as the body has them.
    LossScalars runtimeScalars;
    Value loss, zLoss, dHidden, dWeight, dBias;
  };
  /// The sizes, the chunk's buffers and the f32 accumulators of the
  /// narrow gradients; `scratch` lists what is freed after the loop.
  struct ChunkBuffers {
    Value numRows, features, classes, chunkRows;
    /// The index constants 1 and 0 of the steps after.
    Value one, zero;
    Value logits, low, dWeightAcc, dBiasAcc, ones, onesStride, bias32;
    SmallVector<Value> scratch;
  };
  /// The loss kernels the chunks launch and what they take.
  struct LossKernels {
    KernelSpec spec;
    LaunchGeometry geometry;
    Value scratch;
    /// The loss's scalars as the kernels take them.
    LossScalars scalars;
  };

  /// The results the launch computes (isComputed).
  SmallVector<Value> getComputedResults();
  /// A result's dynamic sizes: per-row values and d_hidden have the
  /// hidden's rows; the others the weight's sizes.
  SmallVector<Value> getDynamicSizes(Value result);
  /// The xent.launch of the `computed` results, with the insertion point at
  /// the start of its body.
  LaunchOp emitLaunch(ArrayRef<Value> computed);
  /// The body's arguments by role.
  BodyBuffers bindBody(LaunchOp launchOp, ArrayRef<Value> computed);
  /// Sizes, the logits' chunk buffer and the other scratch.
  ChunkBuffers emitChunkBuffers(const BodyBuffers &io);
  /// The chunks' loss kernel spec and the prologue's launch (which the
  /// statistics of all rows need).
  LossKernels emitLossKernels(const BodyBuffers &io, ChunkBuffers &chunk);
  /// The loop over row chunks: logits GEMM, loss kernel, gradient GEMMs.
  void emitChunkLoop(const BodyBuffers &io, const ChunkBuffers &chunk,
                     const LossKernels &loss);
  /// The results from their f32 accumulators, then the scratch freed.
  void emitEpilogue(const BodyBuffers &io, const ChunkBuffers &chunk,
                    const LossKernels &loss);
  /// The reduced loss and z-loss converted from the loss kernels' f64
  /// scratch into their results.
  void emitReducedResults(const BodyBuffers &io, const LossKernels &loss);

  /// Whether the op may take the tile kernels (LinearTiles.cpp): sm_90a,
  /// linear-tiles, a loss without gradients, bf16 / f16, no bias, and no
  /// label smoothing or softcap but run-time values that may be 0.
  bool mayUseTiles(const BodyBuffers &io);
  /// Whether this call takes them (i1): rows and classes, no run-time label
  /// smoothing or softcap, and buffers TMA can read (unit inner stride,
  /// rows and base 16-byte aligned).
  Value emitTileCondition(const BodyBuffers &io);
  /// The loss from the tile kernels: the row tiles' statistics by groups
  /// of class tiles, merged per row into the loss.
  void emitTileLoss(const BodyBuffers &io);
  /// The rows of the op (the flattened hidden's).
  Value getNumRows(const BodyBuffers &io);
  /// The op's results: the launch's, and an empty tensor (no user; erased
  /// by the next canonicalization) for a gradient not computed.
  SmallVector<Value> collectResults(LaunchOp launchOp,
                                    ArrayRef<Value> computed);

  RewriterBase &b;
  LinearCrossEntropyOpInterface op;
  Location loc;
  gpu::GPUModuleOp kernels;
  ConvertXentToGPUOptions options;
  Type f32, hiddenType;
  SmallVector<std::string> kernelNames;
  /// The conversion kernels built so far, by source and destination type.
  DenseMap<std::pair<Type, Type>, gpu::GPUFuncOp> convertKernels;
};

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_LINEAREMITTER_H
