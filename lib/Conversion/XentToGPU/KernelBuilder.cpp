//===- KernelBuilder.cpp - Fused cross-entropy CUDA kernels ---------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The kernels' bodies (the row kernel and the prologue, from the emitter's
// pieces in the other files of this directory; KernelEmitter.h gives the
// overview) and the entry points that build them as gpu.func with their
// signatures.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::xent;

//===----------------------------------------------------------------------===//
// Kernel bodies
//===----------------------------------------------------------------------===//

void KernelEmitter::emitRowKernel(gpu::GPUFuncOp func) {
  bool probs = config.probabilityTargets;
  RowKernelArgs<Value> kernelArgs = bindKernelArgs(
      getRowKernelArgTypes(b.getContext(), spec), func.getArguments());
  bindSharedArgs(func, kernelArgs);
  args.x = kernelArgs.x;
  args.gradOutput = kernelArgs.gradOutput;
  args.narrowLoss = kernelArgs.narrowLoss;
  args.lossIsNarrow = kernelArgs.lossIsNarrow;
  args.lse = kernelArgs.lse;
  args.argmax = kernelArgs.argmax;
  args.dlogits = kernelArgs.dlogits;
  args.rowStats = kernelArgs.rowStats;
  args.classOffset = kernelArgs.classOffset;

  bindThread();
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  bool residentPath = hasResidentPath(spec, geometry);
  Value clusterRank, clusterSize;
  if (residentPath) {
    // One cluster of blocks per row (of 1 block when the row does not take
    // the resident path).
    clusterRank = gpu::ClusterBlockIdOp::create(b, gpu::Dimension::x);
    clusterSize = gpu::ClusterDimBlocksOp::create(b, gpu::Dimension::x);
    row = arith::DivUIOp::create(b, row, clusterSize);
  }
  at.numClasses = memref::DimOp::create(b, args.x, config.axis);
  at.numClassesF = indexToF32(at.numClasses);
  bindGlobalClasses(kernelArgs.numClasses);
  bindScalars(kernelArgs);
  at.numRows = emitRowCount(args.x, config.axis);
  // The host launches max(rows, 1) blocks (a grid cannot be empty).
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, at.numRows);
  auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  at.rowIdx = emitDelinearize(row, args.x, config.axis);

  TargetInfo target;
  if (!probs)
    target = emitTarget();

  // Probability targets (two-pass kernels, no register cap) read the
  // divisors before the row, so that the load's latency is not added to
  // each row's tail; the others where they use them.
  std::optional<Divisors> preloaded;
  if (probs && spec.needsDivisors())
    preloaded = emitDivisors();

  TwoPassWalk twoPass(*this);
  if (!residentPath) {
    emitRowBody(twoPass, target, preloaded);
  } else {
    // The resident path when the row has the length for it, 16-byte
    // accesses and the gradient is not written over the logits (uniform in
    // the cluster); otherwise block 0 of the cluster does the row with the
    // two-pass code (the others have nothing to do; the host launches
    // clusters of one block where the size below is 0).
    Value size = emitResidentClusterSize(b, b.getLoc(), at.numClasses, spec,
                                         geometry, args.x, args.dlogits);
    Value fits =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, size, cstIdx(0));
    Value ok = arith::AndIOp::create(
        b, fits,
        emitCanVectorize({args.x, args.dlogits},
                         geometry.vectorWidth(spec.logitsType)));
    auto ifOp = scf::IfOp::create(b, ok, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      ResidentWalk resident(*this, clusterRank, clusterSize);
      emitRowBody(resident, target, preloaded);
      b.setInsertionPointToStart(ifOp.elseBlock());
      Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                          clusterRank, cstIdx(0));
      auto only = scf::IfOp::create(b, first, /*withElseRegion=*/false);
      b.setInsertionPointToStart(only.thenBlock());
      emitRowBody(twoPass, target, preloaded);
    }
  }
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
}

TargetInfo KernelEmitter::emitTarget() {
  return emitTargetOf(memref::LoadOp::create(b, args.target, at.rowIdx));
}

