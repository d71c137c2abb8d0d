//===- BlockReduce.cpp - Warp, block and online-softmax reductions --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Partial row statistics combined across a warp (gpu.shuffle xor
// butterflies) and a block (one round through workgroup memory); the first
// two components are an online-softmax (max, Σexp) pair, Σ f (max - x)
// follows its max like Σexp does, and the argmax (an i32, through the f32
// scratch by bitcast) the first index of that max.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

std::pair<Value, Value> mlir::xent::combineMaxSumF32(ImplicitLocOpBuilder &b,
                                                     Value m1, Value s1,
                                                     Value m2, Value s2) {
  Value m = arith::MaximumFOp::create(b, m1, m2);
  // exp(m_k - m), exactly 1 when m_k is the maximum (also -inf == -inf).
  auto factor = [&](Value mk) -> Value {
    Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mk, m);
    return arith::SelectOp::create(
        b, same, arith::ConstantOp::create(b, b.getF32FloatAttr(1.0)),
        emitFastExpF32(b, arith::SubFOp::create(b, mk, m)));
  };
  Value s = arith::AddFOp::create(b, arith::MulFOp::create(b, s1, factor(m1)),
                                  arith::MulFOp::create(b, s2, factor(m2)));
  return {m, s};
}

std::pair<Value, Value> KernelEmitter::combineMaxSum(Value m1, Value s1,
                                                     Value m2, Value s2) {
  return combineMaxSumF32(b, m1, s1, m2, s2);
}

Value KernelEmitter::rebaseGap(Value gap, Value mass, Value mk, Value m) {
  Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mk, m);
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mass, cstF(0.0));
  Value keep = arith::OrIOp::create(b, same, empty);
  return select(keep, gap, add(gap, mul(mass, sub(m, mk))));
}

Value KernelEmitter::emitArgmaxBeats(Value x2, Value i2, Value x1, Value i1) {
  auto cmpF = [&](arith::CmpFPredicate p, Value l, Value r) -> Value {
    return arith::CmpFOp::create(b, p, l, r);
  };
  // x1 a number: x2 larger or NaN (UGT). Equal (both NaN counting as
  // equal): the smaller index.
  Value better = arith::AndIOp::create(
      b, cmpF(arith::CmpFPredicate::ORD, x1, x1),
      cmpF(arith::CmpFPredicate::UGT, x2, x1));
  Value equal = arith::OrIOp::create(
      b, cmpF(arith::CmpFPredicate::OEQ, x1, x2),
      arith::AndIOp::create(b, cmpF(arith::CmpFPredicate::UNO, x1, x1),
                            cmpF(arith::CmpFPredicate::UNO, x2, x2)));
  Value earlier = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i2, i1);
  return arith::OrIOp::create(b, better,
                              arith::AndIOp::create(b, equal, earlier));
}

SmallVector<Value> KernelEmitter::combine(ArrayRef<Value> a,
                                          ArrayRef<Value> c,
                                          const ReductionPlan &plan) {
  if (!plan.maxSumPair) {
    SmallVector<Value> sums;
    for (auto [x, y] : llvm::zip_equal(a, c))
      sums.push_back(add(x, y));
    return sums;
  }
  auto [m, s] = combineMaxSum(a[0], a[1], c[0], c[1]);
  SmallVector<Value> result = {m, s};
  for (int64_t k = 2; k < static_cast<int64_t>(a.size()); ++k) {
    if (k == plan.gapSlot) {
      // Σ f (max - x) of both sides, rebased to the common max.
      result.push_back(add(rebaseGap(a[k], a[plan.massSlot], a[0], m),
                           rebaseGap(c[k], c[plan.massSlot], c[0], m)));
    } else if (k == plan.argmaxSlot) {
      Value take = emitArgmaxBeats(c[0], c[k], a[0], a[k]);
      result.push_back(arith::SelectOp::create(b, take, c[k], a[k]));
    } else {
      result.push_back(add(a[k], c[k]));
    }
  }
  return result;
}

Value KernelEmitter::reductionIdentity(int64_t k, const ReductionPlan &plan) {
  if (k == plan.argmaxSlot)
    return arith::ConstantOp::create(
        b, b.getI32IntegerAttr(std::numeric_limits<int32_t>::max()));
  return cstF(plan.maxSumPair && k == 0 ? -std::numeric_limits<double>::infinity()
                                   : 0.0);
}

Value KernelEmitter::toScratch(Value v) {
  if (v.getType().isF32())
    return v;
  return arith::BitcastOp::create(b, f32, v);
}

Value KernelEmitter::fromScratch(Value v, int64_t k,
                                 const ReductionPlan &plan) {
  if (k != plan.argmaxSlot)
    return v;
  return arith::BitcastOp::create(b, b.getI32Type(), v);
}

SmallVector<Value>
KernelEmitter::emitWarpAllReduce(ArrayRef<Value> values,
                                 const ReductionPlan &plan) {
  SmallVector<Value> acc(values);
  for (int32_t offset = kLanes / 2; offset > 0; offset /= 2) {
    SmallVector<Value> other;
    for (Value v : acc)
      other.push_back(
          gpu::ShuffleOp::create(b, v, offset, kLanes, gpu::ShuffleMode::XOR)
              .getShuffleResult());
    acc = combine(acc, other, plan);
  }
  return acc;
}

SmallVector<Value>
KernelEmitter::emitBlockAllReduce(ArrayRef<Value> values,
                                  const ReductionPlan &plan, Value scratch) {
  SmallVector<Value> partial = emitWarpAllReduce(values, plan);
  if (geometry.warps() == 1)
    return partial;
  // Lane 0 of each warp publishes its warp's partial results.
  Value isLane0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, at.lane, cstIdx(0));
  auto ifOp = scf::IfOp::create(b, isLane0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (auto [k, v] : llvm::enumerate(partial))
      memref::StoreOp::create(b, toScratch(v), scratch,
                              ValueRange{cstIdx(k), at.warp});
  }
  gpu::BarrierOp::create(b);
  // Every warp combines the published partials.
  Value hasPartial = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           at.lane, cstIdx(geometry.warps()));
  SmallVector<Value> gathered;
  for (auto [k, v] : llvm::enumerate(partial)) {
    Value slot = select(hasPartial, at.lane, cstIdx(0));
    Value loaded = fromScratch(
        memref::LoadOp::create(b, scratch, ValueRange{cstIdx(k), slot}), k,
        plan);
    gathered.push_back(select(hasPartial, loaded, reductionIdentity(k, plan)));
  }
  SmallVector<Value> total = emitWarpAllReduce(gathered, plan);
  // The workgroup memory may be reused by the next reduction.
  gpu::BarrierOp::create(b);
  return total;
}
