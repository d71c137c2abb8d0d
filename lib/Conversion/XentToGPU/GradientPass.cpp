//===- GradientPass.cpp - The gradient pass of the xent kernels -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The second walk over a row writes dlogits from per-row coefficients (one
// exp of x - m and a few multiplies per element), with scalar or 16-byte vector
// stores, or from the resident slice; the target's own element is rewritten
// once after the row, and ignored rows get exact zeros.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

Value KernelEmitter::emitGradientElement(Value c, Value xc) {
  // grad_c = (A p_c - B w_c [q'_c]) · softcap'(x_c) with
  // A p_c = (A / Σ) exp(x_c - m): x_c - m is formed in f32 before the
  // exponent is scaled (never x_c - lse, which carries the rounding of lse
  // at the spacing of m); the target's own -(1-ε) w_t term is added where
  // emitGradientPass rewrites that element.
  Value e = exp(sub(xc, rowMax));
  Value grad = mul(gradScale, e);
  if (gradMass) {
    Value term = gradMass;
    if (weight)
      term = mul(term, loadWeight(c));
    if (config.probabilityTargets)
      term = mul(term, emitSmoothedProbability(
                           memref::LoadOp::create(b, target, rowIndex(c))));
    grad = sub(grad, term);
  }
  if (softcap)
    grad = mul(grad, emitSoftcapSlope(xc));
  return grad;
}

