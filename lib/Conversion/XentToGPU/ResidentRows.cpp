//===- ResidentRows.cpp - Rows kept on chip across a block cluster --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The resident path of the gradient kernels: a row is split over the blocks
// of a thread-block cluster, each block copies its slice on chip once
// (cp.async into dynamic shared memory, the rest into registers), the blocks
// exchange their partial statistics through distributed shared memory, and
// the gradient pass reads the slice back from there.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

Value KernelEmitter::loadResidentVector(int64_t k) {
  if (residentRegs[k])
    return residentRegs[k];
  int64_t width = geometry.vectorWidth(spec.logitsType);
  auto vecType = VectorType::get({width}, spec.logitsType);
  // Each thread reads back only the vectors it copied itself.
  Value at = arith::MulIOp::create(
      b, arith::AddIOp::create(b, tid, cstIdx(k * geometry.threads)),
      cstIdx(width));
  return vector::LoadOp::create(b, vecType, stagedVectors, ValueRange{at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

SmallVector<Value> KernelEmitter::emitResidentStatistics(ArrayRef<Value> init) {
  int64_t width = geometry.vectorWidth(spec.logitsType);
  int64_t threads = geometry.threads;
  MLIRContext *ctx = b.getContext();
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Every block of the cluster has started before any block writes into
  // another's shared memory (the matching wait is in emitClusterAllReduce).
  NVVM::ClusterArriveRelaxedOp::create(b, b.getUnitAttr());

  // This block's slice of the row, in 16-byte vectors (C % width == 0).
  Value vectors = arith::DivUIOp::create(b, numClasses, cstIdx(width));
  Value slice = arith::CeilDivUIOp::create(b, vectors, clusterSize);
  sliceBegin = arith::MulIOp::create(b, clusterRank, slice);
  sliceEnd = arith::MinUIOp::create(
      b, arith::AddIOp::create(b, sliceBegin, slice), vectors);

  // Dynamic shared memory: exchange slots, then the staged vectors.
  Value dynamic = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface(), space));
  exchangeSlots = memref::ViewOp::create(
      b,
      MemRefType::get({kMaxClusterSize * kResidentComponents}, f32,
                      MemRefLayoutAttrInterface(),
                      space),
      dynamic, cstIdx(0), ValueRange{});
  stagedVectors = memref::ViewOp::create(
      b,
      MemRefType::get({kStagedVectors * threads * width}, spec.logitsType,
                      MemRefLayoutAttrInterface(), space),
      dynamic, cstIdx(kStageOffset), ValueRange{});
  // The block reduction's scratch too (restored by emitRowKernel after the
  // resident path).
  reduceScratch = memref::ViewOp::create(
      b,
      MemRefType::get({kResidentComponents, kMaxWarps}, f32,
                      MemRefLayoutAttrInterface(), space),
      dynamic, cstIdx(kExchangeBytes), ValueRange{});
  logitsRow = rowVectorView(x);

  residentStart.clear();
  residentValid.clear();
  residentRegs.assign(kStagedVectors, Value());
  // Vector k of this thread is first + k·T: one base and constant offsets
  // (few registers live across the exchange), valid while
  // k·T < sliceEnd - first.
  Value first = arith::AddIOp::create(b, sliceBegin, tid);
  Value base = arith::MulIOp::create(b, first, cstIdx(width));
  Value left = arith::SubIOp::create(b, sliceEnd, first);
  for (int64_t k = 0; k < kResidentVectors; ++k) {
    residentValid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                  cstIdx(k * threads), left));
    residentStart.push_back(
        k ? arith::AddIOp::create(b, base, cstIdx(k * threads * width)) : base);
  }
  // All loads are issued before any is used: the staged ones as cp.async
  // (16 bytes, zero-filled past the slice), then the register ones.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  SmallVector<Value> tokens;
  for (int64_t k = 0; k < kStagedVectors; ++k) {
    // Past the slice nothing is read (source size 0: zero fill).
    Value src = residentStart[k];
    Value count = select(residentValid[k], cstIdx(width), cstIdx(0));
    Value dst = arith::MulIOp::create(
        b, arith::AddIOp::create(b, tid, cstIdx(k * threads)), cstIdx(width));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, tokenType, stagedVectors, ValueRange{dst}, logitsRow,
        ValueRange{src}, b.getIndexAttr(width), count, b.getUnitAttr()));
  }
  Value group = nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, tokens);
  auto vecType = VectorType::get({width}, spec.logitsType);
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    residentRegs.push_back(emitGuardedVectorLoad(
        vecType, logitsRow, residentStart[k], residentValid[k], width));

  SmallVector<Value> acc(init);
  auto step = [&](int64_t k) {
    SmallVector<Value> cs, xs;
    unpackVector(residentStart[k], loadResidentVector(k), width, cs, xs);
    SmallVector<Value> next = emitStatisticsStep(cs, xs, acc);
    for (auto [a, n] : llvm::zip(acc, next))
      a = select(residentValid[k], n, a);
  };
  // Registers first, while the copies are in flight.
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    step(k);
  nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(0));
  for (int64_t k = 0; k < kStagedVectors; ++k)
    step(k);
  return acc;
}

