//===- LinearTiles.h - Hopper tile kernels of the linear family -*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The kernels of the linear family's tile path (LinearTiles.cpp): the loss
// of `xent.linear_cross_entropy` from per-row statistics that a warpgroup
// MMA kernel reduces tile by tile, without logits in memory (sm_90a).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_LINEARTILES_H
#define XENT_LIB_CONVERSION_XENTTOGPU_LINEARTILES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir::xent {

/// A tile: kTileRows rows of hidden by kTileClasses classes, the depth (H)
/// in steps of kTileDepth through a ring of kTileStages shared-memory stages.
inline constexpr int64_t kTileRows = 128;
inline constexpr int64_t kTileClasses = 256;
inline constexpr int64_t kTileDepth = 64;
inline constexpr int64_t kTileStages = 4;
/// Two consumer warpgroups (64 rows each) and a producer warpgroup (TMA).
inline constexpr int64_t kTileThreads = 384;
/// Values per row and group of the partial statistics: m, Σ exp(x - m),
/// x_t (-inf where the target is not in the group), one unused.
inline constexpr int64_t kTileStatsWidth = 4;
/// Blocks the tile path aims to launch: several waves of the SMs of an
/// H100 / H200 (132), so that the last wave's share is small.
inline constexpr int64_t kTileTargetBlocks = 8 * 132;
/// Threads per block of the merge kernel (one row each).
inline constexpr int64_t kTileMergeThreads = 256;

/// The TMA map type of an operand tile of `rows` x kTileDepth of `element`
/// (bf16 / f16) with the 128-byte swizzle that the wgmma descriptors assume.
nvgpu::TensorMapDescriptorType getTileOperandMapType(MLIRContext *ctx,
                                                     Type element,
                                                     int64_t rows);
/// Dynamic shared memory of the tile kernel, in bytes.
int64_t getTileStatsSharedMemoryBytes();

/// The tile kernel: (map of hidden [N, H], map of weight [V, H] as
/// !llvm.ptr, target [N] of `targetType`, stats [G, N, kTileStatsWidth] f32,
/// N, V, the depth steps ceil(H / kTileDepth), the row tiles, the class
/// tiles, G), one block per (row tile, group).
gpu::GPUFuncOp buildTileStatsKernel(OpBuilder &b, Location loc,
                                    StringRef name, Type element,
                                    Type targetType);

/// What the merge kernel computes from the groups' statistics.
struct TileLossSpec {
  Type targetType, classWeightType;
  /// The loss's and z-loss's element types (null: not a result); per row
  /// for `none`, else accumulated in the f64 scratch.
  Type lossType, zLossType;
  bool reduced = false;
  bool zLoss = false;
};

/// The merge kernel: (stats, target, [class_weight], [scratch] (reduced),
/// [loss], [z_loss] (per row), ignore_index i64, [z-loss scale f32], V
/// index, G index), one thread per row: the row's loss (and z-loss) as the
/// row kernels compute it from m, Σ and x_t.
gpu::GPUFuncOp buildTileLossKernel(OpBuilder &b, Location loc, StringRef name,
                                   const TileLossSpec &spec);

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_LINEARTILES_H
