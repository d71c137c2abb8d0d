//===- LinearTiles.cpp - Hopper tile kernels of the linear family ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The linear family's loss without logits in memory (sm_90a): a tile kernel
// computes tiles of `hidden · weightᵀ` with warpgroup MMA (nvvm.wgmma) from
// operands that TMA (nvgpu.tma.async.load) stages in shared memory, and
// reduces each tile in registers to per-row partial statistics — the max m,
// Σ exp(x - m) and the target's logit — over a group of class tiles; a merge
// kernel combines the groups of a row into its loss. The logits never reach
// memory.
//
//   block (384 threads) = (row tile of kTileRows, group g of class tiles),
//   in clusters of two blocks: adjacent row tiles, one group
//     warpgroup 2 (producer): one thread issues the TMA loads of each
//       depth step's A (rows x kTileDepth of hidden) and its half of B
//       (kTileClasses x kTileDepth of weight), multicast to both blocks of
//       the cluster, into a ring of kTileStages stages; mbarriers `full`
//       (TMA -> MMA, transaction bytes: the block's A and both halves of B)
//       and `empty` (MMA -> TMA, one arrival per consumer warpgroup of the
//       cluster: a stage is refilled in both blocks at once).
//     warpgroups 0, 1 (consumers): 64 rows each; per class tile the
//       wgmma.m64n256k16 chain over the depth into 128 f32 accumulators per
//       thread, then the tile's max and Σ exp folded into the thread's
//       running (m, s) of its two rows (online softmax), and the target's
//       logit where the target is in the tile. At the end the four threads
//       of a row merge theirs (shuffles) and one writes stats[g, row].
//
// Both operands are K-major (rows of hidden and of weight are contiguous in
// the depth) with the 128-byte swizzle; the wgmma descriptors are formed
// here (start address, stride 1024 bytes between 8-row groups, the swizzle
// mode), advanced 32 bytes per k16 step inside the swizzle atom.
//
//===----------------------------------------------------------------------===//

#include "LinearTiles.h"

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::xent;

namespace {

constexpr int64_t kABytes = kTileRows * kTileDepth * 2;
constexpr int64_t kBBytes = kTileClasses * kTileDepth * 2;
constexpr int64_t kStageBytes = kABytes + kBBytes;
/// Where the `empty` mbarriers lie after the stages (8 bytes each).
constexpr int64_t kEmptyOffset = kTileStages * kStageBytes;
/// f32 accumulators per thread of one m64 x kTileClasses wgmma.
constexpr int64_t kAccumulators = kTileClasses / 2;
/// Rows of one consumer warpgroup.
constexpr int64_t kWarpgroupRows = 64;
constexpr int64_t kWarpgroupThreads = 128;
/// Row tiles per band of the launch order: the blocks running at once share
/// a band's hidden rows and each class tile's weight rows in L2.
constexpr int64_t kBandTiles = 16;
static_assert(kBandTiles % 2 == 0, "a band holds whole clusters");
/// Registers of the producer warpgroup and of the consumers (setmaxnreg).
constexpr int32_t kProducerRegisters = 40;
constexpr int32_t kConsumerRegisters = 232;
/// The wgmma descriptor's fixed fields: 128-byte swizzle (bits 62-63 = 1),
/// 1024 bytes between 8-row core-matrix groups (bits 32-45, in 16-byte
/// units), a leading offset of 1 (unused by K-major swizzled layouts).
constexpr int64_t kDescriptorBits = (int64_t(1) << 62) | (int64_t(64) << 32) |
                                    (int64_t(1) << 16);

/// A class sum D = Σ (m - x) over `count` classes moved from max `from` to
/// max `to`: count · (to - from), 0 where no class was counted (from =
/// -inf).
Value rebaseClassSum(OpBuilder &b, Location loc, Value count, Value to,
                     Value from) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                     count, zero);
  return arith::SelectOp::create(
      b, loc, seen,
      arith::MulFOp::create(b, loc, count,
                            arith::SubFOp::create(b, loc, to, from)),
      zero);
}

/// Two class sums of one row, D1 over n1 classes of max m1 and D2 over n2
/// of max m2, as one relative to the merged max `m`.
Value mergeClassSums(OpBuilder &b, Location loc, Value m, Value d1, Value n1,
                     Value m1, Value d2, Value n2, Value m2) {
  return arith::AddFOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, d1, rebaseClassSum(b, loc, n1, m, m1)),
      arith::AddFOp::create(b, loc, d2, rebaseClassSum(b, loc, n2, m, m2)));
}

/// The first class tile of group `g` of `groups` over `classTiles` tiles
/// (index): the split of the tile kernel's launch, which the merge kernel
/// follows to count each group's classes.
Value getGroupFirstTile(OpBuilder &b, Location loc, Value g, Value classTiles,
                        Value groups) {
  return arith::DivUIOp::create(
      b, loc, arith::MulIOp::create(b, loc, g, classTiles), groups);
}