void KernelEmitter::emitGradientPass() {
  bool probs = config.probabilityTargets;

  // Scale of this row's cross-entropy and z-loss terms.
  Value g, gz;
  if (config.reduction == Reduction::none) {
    g = gz = toF32(memref::LoadOp::create(b, gradOutput, rowIdx));
  } else {
    g = gz = toF32(memref::LoadOp::create(b, gradOutput, ValueRange{}));
    auto [weightTotal, count] = emitDivisors();
    g = div(g, weightTotal);
    gz = div(gz, count);
  }
  // Per-row coefficients, so that each element costs one exp and a few
  // multiplies: grad_c = A p_c - B f_c - [c = t] T with
  //   class indices: A = g ((1-ε) w_t + ε/C Σw) + 2 z gz lse,
  //                  B = g ε/C (f_c = w_c), T = g (1-ε) w_t;
  //   probabilities: A = g Σ w q' + 2 z gz lse, B = g (f_c = w_c q'_c).
  // The target's element takes the three terms apart (emitKeptRow below):
  // T (p_t - 1) + B (Σw p_t - w_t) + Z p_t, each factor formed before its
  // scale, so that a small z-loss term is not lost to the cancellation of
  // A p_t - T (one class: p_t = 1 exactly, and the gradient is Z alone).
  Value targetTerm, targetWeight, smoothMass, zTerm;
  if (probs) {
    gradScale = mul(g, rowMass);
    gradMass = g;
  } else {
    // An out-of-range target makes the whole row NaN (never a wild read).
    g = select(valid, g, cstF(std::numeric_limits<double>::quiet_NaN()));
    targetWeight = loadWeight(targetIndex);
    targetTerm = mul(g, mul(smoothing ? keepShare : cstF(1.0), targetWeight));
    gradScale = targetTerm;
    if (smoothing) {
      smoothMass = rowMass ? rowMass : numClassesF;
      gradScale = add(gradScale, mul(g, mul(smoothShare, smoothMass)));
      gradMass = mul(g, smoothShare);
    }
  }
  if (zScale) {
    zTerm = mul(gz, mul(mul(cstF(2.0), zScale), lse));
    gradScale = add(gradScale, zTerm);
  }
  // p_c = exp(x_c - m) / Σ: the 1 / Σ goes into the row's coefficient (no
  // extra work per element).
  gradScale = div(gradScale, rowSumExp);
  // The vectors written have the width of those read (16-byte vectors of
  // the logits), in the gradient's type.
  Type outType = spec.getDlogitsType();

  // Writes fn(c, x_c) (or fn(c) without reading x) over the row, with
  // 16-byte vectors when the row allows it.
  auto emitRowWrite = [&](bool readLogits,
                          function_ref<Value(Value, Value)> fn) {
    auto scalarLoop = [&]() {
      scf::ForOp::create(
          b, tid, numClasses, cstIdx(geometry.threads), ValueRange{},
          [&](OpBuilder &nb, Location loc, Value c, ValueRange) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            Value xc = readLogits ? loadLogit(c) : Value();
            memref::StoreOp::create(b, fromF32(fn(c, xc), outType), dlogits,
                                    rowIndex(c));
            scf::YieldOp::create(b);
          });
    };
    int64_t width = geometry.vectorWidth(spec.logitsType);
    if (resident) {
      // The slice from registers / shared memory: no second read.
      Value dRow = rowVectorView(dlogits);
      auto vecType = VectorType::get({width}, outType);
      llvm::MaybeAlign align(width * outType.getIntOrFloatBitWidth() / 8);
      for (int64_t k = 0; k < kResidentVectors; ++k) {
        auto ifOp =
            scf::IfOp::create(b, residentValid[k], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        Value vec = readLogits ? loadResidentVector(k) : Value();
        SmallVector<Value> cs, xs, out;
        unpackVector(residentStart[k], vec, width, cs, xs);
        for (auto [c, xc] : llvm::zip(cs, xs))
          out.push_back(fromF32(fn(c, xc), outType));
        Value packed = vector::FromElementsOp::create(b, vecType, out);
        vector::StoreOp::create(b, packed, dRow, ValueRange{residentStart[k]},
                                /*nontemporal=*/false, align);
      }
      return;
    }
    if (!(spec.contiguousRows && width > 1)) {
      scalarLoop();
      return;
    }
    SmallVector<Value> buffers = {dlogits};
    if (readLogits)
      buffers.push_back(x);
    Value canVectorize = emitCanVectorize(buffers, width);
    auto ifOp = scf::IfOp::create(b, canVectorize, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scalarLoop();
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value x2 = readLogits ? rowVectorView(x) : Value();
    Value d2 = rowVectorView(dlogits);
    auto vecType = VectorType::get({width}, outType);
    llvm::MaybeAlign align(width * vecType.getElementTypeBitWidth() / 8);
    Value first = arith::MulIOp::create(b, tid, cstIdx(width));
    int64_t chunk = geometry.threads * width;
    scf::ForOp::create(
        b, first, numClasses, cstIdx(chunk * kUnroll), ValueRange{},
        [&](OpBuilder &nb, Location loc, Value c0, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          UnrolledStep step = emitUnrolledLoads(x2, c0, chunk, width);
          for (int64_t u = 0; u < kUnroll; ++u) {
            SmallVector<Value> cs, xs, out;
            unpackVector(inRowStart(step, u), step.vecs[u], width, cs, xs);
            for (auto [c, xc] : llvm::zip(cs, xs))
              out.push_back(fromF32(fn(c, xc), outType));
            Value packed = vector::FromElementsOp::create(b, vecType, out);
            auto store = scf::IfOp::create(b, step.inside[u],
                                           /*withElseRegion=*/false);
            OpBuilder::InsertionGuard storeGuard(b);
            b.setInsertionPointToStart(store.thenBlock());
            vector::StoreOp::create(b, packed, d2, ValueRange{step.starts[u]},
                                    /*nontemporal=*/false, align);
          }
          scf::YieldOp::create(b);
        });
  };

  // The row's reads of the statistics walk (and x_t, emitRowBody) end at
  // the block reduction's barrier, which a single warp does not have: in
  // place, no lane may write before every lane has read.
  if (geometry.warps() == 1 && !resident)
    gpu::BarrierOp::create(b);
  auto emitKeptRow = [&]() {
    // x_t as read before any thread wrote the row (dlogits may be the
    // logits' own buffer).
    Value xt = probs ? Value() : getTargetLogit();
    emitRowWrite(/*readLogits=*/true,
                 [&](Value c, Value xc) { return emitGradientElement(c, xc); });
    if (probs)
      return;
    // The target's element, rewritten whole (rounded once) after every
    // thread has stored its part of the row (by the block whose slice
    // holds it, on the resident path).
    gpu::BarrierOp::create(b);
    Value writer =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cstIdx(0));
    if (resident) {
      int64_t width = geometry.vectorWidth(spec.logitsType);
      Value vector = arith::DivUIOp::create(b, targetIndex, cstIdx(width));
      Value owns = arith::AndIOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, vector,
                                sliceBegin),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, vector,
                                sliceEnd));
      writer = arith::AndIOp::create(b, writer, owns);
    }
    auto fix = scf::IfOp::create(b, writer, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fix.thenBlock());
    Value e = exp(sub(xt, rowMax));
    Value p = div(e, rowSumExp);
    // T (p_t - 1), with p_t - 1 = (e - Σ) / Σ: exactly 0 for one class.
    Value grad = mul(targetTerm, div(sub(e, rowSumExp), rowSumExp));
    if (gradMass)
      grad = add(grad, mul(gradMass, sub(mul(smoothMass, p), targetWeight)));
    if (zTerm)
      grad = add(grad, mul(zTerm, p));
    if (softcap)
      grad = mul(grad, emitSoftcapSlope(xt));
    memref::StoreOp::create(b, fromF32(grad, outType), dlogits,
                            rowIndex(targetIndex));
  };

  if (probs) {
    emitKeptRow();
    return;
  }
  // Ignored rows get exact zeros, whatever their logits: a uniform branch.
  auto ifKept = scf::IfOp::create(b, kept, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifKept.thenBlock());
    emitKeptRow();
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifKept.elseBlock());
  emitRowWrite(/*readLogits=*/false, [&](Value, Value) { return cstF(0.0); });
}
