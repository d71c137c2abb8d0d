//===- GradientPass.cpp - The gradient pass of the xent kernels -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The second walk over a row writes dlogits from per-row coefficients (one
// exp of x - m and a few multiplies per element) through the row's walk
// (TwoPassRows.cpp, ResidentRows.cpp); the target's own element is rewritten
// once after the row, and ignored rows get exact zeros.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

Value KernelEmitter::emitGradientElement(const RowElement &el,
                                         const RowStats &stats,
                                         const GradientCoefficients &coef) {
  // grad_c = (A p_c - B w_c [q'_c]) · softcap'(x_c) with
  // A p_c = (A / Σ) exp(x_c - m): x_c - m is formed in f32 before the
  // exponent is scaled (never x_c - lse, which carries the rounding of lse
  // at the spacing of m); the target's own -(1-ε) w_t term is added where
  // emitGradientPass rewrites that element. A capped logit s·t gives
  // x_c - m as one fma (rounded once) and the slope 1 - t² from t.
  Value c = el.c;
  Value shifted =
      el.t ? LLVM::FMAOp::create(b, args.softcap, el.t,
                                 arith::NegFOp::create(b, stats.max))
                 .getResult()
           : sub(el.x, stats.max);
  // One exponential in n of a soft-capped narrow row on the FMA pipe (el.t
  // is set only there): with n = 2 the MUFU does three ops per element
  // instead of four.
  int64_t n = geometry.splitExponentials;
  bool onFmaPipe = el.t && n > 0 && el.lane % n == n - 1;
  Value e = onFmaPipe ? emitExpOnFmaPipeF32(b, shifted) : exp(shifted);
  Value grad = mul(coef.scale, e);
  if (coef.mass) {
    Value term = coef.mass;
    if (args.weight)
      term = mul(term, loadWeight(c));
    if (config.probabilityTargets)
      term = mul(term, emitSmoothedProbability(loadTargetProbability(c)));
    grad = sub(grad, term);
  }
  if (args.softcap) {
    Value slope =
        el.t ? LLVM::FMAOp::create(b, arith::NegFOp::create(b, el.t), el.t,
                                   cstF(1.0))
                   .getResult()
             : emitSoftcapSlope(el.x);
    grad = mul(grad, slope);
  }
  return grad;
}

GradientCoefficients
KernelEmitter::emitGradientCoefficients(const RowStats &stats,
                                        const TargetInfo &target, Value g,
                                        Value gz) {
  // Per-row coefficients, so that each element costs one exp and a few
  // multiplies: grad_c = A p_c - B f_c - [c = t] T with
  //   class indices: A = g ((1-ε) w_t + ε/C Σw) + 2 z gz lse,
  //                  B = g ε/C (f_c = w_c), T = g (1-ε) w_t;
  //   probabilities: A = g Σ w q' + 2 z gz lse, B = g (f_c = w_c q'_c).
  // The target's element takes the three terms apart (emitTargetGradient):
  // T (p_t - 1) + B (Σw p_t - w_t) + Z p_t, each factor formed before its
  // scale, so that a small z-loss term is not lost to the cancellation of
  // A p_t - T (one class: p_t = 1 exactly, and the gradient is Z alone).
  GradientCoefficients coef;
  if (config.probabilityTargets) {
    coef.scale = mul(g, stats.mass);
    coef.mass = g;
  } else {
    // An out-of-range target makes the whole row NaN (never a wild read).
    g = select(target.valid, g,
               cstF(std::numeric_limits<double>::quiet_NaN()));
    coef.targetWeight =
        target.weight ? target.weight : loadWeight(target.index);
    coef.targetTerm = mul(
        g, mul(args.smoothing ? args.keepShare : cstF(1.0), coef.targetWeight));
    coef.scale = coef.targetTerm;
    if (args.smoothing) {
      coef.smoothMass = stats.mass ? stats.mass : at.globalClassesF;
      coef.scale =
          add(coef.scale, mul(g, mul(args.smoothShare, coef.smoothMass)));
      coef.mass = mul(g, args.smoothShare);
    }
  }
  if (args.zScale) {
    coef.zTerm = mul(gz, mul(mul(cstF(2.0), args.zScale), stats.lse));
    coef.scale = add(coef.scale, coef.zTerm);
  }
  // p_c = exp(x_c - m) / Σ: the 1 / Σ goes into the row's coefficient (no
  // extra work per element).
  coef.scale = div(coef.scale, stats.sumExp);
  return coef;
}