/// Builds the tile kernel's body.
class TileStatsEmitter {
public:
  TileStatsEmitter(OpBuilder &b, Location loc, const TileStatsSpec &spec)
      : b(b), loc(loc), spec(spec), element(spec.element),
        f32(b.getF32Type()), i64(b.getI64Type()) {}

  gpu::GPUFuncOp build(StringRef name);

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value cI64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value cF(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value fmax(Value x, Value y) {
    // NaN-propagating: a NaN logit makes the row's loss NaN, as PyTorch's.
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  /// exp of a difference formed in f32 (ex2.approx, no libdevice).
  Value exp(Value x) {
    ImplicitLocOpBuilder ib(loc, b);
    return emitFastExpF32(ib, x);
  }
  Value toI64(Value v) {
    return arith::IndexCastOp::create(b, loc, i64, v);
  }
  /// The stage `s`'s operands in the dynamic shared memory.
  Value stageView(Value s, Value offset, int64_t rows);
  /// A wgmma descriptor of the K-major, 128-byte-swizzled tile at `address`.
  Value descriptor(Value address);
  /// The phase bit of step `i` of a ring of kTileStages mbarriers.
  Value phase(Value i, bool flip);
  /// The `empty` mbarrier of stage `s` (shared memory).
  Value emptyBarrier(Value s);
  /// One arrival on stage `s`'s `empty` mbarrier in every block of the
  /// cluster.
  void releaseStage(Value s);
  /// barrier.cluster: every thread of the cluster.
  void syncCluster();
  void emitProducer();
  void emitConsumers();
  /// Folds the tile `acc` into the running statistics of the thread's two
  /// rows; returns the 2 · perRow() new values. `it` is the tile's place in
  /// the group.
  SmallVector<Value> emitTileStatistics(Value acc, Value it, Value tileStart,
                                        ValueRange running);
  void emitWrite(ValueRange stats);

  /// Values a row carries per thread: m, Σ exp(x - m), x_t, and with the
  /// class sums D = Σ (m - x) over the classes seen.
  int64_t perRow() const { return spec.classSums ? 4 : 3; }
  /// The classes of a row a thread has seen in the group's first `tiles`
  /// tiles, all whole (only the group's last tile can be partial), as f32.
  Value wholeTileClasses(Value tiles) {
    return arith::UIToFPOp::create(b, loc, f32,
                                   toI64(mul(tiles, idx(kAccumulators / 2))));
  }

  OpBuilder &b;
  Location loc;
  const TileStatsSpec &spec;
  Type element, f32, i64;
  // Kernel state.
  Value descA, descB, target, stats, numRows, numClasses, depthSteps;
  Value numRowTiles, numClassTiles, groups;
  Value dyn, pad, aligned, full, tid, warpgroup, lane128;
  Value rowTile, group, firstTile, numTiles, row0, clusterRank;
  Value softcap, invSoftcap, softcapOff;
  nvgpu::TensorMapDescriptorType mapA, mapB;
  nvgpu::MBarrierGroupType barrierType;
  LLVM::LLVMStructType accType;
  // Consumer state.
  Value rows[2], targets[2], inRange[2], quadOffset;
};

} // namespace

nvgpu::TensorMapDescriptorType
mlir::xent::getTileOperandMapType(MLIRContext *ctx, Type element,
                                  int64_t rows) {
  auto smem = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  return nvgpu::TensorMapDescriptorType::get(
      ctx, MemRefType::get({rows, kTileDepth}, element, MemRefLayoutAttrInterface(), smem),
      nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

int64_t mlir::xent::getTileStatsSharedMemoryBytes() {
  // The stages, the `empty` mbarriers, and room to align them to the
  // swizzle's 1024 bytes.
  return kEmptyOffset + 8 * kTileStages + 1024;
}

Value TileStatsEmitter::stageView(Value s, Value offset, int64_t rows) {
  Value at = add(add(mul(s, idx(kStageBytes)), pad), offset);
  auto smem =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return memref::ViewOp::create(
      b, loc, MemRefType::get({rows, kTileDepth}, element, MemRefLayoutAttrInterface(), smem), dyn, at,
      ValueRange{});
}

Value TileStatsEmitter::descriptor(Value address) {
  Value field = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, cI64(4)),
      cI64((1 << 14) - 1));
  return arith::OrIOp::create(b, loc, field, cI64(kDescriptorBits));
}

Value TileStatsEmitter::phase(Value i, bool flip) {
  Value round = remu(divu(i, idx(kTileStages)), idx(2));
  Value bit = arith::IndexCastOp::create(b, loc, b.getI1Type(), round);
  if (!flip)
    return bit;
  return arith::XOrIOp::create(
      b, loc, bit, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
}

Value TileStatsEmitter::emptyBarrier(Value s) {
  Value at = toI64(add(add(aligned, idx(kEmptyOffset)), mul(s, idx(8))));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), /*shared*/ 3), at);
}

