//===- RowStatistics.cpp - Per-row statistics of the xent kernels ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The first walk over a row: each thread keeps a running max and Σexp
// (online softmax) and, for label smoothing / probability targets, the
// weighted sums the loss needs (Σ f and Σ f (m - x), rebased when m grows), over scalar or 16-byte vector loads (or the
// resident slice); then the block (and cluster) combines them into the row's
// log-sum-exp.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

SmallVector<Value> KernelEmitter::emitStatisticsStep(ArrayRef<Value> cs,
                                                     ArrayRef<Value> xs,
                                                     ValueRange acc) {
  bool probs = config.probabilityTargets;
  bool extras = massSlot >= 0;
  // Online softmax: rescale the running sum once per step, then add the
  // step's exponentials relative to the new maximum.
  Value stepMax = xs[0];
  for (Value x : xs.drop_front())
    stepMax = arith::MaximumFOp::create(b, stepMax, x);
  Value m = arith::MaximumFOp::create(b, acc[0], stepMax);
  Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, acc[0], m);
  Value s = mul(acc[1], select(same, cstF(1.0), exp(sub(acc[0], m))));
  for (Value x : xs)
    s = add(s, exp(sub(x, m)));
  SmallVector<Value> next = {m, s};
  if (extras) {
    // Σ f (m - x) relative to the running max: rebased once per step, then
    // each term is >= 0 (max(m - x, 0) is 0, not NaN, where both are -inf).
    Value mass = acc[2];
    Value gap = rebaseGap(acc[3], mass, acc[0], m);
    for (auto [c, x] : llvm::zip(cs, xs)) {
      Value f = loadWeight(c);
      if (probs)
        f = mul(f, emitSmoothedProbability(
                       memref::LoadOp::create(b, target, rowIndex(c))));
      mass = add(mass, f);
      gap = add(gap, mul(f, arith::MaxNumFOp::create(b, sub(m, x), cstF(0.0))));
    }
    next.push_back(mass);
    next.push_back(gap);
  }
  if (argmaxSlot >= 0) {
    // The step's classes are consecutive: its first element equal to the
    // step's max (the first NaN when that is NaN), at a small constant
    // offset; then the step against the best so far by the rule of the
    // block's combine (the resident path visits a thread's vectors out of
    // order).
    Type i32 = b.getI32Type();
    Value offset = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
    // Some element is the max (or NaN), so the scan from the back always
    // ends on the first one.
    for (int64_t e = static_cast<int64_t>(xs.size()) - 1; e >= 0; --e) {
      Value hit = arith::OrIOp::create(
          b,
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, xs[e], stepMax),
          arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, xs[e], xs[e]));
      offset = arith::SelectOp::create(
          b, hit, arith::ConstantOp::create(b, b.getI32IntegerAttr(e)),
          offset);
    }
    Value stepIndex = arith::AddIOp::create(
        b, arith::IndexCastUIOp::create(b, i32, cs[0]), offset);
    // The step wins when it raised the max (m is not the old best, which
    // was a number: a larger value or a first NaN), or on a tie (both NaN
    // counting as equal) with the smaller index.
    Value index = acc[argmaxSlot];
    Value raised = arith::AndIOp::create(
        b, arith::XOrIOp::create(b, same, arith::ConstantOp::create(
                                              b, b.getBoolAttr(true))),
        arith::CmpFOp::create(b, arith::CmpFPredicate::ORD, acc[0], acc[0]));
    Value tie = arith::OrIOp::create(
        b, arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, stepMax, acc[0]),
        arith::AndIOp::create(
            b, arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, acc[0], acc[0]),
            arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, stepMax,
                                  stepMax)));
    Value earlier =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, stepIndex, index);
    Value take = arith::OrIOp::create(
        b, raised, arith::AndIOp::create(b, tie, earlier));
    next.push_back(arith::SelectOp::create(b, take, stepIndex, index));
  }
  return next;
}