TargetInfo KernelEmitter::emitTargetOf(Value t) {
  TargetInfo target;
  Type i64 = b.getI64Type();
  if (t.getType() != i64)
    t = arith::ExtSIOp::create(b, i64, t);
  target.value = t;
  auto cstI64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
  };
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, p, x, y);
  };
  target.kept = cmp(arith::CmpIPredicate::ne, t, args.ignoreIndex);
  // In range of the whole row's classes (a slice's num_classes).
  target.valid = arith::AndIOp::create(
      b, cmp(arith::CmpIPredicate::sge, t, cstI64(0)),
      cmp(arith::CmpIPredicate::slt, t, at.globalClasses));
  Value safe = select(target.valid, t, cstI64(0));
  target.index = arith::IndexCastOp::create(b, b.getIndexType(), safe);
  if (!spec.rowStatsWidth && !spec.classSlice())
    return target;
  // Whether the row's classes hold the target: kept, valid and, for a
  // slice, one of [offset, offset + c), its index then local.
  Value owned = arith::AndIOp::create(b, target.kept, target.valid);
  if (spec.classSlice()) {
    Value local = arith::SubIOp::create(b, safe, args.classOffset);
    Value width = arith::IndexCastUIOp::create(b, i64, at.numClasses);
    owned = arith::AndIOp::create(
        b, owned,
        arith::AndIOp::create(b, cmp(arith::CmpIPredicate::sge, local, cstI64(0)),
                              cmp(arith::CmpIPredicate::slt, local, width)));
    Value localIndex = select(owned, local, cstI64(0));
    target.index = arith::IndexCastOp::create(b, b.getIndexType(), localIndex);
    if (!spec.withGrad) {
      // The slice's own loss (the op's `loss`): a target that the slice
      // does not hold counts as ignored, one out of range too, as the
      // decomposition's local targets (-1 there, the ignore_index).
      target.kept = owned;
      target.valid = arith::ConstantOp::create(b, b.getBoolAttr(true));
      target.value = select(owned, local, cstI64(-1));
    }
  }
  target.owned = owned;
  return target;
}

void KernelEmitter::bindGlobalClasses(Value numClassesArg) {
  if (numClassesArg) {
    at.globalClasses = numClassesArg;
    at.globalClassesF = arith::SIToFPOp::create(b, f32, numClassesArg);
    return;
  }
  at.globalClasses =
      arith::IndexCastUIOp::create(b, b.getI64Type(), at.numClasses);
  at.globalClassesF = at.numClassesF;
}

Value KernelEmitter::loadRowStat(ArrayRef<Value> rowIdx, int64_t j) {
  return memref::LoadOp::create(b, args.rowStats, rowStatIndex(rowIdx, j));
}

RowStats KernelEmitter::emitMergedRowStats() {
  RowStats stats;
  stats.max = loadRowStat(at.rowIdx, 0);
  stats.sumExp = loadRowStat(at.rowIdx, 1);
  // Σ w of weighted label smoothing (unweighted: the whole row's C).
  if (args.weight && config.hasLabelSmoothing())
    stats.mass = loadRowStat(at.rowIdx, spec.rowStatsWidth - 1);
  stats.logSumExp = emitAccurateLog(stats.sumExp);
  stats.lse = add(stats.max, stats.logSumExp);
  return stats;
}