void TileStatsEmitter::releaseStage(Value s) {
  Value local = emptyBarrier(s);
  auto cluster =
      LLVM::LLVMPointerType::get(b.getContext(), /*shared::cluster*/ 7);
  if (spec.clusterBlocks == 1) {
    NVVM::MBarrierArriveOp::create(b, loc, Type(), local, Value());
    return;
  }
  for (int32_t rank = 0; rank < spec.clusterBlocks; ++rank) {
    Value remote = NVVM::MapaOp::create(
        b, loc, cluster, local,
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(rank)));
    NVVM::MBarrierArriveOp::create(b, loc, Type(), remote, Value(),
                                   NVVM::MemScopeKind::CLUSTER);
  }
}

void TileStatsEmitter::syncCluster() {
  if (spec.clusterBlocks == 1) {
    gpu::BarrierOp::create(b, loc);
    return;
  }
  NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
}

void TileStatsEmitter::emitProducer() {
  NVVM::SetMaxRegisterOp::create(b, loc, kProducerRegisters,
                                 NVVM::SetMaxRegisterAction::decrease);
  Value lead = cmp(arith::CmpIPredicate::eq, lane128, idx(0));
  auto ifLead = scf::IfOp::create(b, loc, lead, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifLead.thenBlock());
  Value ticks = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(10000000));
  Value mask;
  if (spec.clusterBlocks > 1)
    mask = arith::ConstantOp::create(
        b, loc, b.getI16IntegerAttr((1 << spec.clusterBlocks) - 1));
  // The A rows: a padded row tile past N (the launch's row tiles are whole
  // clusters) reads row tile 0 instead, its results are not written.
  Value rowA = arith::SelectOp::create(
      b, loc, cmp(arith::CmpIPredicate::ult, row0, numRows), row0, idx(0));
  // The block's share of the weight tile: its rows, and where it lies in
  // each stage.
  Value boxOffset = mul(clusterRank, idx(spec.weightBox()));
  Value boxBytes =
      add(idx(kABytes),
          mul(clusterRank, idx(spec.weightBox() * kTileDepth * 2)));
  scf::ForOp::create(
      b, loc, idx(0), numTiles, idx(1), ValueRange{},
      [&](OpBuilder &, Location, Value it, ValueRange) {
        Value classRow =
            add(mul(add(firstTile, it), idx(kTileClasses)), boxOffset);
        scf::ForOp::create(
            b, loc, idx(0), depthSteps, idx(1), ValueRange{},
            [&](OpBuilder &, Location, Value kb, ValueRange) {
              Value i = add(mul(it, depthSteps), kb);
              Value s = remu(i, idx(kTileStages));
              // The stage is free once the consumers of both blocks
              // released it (the first round's wait on the opposite phase
              // passes at once).
              Value parity = arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                                    phase(i, true));
              NVVM::MBarrierTryWaitParityOp::create(b, loc, emptyBarrier(s),
                                                    parity, ticks);
              // The block's `full` counts its A and both halves of B (the
              // other block's half arrives by its multicast).
              nvgpu::MBarrierArriveExpectTxOp::create(
                  b, loc, full, idx(kStageBytes), s, Value());
              Value depth = mul(kb, idx(kTileDepth));
              nvgpu::TmaAsyncLoadOp::create(
                  b, loc, stageView(s, idx(0), kTileRows), full, descA,
                  ValueRange{depth, rowA}, s, Value(), Value());
              nvgpu::TmaAsyncLoadOp::create(
                  b, loc, stageView(s, boxBytes, spec.weightBox()), full, descB,
                  ValueRange{depth, classRow}, s, mask, Value());
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
}

SmallVector<Value> TileStatsEmitter::emitTileStatistics(Value acc, Value it,
                                                        Value tileStart,
                                                        ValueRange running) {
  Value ninf = cF(-std::numeric_limits<double>::infinity());
  Value zero = cF(0.0);
  ImplicitLocOpBuilder ib(loc, b);
  // Column of accumulator j relative to the thread's first column:
  // 8 (j / 4) + j % 2; j % 4 < 2 is the first row, else the row 8 below.
  auto columnOf = [](int64_t j) { return 8 * (j / 4) + (j % 2); };
  Value colBase = add(toI64(tileStart), quadOffset);
  // Classes past the vocabulary (the last tile's TMA zero fill) are -inf.
  Value limit = sub(toI64(numClasses), colBase);
  Value partial = cmp(arith::CmpIPredicate::ugt,
                      add(tileStart, idx(kTileClasses)), numClasses);
  SmallVector<Value> x(kAccumulators), valid(kAccumulators);
  for (int64_t j = 0; j < kAccumulators; ++j) {
    Value raw = LLVM::ExtractValueOp::create(b, loc, acc, j);
    if (softcap) {
      // s · tanh(x / s); the logit itself where a run-time softcap is 0.
      Value capped = arith::MulFOp::create(
          b, loc, softcap,
          emitAccurateTanhF32(ib, arith::MulFOp::create(b, loc, raw,
                                                        invSoftcap)));
      raw = arith::SelectOp::create(b, loc, softcapOff, raw, capped);
    }
    Value inside =
        cmp(arith::CmpIPredicate::slt, cI64(columnOf(j)), limit);
    valid[j] = arith::OrIOp::create(
        b, loc, inside,
        arith::XOrIOp::create(
            b, loc, partial,
            arith::ConstantOp::create(b, loc, b.getBoolAttr(true))));
    Value masked = arith::SelectOp::create(b, loc, inside, raw, ninf);
    x[j] = arith::SelectOp::create(b, loc, partial, masked, raw);
  }
  SmallVector<Value> next;
  for (int64_t r = 0; r < 2; ++r) {
    ValueRange row = running.slice(perRow() * r, perRow());
    Value m = row[0], s = row[1], xt = row[2];
    SmallVector<int64_t> mine;
    for (int64_t j = 0; j < kAccumulators; ++j)
      if ((j % 4) / 2 == r)
        mine.push_back(j);
    Value newMax = m;
    for (int64_t j : mine)
      newMax = fmax(newMax, x[j]);
    // Until a finite value is seen the shift is 0 (no -inf - -inf).
    Value isNinf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         newMax, ninf);
    Value shift = arith::SelectOp::create(b, loc, isNinf, zero, newMax);
    Value rescale = exp(arith::SubFOp::create(b, loc, m, shift));
    Value sum = arith::MulFOp::create(b, loc, s, rescale);
    for (int64_t j : mine)
      sum = arith::AddFOp::create(
          b, loc, sum, exp(arith::SubFOp::create(b, loc, x[j], shift)));
    // The target's logit where the target is one of this tile's classes of
    // the thread's columns: its offset from the thread's first column.
    Value offset = sub(targets[r], colBase);
    Value inTile = cmp(arith::CmpIPredicate::ult, add(offset, quadOffset),
                       cI64(kTileClasses));
    auto ifIn = scf::IfOp::create(b, loc, TypeRange{f32}, inTile,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifIn.thenBlock());
      Value found = xt;
      for (int64_t j : mine) {
        Value hit = cmp(arith::CmpIPredicate::eq, offset, cI64(columnOf(j)));
        found = arith::SelectOp::create(b, loc, hit, x[j], found);
      }
      scf::YieldOp::create(b, loc, found);
      b.setInsertionPointToStart(ifIn.elseBlock());
      scf::YieldOp::create(b, loc, xt);
    }
    next.append({newMax, sum, ifIn.getResult(0)});
    if (!spec.classSums)
      continue;
    // D = Σ (m - x) over the classes seen, every term ≥ 0 (no
    // cancellation): rebased to the new max by count · (new - old), then
    // this tile's (new - x) of the valid classes added.
    Value d = arith::AddFOp::create(
        b, loc, row[3],
        rebaseClassSum(b, loc, wholeTileClasses(it), newMax, m));
    for (int64_t j : mine) {
      Value term = arith::SelectOp::create(
          b, loc, valid[j], arith::SubFOp::create(b, loc, newMax, x[j]),
          zero);
      d = arith::AddFOp::create(b, loc, d, term);
    }
    next.push_back(d);
  }
  return next;
}

