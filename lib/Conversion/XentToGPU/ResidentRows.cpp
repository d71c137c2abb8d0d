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

Value KernelEmitter::ResidentWalk::loadVector(int64_t k) {
  if (regs[k])
    return regs[k];
  ImplicitLocOpBuilder &b = e.b;
  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  auto vecType = VectorType::get({width}, e.spec.logitsType);
  // Each thread reads back only the vectors it copied itself.
  Value at = arith::MulIOp::create(
      b, arith::AddIOp::create(b, e.at.tid, e.cstIdx(k * e.geometry.threads)),
      e.cstIdx(width));
  return vector::LoadOp::create(b, vecType, stagedVectors, ValueRange{at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

SmallVector<Value> KernelEmitter::ResidentWalk::emitPartialStatistics(
    ArrayRef<Value> init, const ReductionPlan &plan) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  int64_t threads = e.geometry.threads;
  Type f32 = e.f32;
  MLIRContext *ctx = b.getContext();
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Every block of the cluster has started before any block writes into
  // another's shared memory (the matching wait is in emitClusterAllReduce).
  NVVM::ClusterArriveRelaxedOp::create(b, b.getUnitAttr());

  // This block's slice of the row, in 16-byte vectors (C % width == 0).
  Value vectors = arith::DivUIOp::create(b, e.at.numClasses, e.cstIdx(width));
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
      dynamic, e.cstIdx(0), ValueRange{});
  stagedVectors = memref::ViewOp::create(
      b,
      MemRefType::get({kStagedVectors * threads * width}, e.spec.logitsType,
                      MemRefLayoutAttrInterface(), space),
      dynamic, e.cstIdx(kStageOffset), ValueRange{});
  // The block reduction's scratch too: the dynamic region is not ordered
  // with respect to the kernel's static workgroup memory.
  reduceScratch = memref::ViewOp::create(
      b,
      MemRefType::get({kResidentComponents, kMaxWarps}, f32,
                      MemRefLayoutAttrInterface(), space),
      dynamic, e.cstIdx(kExchangeBytes), ValueRange{});
  logitsRow = e.rowVectorView(e.args.x);

  starts.clear();
  valid.clear();
  regs.assign(kStagedVectors, Value());
  // Vector k of this thread is first + k·T: one base and constant offsets
  // (few registers live across the exchange), valid while
  // k·T < sliceEnd - first.
  Value first = arith::AddIOp::create(b, sliceBegin, e.at.tid);
  Value base = arith::MulIOp::create(b, first, e.cstIdx(width));
  Value left = arith::SubIOp::create(b, sliceEnd, first);
  for (int64_t k = 0; k < kResidentVectors; ++k) {
    valid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                          e.cstIdx(k * threads), left));
    starts.push_back(
        k ? arith::AddIOp::create(b, base, e.cstIdx(k * threads * width))
          : base);
  }
  // All loads are issued before any is used: the staged ones as cp.async
  // (16 bytes, zero-filled past the slice), then the register ones.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  SmallVector<Value> tokens;
  for (int64_t k = 0; k < kStagedVectors; ++k) {
    // Past the slice nothing is read (source size 0: zero fill).
    Value src = starts[k];
    Value count = e.select(valid[k], e.cstIdx(width), e.cstIdx(0));
    Value dst = arith::MulIOp::create(
        b, arith::AddIOp::create(b, e.at.tid, e.cstIdx(k * threads)),
        e.cstIdx(width));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, tokenType, stagedVectors, ValueRange{dst}, logitsRow,
        ValueRange{src}, b.getIndexAttr(width), count, b.getUnitAttr()));
  }
  Value group = nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, tokens);
  auto vecType = VectorType::get({width}, e.spec.logitsType);
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    regs.push_back(e.emitGuardedVectorLoad(vecType, logitsRow, starts[k],
                                           valid[k], width));

  SmallVector<Value> acc(init);
  auto step = [&](int64_t k) {
    SmallVector<Value> cs, xs;
    e.unpackVector(starts[k], loadVector(k), width, cs, xs);
    SmallVector<Value> next = e.emitStatisticsStep(cs, xs, acc, plan);
    for (auto [a, n] : llvm::zip(acc, next))
      a = e.select(valid[k], n, a);
  };
  // Registers first, while the copies are in flight.
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    step(k);
  nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(0));
  for (int64_t k = 0; k < kStagedVectors; ++k)
    step(k);
  return acc;
}