void KernelEmitter::emitRowStatsOutput(Value isWriter, const RowStats &stats,
                                       const TargetInfo &target) {
  auto ifOp = scf::IfOp::create(b, isWriter, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> values = {
      stats.max, stats.sumExp,
      select(target.owned, getTargetLogit(target),
             cstF(-std::numeric_limits<double>::infinity()))};
  if (args.weight)
    values.push_back(
        select(target.owned, loadWeight(target.index), cstF(0.0)));
  if (config.hasLabelSmoothing())
    values.append({stats.gap, stats.mass});
  assert(static_cast<int64_t>(values.size()) == spec.rowStatsWidth &&
         "the statistics' layout");
  for (auto [j, v] : llvm::enumerate(values))
    memref::StoreOp::create(b, v, args.rowStats, rowStatIndex(at.rowIdx, j));
}

void KernelEmitter::emitRowBody(RowWalk &walk, TargetInfo target,
                                std::optional<Divisors> preloaded) {
  bool probs = config.probabilityTargets;
  // Where dlogits may be the logits' own buffer (in place) the target's
  // logit, which the loss and the gradient's target element need after
  // other threads have begun writing the row, is read first. (In place
  // takes the two-pass walk; the resident walk reads it where it is used,
  // keeping the register for the staged slice.)
  target.logit = Value();
  if (!probs && walk.mayWriteInPlace() && (spec.lossType || spec.withGrad))
    target.logit = loadLogit(target.index);
  RowStats stats;
  if (spec.readsRowStats()) {
    // The merged statistics instead of a walk over the row; w_t from them
    // (the target may be another slice's class).
    stats = emitMergedRowStats();
    if (args.weight)
      target.weight = loadRowStat(at.rowIdx, 3);
    // No statistics walk, so no reduction's barrier between every thread's
    // read of x_t and the gradient's writes (maybe over the logits).
    if (target.logit)
      gpu::BarrierOp::create(b);
  } else {
    stats = emitRowStatistics(walk);
  }
  // Thread 0 (of block 0 of the cluster) writes the row's results.
  Value isThread0 = walk.emitIsRowWriter(
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, at.tid, cstIdx(0)));
  emitRowOutputs(isThread0, stats, target, preloaded);
  if (spec.writesRowStats())
    emitRowStatsOutput(isThread0, stats, target);
  if (spec.lossType)
    emitRowLoss(isThread0, stats, target, preloaded);
  if (spec.accumulates() && spec.finalizes)
    emitFinalize(isThread0);
  if (spec.withGrad)
    emitGradientPass(walk, stats, target, preloaded);
}

void KernelEmitter::emitRowLoss(Value isThread0, const RowStats &stats,
                                const TargetInfo &target,
                                std::optional<Divisors> preloaded) {
  bool probs = config.probabilityTargets;
  Value zero = cstF(0.0);
  Value rowLoss;
  // Differences from the max first, log Σ last: lse - x = (m - x) + log Σ
  // is exact to the f32 spacing of the loss, where forming lse first would
  // round it to the spacing of m (a loss below ulp(m) would come out 0).
  if (probs) {
    // -Σ f_c (x_c - lse) = Σ f (m - x) + Σf · log Σ
    rowLoss = add(stats.gap, mul(stats.mass, stats.logSumExp));
  } else {
    Value xt = getTargetLogit(target);
    Value wt = loadWeight(target.index);
    Value nll = add(sub(stats.max, xt), stats.logSumExp);
    rowLoss =
        mul(mul(args.smoothing ? args.keepShare : cstF(1.0), wt), nll);
    if (args.smoothing) {
      // Σ_c w_c (lse - x_c) = Σ w (m - x) + Σw · log Σ
      Value smooth = add(stats.gap, mul(stats.mass, stats.logSumExp));
      Value smoothed = add(rowLoss, mul(args.smoothShare, smooth));
      // A run-time ε of 0 is no smoothing, also where Σ is not finite (a
      // -inf logit: 0 · inf would be NaN).
      if (config.scalars.labelSmoothing)
        smoothed = select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                                args.smoothing, cstF(0.0)),
                          rowLoss, smoothed);
      rowLoss = smoothed;
    }
    rowLoss = select(target.valid, rowLoss,
                     cstF(std::numeric_limits<double>::quiet_NaN()));
  }
  KernelMath math(*this);
  Value rowZ = args.zScale ? loss::zLossTerm(math, stats.lse) : zero;

  Value writes = isThread0;
  if (target.kept && spec.reduced())
    writes = arith::AndIOp::create(b, isThread0, target.kept);
  auto ifOp = scf::IfOp::create(b, writes, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  if (!spec.reduced()) {
    Value total = add(rowLoss, rowZ);
    if (target.kept) {
      total = select(target.kept, total, zero);
      rowZ = select(target.kept, rowZ, zero);
    }
    emitStoreLoss([&](Value buffer) {
      Type type = cast<MemRefType>(buffer.getType()).getElementType();
      memref::StoreOp::create(b, fromF32(total, type), buffer, at.rowIdx);
    });
    if (args.zLoss)
      memref::StoreOp::create(b, fromF32(rowZ, spec.zLossType), args.zLoss,
                              at.rowIdx);
    return;
  }
  // The loss includes the z-loss: the op's loss is their sum.
  Divisors divisors = emitDivisors(preloaded);
  Value zPart = emitShare(rowZ, divisors.count);
  Value lossPart = emitShare(rowLoss, divisors.weight);
  if (config.hasZLoss())
    lossPart = arith::AddFOp::create(b, lossPart, zPart);
  emitAccumulate(lossPart, kLossSlot);
  if (spec.zLossType)
    emitAccumulate(zPart, kZLossSlot);
}