void TileStatsEmitter::emitWrite(ValueRange running) {
  auto cI32 = [&](int32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  Value all = cI32(-1), clamp = cI32(31);
  Value quad = remu(lane128, idx(4));
  // The thread's classes of a row in the group (for D's rebasing): the whole
  // tiles', and of the last tile those below V, its columns being
  // {8a + b : a < 32, b < 2} past the thread's first; 2 (L / 8) + min(L % 8,
  // 2) of them are below L.
  Value count;
  if (spec.classSums) {
    Value lastTile = sub(numTiles, idx(1));
    Value lastStart = mul(add(firstTile, lastTile), idx(kTileClasses));
    Value room = sub(toI64(numClasses), add(toI64(lastStart), quadOffset));
    Value eight = cI64(8);
    Value below = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, cI64(2),
                              arith::DivSIOp::create(b, loc, room, eight)),
        arith::MinSIOp::create(b, loc,
                               arith::RemSIOp::create(b, loc, room, eight),
                               cI64(2)));
    below = arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, below, cI64(0)),
        cI64(kAccumulators / 2));
    count = arith::AddFOp::create(
        b, loc, wholeTileClasses(lastTile),
        arith::SIToFPOp::create(b, loc, f32, below));
  }
  for (int64_t r = 0; r < 2; ++r) {
    SmallVector<Value> row(running.slice(perRow() * r, perRow()));
    if (spec.classSums)
      row.push_back(count);
    // The four threads of a row (lanes 4q … 4q + 3) merge their values.
    for (int32_t offset : {1, 2}) {
      SmallVector<Value> other;
      for (Value v : row)
        other.push_back(NVVM::ShflOp::create(b, loc, f32, all, v,
                                             cI32(offset), clamp,
                                             NVVM::ShflKind::bfly,
                                             UnitAttr()));
      ImplicitLocOpBuilder ib(loc, b);
      auto [m, s] = combineMaxSumF32(ib, row[0], row[1], other[0], other[1]);
      if (spec.classSums) {
        row[3] = mergeClassSums(b, loc, m, row[3], row[4], row[0], other[3],
                                other[4], other[0]);
        row[4] = arith::AddFOp::create(b, loc, row[4], other[4]);
      }
      row[0] = m;
      row[1] = s;
      row[2] = fmax(row[2], other[2]);
    }
    Value writes = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, quad, idx(0)), inRange[r]);
    auto ifWrite = scf::IfOp::create(b, loc, writes, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifWrite.thenBlock());
    // m, Σ, x_t and, with the class sums, D (the count is the group's
    // classes, which the merge knows).
    for (int64_t k = 0; k < (spec.classSums ? 4 : 3); ++k)
      memref::StoreOp::create(b, loc, row[k], stats,
                              ValueRange{group, rows[r], idx(k)});
  }
}

