//===- BlockReduce.cpp - Warp, block and online-softmax reductions --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Partial row statistics combined across a warp (gpu.shuffle xor
// butterflies) and a block (one round through workgroup memory); the first
// two components are an online-softmax (max, Σexp) pair, and Σ f (max - x)
// follows its max like Σexp does.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

std::pair<Value, Value> KernelEmitter::combineMaxSum(Value m1, Value s1,
                                                     Value m2, Value s2) {
  Value m = arith::MaximumFOp::create(b, m1, m2);
  // exp(m_k - m), exactly 1 when m_k is the maximum (also -inf == -inf).
  auto factor = [&](Value mk) {
    Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mk, m);
    return select(same, cstF(1.0), exp(sub(mk, m)));
  };
  Value s = add(mul(s1, factor(m1)), mul(s2, factor(m2)));
  return {m, s};
}

Value KernelEmitter::rebaseGap(Value gap, Value mass, Value mk, Value m) {
  Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mk, m);
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mass, cstF(0.0));
  Value keep = arith::OrIOp::create(b, same, empty);
  return select(keep, gap, add(gap, mul(mass, sub(m, mk))));
}

SmallVector<Value> KernelEmitter::combine(ArrayRef<Value> a,
                                          ArrayRef<Value> c) {
  SmallVector<Value> result;
  unsigned first = 0;
  if (maxSumPair) {
    auto [m, s] = combineMaxSum(a[0], a[1], c[0], c[1]);
    result = {m, s};
    first = 2;
    if (a.size() == 4) {
      // Σ f and Σ f (max - x) of both sides, rebased to the common max.
      result.push_back(add(a[2], c[2]));
      result.push_back(add(rebaseGap(a[3], a[2], a[0], m),
                           rebaseGap(c[3], c[2], c[0], m)));
      return result;
    }
  }
  for (unsigned k = first; k < a.size(); ++k)
    result.push_back(add(a[k], c[k]));
  return result;
}

SmallVector<Value> KernelEmitter::emitWarpAllReduce(ArrayRef<Value> values) {
  SmallVector<Value> acc(values);
  for (int32_t offset = kLanes / 2; offset > 0; offset /= 2) {
    SmallVector<Value> other;
    for (Value v : acc)
      other.push_back(
          gpu::ShuffleOp::create(b, v, offset, kLanes, gpu::ShuffleMode::XOR)
              .getShuffleResult());
    acc = combine(acc, other);
  }
  return acc;
}

SmallVector<Value> KernelEmitter::emitBlockAllReduce(ArrayRef<Value> values) {
  SmallVector<Value> partial = emitWarpAllReduce(values);
  if (geometry.warps() == 1)
    return partial;
  // Lane 0 of each warp publishes its warp's partial results.
  Value isLane0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, cstIdx(0));
  auto ifOp = scf::IfOp::create(b, isLane0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (auto [k, v] : llvm::enumerate(partial))
      memref::StoreOp::create(b, v, reduceScratch, ValueRange{cstIdx(k), warp});
  }
  gpu::BarrierOp::create(b);
  // Every warp combines the published partials.
  Value hasPartial = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           cstIdx(geometry.warps()));
  SmallVector<Value> gathered;
  for (auto [k, v] : llvm::enumerate(partial)) {
    Value identity = cstF(
        maxSumPair && k == 0 ? -std::numeric_limits<double>::infinity() : 0.0);
    Value slot = select(hasPartial, lane, cstIdx(0));
    Value loaded =
        memref::LoadOp::create(b, reduceScratch, ValueRange{cstIdx(k), slot});
    gathered.push_back(select(hasPartial, loaded, identity));
  }
  SmallVector<Value> total = emitWarpAllReduce(gathered);
  // The workgroup memory may be reused by the next reduction.
  gpu::BarrierOp::create(b);
  return total;
}