Value KernelEmitter::emitShare(Value part, Value divisor) {
  // The division in f32 (an f64 one would add its slow path's call, and a
  // stack frame, to kernels at their register cap): each share is rounded
  // once, the sum of the shares not at all.
  return toF64(div(part, divisor));
}

Value KernelEmitter::emitAccumulate(Value v, ScratchSlot slot) {
  auto addKind =
      arith::AtomicRMWKindAttr::get(b.getContext(), arith::AtomicRMWKind::addf);
  return memref::AtomicRMWOp::create(b, b.getF64Type(), addKind, v,
                                     args.scratch,
                                     ValueRange{cstIdx(slot)});
}

void KernelEmitter::emitStoreReduced(Value result, Value v) {
  if (!result)
    return;
  Type type = cast<MemRefType>(result.getType()).getElementType();
  memref::StoreOp::create(b, arith::TruncFOp::create(b, type, v), result,
                          ValueRange{});
}

void KernelEmitter::emitFinalize(Value isWriter) {
  auto writer = scf::IfOp::create(b, isWriter, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(writer.thenBlock());
  // This row's parts are performed at the device before it counts itself
  // (release); the row that counts last orders its reads after every
  // count (acquire), and reads the sums with atomics (L2, never a stale L1
  // line: the prologue's divisors share it).
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  Value before = emitAccumulate(cstF64(1.0), kRowsDoneSlot);
  Value rows = arith::UIToFPOp::create(
      b, b.getF64Type(),
      arith::IndexCastUIOp::create(b, b.getI64Type(), at.numRows));
  Value last = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                     arith::AddFOp::create(b, before,
                                                           cstF64(1.0)),
                                     rows);
  auto ifLast = scf::IfOp::create(b, last, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifLast.thenBlock());
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  if (args.loss) {
    Value total = emitAccumulate(cstF64(0.0), kLossSlot);
    emitStoreLoss([&](Value buffer) { emitStoreReduced(buffer, total); });
  }
  for (auto [result, slot] : {std::pair{args.zLoss, kZLossSlot},
                              {args.accuracy, kAccuracySlot}})
    if (result)
      emitStoreReduced(result, emitAccumulate(cstF64(0.0), slot));
}