void TileStatsEmitter::emitConsumers() {
  NVVM::SetMaxRegisterOp::create(b, loc, kConsumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  Value warp = divu(lane128, idx(32));
  Value lane = remu(lane128, idx(32));
  Value quad = remu(lane, idx(4));
  quadOffset = toI64(mul(quad, idx(2)));
  rows[0] = add(add(add(row0, mul(warpgroup, idx(kWarpgroupRows))),
                    mul(warp, idx(16))),
                divu(lane, idx(4)));
  rows[1] = add(rows[0], idx(8));
  Type targetElt = cast<MemRefType>(target.getType()).getElementType();
  for (int64_t r = 0; r < 2; ++r) {
    inRange[r] = cmp(arith::CmpIPredicate::ult, rows[r], numRows);
    auto ifIn = scf::IfOp::create(b, loc, TypeRange{i64}, inRange[r], true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifIn.thenBlock());
    Value t = memref::LoadOp::create(b, loc, target, ValueRange{rows[r]});
    if (targetElt != i64)
      t = arith::ExtSIOp::create(b, loc, i64, t);
    scf::YieldOp::create(b, loc, t);
    b.setInsertionPointToStart(ifIn.elseBlock());
    scf::YieldOp::create(b, loc, cI64(-1));
    targets[r] = ifIn.getResult(0);
  }
  Value ninf = cF(-std::numeric_limits<double>::infinity());
  Value zero = cF(0.0);
  Value alignedI64 = toI64(aligned);
  Value warpgroupA = toI64(mul(warpgroup, idx(kWarpgroupRows * kTileDepth * 2)));
  Value zeroAcc = LLVM::ZeroOp::create(b, loc, accType);
  Value ticks = idx(10000000);
  MLIRContext *ctx = b.getContext();
  auto wgmmaType = element.isBF16() ? NVVM::WGMMATypes::bf16
                                    : NVVM::WGMMATypes::f16;
  SmallVector<Value> initial;
  for (int64_t r = 0; r < 2; ++r) {
    initial.append({ninf, zero, ninf});
    if (spec.classSums)
      initial.push_back(zero);
  }
  auto tiles = scf::ForOp::create(
      b, loc, idx(0), numTiles, idx(1),
      initial,
      [&](OpBuilder &, Location, Value it, ValueRange running) {
        auto steps = scf::ForOp::create(
            b, loc, idx(0), depthSteps, idx(1), ValueRange{zeroAcc},
            [&](OpBuilder &, Location, Value kb, ValueRange accs) {
              Value i = add(mul(it, depthSteps), kb);
              Value s = remu(i, idx(kTileStages));
              nvgpu::MBarrierTryWaitParityOp::create(
                  b, loc, full, phase(i, false), ticks, s);
              Value stage = add(alignedI64, toI64(mul(s, idx(kStageBytes))));
              Value baseA = add(stage, warpgroupA);
              Value baseB = add(stage, cI64(kABytes));
              NVVM::WgmmaFenceAlignedOp::create(b, loc);
              Value acc = accs[0];
              for (int64_t kk = 0; kk < kTileDepth / 16; ++kk) {
                Value step = cI64(32 * kk);
                acc = NVVM::WgmmaMmaAsyncOp::create(
                    b, loc, accType, acc, descriptor(add(baseA, step)),
                    descriptor(add(baseB, step)),
                    NVVM::MMAShapeAttr::get(ctx, 64, kTileClasses, 16),
                    NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
                    NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
                    NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
                    NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
                    NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
                    NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
                    NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
                    // B K-major: PTX's default (column-major B), trans-b 0.
                    NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
                    NVVM::MMAIntOverflowAttr());
              }
              NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
              // At most this step's group in flight: the previous step's
              // stage is read, release it to the producer.
              NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
              Value release = arith::AndIOp::create(
                  b, loc, cmp(arith::CmpIPredicate::ugt, kb, idx(0)),
                  cmp(arith::CmpIPredicate::eq, lane128, idx(0)));
              auto ifRelease =
                  scf::IfOp::create(b, loc, release, /*withElseRegion=*/false);
              {
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPointToStart(ifRelease.thenBlock());
                releaseStage(remu(sub(i, idx(1)), idx(kTileStages)));
              }
              scf::YieldOp::create(b, loc, acc);
            });
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        Value lead = cmp(arith::CmpIPredicate::eq, lane128, idx(0));
        auto ifLead = scf::IfOp::create(b, loc, lead, /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifLead.thenBlock());
          Value last = sub(add(mul(it, depthSteps), depthSteps), idx(1));
          releaseStage(remu(last, idx(kTileStages)));
        }
        Value tileStart = mul(add(firstTile, it), idx(kTileClasses));
        SmallVector<Value> next =
            emitTileStatistics(steps.getResult(0), it, tileStart, running);
        scf::YieldOp::create(b, loc, next);
      });
  emitWrite(tiles.getResults());
}