SmallVector<Value>
KernelEmitter::ResidentWalk::emitAllReduce(ArrayRef<Value> partial,
                                           const ReductionPlan &plan) {
  SmallVector<Value> totals =
      e.emitBlockAllReduce(partial, plan, reduceScratch);
  return emitClusterAllReduce(totals, plan);
}

SmallVector<Value> KernelEmitter::ResidentWalk::emitClusterAllReduce(
    ArrayRef<Value> totals, const ReductionPlan &plan) {
  assert(static_cast<int64_t>(totals.size()) <= kResidentComponents &&
         "more components than exchange slots");
  ImplicitLocOpBuilder &b = e.b;
  MLIRContext *ctx = b.getContext();
  // Wait for the arrive of emitPartialStatistics: every block started.
  NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  // Thread j < clusterSize writes this block's totals into slot `clusterRank`
  // of block j's exchange slots.
  Value writes =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e.at.tid, clusterSize);
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
    Value block = arith::IndexCastOp::create(b, b.getI32Type(), e.at.tid);
    for (auto [k, v] : llvm::enumerate(totals)) {
      Value slot = arith::IndexCastOp::create(
          b, b.getI32Type(),
          arith::AddIOp::create(
              b,
              arith::MulIOp::create(b, clusterRank,
                                    e.cstIdx(kResidentComponents)),
              e.cstIdx(k)));
      Value mine = LLVM::GEPOp::create(b, sharedPtr, e.f32, base,
                                       ArrayRef<LLVM::GEPArg>{slot});
      Value remote = NVVM::MapaOp::create(b, clusterPtr, mine, block);
      LLVM::StoreOp::create(b, e.toScratch(v), remote);
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
                                          e.cstIdx(j), clusterSize);
    SmallVector<Value> values;
    for (size_t k = 0; k < totals.size(); ++k) {
      Value loaded = e.fromScratch(
          memref::LoadOp::create(
              b, exchangeSlots,
              ValueRange{e.cstIdx(j * kResidentComponents + k)}),
          k, plan);
      values.push_back(
          e.select(present, loaded, e.reductionIdentity(k, plan)));
    }
    acc = j == 0 ? values : e.combine(acc, values, plan);
  }
  return acc;
}

void KernelEmitter::ResidentWalk::emitRowWrite(
    bool readLogits, function_ref<Value(const RowElement &)> fn) {
  ImplicitLocOpBuilder &b = e.b;
  Type outType = e.spec.getDlogitsType();
  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  Value dRow = e.rowVectorView(e.args.dlogits);
  auto vecType = VectorType::get({width}, outType);
  llvm::MaybeAlign align(width * outType.getIntOrFloatBitWidth() / 8);
  for (int64_t k = 0; k < kResidentVectors; ++k) {
    auto ifOp = scf::IfOp::create(b, valid[k], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value vec = readLogits ? loadVector(k) : Value();
    SmallVector<Value> out;
    for (const RowElement &el : e.unpackElements(starts[k], vec, width))
      out.push_back(e.fromF32(fn(el), outType));
    Value packed = vector::FromElementsOp::create(b, vecType, out);
    vector::StoreOp::create(b, packed, dRow, ValueRange{starts[k]},
                            /*nontemporal=*/false, align);
  }
}

Value KernelEmitter::ResidentWalk::emitIsRowWriter(Value isThread0) {
  ImplicitLocOpBuilder &b = e.b;
  return arith::AndIOp::create(
      b, isThread0,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, clusterRank,
                            e.cstIdx(0)));
}

Value KernelEmitter::ResidentWalk::emitWritesTarget(Value writer,
                                                    Value index) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  Value vector = arith::DivUIOp::create(b, index, e.cstIdx(width));
  Value owns = arith::AndIOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, vector,
                            sliceBegin),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, vector,
                            sliceEnd));
  return arith::AndIOp::create(b, writer, owns);
}