Value KernelEmitter::emitTargetGradient(Value xt, const RowStats &stats,
                                        const GradientCoefficients &coef) {
  Value e = exp(sub(xt, stats.max));
  Value p = div(e, stats.sumExp);
  // T (p_t - 1), with p_t - 1 = (e - Σ) / Σ: exactly 0 for one class.
  Value grad =
      mul(coef.targetTerm, div(sub(e, stats.sumExp), stats.sumExp));
  if (coef.mass)
    grad = add(grad,
               mul(coef.mass, sub(mul(coef.smoothMass, p), coef.targetWeight)));
  if (coef.zTerm)
    grad = add(grad, mul(coef.zTerm, p));
  if (args.softcap)
    grad = mul(grad, emitSoftcapSlope(xt));
  return grad;
}

void KernelEmitter::emitGradientPass(RowWalk &walk, const RowStats &stats,
                                     const TargetInfo &target,
                                     std::optional<Divisors> preloaded) {
  bool probs = config.probabilityTargets;

  // Scale of this row's cross-entropy and z-loss terms.
  Value g, gz;
  if (config.reduction == Reduction::none) {
    g = gz = toF32(memref::LoadOp::create(b, args.gradOutput, at.rowIdx));
  } else {
    g = gz = toF32(memref::LoadOp::create(b, args.gradOutput, ValueRange{}));
    Divisors divisors = emitDivisors(preloaded);
    g = div(g, divisors.weight);
    gz = div(gz, divisors.count);
  }
  GradientCoefficients coef = emitGradientCoefficients(stats, target, g, gz);

  // The row's reads of the statistics walk (and x_t, emitRowBody) end at
  // the block reduction's barrier, which a single warp does not have: in
  // place, no lane may write before every lane has read.
  if (geometry.warps() == 1 && walk.mayWriteInPlace())
    gpu::BarrierOp::create(b);
  auto emitKeptRow = [&]() {
    // x_t as read before any thread wrote the row (dlogits may be the
    // logits' own buffer).
    Value xt = probs ? Value() : getTargetLogit(target);
    walk.emitRowWrite(/*readLogits=*/true, [&](const RowElement &el) {
      return emitGradientElement(el, stats, coef);
    });
    if (probs)
      return;
    // The target's element, rewritten whole (rounded once) after every
    // thread has stored its part of the row (by the block whose slice
    // holds it, on the resident path).
    gpu::BarrierOp::create(b);
    Value writer = walk.emitWritesTarget(
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, at.tid, cstIdx(0)),
        target.index);
    // A class slice has the one-hot term only where it holds the target.
    if (spec.classSlice())
      writer = arith::AndIOp::create(b, writer, target.owned);
    auto fix = scf::IfOp::create(b, writer, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fix.thenBlock());
    Value grad = emitTargetGradient(xt, stats, coef);
    memref::StoreOp::create(b, fromF32(grad, spec.getDlogitsType()),
                            args.dlogits, rowIndex(target.index));
  };

  if (probs) {
    emitKeptRow();
    return;
  }
  // Ignored rows get exact zeros, whatever their logits: a uniform branch.
  auto ifKept = scf::IfOp::create(b, target.kept, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifKept.thenBlock());
    emitKeptRow();
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifKept.elseBlock());
  walk.emitRowWrite(/*readLogits=*/false,
                    [&](const RowElement &) { return cstF(0.0); });
}