TileStatsArgs<Type>
mlir::xent::getTileStatsArgTypes(MLIRContext *ctx, const TileStatsSpec &spec) {
  Type targetType = spec.targetType;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type index = IndexType::get(ctx);
  TileStatsArgs<Type> types;
  types.mapHidden = types.mapWeight = ptr;
  types.target = getBufferType(ctx, 1, targetType);
  types.stats = getBufferType(ctx, 3, Float32Type::get(ctx));
  types.numRows = types.numClasses = types.depthSteps = index;
  types.rowTiles = types.classTiles = types.groups = index;
  if (spec.softcap)
    types.softcap = Float32Type::get(ctx);
  return types;
}

gpu::GPUFuncOp TileStatsEmitter::build(StringRef name) {
  MLIRContext *ctx = b.getContext();
  TileStatsArgs<Type> types = getTileStatsArgTypes(ctx, spec);
  auto func = gpu::GPUFuncOp::create(
      b, loc, name, b.getFunctionType(types.list(), {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(kTileThreads), 1, 1}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  mapA = getTileOperandMapType(ctx, element, kTileRows);
  mapB = getTileOperandMapType(ctx, element, spec.weightBox());
  TileStatsArgs<Value> args = bindKernelArgs(types, func.getArguments());
  // The tensor maps arrive as pointers (the host's descriptors, lowered).
  descA = UnrealizedConversionCastOp::create(b, loc, mapA, args.mapHidden)
              .getResult(0);
  descB = UnrealizedConversionCastOp::create(b, loc, mapB, args.mapWeight)
              .getResult(0);
  target = args.target;
  stats = args.stats;
  numRows = args.numRows;
  numClasses = args.numClasses;
  depthSteps = args.depthSteps;
  numRowTiles = args.rowTiles;
  numClassTiles = args.classTiles;
  groups = args.groups;
  if (spec.softcap) {
    softcap = args.softcap;
    invSoftcap = arith::DivFOp::create(b, loc, cF(1.0), softcap);
    softcapOff = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       softcap, cF(0.0));
  }
  accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(kAccumulators, f32));

  // Launch order: bands of kBandTiles row tiles, each band's blocks over
  // every group; block -> (row tile, group). The row tiles are whole
  // clusters and kBandTiles a multiple of the cluster's blocks, so the blocks
  // of a cluster (consecutive block ids) have adjacent row tiles and one
  // group.
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bandBlocks = mul(idx(kBandTiles), groups);
  Value band = divu(block, bandBlocks);
  Value inBand = remu(block, bandBlocks);
  Value bandStart = mul(band, idx(kBandTiles));
  Value bandTiles = arith::MinUIOp::create(b, loc, idx(kBandTiles),
                                           sub(numRowTiles, bandStart));
  rowTile = add(bandStart, remu(inBand, bandTiles));
  group = divu(inBand, bandTiles);
  // Group g's class tiles: [g·T / G, (g + 1)·T / G).
  firstTile = getGroupFirstTile(b, loc, group, numClassTiles, groups);
  Value endTile =
      getGroupFirstTile(b, loc, add(group, idx(1)), numClassTiles, groups);
  numTiles = sub(endTile, firstTile);
  row0 = mul(rowTile, idx(kTileRows));
  clusterRank = spec.clusterBlocks == 1
                    ? idx(0)
                    : gpu::ClusterBlockIdOp::create(b, loc, gpu::Dimension::x)
                          .getResult();

  auto smem = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  dyn = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(), smem));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, dyn);
  aligned = mul(divu(add(base, idx(1023)), idx(1024)), idx(1024));
  pad = sub(aligned, base);
  barrierType = nvgpu::MBarrierGroupType::get(ctx, smem, kTileStages);
  full = nvgpu::MBarrierCreateOp::create(b, loc, barrierType);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  warpgroup = divu(tid, idx(kWarpgroupThreads));
  lane128 = remu(tid, idx(kWarpgroupThreads));
  {
    auto ifFirst = scf::IfOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, tid, idx(0)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    Value consumers = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(2 * spec.clusterBlocks));
    for (int64_t s = 0; s < kTileStages; ++s) {
      nvgpu::MBarrierInitOp::create(b, loc, full, idx(1), idx(s), Value());
      NVVM::MBarrierInitOp::create(b, loc, emptyBarrier(idx(s)), consumers,
                                   Value());
    }
    if (spec.clusterBlocks > 1)
      NVVM::FenceMbarrierInitOp::create(b, loc);
    nvgpu::TmaPrefetchOp::create(b, loc, descA, Value());
    nvgpu::TmaPrefetchOp::create(b, loc, descB, Value());
  }
  // Both blocks' mbarriers are initialized before either block's multicast
  // or arrival reaches them.
  syncCluster();
  auto ifProducer = scf::IfOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, warpgroup, idx(2)),
      /*withElseRegion=*/true);
  b.setInsertionPointToStart(ifProducer.thenBlock());
  emitProducer();
  b.setInsertionPointToStart(ifProducer.elseBlock());
  emitConsumers();
  b.setInsertionPointAfter(ifProducer);
  // No block exits while the other's arrivals may still reach it.
  if (spec.clusterBlocks > 1)
    syncCluster();
  gpu::ReturnOp::create(b, loc);
  return func;
}

