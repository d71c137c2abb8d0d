//===- LossBuilder.cpp - Shared pieces of the loss decompositions ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/LossBuilder.h"
#include "xent/Dialect/Xent/IR/LossMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

Value loss::constF32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value loss::toF32(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

Value loss::fromF32(OpBuilder &b, Location loc, Value v, Type type) {
  if (type.isF32())
    return v;
  return arith::TruncFOp::create(b, loc, type, v);
}

Value loss::indexToF32(OpBuilder &b, Location loc, Value v) {
  return arith::UIToFPOp::create(
      b, loc, b.getF32Type(),
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), v));
}

/// `offset + scale·v` for an f32 scalar `v`, without an op for a 0 offset or
/// a unit scale.
static Value buildAffine(OpBuilder &b, Location loc, Value v, double scale,
                         double offset) {
  if (scale != 1.0)
    v = arith::MulFOp::create(b, loc, loss::constF32(b, loc, scale), v);
  if (offset != 0.0)
    v = arith::AddFOp::create(b, loc, loss::constF32(b, loc, offset), v);
  return v;
}

Value loss::buildLabelSmoothing(OpBuilder &b, Location loc,
                                const CrossEntropyConfig &config, double scale,
                                double offset) {
  if (Value v = config.scalars.labelSmoothing)
    return buildAffine(b, loc, v, scale, offset);
  return constF32(b, loc, offset + scale * config.labelSmoothing);
}

Value loss::buildZLossScale(OpBuilder &b, Location loc,
                            const CrossEntropyConfig &config, double scale) {
  if (Value v = config.scalars.zLossScale)
    return buildAffine(b, loc, v, scale, 0.0);
  return constF32(b, loc, scale * config.zLossScale);
}

Value loss::buildSoftcap(OpBuilder &b, Location loc,
                         const CrossEntropyConfig &config) {
  if (Value v = config.scalars.softcap)
    return v;
  return constF32(b, loc, *config.softcap);
}

Value loss::buildIgnoreIndex(OpBuilder &b, Location loc,
                             const CrossEntropyConfig &config) {
  if (Value v = config.scalars.ignoreIndex)
    return v;
  return arith::ConstantOp::create(b, loc,
                                   b.getI64IntegerAttr(config.ignoreIndex));
}

Value loss::buildSliceNumClasses(OpBuilder &b, Location loc,
                                 const CrossEntropyConfig &config) {
  if (config.globalNumClasses)
    return arith::ConstantIndexOp::create(b, loc, *config.globalNumClasses);
  if (config.dynamicNumClasses)
    return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      config.dynamicNumClasses);
  return Value();
}

Value loss::buildLogit(OpBuilder &b, Location loc,
                       const CrossEntropyConfig &config, Value raw) {
  Value x = toF32(b, loc, raw);
  if (!config.hasSoftcap())
    return x;
  MathDialectLossMath math(b, loc, config);
  return softcapLogit(math, x);
}

Value loss::buildSoftcapSlope(OpBuilder &b, Location loc,
                              const CrossEntropyConfig &config, Value capped) {
  MathDialectLossMath math(b, loc, config);
  return softcapSlope(math, capped);
}

Value loss::buildProbability(OpBuilder &b, Location loc, Value x, Value m,
                             Value s) {
  return arith::DivFOp::create(
      b, loc, math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, m)),
      s);
}

Value loss::buildClassIndexLoss(OpBuilder &b, Location loc,
                                const CrossEntropyConfig &config, Value m,
                                Value xt, Value logS, Value wt, Value valid,
                                Value gap, Value mass, Value numClasses) {
  // nll = lse - x_t = (m - x_t) + log(s)
  Value nll = arith::AddFOp::create(
      b, loc, arith::SubFOp::create(b, loc, m, xt), logS);
  Value result = arith::MulFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, buildLabelSmoothing(b, loc, config, -1, 1),
                            wt),
      nll);
  if (config.hasLabelSmoothing()) {
    // Σ_c w_c (lse - x_c) = Σ_c w_c (m - x_c) + log(s) Σ_c w_c
    Value smooth = arith::AddFOp::create(
        b, loc, gap, arith::MulFOp::create(b, loc, logS, mass));
    Value share = arith::DivFOp::create(
        b, loc, buildLabelSmoothing(b, loc, config), numClasses);
    Value smoothed = arith::AddFOp::create(
        b, loc, result, arith::MulFOp::create(b, loc, share, smooth));
    // A run-time ε of 0 is no smoothing, also where Σ (lse - x_c) is not
    // finite (a -inf logit): 0 · inf would be NaN.
    if (Value eps = config.scalars.labelSmoothing) {
      Value off = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        eps, constF32(b, loc, 0.0));
      smoothed = arith::SelectOp::create(b, loc, off, result, smoothed);
    }
    result = smoothed;
  }
  // An out-of-range class index gives NaN rather than reading out of bounds.
  Value nan = constF32(b, loc, std::numeric_limits<double>::quiet_NaN());
  return arith::SelectOp::create(b, loc, valid, result, nan);
}

