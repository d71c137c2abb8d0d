//===- ElementMath.cpp - Per-element math of the xent kernels -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

Value KernelEmitter::emitLogit(Value raw) {
  Value v = toF32(raw);
  if (!args.softcap)
    return v;
  KernelMath math(*this);
  return loss::softcapLogit(math, v);
}

Value KernelEmitter::fastTanh(Value x) {
  // llvm.tanh with afn: the NVPTX backend selects tanh.approx.f32 for it
  // (sm_75+), never a libdevice call.
  return LLVM::TanhOp::create(b, x, LLVM::FastmathFlags::afn);
}

Value KernelEmitter::tanh(Value x) { return emitAccurateTanhF32(b, x); }

Value mlir::xent::emitAccurateTanhF32(ImplicitLocOpBuilder &b, Value x) {
  auto cst = [&](double v) -> Value {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, x, y);
  };
  auto select = [&](Value c, Value t, Value f) -> Value {
    return arith::SelectOp::create(b, c, t, f);
  };
  // abs / copysign by compare and select: their math ops would call
  // libdevice.
  Value negative =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, cst(0.0));
  Value ax = select(negative, arith::NegFOp::create(b, x), x);
  Value e = emitFastExpF32(b, mul(ax, cst(2.0)));
  Value rcp = NVVM::RcpApproxFtzF32Op::create(b, b.getF32Type(),
                                              add(e, cst(1.0)));
  Value far = arith::SubFOp::create(b, cst(1.0), mul(cst(2.0), rcp));
  far = select(negative, arith::NegFOp::create(b, far), far);
  // x - x³/3 + 2x⁵/15 - 17x⁷/315 for |x| < 1/16 (error below 1e-10).
  Value x2 = mul(x, x);
  Value poly = add(cst(2.0 / 15.0), mul(x2, cst(-17.0 / 315.0)));
  poly = add(cst(-1.0 / 3.0), mul(x2, poly));
  poly = add(cst(1.0), mul(x2, poly));
  Value near = mul(x, poly);
  Value small =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, ax, cst(0.0625));
  return select(small, near, far);
}

Value KernelEmitter::emitSoftcapSlope(Value capped) {
  KernelMath math(*this);
  return loss::softcapSlope(math, capped);
}

Value KernelEmitter::emitSmoothedProbability(Value q) {
  q = toF32(q);
  if (!args.smoothing)
    return q;
  KernelMath math(*this);
  return loss::smoothedProbability(math, q);
}

Value KernelEmitter::emitAccurateLog(Value s) {
  return emitAccurateLogF32(b, s);
}

Value mlir::xent::emitFastExpF32(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type();
  Value scaled = arith::MulFOp::create(
      b, x, arith::ConstantOp::create(b, b.getF32FloatAttr(M_LOG2E)));
  return LLVM::CallIntrinsicOp::create(
             b, f32, b.getStringAttr(kEx2ApproxFtzF32), ValueRange{scaled})
      .getResult(0);
}

Value mlir::xent::emitFastLogF32(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type();
  Value lg2 = LLVM::CallIntrinsicOp::create(
                  b, f32, b.getStringAttr(kLg2ApproxFtzF32), ValueRange{x})
                  .getResult(0);
  return arith::MulFOp::create(
      b, lg2, arith::ConstantOp::create(b, b.getF32FloatAttr(M_LN2)));
}

Value mlir::xent::emitAccurateLogF32(ImplicitLocOpBuilder &b, Value s) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto cstI = [&](int32_t v) -> Value {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  };
  auto cstF = [&](double v) -> Value {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubFOp::create(b, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, x, y);
  };
  // s = 2^k · z with z in [sqrt(1/2), sqrt(2)): k from the exponent bits of
  // s / sqrt(1/2) (0x3f3504f3 are the bits of sqrt(1/2)), z by taking k off
  // the exponent.
  Value bits = arith::BitcastOp::create(b, i32, s);
  Value k = arith::ShRSIOp::create(
      b, arith::SubIOp::create(b, bits, cstI(0x3f3504f3)), cstI(23));
  Value z = arith::BitcastOp::create(
      b, f32,
      arith::SubIOp::create(b, bits, arith::ShLIOp::create(b, k, cstI(23))));
  // log z = log1p(f), f = z - 1 (exact). With u = f / (2 + f),
  // log1p(f) = 2 atanh(u) = 2u + u R(u²), R = 2u²/3 + 2u⁴/5 + ..., and
  // 2u = f - u f, so log1p(f) = f - u (f - R): the leading term is exact and
  // the correction small. |u| <= 0.172: the series to u⁸ leaves < 1e-9.
  Value f = sub(z, cstF(1.0));
  // (rcp.approx: an ulp in u moves the result by at most 0.2 ulp)
  Value u = mul(f, NVVM::RcpApproxFtzF32Op::create(b, f32, add(cstF(2.0), f)));
  Value u2 = mul(u, u);
  Value r = add(cstF(2.0 / 7.0), mul(u2, cstF(2.0 / 9.0)));
  r = add(cstF(2.0 / 5.0), mul(u2, r));
  r = add(cstF(2.0 / 3.0), mul(u2, r));
  r = mul(u2, r);
  Value log1p = sub(f, mul(u, sub(f, r)));
  // k ln 2 in two parts: k · ln2Hi is exact (ln2Hi has 15 significant bits,
  // |k| <= 2^8).
  Value kf = arith::SIToFPOp::create(b, f32, k);
  constexpr double ln2Hi = 0.693145751953125;
  constexpr double ln2Lo = 1.4286068202862268e-06;
  Value accurate =
      add(mul(kf, cstF(ln2Hi)), add(log1p, mul(kf, cstF(ln2Lo))));
  Value normal = arith::AndIOp::create(
      b,
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, s,
                            cstF(std::numeric_limits<float>::min())),
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, s,
                            cstF(std::numeric_limits<float>::infinity())));
  // Subnormal, 0, inf, NaN: lg2.approx (its -inf, inf, NaN).
  return arith::SelectOp::create(b, normal, accurate, emitFastLogF32(b, s));
}