void KernelEmitter::emitStoreLoss(function_ref<void(Value)> store) {
  if (!args.narrowLoss) {
    store(args.loss);
    return;
  }
  auto ifOp = scf::IfOp::create(b, args.lossIsNarrow, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  store(args.narrowLoss);
  b.setInsertionPointToStart(ifOp.elseBlock());
  store(args.loss);
}

void KernelEmitter::emitRowOutputs(Value isWriter, const RowStats &stats,
                                   const TargetInfo &target,
                                   std::optional<Divisors> preloaded) {
  if (!spec.lseType && !spec.argmaxType && !spec.accuracyType)
    return;
  auto ifOp = scf::IfOp::create(b, isWriter, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  // lse and argmax do not depend on the target: every row has them.
  if (spec.lseType)
    memref::StoreOp::create(b, fromF32(stats.lse, spec.lseType), args.lse,
                            at.rowIdx);
  // An empty row (C = 0) keeps the "no class" index: it reports 0.
  Value none = arith::ConstantOp::create(
      b, b.getI32IntegerAttr(std::numeric_limits<int32_t>::max()));
  Value argmax;
  if (stats.argmax)
    argmax = select(arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                          stats.argmax, none),
                    arith::ConstantOp::create(b, b.getI32IntegerAttr(0)),
                    stats.argmax);
  if (spec.argmaxType) {
    Value v = argmax;
    if (!spec.argmaxType.isInteger(32))
      v = arith::ExtUIOp::create(b, spec.argmaxType, v);
    memref::StoreOp::create(b, v, args.argmax, at.rowIdx);
  }
  if (!spec.accuracyType)
    return;
  // Correct: a kept row whose target is its argmax (accuracy takes class
  // indices only).
  Value hit = arith::AndIOp::create(
      b, target.kept,
      arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, target.value,
          arith::ExtUIOp::create(b, b.getI64Type(), argmax)));
  Value correct = select(hit, cstF(1.0), cstF(0.0));
  if (!spec.reduced()) {
    memref::StoreOp::create(b, fromF32(correct, spec.accuracyType),
                            args.accuracy, at.rowIdx);
    return;
  }
  // Σ correct, or Σ correct / (number of kept rows) for mean; ignored rows
  // add nothing.
  auto keptIf = scf::IfOp::create(b, target.kept, /*withElseRegion=*/false);
  b.setInsertionPointToStart(keptIf.thenBlock());
  emitAccumulate(emitShare(correct, emitDivisors(preloaded).count),
                 kAccuracySlot);
}

void KernelEmitter::bindThread() {
  at.tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  at.lane = arith::RemUIOp::create(b, at.tid, cstIdx(kLanes));
  at.warp = arith::DivUIOp::create(b, at.tid, cstIdx(kLanes));
}

void KernelEmitter::bindScalars(const RowKernelArgs<Value> &kernelArgs) {
  args.smoothing = kernelArgs.labelSmoothing;
  args.zScale = kernelArgs.zLossScale;
  args.softcap = kernelArgs.softcap;
  // Once per thread; the divisions round to nearest, as the constants the
  // host folded before these were arguments.
  if (args.softcap)
    args.invSoftcap = div(cstF(1.0), args.softcap);
  if (args.smoothing) {
    args.keepShare = sub(cstF(1.0), args.smoothing);
    // ε / C of the whole row (a slice's num_classes).
    args.smoothShare = div(args.smoothing, at.globalClassesF);
  }
  if (args.softcap && spec.softcapMayBeOff)
    args.softcapOff = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                            args.softcap, cstF(0.0));
}

Divisors KernelEmitter::emitDivisors(std::optional<Divisors> preloaded) {
  if (preloaded)
    return *preloaded;
  // f32 values the prologue widened: exact.
  auto load = [&](ScratchSlot slot) -> Value {
    return arith::TruncFOp::create(
        b, f32,
        memref::LoadOp::create(b, args.scratch, ValueRange{cstIdx(slot)}));
  };
  Value weight = load(kWeightSlot);
  return {weight, load(kCountSlot)};
}

