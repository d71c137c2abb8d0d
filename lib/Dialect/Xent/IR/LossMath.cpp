//===- LossMath.cpp - The loss's scalar formulas, written once ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/LossMath.h"
#include "xent/Dialect/Xent/IR/LossBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::loss;

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

Value LossMath::cst(double v) { return constF32(b, loc, v); }
Value LossMath::add(Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value LossMath::sub(Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value LossMath::mul(Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value LossMath::select(Value c, Value t, Value f) {
  return arith::SelectOp::create(b, loc, c, t, f);
}

//===----------------------------------------------------------------------===//
// Formulas
//===----------------------------------------------------------------------===//

Value loss::softcapLogit(LossMath &m, Value x, Value *tanh) {
  Value t = m.tanh(m.overSoftcap(x));
  Value capped = m.mul(m.softcap(), t);
  // A run-time softcap of 0 is none: the logit as it is.
  Value off = m.softcapOff();
  if (tanh && !off)
    *tanh = t;
  return off ? m.select(off, x, capped) : capped;
}

Value loss::softcapSlope(LossMath &m, Value capped) {
  Value t = m.overSoftcap(capped);
  Value t2 = m.mul(t, t);
  Value one = m.cst(1.0);
  Value slope = m.sub(one, t2);
  Value off = m.softcapOff();
  return off ? m.select(off, one, slope) : slope;
}

Value loss::smoothedProbability(LossMath &m, Value q) {
  Value keep = m.keepShare();
  Value share = m.smoothShare();
  return m.add(m.mul(q, keep), share);
}

Value loss::zLossTerm(LossMath &m, Value lse) {
  Value square = m.mul(lse, lse);
  return m.mul(m.zLossScale(), square);
}

//===----------------------------------------------------------------------===//
// MathDialectLossMath
//===----------------------------------------------------------------------===//

Value MathDialectLossMath::tanh(Value x) {
  return math::TanhOp::create(b, loc, x);
}

Value MathDialectLossMath::overSoftcap(Value x) {
  return arith::DivFOp::create(b, loc, x, softcap());
}

Value MathDialectLossMath::softcap() {
  if (!cap)
    cap = buildSoftcap(b, loc, config);
  return cap;
}

Value MathDialectLossMath::softcapOff() {
  Value v = config.scalars.softcap;
  if (!v)
    return Value();
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, v,
                               constF32(b, loc, 0.0));
}

Value MathDialectLossMath::epsilon() {
  if (!eps)
    eps = buildLabelSmoothing(b, loc, config);
  return eps;
}

Value MathDialectLossMath::keepShare() {
  // ε first: the share ε / C takes the same value.
  epsilon();
  return buildLabelSmoothing(b, loc, config, -1, 1);
}

Value MathDialectLossMath::smoothShare() {
  Value e = epsilon();
  return arith::DivFOp::create(b, loc, e, numClasses());
}

Value MathDialectLossMath::zLossScale() {
  return buildZLossScale(b, loc, config);
}