void loss::appendLossTerms(OpBuilder &b, Location loc,
                           const CrossEntropyConfig &config, bool reduce,
                           Value m, Value logS, Value loss, Value kept,
                           Value zero, SmallVectorImpl<Value> &terms) {
  bool zLoss = config.hasZLoss();
  Value z;
  if (zLoss) {
    Value lse = arith::AddFOp::create(b, loc, m, logS);
    MathDialectLossMath math(b, loc, config);
    z = zLossTerm(math, lse);
    if (kept)
      z = arith::SelectOp::create(b, loc, kept, z, zero);
  }
  if (kept)
    loss = arith::SelectOp::create(b, loc, kept, loss, zero);
  if (!reduce && zLoss)
    loss = arith::AddFOp::create(b, loc, loss, z);
  terms.push_back(loss);
  if (zLoss)
    terms.push_back(z);
}

SmallVector<Value> loss::buildReducedLossResults(OpBuilder &b, Location loc,
                                                 Value loss, Value z,
                                                 bool addZ, bool wantZ,
                                                 TypeRange resultTypes) {
  if (addZ)
    loss = arith::AddFOp::create(b, loc, loss, z);
  SmallVector<Value> results = {
      buildScalarTensor(b, loc, loss, resultTypes[0])};
  if (wantZ)
    results.push_back(buildScalarTensor(b, loc, z, resultTypes[1]));
  return results;
}

void loss::buildTermsYield(OpBuilder &b, Location loc, ValueRange terms,
                           ValueRange outs, bool reduce) {
  SmallVector<Value> yields;
  for (auto [term, acc] : llvm::zip(terms, outs))
    yields.push_back(reduce ? Value(arith::AddFOp::create(b, loc, acc, term))
                            : fromF32(b, loc, term, acc.getType()));
  linalg::YieldOp::create(b, loc, yields);
}

Value loss::buildClassIndexCoefficient(OpBuilder &b, Location loc,
                                       const CrossEntropyConfig &config,
                                       Value p, Value onehot, Value wt,
                                       Value wc, Value mass, Value numClasses) {
  // (1-ε) w_t (p_c - δ_tc)
  Value coef = arith::MulFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, buildLabelSmoothing(b, loc, config, -1, 1),
                            wt),
      arith::SubFOp::create(b, loc, p, onehot));
  if (!config.hasLabelSmoothing())
    return coef;
  // ε/C (Σ_k w_k p_c - w_c); Σ_k w_k = C without weights.
  Value share = arith::DivFOp::create(
      b, loc, buildLabelSmoothing(b, loc, config), numClasses);
  Value term = arith::SubFOp::create(
      b, loc, arith::MulFOp::create(b, loc, mass, p), wc);
  return arith::AddFOp::create(b, loc, coef,
                               arith::MulFOp::create(b, loc, share, term));
}

Value loss::buildProbabilityCoefficient(OpBuilder &b, Location loc, Value p,
                                        Value mass, Value wc, Value q) {
  // Σ_k w_k q'_k (p_c - δ_kc) = p_c Σ_k w_k q'_k - w_c q'_c
  return arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, p, mass),
                               arith::MulFOp::create(b, loc, wc, q));
}

namespace {
/// One element's dlogits terms (buildGradientYield).
struct GradientTerms {
  Value coef;        // the class-index or probability coefficient
  Value g, gz;       // scales of the loss and the z-loss terms
  Value x, m, s, p;  // the capped logit, the row's max and Σexp, p_c
  Value kept, valid; // of a class-index target, else null
  Value zero;
};
} // namespace

/// Ends the dlogits generic: g·coef plus the z-loss term gz·2z·lse·p,
/// through the softcap, NaN where not `valid` and `zero` where not `kept`
/// (when given), rounded to `type`.
static void buildGradientYield(OpBuilder &b, Location loc,
                               const CrossEntropyConfig &config,
                               const GradientTerms &t, Type type) {
  Value grad = arith::MulFOp::create(b, loc, t.g, t.coef);
  if (config.hasZLoss()) {
    // d(z·lse²)/dx_c = 2 z lse p_c
    Value lse =
        arith::AddFOp::create(b, loc, t.m, math::LogOp::create(b, loc, t.s));
    Value dz = arith::MulFOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, loss::buildZLossScale(b, loc, config, 2.0), lse),
        t.p);
    grad = arith::AddFOp::create(b, loc, grad,
                                 arith::MulFOp::create(b, loc, t.gz, dz));
  }
  if (config.hasSoftcap())
    grad = arith::MulFOp::create(b, loc, grad,
                                 loss::buildSoftcapSlope(b, loc, config, t.x));
  if (t.kept) {
    Value nan =
        loss::constF32(b, loc, std::numeric_limits<double>::quiet_NaN());
    grad = arith::SelectOp::create(b, loc, t.valid, grad, nan);
    grad = arith::SelectOp::create(b, loc, t.kept, grad, t.zero);
  }
  linalg::YieldOp::create(b, loc, loss::fromF32(b, loc, grad, type));
}