gpu::GPUFuncOp mlir::xent::buildTileStatsKernel(OpBuilder &b, Location loc,
                                                StringRef name,
                                                const TileStatsSpec &spec) {
  return TileStatsEmitter(b, loc, spec).build(name);
}

TileLossArgs<Type> mlir::xent::getTileLossArgTypes(MLIRContext *ctx,
                                                   const TileLossSpec &spec) {
  Type f32 = Float32Type::get(ctx), index = IndexType::get(ctx);
  TileLossArgs<Type> types;
  types.stats = getBufferType(ctx, 3, f32);
  types.target = getBufferType(ctx, 1, spec.targetType);
  if (spec.classWeightType)
    types.classWeight = getBufferType(ctx, 1, spec.classWeightType);
  if (spec.reduced)
    types.scratch = getScratchType(ctx);
  if (!spec.reduced && spec.lossType)
    types.loss = getBufferType(ctx, 1, spec.lossType);
  if (!spec.reduced && spec.zLossType)
    types.zLoss = getBufferType(ctx, 1, spec.zLossType);
  types.ignoreIndex = IntegerType::get(ctx, 64);
  if (spec.zLoss)
    types.zLossScale = f32;
  if (spec.smoothing)
    types.smoothing = f32;
  types.numClasses = types.groups = index;
  return types;
}

