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

#include "KernelBuilder.h"

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
/// x_t (-inf where the target is not in the group), and with the class sums
/// (label smoothing) D = Σ (m - x) over the group's classes.
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

/// What the tile kernel computes beside m, Σ and x_t.
struct TileStatsSpec {
  Type element, targetType;
  /// The logits soft-capped by a run-time value (0: none).
  bool softcap = false;
  /// D = Σ (m - x) per row and group, for unweighted label smoothing.
  bool classSums = false;
  /// Blocks per cluster (1 or 2): the blocks of adjacent row tiles and one
  /// group of class tiles; each loads its share of a class tile's weight
  /// rows and multicasts it to all.
  int64_t clusterBlocks = 1;
  /// Rows of weight one block's TMA load brings.
  int64_t weightBox() const { return kTileClasses / clusterBlocks; }
};

/// The arguments of the tile kernel by name, like RowKernelArgs: Values
/// (the host's launch operands, the kernel's block arguments) or Types (its
/// signature); members() is the one place that fixes their order.
template <typename T> struct TileStatsArgs {
  T mapHidden, mapWeight; // the TMA maps of hidden [N, H] and weight [V, H],
                          // as !llvm.ptr
  T target;               // [N], i32 / i64
  T stats;                // [G, N, kTileStatsWidth] f32
  T numRows, numClasses;  // N, V
  T depthSteps;           // ceil(H / kTileDepth)
  T rowTiles, classTiles; // ceil(N / kTileRows) rounded up to whole
                          // clusters, ceil(V / kTileClasses)
  T groups;               // G
  T softcap;              // f32, with a softcap

  template <typename Self> static auto members(Self &self) {
    return std::array{&self.mapHidden,  &self.mapWeight,  &self.target,
                      &self.stats,      &self.numRows,    &self.numClasses,
                      &self.depthSteps, &self.rowTiles,   &self.classTiles,
                      &self.groups,     &self.softcap};
  }
  SmallVector<T> list() const { return listPresent(members(*this)); }
};
TileStatsArgs<Type> getTileStatsArgTypes(MLIRContext *ctx,
                                         const TileStatsSpec &spec);

/// The tile kernel, one block per (row tile, group), launched in clusters of
/// spec.clusterBlocks along the row tiles.
gpu::GPUFuncOp buildTileStatsKernel(OpBuilder &b, Location loc,
                                    StringRef name,
                                    const TileStatsSpec &spec);

/// What the merge kernel computes from the groups' statistics.
struct TileLossSpec {
  Type targetType, classWeightType;
  /// The loss's and z-loss's element types (null: not a result); per row
  /// for `none`, else accumulated in the f64 scratch.
  Type lossType, zLossType;
  bool reduced = false;
  bool zLoss = false;
  /// Unweighted label smoothing by a run-time ε from the class sums D.
  bool smoothing = false;
};

/// The arguments of the merge kernel by name, like TileStatsArgs.
template <typename T> struct TileLossArgs {
  T stats;       // [G, N, kTileStatsWidth] f32
  T target;      // [N]
  T classWeight; // [V], with class weights
  T scratch;     // getScratchType, reduced
  T loss, zLoss; // [N], per row (`none`), when results
  T ignoreIndex; // i64
  T zLossScale;  // f32, with a z-loss
  T smoothing;   // f32 ε, with label smoothing
  T numClasses;  // V, index
  T groups;      // G, index

  template <typename Self> static auto members(Self &self) {
    return std::array{&self.stats,       &self.target,     &self.classWeight,
                      &self.scratch,     &self.loss,       &self.zLoss,
                      &self.ignoreIndex, &self.zLossScale, &self.smoothing,
                      &self.numClasses,  &self.groups};
  }
  SmallVector<T> list() const { return listPresent(members(*this)); }
};
TileLossArgs<Type> getTileLossArgTypes(MLIRContext *ctx,
                                       const TileLossSpec &spec);

/// The merge kernel, one thread per row: the row's loss (and z-loss) as the
/// row kernels compute it from m, Σ, x_t and, with label smoothing, D.
gpu::GPUFuncOp buildTileLossKernel(OpBuilder &b, Location loc, StringRef name,
                                   const TileLossSpec &spec);

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_LINEARTILES_H