SmallVector<Value> KernelEmitter::emitClusterAllReduce(ArrayRef<Value> totals,
                                                      int64_t firstSlot,
                                                      bool again) {
  assert(firstSlot + static_cast<int64_t>(totals.size()) <=
             kResidentComponents &&
         "more components than exchange slots");
  MLIRContext *ctx = b.getContext();
  // The first exchange waits for the arrive of emitResidentStatistics
  // (every block started); a second one follows the first's arrive / wait,
  // and its slots are not the ones the first exchange reads.
  if (!again)
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  // Thread j < clusterSize writes this block's totals into slot `clusterRank`
  // of block j's exchange slots.
  Value writes =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tid, clusterSize);
  auto ifOp = scf::IfOp::create(b, writes, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto sharedPtr = LLVM::LLVMPointerType::get(
        ctx, static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
    auto clusterPtr = LLVM::LLVMPointerType::get(
        ctx, static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
    Value address = arith::IndexCastOp::create(
        b, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, exchangeSlots));
    Value base = LLVM::IntToPtrOp::create(b, sharedPtr, address);
    Value block = arith::IndexCastOp::create(b, b.getI32Type(), tid);
    for (auto [k, v] : llvm::enumerate(totals)) {
      Value slot = arith::IndexCastOp::create(
          b, b.getI32Type(),
          arith::AddIOp::create(
              b,
              arith::MulIOp::create(b, clusterRank,
                                    cstIdx(kResidentComponents)),
              cstIdx(firstSlot + k)));
      Value mine = LLVM::GEPOp::create(b, sharedPtr, f32, base,
                                       ArrayRef<LLVM::GEPArg>{slot});
      Value remote = NVVM::MapaOp::create(b, clusterPtr, mine, block);
      LLVM::StoreOp::create(b, toScratch(v), remote);
    }
  }
  // Release the stores, acquire the others' (no remote access follows, so
  // blocks may exit at any time after this).
  NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  // Every block combines the slots in the same order: bitwise the same
  // totals (and lse) in the whole cluster.
  SmallVector<Value> acc;
  for (int64_t j = 0; j < kMaxClusterSize; ++j) {
    Value present = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                          cstIdx(j), clusterSize);
    SmallVector<Value> values;
    for (size_t k = 0; k < totals.size(); ++k) {
      Value loaded = fromScratch(
          memref::LoadOp::create(
              b, exchangeSlots,
              ValueRange{cstIdx(j * kResidentComponents + firstSlot + k)}),
          k);
      values.push_back(select(present, loaded, reductionIdentity(k)));
    }
    acc = j == 0 ? values : combine(acc, values);
  }
  return acc;
}

Value KernelEmitter::emitResidentGap() {
  assert(!weight && "hasResidentPath keeps weighted smoothing off this path");
  int64_t width = geometry.vectorWidth(spec.logitsType);
  Value zero = cstF(0.0);
  Value gap = zero;
  for (int64_t k = 0; k < kResidentVectors; ++k) {
    SmallVector<Value> cs, xs;
    unpackVector(residentStart[k], loadResidentVector(k), width, cs, xs);
    Value g = zero;
    // m - x >= 0 from the row's max itself (no rebase); 0, not NaN, where
    // both are -inf.
    for (Value xc : xs)
      g = add(g, arith::MaxNumFOp::create(b, sub(rowMax, xc), zero));
    gap = select(residentValid[k], add(gap, g), gap);
  }
  // A plain sum across the block and the cluster.
  bool savedPair = maxSumPair;
  int64_t savedMass = massSlot, savedGap = gapSlot, savedArgmax = argmaxSlot;
  maxSumPair = false;
  massSlot = gapSlot = argmaxSlot = -1;
  SmallVector<Value> totals = emitBlockAllReduce({gap});
  totals = emitClusterAllReduce(totals, /*firstSlot=*/2, /*again=*/true);
  maxSumPair = savedPair;
  massSlot = savedMass;
  gapSlot = savedGap;
  argmaxSlot = savedArgmax;
  return totals[0];
}
