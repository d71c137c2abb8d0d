//===- ElementMath.cpp - Per-element math of the xent kernels -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

using namespace mlir;
using namespace mlir::xent;

Value KernelEmitter::emitLogit(Value raw) {
  Value v = toF32(raw);
  if (!config.softcap)
    return v;
  double cap = *config.softcap;
  return mul(cstF(cap), tanh(mul(v, cstF(1.0 / cap))));
}

Value KernelEmitter::tanh(Value x) {
  // abs / copysign by compare and select: their math ops would call
  // libdevice.
  Value negative =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, cstF(0.0));
  Value ax = select(negative, arith::NegFOp::create(b, x), x);
  Value e = exp(mul(ax, cstF(2.0)));
  Value far = sub(cstF(1.0), mul(cstF(2.0), rcp(add(e, cstF(1.0)))));
  far = select(negative, arith::NegFOp::create(b, far), far);
  // x - x³/3 + 2x⁵/15 - 17x⁷/315 for |x| < 1/16 (error below 1e-10).
  Value x2 = mul(x, x);
  Value poly = add(cstF(2.0 / 15.0), mul(x2, cstF(-17.0 / 315.0)));
  poly = add(cstF(-1.0 / 3.0), mul(x2, poly));
  poly = add(cstF(1.0), mul(x2, poly));
  Value near = mul(x, poly);
  Value small =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, ax, cstF(0.0625));
  return select(small, near, far);
}

Value KernelEmitter::emitSoftcapSlope(Value capped) {
  Value t = mul(capped, cstF(1.0 / *config.softcap));
  return sub(cstF(1.0), mul(t, t));
}

Value KernelEmitter::emitSmoothedProbability(Value q) {
  q = toF32(q);
  if (config.labelSmoothing == 0.0f)
    return q;
  return add(mul(q, cstF(1.0 - config.labelSmoothing)),
             div(cstF(config.labelSmoothing), numClassesF));
}
