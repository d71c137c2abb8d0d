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
  bool extras = acc.size() > 2;
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
  return next;
}

void KernelEmitter::emitRowStatistics() {
  bool probs = config.probabilityTargets;
  bool smoothing = config.labelSmoothing != 0.0f;
  // The loss needs both sums; the gradient alone needs Σ w (smoothing with
  // weights) or Σ w q' (probabilities).
  bool extras = probs || (smoothing && (spec.lossType || weight));
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zero = cstF(0.0);

  SmallVector<Value> init = {negInf, zero};
  if (extras) {
    init.push_back(zero); // Σ f
    init.push_back(zero); // Σ f (m - x)
  }
  SmallVector<Type> types(init.size(), f32);

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
              unpackVector(step.starts[u], step.vecs[u], width, cs, xs);
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
    rowMass = totals[2];
    rowGap = totals[3];
  }
  // The loss adds log Σ to differences from m (emitRowBody); lse = m + log Σ
  // itself only enters the z-loss.
  if (!spec.lossType && config.zLossScale == 0.0f)
    return;
  logSumExp = emitAccurateLog(rowSumExp);
  if (config.zLossScale != 0.0f)
    lse = add(rowMax, logSumExp);
}