void KernelEmitter::emitRowStatistics() {
  // On the resident path (label smoothing without class weights) Σ (m - x)
  // comes from a second walk over the on-chip row once m is known
  // (emitResidentGap), and Σ f is the number of classes: the first walk is
  // the plain one, in the registers it has.
  bool gapAfter = spec.needsClassSums() && resident;
  bool extras = spec.needsClassSums() && !gapAfter;
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zero = cstF(0.0);

  SmallVector<Value> init = {negInf, zero};
  massSlot = gapSlot = argmaxSlot = -1;
  if (extras) {
    massSlot = init.size();
    init.push_back(zero); // Σ f
    gapSlot = init.size();
    init.push_back(zero); // Σ f (m - x)
  }
  if (spec.needsArgmax()) {
    // No class yet: the largest index, which every class beats on a tie
    // (so a row of -inf gets class 0, as torch.argmax).
    argmaxSlot = init.size();
    init.push_back(arith::ConstantOp::create(
        b, b.getI32IntegerAttr(std::numeric_limits<int32_t>::max())));
  }
  SmallVector<Type> types =
      llvm::map_to_vector(init, [](Value v) { return v.getType(); });

  // Scalar walk: classes tid, tid + T, ...
  auto scalarLoop = [&]() -> SmallVector<Value> {
    auto loop = scf::ForOp::create(
        b, tid, numClasses, cstIdx(geometry.threads), init,
        [&](OpBuilder &nb, Location loc, Value c, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, emitStatisticsStep({c}, {loadLogit(c)}, acc));
        });
    return SmallVector<Value>(loop.getResults());
  };

  SmallVector<Value> partial;
  int64_t width = geometry.vectorWidth(spec.logitsType);
  if (resident) {
    partial = emitResidentStatistics(init);
  } else if (spec.contiguousRows && width > 1) {
    // Vector walk: each thread loads `width` consecutive logits at a time
    // (16 bytes), threads side by side.
    Value canVectorize = emitCanVectorize({x}, width);
    auto ifOp = scf::IfOp::create(b, types, canVectorize,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value x2 = rowVectorView(x);
      Value first = arith::MulIOp::create(b, tid, cstIdx(width));
      int64_t chunk = geometry.threads * width;
      // kUnroll loads are issued before any is used, so each thread keeps
      // several 16-byte requests in flight.
      auto loop = scf::ForOp::create(
          b, first, numClasses, cstIdx(chunk * kUnroll), init,
          [&](OpBuilder &nb, Location loc, Value c0, ValueRange accRange) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            UnrolledStep step = emitUnrolledLoads(x2, c0, chunk, width);
            SmallVector<Value> acc(accRange);
            for (int64_t u = 0; u < kUnroll; ++u) {
              SmallVector<Value> cs, xs;
              unpackVector(inRowStart(step, u), step.vecs[u], width, cs, xs);
              SmallVector<Value> next = emitStatisticsStep(cs, xs, acc);
              for (auto [a, n] : llvm::zip(acc, next))
                a = select(step.inside[u], n, a);
            }
            scf::YieldOp::create(b, acc);
          });
      scf::YieldOp::create(b, loop.getResults());
    }
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, scalarLoop());
    }
    partial = SmallVector<Value>(ifOp.getResults());
  } else {
    partial = scalarLoop();
  }

  SmallVector<Value> totals = emitBlockAllReduce(partial);
  if (resident)
    totals = emitClusterAllReduce(totals);
  rowMax = totals[0];
  rowSumExp = totals[1];
  if (extras) {
    rowMass = totals[massSlot];
    rowGap = totals[gapSlot];
  }
  if (gapAfter) {
    rowMass = numClassesF;
    rowGap = emitResidentGap();
  }
  if (argmaxSlot >= 0)
    rowArgmax = totals[argmaxSlot];
  // The loss adds log Σ to differences from m (emitRowBody); lse = m + log Σ
  // itself only enters the z-loss and the lse output.
  if (!spec.lossType && !config.hasZLoss() && !spec.lseType)
    return;
  logSumExp = emitAccurateLog(rowSumExp);
  if (config.hasZLoss() || spec.lseType)
    lse = add(rowMax, logSumExp);
}