Value loss::buildGradientGeneric(OpBuilder &b, Location loc,
                                 const CrossEntropyConfig &config,
                                 const GradientOperands &operands,
                                 const ElementReader &reader) {
  bool probs = config.probabilityTargets;
  int64_t rank = config.logitsType.getRank(), axis = config.axis;
  MLIRContext *ctx = b.getContext();
  AffineMap fullMap = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap rowMap = getRowMap(ctx, rank, axis);
  SmallVector<Value> inputs = {operands.logits, operands.target, operands.max,
                               operands.sumExp};
  SmallVector<AffineMap> maps = {fullMap, probs ? fullMap : rowMap, rowMap,
                                 rowMap};
  int weightArg = -1, targetWeightArg = -1, massArg = -1, gradArg = -1;
  auto addInput = [&](int &arg, Value v, AffineMap map) {
    if (!v)
      return;
    arg = inputs.size();
    inputs.push_back(v);
    maps.push_back(map);
  };
  addInput(weightArg, operands.weight, getClassMap(ctx, rank, axis));
  addInput(targetWeightArg, operands.targetWeight, rowMap);
  addInput(massArg, operands.mass, rowMap);
  addInput(gradArg,
           config.reduction == Reduction::none ? operands.gradOutput : Value(),
           rowMap);
  unsigned numInputs = inputs.size();
  maps.push_back(fullMap);

  auto generic = linalg::GenericOp::create(
      b, loc, operands.init.getType(), inputs, ValueRange{operands.init}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        auto cst = [&](double v) { return constF32(nb, loc, v); };
        GradientTerms t;
        t.zero = cst(0.0);
        t.x = reader.readLogit(nb, loc, args[0]);
        t.m = args[2];
        t.s = args[3];
        // p = exp(x - m) / s
        t.p = buildProbability(nb, loc, t.x, t.m, t.s);
        Value wc = weightArg >= 0 ? toF32(nb, loc, args[weightArg]) : cst(1.0);
        t.g = operands.lossScale;
        t.gz = operands.zLossScale;
        if (gradArg >= 0)
          t.g = t.gz = toF32(nb, loc, args[gradArg]);

        if (probs) {
          Value q = reader.readSmoothedProbability(nb, loc, args[1]);
          t.coef = buildProbabilityCoefficient(nb, loc, t.p, args[massArg], wc,
                                               q);
        } else {
          ClassTarget target = reader.readClassTarget(nb, loc, args[1]);
          t.kept = target.kept;
          t.valid = target.valid;
          Value c = reader.readGlobalClass(
              nb, loc, linalg::IndexOp::create(nb, loc, axis));
          Value isTarget = arith::CmpIOp::create(
              nb, loc, arith::CmpIPredicate::eq, c, target.index);
          Value onehot =
              arith::SelectOp::create(nb, loc, isTarget, cst(1.0), t.zero);
          Value wt = targetWeightArg >= 0
                         ? args[targetWeightArg]
                         : reader.readTargetWeight(nb, loc, target.index);
          Value mass = massArg >= 0 ? args[massArg] : operands.numClasses;
          t.coef = buildClassIndexCoefficient(nb, loc, config, t.p, onehot, wt,
                                              wc, mass, operands.numClasses);
        }
        buildGradientYield(nb, loc, config, t, args[numInputs].getType());
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

AffineMap loss::getRowMap(MLIRContext *ctx, int64_t rank, int64_t axis) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

AffineMap loss::getClassMap(MLIRContext *ctx, int64_t rank, int64_t axis) {
  return AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx), ctx);
}

SmallVector<OpFoldResult> loss::getRowSizes(OpBuilder &b, Location loc,
                                            Value logits, int64_t axis) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, logits);
  sizes.erase(sizes.begin() + axis);
  return sizes;
}