gpu::GPUFuncOp mlir::xent::buildTileLossKernel(OpBuilder &b, Location loc,
                                               StringRef name,
                                               const TileLossSpec &spec) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i64 = b.getI64Type(), index = b.getIndexType();
  TileLossArgs<Type> types = getTileLossArgTypes(ctx, spec);
  auto func = gpu::GPUFuncOp::create(b, loc, name,
                                     b.getFunctionType(types.list(), {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(kTileMergeThreads), 1, 1}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  TileLossArgs<Value> args = bindKernelArgs(types, func.getArguments());
  Value stats = args.stats, target = args.target;
  Value classWeight = args.classWeight, scratch = args.scratch;
  Value loss = args.loss, zLoss = args.zLoss;
  Value ignoreIndex = args.ignoreIndex, zScale = args.zLossScale;
  Value numClasses = args.numClasses, groups = args.groups;

  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto cF = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value ninf = cF(-std::numeric_limits<double>::infinity());
  Value zero = cF(0.0);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, idx(kTileMergeThreads)),
      tid);
  Value numRows = memref::DimOp::create(b, loc, stats, 1);
  auto ifRow = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, numRows),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifRow.thenBlock());
  // The groups merged: M = max m_g, S = Σ s_g exp(m_g - M), x_t = max;
  // with label smoothing D = Σ (D_g + n_g (M - m_g)) over the groups' n_g
  // classes (as the tile kernel splits them), rebased as M grows.
  Value classTiles = arith::CeilDivUIOp::create(b, loc, numClasses,
                                                idx(kTileClasses));
  // The classes before group g (as f32), as the tile kernel splits them.
  auto classesBefore = [&](Value g) -> Value {
    Value tile = getGroupFirstTile(b, loc, g, classTiles, groups);
    Value first = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, tile, idx(kTileClasses)),
        numClasses);
    return arith::UIToFPOp::create(
        b, loc, f32, arith::IndexCastOp::create(b, loc, i64, first));
  };
  SmallVector<Value> initial{ninf, zero, ninf};
  if (spec.smoothing)
    initial.push_back(zero);
  auto merged = scf::ForOp::create(
      b, loc, idx(0), groups, idx(1), initial,
      [&](OpBuilder &, Location, Value g, ValueRange acc) {
        auto load = [&](int64_t k) -> Value {
          return memref::LoadOp::create(b, loc, stats,
                                        ValueRange{g, row, idx(k)});
        };
        Value m = load(0), s = load(1), xt = load(2);
        ImplicitLocOpBuilder ib(loc, b);
        auto [mm, sum] = combineMaxSumF32(ib, acc[0], acc[1], m, s);
        Value x = arith::MaximumFOp::create(b, loc, acc[2], xt);
        SmallVector<Value> next{mm, sum, x};
        if (spec.smoothing) {
          Value before = classesBefore(g);
          Value n = arith::SubFOp::create(
              b, loc, classesBefore(arith::AddIOp::create(b, loc, g, idx(1))),
              before);
          next.push_back(mergeClassSums(b, loc, mm, acc[3], before, acc[0],
                                        load(3), n, m));
        }
        scf::YieldOp::create(b, loc, next);
      });
  Value max = merged.getResult(0), sumExp = merged.getResult(1),
        xt = merged.getResult(2);
  Value t = memref::LoadOp::create(b, loc, target, ValueRange{row});
  if (spec.targetType != i64)
    t = arith::ExtSIOp::create(b, loc, i64, t);
  Value kept =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, t, ignoreIndex);
  Value classes = arith::IndexCastOp::create(b, loc, i64, numClasses);
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t,
                            arith::ConstantOp::create(b, loc,
                                                      b.getI64IntegerAttr(0))),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t, classes));
  ImplicitLocOpBuilder ib(loc, b);
  Value logSum = emitAccurateLogF32(ib, sumExp);
  // (m - x_t) + log Σ: exact to the loss's own spacing (lse - x_t would round
  // to lse's).
  Value nll = arith::AddFOp::create(
      b, loc, arith::SubFOp::create(b, loc, max, xt), logSum);
  if (spec.smoothing) {
    // (1 - ε) nll + ε Σ_c (lse - x_c) / C, with Σ_c (lse - x_c) / C =
    // D / C + log Σ.
    Value eps = args.smoothing;
    Value mean = arith::AddFOp::create(
        b, loc,
        arith::DivFOp::create(b, loc, merged.getResult(3),
                              arith::UIToFPOp::create(b, loc, f32, classes)),
        logSum);
    Value smoothed = arith::AddFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc,
                              arith::SubFOp::create(b, loc, cF(1.0), eps),
                              nll),
        arith::MulFOp::create(b, loc, eps, mean));
    // ε = 0 is the loss without it: the host launched the tile kernel
    // without the class sums, D is not written.
    nll = arith::SelectOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, eps,
                              cF(0.0)),
        nll, smoothed);
  }
  if (classWeight) {
    Value safe = arith::IndexCastOp::create(
        b, loc, index,
        arith::SelectOp::create(
            b, loc, valid, t,
            arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0))));
    Value w = memref::LoadOp::create(b, loc, classWeight, ValueRange{safe});
    if (w.getType() != f32)
      w = w.getType().getIntOrFloatBitWidth() < 32
              ? arith::ExtFOp::create(b, loc, f32, w).getResult()
              : arith::TruncFOp::create(b, loc, f32, w).getResult();
    nll = arith::MulFOp::create(b, loc, w, nll);
  }
  Value rowLoss = arith::SelectOp::create(
      b, loc, valid, nll, cF(std::numeric_limits<double>::quiet_NaN()));
  Value rowZ = zero;
  if (spec.zLoss) {
    Value lse = arith::AddFOp::create(b, loc, max, logSum);
    rowZ = arith::MulFOp::create(b, loc, zScale,
                                 arith::MulFOp::create(b, loc, lse, lse));
  }
  auto narrow = [&](Value v, Type type) -> Value {
    return type == f32 ? v : arith::TruncFOp::create(b, loc, type, v);
  };
  if (!spec.reduced) {
    Value total = arith::SelectOp::create(
        b, loc, kept, arith::AddFOp::create(b, loc, rowLoss, rowZ), zero);
    if (loss)
      memref::StoreOp::create(b, loc, narrow(total, spec.lossType), loss,
                              ValueRange{row});
    if (zLoss)
      memref::StoreOp::create(
          b, loc,
          narrow(arith::SelectOp::create(b, loc, kept, rowZ, zero),
                 spec.zLossType),
          zLoss, ValueRange{row});
  } else {
    auto ifKept = scf::IfOp::create(b, loc, kept, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifKept.thenBlock());
    // The prologue's divisors: a mean's kept weight and count, 1 for a sum;
    // each share divided in f32, summed in f64 (as the row kernels).
    auto divisor = [&](ScratchSlot slot) -> Value {
      return arith::TruncFOp::create(
          b, loc, f32,
          memref::LoadOp::create(b, loc, scratch, ValueRange{idx(slot)}));
    };
    auto accumulate = [&](Value v, ScratchSlot slot) {
      memref::AtomicRMWOp::create(
          b, loc, b.getF64Type(), arith::AtomicRMWKind::addf,
          arith::ExtFOp::create(b, loc, b.getF64Type(), v), scratch,
          ValueRange{idx(slot)});
    };
    Value lossPart =
        arith::DivFOp::create(b, loc, rowLoss, divisor(kWeightSlot));
    Value zPart = zero;
    if (spec.zLoss) {
      zPart = arith::DivFOp::create(b, loc, rowZ, divisor(kCountSlot));
      lossPart = arith::AddFOp::create(b, loc, lossPart, zPart);
    }
    if (spec.lossType)
      accumulate(lossPart, kLossSlot);
    if (spec.zLossType)
      accumulate(zPart, kZLossSlot);
  }
  b.setInsertionPointAfter(ifRow);
  gpu::ReturnOp::create(b, loc);
  return func;
}