void KernelEmitter::emitPrologueKernel(gpu::GPUFuncOp func) {
  // One block: Σ kept weights and the kept count (class indices, mean), then
  // the accumulators' initial values (NaN for a mean over nothing, else 0),
  // and the same as the results where the row kernel takes them: what they
  // are when there is no row to write them.
  bool probs = config.probabilityTargets;
  PrologueKernelArgs<Value> kernelArgs = bindKernelArgs(
      getPrologueKernelArgTypes(b.getContext(), spec), func.getArguments());
  bindSharedArgs(func, kernelArgs);

  args.x = kernelArgs.x;
  args.rowStats = kernelArgs.rowStats;
  args.classOffset = kernelArgs.classOffset;

  bindThread();
  at.numRows = emitRowCount(args.target, probs ? config.axis : -1);
  if (args.x) {
    // A class slice's count: its classes and the whole row's.
    at.numClasses = memref::DimOp::create(b, args.x, config.axis);
    at.numClassesF = indexToF32(at.numClasses);
    bindGlobalClasses(kernelArgs.numClasses);
  } else if (args.weight) {
    // Whole rows: the weights' count is the row's (the verifier's rule),
    // the range of a class index.
    at.globalClasses = arith::IndexCastUIOp::create(
        b, b.getI64Type(), memref::DimOp::create(b, args.weight, 0));
  }
  Value zero = cstF(0.0);

  Value weightTotal, count;
  if (spec.needsStats()) {
    auto loop = scf::ForOp::create(
        b, at.tid, at.numRows, cstIdx(geometry.threads), ValueRange{zero, zero},
        [&](OpBuilder &nb, Location loc, Value r, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> rowIdx = emitDelinearize(r, args.target, /*skip=*/-1);
          Value t = memref::LoadOp::create(b, args.target, rowIdx);
          Value isKept, w = cstF(1.0);
          if (!spec.readsRowStats() && (spec.classSlice() || args.weight)) {
            // The row kernel's reading of the target: a slice's own loss
            // keeps the targets it holds; an out-of-range class reads
            // weight[0] (its loss is NaN anyway).
            TargetInfo target = emitTargetOf(t);
            isKept = target.kept;
            w = loadWeight(target.index);
          } else {
            Type i64 = b.getI64Type();
            if (t.getType() != i64)
              t = arith::ExtSIOp::create(b, i64, t);
            isKept = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, t,
                                           args.ignoreIndex);
            // A gradient from merged statistics: w_t from them.
            if (spec.readsRowStats() && args.weight)
              w = loadRowStat(rowIdx, 3);
          }
          Value wKept = select(isKept, w, zero);
          Value one = select(isKept, cstF(1.0), zero);
          scf::YieldOp::create(
              b, ValueRange{add(acc[0], wKept), add(acc[1], one)});
        });
    SmallVector<Value> totals = emitBlockAllReduce(
        SmallVector<Value>(loop.getResults().begin(), loop.getResults().end()),
        ReductionPlan::sums(), args.reduceScratch);
    weightTotal = totals[0];
    count = totals[1];
  } else if (config.reduction == Reduction::mean) {
    weightTotal = count = indexToF32(at.numRows);
  } else {
    weightTotal = count = cstF(1.0);
  }

  Value isThread0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, at.tid, cstIdx(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto store = [&](Value v, ScratchSlot slot) {
      memref::StoreOp::create(b, v, args.scratch, ValueRange{cstIdx(slot)});
    };
    if (spec.needsDivisors()) {
      store(toF64(weightTotal), kWeightSlot);
      store(toF64(count), kCountSlot);
    }
    Value nan = cstF64(std::numeric_limits<double>::quiet_NaN());
    Value zero64 = cstF64(0.0);
    auto initial = [&](Value divisor) -> Value {
      if (config.reduction != Reduction::mean)
        return zero64;
      Value none =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, divisor, zero);
      return select(none, nan, zero64);
    };
    // The loss divides by the kept weight, the z-loss and accuracy by the
    // kept count.
    Value lossInit = initial(weightTotal);
    Value countInit = spec.needsStats() ? initial(count) : lossInit;
    if (spec.accumulates()) {
      store(lossInit, kLossSlot);
      store(countInit, kZLossSlot);
      store(countInit, kAccuracySlot);
      store(zero64, kRowsDoneSlot);
    }
    emitStoreReduced(args.loss, lossInit);
    emitStoreReduced(args.zLoss, countInit);
    emitStoreReduced(args.accuracy, countInit);
  }
  gpu::ReturnOp::create(b);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

MemRefType mlir::xent::getScratchType(MLIRContext *ctx) {
  return MemRefType::get({kScratchSlots}, Float64Type::get(ctx));
}