Value loss::buildPackedRows(OpBuilder &b, Location loc, ValueRange columns,
                            ArrayRef<OpFoldResult> rowSizes) {
  MLIRContext *ctx = b.getContext();
  int64_t rowRank = rowSizes.size(), k = columns.size();
  SmallVector<OpFoldResult> sizes(rowSizes);
  sizes.push_back(b.getIndexAttr(k));
  Value init = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  SmallVector<AffineExpr> rowExprs;
  for (int64_t d = 0; d < rowRank; ++d)
    rowExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> maps(k, AffineMap::get(rowRank + 1, 0, rowExprs, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(rowRank + 1, ctx));
  return linalg::GenericOp::create(
             b, loc, init.getType(), columns, ValueRange{init}, maps,
             SmallVector<utils::IteratorType>(rowRank + 1,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               // Column j of the packed row: args[j], by a select chain.
               Value j = linalg::IndexOp::create(nb, nloc, rowRank);
               Value v = args[0];
               for (int64_t i = 1; i < k; ++i) {
                 Value isI = arith::CmpIOp::create(
                     nb, nloc, arith::CmpIPredicate::eq, j,
                     arith::ConstantIndexOp::create(nb, nloc, i));
                 v = arith::SelectOp::create(nb, nloc, isI, args[i], v);
               }
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

SmallVector<Value> loss::buildUnpackedRows(OpBuilder &b, Location loc,
                                           Value packed, int64_t k,
                                           ArrayRef<OpFoldResult> rowSizes) {
  int64_t rowRank = rowSizes.size();
  auto rowType = RankedTensorType::get(
      cast<RankedTensorType>(packed.getType()).getShape().drop_back(),
      b.getF32Type());
  SmallVector<OpFoldResult> offsets(rowRank + 1, b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(rowRank + 1, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes(rowSizes);
  sizes.push_back(b.getIndexAttr(1));
  SmallVector<Value> columns;
  for (int64_t j = 0; j < k; ++j) {
    offsets.back() = b.getIndexAttr(j);
    columns.push_back(tensor::ExtractSliceOp::create(b, loc, rowType, packed,
                                                     offsets, sizes, strides));
  }
  return columns;
}

Value loss::buildFilledRows(OpBuilder &b, Location loc, Value logits,
                            int64_t axis, double value) {
  Value init = tensor::EmptyOp::create(b, loc, getRowSizes(b, loc, logits, axis),
                                       b.getF32Type());
  Value v = constF32(b, loc, value);
  return linalg::FillOp::create(b, loc, v, init).getResult(0);
}

Value loss::castTensor(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

Value loss::buildScalarTensor(OpBuilder &b, Location loc, Value v, Type type) {
  Type elementType = cast<RankedTensorType>(type).getElementType();
  Value element = fromF32(b, loc, v, elementType);
  return tensor::FromElementsOp::create(b, loc, type, ValueRange{element});
}

Value loss::buildRowCount(OpBuilder &b, Location loc, Value logits,
                          int64_t axis) {
  Value n = constF32(b, loc, 1.0);
  for (OpFoldResult size : getRowSizes(b, loc, logits, axis)) {
    Value s = getValueOrCreateConstantIndexOp(b, loc, size);
    n = arith::MulFOp::create(b, loc, n, indexToF32(b, loc, s));
  }
  return n;
}

loss::ElementLoop loss::getElementLoop(MLIRContext *ctx, int64_t elementRank,
                                       bool reduce) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(elementRank, ctx);
  return {id, reduce ? AffineMap::get(elementRank, 0, ctx) : id,
          SmallVector<utils::IteratorType>(
              elementRank, reduce ? utils::IteratorType::reduction
                                  : utils::IteratorType::parallel)};
}

void loss::forEachElementOutput(bool withLoss, bool zLoss, bool reduce,
                                Type lossType, Type zType,
                                function_ref<void(Type)> addOutput) {
  Type f32 = Float32Type::get(lossType.getContext());
  if (withLoss) {
    addOutput(reduce ? f32 : lossType);
    if (zLoss)
      addOutput(reduce ? f32 : zType);
  }
  if (reduce) {
    addOutput(f32);
    addOutput(f32);
  }
}

loss::ElementTerms loss::getElementTerms(linalg::GenericOp generic,
                                         bool withLoss, bool zLoss,
                                         bool reduce) {
  ElementTerms result;
  unsigned r = 0;
  if (withLoss) {
    result.loss = generic.getResult(r++);
    if (zLoss)
      result.zLoss = generic.getResult(r++);
  }
  if (reduce) {
    result.weight = generic.getResult(r++);
    result.kept = generic.getResult(r++);
  }
  return result;
}

Value loss::buildRowMax(OpBuilder &b, Location loc,
                        const CrossEntropyConfig &config, Value logits) {
  int64_t rank = config.logitsType.getRank(), axis = config.axis;
  MLIRContext *ctx = b.getContext();
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  Value init = buildFilledRows(b, loc, logits, axis,
                               -std::numeric_limits<double>::infinity());
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{logits}, ValueRange{init},
      ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx),
                          getRowMap(ctx, rank, axis)},
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = buildLogit(nb, nloc, config, args[0]);
        Value m = arith::MaximumFOp::create(nb, nloc, x, args[1]);
        linalg::YieldOp::create(nb, nloc, m);
      });
  return generic.getResult(0);
}
