//===- RowStatistics.cpp - Per-row statistics of the xent kernels ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The first walk over a row: each thread keeps a running max and Σexp
// (online softmax) and, for label smoothing / probability targets, the
// weighted sums the loss needs (Σ f and Σ f (m - x), rebased when m grows;
// for label smoothing without class weights Σ (x - r) alone) over the
// logits its walk (TwoPassRows.cpp, ResidentRows.cpp) gives it;
// then the block (and cluster) combines them into the row's log-sum-exp.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

SmallVector<Value>
KernelEmitter::emitStatisticsStep(ArrayRef<Value> cs, ArrayRef<Value> xs,
                                  ValueRange acc, const ReductionPlan &plan) {
  bool probs = config.probabilityTargets;
  bool extras = plan.massSlot >= 0;
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
        f = mul(f, emitSmoothedProbability(loadTargetProbability(c)));
      mass = add(mass, f);
      gap = add(gap, mul(f, arith::MaxNumFOp::create(b, sub(m, x), cstF(0.0))));
    }
    next.push_back(mass);
    next.push_back(gap);
  } else if (plan.offsetSumSlot >= 0) {
    // Σ (x - r): one subtraction and one addition per element, no rebase.
    Value sum = acc[plan.offsetSumSlot];
    for (Value x : xs)
      sum = add(sum, sub(x, plan.offsetReference));
    next.push_back(sum);
  }
  if (plan.argmaxSlot >= 0) {
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
    Value index = acc[plan.argmaxSlot];
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

RowStats KernelEmitter::emitRowStatistics(RowWalk &walk) {
  // Label smoothing without class weights: Σ f is the number of classes C
  // and Σ (m - x) = C (m - r) - Σ (x - r), with Σ (x - r) a plain sum beside
  // the max and r the row's first logit: the walk, its block reduction and
  // (resident) its cluster exchange are the plain ones with one more
  // component, no second walk after the max and no rebase per step. Against
  // r, not 0, the sum does not cancel a common offset of the row's logits
  // (x ≈ 1000 ± 3 sums differences of ± 3).
  bool offsets = spec.classSumsFromOffsets();
  bool extras = spec.needsClassSums() && !offsets;
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zero = cstF(0.0);

  SmallVector<Value> init = {negInf, zero};
  ReductionPlan plan;
  if (extras) {
    plan.massSlot = init.size();
    init.push_back(zero); // Σ f
    plan.gapSlot = init.size();
    init.push_back(zero); // Σ f (m - x)
  } else if (offsets) {
    plan.offsetSumSlot = init.size();
    init.push_back(zero); // Σ (x - r)
    // r: the row's first logit where finite, else 0 (a -inf first logit
    // would make every difference +inf and C (m - r) - Σ NaN; against 0 a
    // -inf anywhere gives Σ = -inf and the gap +inf, as Σ (m - x) is).
    Value first = loadLogit(cstIdx(0));
    Value finite = arith::AndIOp::create(
        b,
        arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, first,
                              cstF(std::numeric_limits<double>::infinity())),
        arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, first, negInf));
    plan.offsetReference = select(finite, first, zero);
  }
  if (spec.needsArgmax()) {
    // No class yet: the largest index, which every class beats on a tie
    // (so a row of -inf gets class 0, as torch.argmax).
    plan.argmaxSlot = init.size();
    init.push_back(arith::ConstantOp::create(
        b, b.getI32IntegerAttr(std::numeric_limits<int32_t>::max())));
  }

  SmallVector<Value> partial = walk.emitPartialStatistics(init, plan);
  SmallVector<Value> totals = walk.emitAllReduce(partial, plan);
  RowStats stats;
  stats.max = totals[0];
  stats.sumExp = totals[1];
  if (extras) {
    stats.mass = totals[plan.massSlot];
    stats.gap = totals[plan.gapSlot];
  }
  if (offsets) {
    stats.mass = at.numClassesF;
    Value gap = sub(mul(at.numClassesF, sub(stats.max, plan.offsetReference)),
                    totals[plan.offsetSumSlot]);
    // A row of -inf only: 0, as Σ max(m - x, 0) (not -inf + inf).
    stats.gap = select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                             stats.max, negInf),
                       zero, gap);
  }
  if (plan.argmaxSlot >= 0)
    stats.argmax = totals[plan.argmaxSlot];
  // The loss adds log Σ to differences from m (emitRowBody); lse = m + log Σ
  // itself only enters the z-loss and the lse output.
  if (!spec.lossType && !config.hasZLoss() && !spec.lseType)
    return stats;
  stats.logSumExp = emitAccurateLog(stats.sumExp);
  if (config.hasZLoss() || spec.lseType)
    stats.lse = add(stats.max, stats.logSumExp);
  return stats;
}