MemRefType mlir::xent::getBufferType(MLIRContext *ctx, int64_t rank,
                                     Type elementType) {
  int64_t d = ShapedType::kDynamic;
  SmallVector<int64_t> dynamic(rank, d);
  return MemRefType::get(dynamic, elementType,
                         StridedLayoutAttr::get(ctx, d, dynamic));
}

/// A kernel with, when `reduceComponents` > 0, the block reduction's
/// workgroup scratch for that many components (at least 4).
static gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                                   TypeRange argTypes,
                                   const LaunchGeometry &geometry,
                                   int64_t reduceComponents) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> workgroup;
  if (reduceComponents > 0) {
    assert(reduceComponents <= kMaxComponents && "too many components");
    auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    int64_t rows = std::max<int64_t>(4, reduceComponents);
    workgroup.push_back(MemRefType::get({rows, kMaxWarps},
                                        b.getF32Type(),
                                        MemRefLayoutAttrInterface(), space));
  }
  auto func = gpu::GPUFuncOp::create(
      b, loc, name, b.getFunctionType(argTypes, {}), workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(geometry.threads), 1, 1}));
  return func;
}

/// Class indices have one dim less than the logits; probabilities as many.
static MemRefType getTargetType(MLIRContext *ctx, const KernelSpec &spec) {
  return getBufferType(
      ctx, spec.config.probabilityTargets ? spec.rank() : spec.rowRank(),
      spec.targetType);
}

RowKernelArgs<Type> mlir::xent::getRowKernelArgTypes(MLIRContext *ctx,
                                                     const KernelSpec &spec) {
  auto reducedOrElements = [&](Type t) -> Type {
    return getBufferType(ctx, spec.reduced() ? 0 : spec.rowRank(), t);
  };
  RowKernelArgs<Type> args;
  args.x = getBufferType(ctx, spec.rank(), spec.logitsType);
  args.target = getTargetType(ctx, spec);
  if (spec.weightType)
    args.weight = getBufferType(ctx, 1, spec.weightType);
  if (spec.needsScratch())
    args.scratch = getScratchType(ctx);
  if (spec.gradOutputType)
    args.gradOutput = reducedOrElements(spec.gradOutputType);
  // Reduced results only when the kernel writes them (the accumulators are
  // in the scratch).
  bool results = !spec.reduced() || spec.takesReducedResults();
  if (spec.lossType && results) {
    args.loss = reducedOrElements(spec.lossType);
    if (spec.narrowLossType) {
      args.narrowLoss = reducedOrElements(spec.narrowLossType);
      args.lossIsNarrow = IntegerType::get(ctx, 1);
    }
  }
  if (spec.zLossType && results)
    args.zLoss = reducedOrElements(spec.zLossType);
  if (spec.lseType)
    args.lse = getBufferType(ctx, spec.rowRank(), spec.lseType);
  if (spec.argmaxType)
    args.argmax = getBufferType(ctx, spec.rowRank(), spec.argmaxType);
  if (spec.accuracyType && results)
    args.accuracy = reducedOrElements(spec.accuracyType);
  Type f32 = Float32Type::get(ctx);
  if (spec.rowStatsWidth)
    args.rowStats = getBufferType(ctx, spec.rowRank() + 1, f32);
  if (spec.withGrad)
    args.dlogits = getBufferType(ctx, spec.rank(), spec.getDlogitsType());
  const CrossEntropyConfig &config = spec.config;
  Type i64 = IntegerType::get(ctx, 64);
  if (!config.probabilityTargets)
    args.ignoreIndex = i64;
  if (config.hasLabelSmoothing())
    args.labelSmoothing = f32;
  if (config.hasZLoss())
    args.zLossScale = f32;
  if (config.hasSoftcap())
    args.softcap = f32;
  if (spec.classSlice())
    args.classOffset = args.numClasses = i64;
  return args;
}

