//===- ElementMath.cpp - Per-element math of the xent kernels -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

namespace {
/// Scalar f32 / i32 arithmetic on `b`, for the free functions below.
struct ScalarOps {
  ImplicitLocOpBuilder &b;
  Value cstF(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value cstI(int32_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value select(Value c, Value t, Value f) {
    return arith::SelectOp::create(b, c, t, f);
  }
};
} // namespace

Value KernelEmitter::emitLogit(Value raw, Value *tanh) {
  Value v = toF32(raw);
  if (!args.softcap)
    return v;
  KernelMath math(*this);
  return loss::softcapLogit(math, v, tanh);
}

Value KernelEmitter::fastTanh(Value x) {
  // llvm.tanh with afn: the NVPTX backend selects tanh.approx.f32 for it
  // (sm_75+), never a libdevice call.
  return LLVM::TanhOp::create(b, x, LLVM::FastmathFlags::afn);
}

Value KernelEmitter::tanh(Value x) { return emitAccurateTanhF32(b, x); }

Value mlir::xent::emitAccurateTanhF32(ImplicitLocOpBuilder &b, Value x) {
  ScalarOps o{b};
  // abs / copysign by compare and select: their math ops would call
  // libdevice.
  Value negative =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, o.cstF(0.0));
  Value ax = o.select(negative, arith::NegFOp::create(b, x), x);
  Value e = emitFastExpF32(b, o.mul(ax, o.cstF(2.0)));
  Value rcp = NVVM::RcpApproxFtzF32Op::create(b, b.getF32Type(),
                                              o.add(e, o.cstF(1.0)));
  Value far = arith::SubFOp::create(b, o.cstF(1.0), o.mul(o.cstF(2.0), rcp));
  far = o.select(negative, arith::NegFOp::create(b, far), far);
  // x - x³/3 + 2x⁵/15 - 17x⁷/315 for |x| < 1/16 (error below 1e-10).
  Value x2 = o.mul(x, x);
  Value poly = o.add(o.cstF(2.0 / 15.0), o.mul(x2, o.cstF(-17.0 / 315.0)));
  poly = o.add(o.cstF(-1.0 / 3.0), o.mul(x2, poly));
  poly = o.add(o.cstF(1.0), o.mul(x2, poly));
  Value near = o.mul(x, poly);
  Value small =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, ax, o.cstF(0.0625));
  return o.select(small, near, far);
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

Value mlir::xent::emitExpOnFmaPipeF32(ImplicitLocOpBuilder &b, Value x) {
  ScalarOps o{b};
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  // z = x·log2 e, clamped below at -127 by a NaN-propagating max (a NaN
  // stays NaN; -inf and z < -126.5 give j = -127, a scale of +0).
  Value z = arith::MaximumFOp::create(b, o.mul(x, o.cstF(M_LOG2E)),
                                      o.cstF(-127.0));
  // j = round(z) by the 1.5·2^23 shift: the sum's low mantissa bits are j.
  constexpr float kShift = 12582912.0f;
  Value shifted = o.add(z, o.cstF(kShift));
  Value f = o.sub(z, o.sub(shifted, o.cstF(kShift)));
  // 2^f on [-1/2, 1/2]: minimax (relative) of degree 5, f32 Horner with
  // fma: relative error 2.1e-7 (ex2.approx.ftz.f32: 2^-22 ~ 2.4e-7).
  static constexpr double kCoefficients[] = {
      1.0000001192092896,   0.6931469440460205,   0.24022120237350464,
      0.05550713092088699,  0.009675540961325169, 0.0013276472454890609};
  Value p = o.cstF(kCoefficients[5]);
  for (int k = 4; k >= 0; --k)
    p = LLVM::FMAOp::create(b, p, f, o.cstF(kCoefficients[k]));
  // 2^j as bits ((j + 127) << 23); the shifted sum's bits are
  // bits(1.5·2^23) + j for |j| < 2^22.
  constexpr int32_t kShiftBits = 0x4b400000;
  Value bits = arith::BitcastOp::create(b, i32, shifted);
  Value biased = arith::AddIOp::create(b, bits, o.cstI(127 - kShiftBits));
  Value scale = arith::BitcastOp::create(
      b, f32, arith::ShLIOp::create(b, biased, o.cstI(23)));
  return o.mul(p, scale);
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
  ScalarOps o{b};
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  // s = 2^k · z with z in [sqrt(1/2), sqrt(2)): k from the exponent bits of
  // s / sqrt(1/2) (0x3f3504f3 are the bits of sqrt(1/2)), z by taking k off
  // the exponent.
  Value bits = arith::BitcastOp::create(b, i32, s);
  Value k = arith::ShRSIOp::create(
      b, arith::SubIOp::create(b, bits, o.cstI(0x3f3504f3)), o.cstI(23));
  Value z = arith::BitcastOp::create(
      b, f32,
      arith::SubIOp::create(b, bits, arith::ShLIOp::create(b, k, o.cstI(23))));
  // log z = log1p(f), f = z - 1 (exact). With u = f / (2 + f),
  // log1p(f) = 2 atanh(u) = 2u + u R(u²), R = 2u²/3 + 2u⁴/5 + ..., and
  // 2u = f - u f, so log1p(f) = f - u (f - R): the leading term is exact and
  // the correction small. |u| <= 0.172: the series to u⁸ leaves < 1e-9.
  Value f = o.sub(z, o.cstF(1.0));
  // (rcp.approx: an ulp in u moves the result by at most 0.2 ulp)
  Value u = o.mul(
      f, NVVM::RcpApproxFtzF32Op::create(b, f32, o.add(o.cstF(2.0), f)));
  Value u2 = o.mul(u, u);
  Value r = o.add(o.cstF(2.0 / 7.0), o.mul(u2, o.cstF(2.0 / 9.0)));
  r = o.add(o.cstF(2.0 / 5.0), o.mul(u2, r));
  r = o.add(o.cstF(2.0 / 3.0), o.mul(u2, r));
  r = o.mul(u2, r);
  Value log1p = o.sub(f, o.mul(u, o.sub(f, r)));
  // k ln 2 in two parts: k · ln2Hi is exact (ln2Hi has 15 significant bits,
  // |k| <= 2^8).
  Value kf = arith::SIToFPOp::create(b, f32, k);
  constexpr double ln2Hi = 0.693145751953125;
  constexpr double ln2Lo = 1.4286068202862268e-06;
  Value accurate =
      o.add(o.mul(kf, o.cstF(ln2Hi)), o.add(log1p, o.mul(kf, o.cstF(ln2Lo))));
  Value normal = arith::AndIOp::create(
      b,
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, s,
                            o.cstF(std::numeric_limits<float>::min())),
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, s,
                            o.cstF(std::numeric_limits<float>::infinity())));
  // Subnormal, 0, inf, NaN: lg2.approx (its -inf, inf, NaN).
  return arith::SelectOp::create(b, normal, accurate, emitFastLogF32(b, s));
}