PrologueKernelArgs<Type>
mlir::xent::getPrologueKernelArgTypes(MLIRContext *ctx,
                                      const KernelSpec &spec) {
  PrologueKernelArgs<Type> args;
  args.target = getTargetType(ctx, spec);
  if (spec.weightType)
    args.weight = getBufferType(ctx, 1, spec.weightType);
  args.scratch = getScratchType(ctx);
  if (spec.takesReducedResults()) {
    if (spec.lossType)
      args.loss = getBufferType(ctx, 0, spec.lossType);
    if (spec.zLossType)
      args.zLoss = getBufferType(ctx, 0, spec.zLossType);
    if (spec.accuracyType)
      args.accuracy = getBufferType(ctx, 0, spec.accuracyType);
  }
  Type i64 = IntegerType::get(ctx, 64);
  if (spec.needsStats())
    args.ignoreIndex = i64;
  // What the count of a slice's own loss needs; the merged w_t of a
  // weighted gradient from statistics.
  if (spec.needsStats() && spec.classSlice() && !spec.readsRowStats()) {
    args.x = getBufferType(ctx, spec.rank(), spec.logitsType);
    args.classOffset = args.numClasses = i64;
  }
  if (spec.needsStats() && spec.readsRowStats() && spec.weightType)
    args.rowStats =
        getBufferType(ctx, spec.rowRank() + 1, Float32Type::get(ctx));
  return args;
}

gpu::GPUFuncOp mlir::xent::buildRowKernel(OpBuilder &b, Location loc,
                                          StringRef name,
                                          const KernelSpec &spec,
                                          const LaunchGeometry &geometry) {
  SmallVector<Type> args = getRowKernelArgTypes(b.getContext(), spec).list();
  gpu::GPUFuncOp func = createKernel(b, loc, name, args, geometry,
                                     spec.reduceComponents());
  // At most 64 registers per thread at 1024 threads per SM, so that two
  // blocks of 512 (each with its staging memory) share an SM.
  if (hasResidentPath(spec, geometry)) {
    func->setAttr(
        NVVM::NVVMDialect::getMinctasmAttrName(),
        b.getI32IntegerAttr(std::max<int64_t>(1, 1024 / geometry.threads)));
    func->setAttr(
        NVVM::NVVMDialect::getMaxntidAttrName(),
        b.getDenseI32ArrayAttr({static_cast<int32_t>(geometry.threads), 1, 1}));
  }
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  KernelEmitter(ib, spec, geometry).emitRowKernel(func);
  return func;
}

gpu::GPUFuncOp mlir::xent::buildPrologueKernel(OpBuilder &b, Location loc,
                                               StringRef name,
                                               const KernelSpec &spec,
                                               const LaunchGeometry &geometry) {
  SmallVector<Type> args =
      getPrologueKernelArgTypes(b.getContext(), spec).list();
  gpu::GPUFuncOp func = createKernel(b, loc, name, args, geometry,
                                     /*reduceComponents=*/2);
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  KernelEmitter(ib, spec, geometry).emitPrologueKernel(func);
  return func;
}

gpu::GPUFuncOp mlir::xent::buildConvertKernel(OpBuilder &b, Location loc,
                                              StringRef name, Type dstType,
                                              ScratchSlot slot) {
  MLIRContext *ctx = b.getContext();
  LaunchGeometry single{kLanes};
  gpu::GPUFuncOp func =
      createKernel(b, loc, name,
                   {getScratchType(ctx), getBufferType(ctx, 0, dstType)},
                   single, /*reduceComponents=*/0);
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  Value tid = gpu::ThreadIdOp::create(ib, gpu::Dimension::x);
  Value isThread0 = arith::CmpIOp::create(
      ib, arith::CmpIPredicate::eq, tid, arith::ConstantIndexOp::create(ib, 0));
  auto ifOp = scf::IfOp::create(ib, isThread0, /*withElseRegion=*/false);
  ib.setInsertionPointToStart(ifOp.thenBlock());
  Value v = memref::LoadOp::create(
      ib, func.getArgument(0),
      ValueRange{arith::ConstantIndexOp::create(ib, slot)});
  if (!dstType.isF64())
    v = arith::TruncFOp::create(ib, dstType, v);
  memref::StoreOp::create(ib, v, func.getArgument(1), ValueRange{});
  ib.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(ib);
  return func;
}
