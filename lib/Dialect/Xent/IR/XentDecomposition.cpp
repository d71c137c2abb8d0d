//===- XentDecomposition.cpp - Canonical decomposition builders -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The canonical decomposition of `xent.cross_entropy` and
// `xent.cross_entropy_grad` into linalg / tensor / arith / math on tensors.
//
// For logits of rank r with class axis a, "row" means the C logits of one
// element (fixed indices on every other axis). The computation is:
//
//   1. emitRowMax:          m   = max_c x_c                 (per row)
//   2. emitRowSums:         s   = Σ_c exp(x_c - m)          (per row)
//                           and, when needed, smoothing / probability sums
//                           taken relative to m to avoid cancellation.
//   3. emitElementTerms:    per-element loss, weight, keep flag and z-loss,
//                           either kept per element (`none`) or summed
//                           (`mean` / `sum`) in the same linalg.generic.
//   4. scalar epilogue:     divide by the kept weight / count for `mean`.
//
// with lse = m + log(s). Everything is computed in f32; logits are widened
// (and soft-capped) where they are read, so no f32 copy of the N×C logits is
// materialized. The gradient reuses 1-3 (without the loss terms) and writes
// dlogits in one parallel linalg.generic.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentDecomposition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;

namespace {

/// Per-row statistics over the class axis, each a tensor of f32 shaped like
/// the per-element loss. Null when not requested.
struct RowStats {
  Value max;      // m = max_c x_c
  Value sumExp;   // s = Σ_c exp(x_c - m)
  Value weightedGap; // Σ_c w_c·(m - x_c)      (smoothing) or
                     // Σ_c w_c·q'_c·(m - x_c) (probability targets)
  Value weightSum;   // Σ_c w_c                 (smoothing) or
                     // Σ_c w_c·q'_c            (probability targets)
};

/// Which outputs of the element generic a caller needs.
struct ElementTerms {
  Value loss;   // f32 loss without the z-loss term
  Value weight; // w_t on kept elements, else 0
  Value kept;   // 1 on kept elements, else 0
  Value zLoss;  // z·lse² on kept elements, else 0
};

/// Builds the decomposition of one op configuration.
/// The loop of a generic over the per-element values (the logits' dims but
/// the class axis): identity maps for its inputs, and for its outputs the
/// identity, or the map to a scalar when the loop reduces every element.
struct ElementLoop {
  AffineMap inputMap, outputMap;
  SmallVector<utils::IteratorType> iterators;
};
static ElementLoop getElementLoop(MLIRContext *ctx, int64_t elementRank,
                                  bool reduce) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(elementRank, ctx);
  return {id, reduce ? AffineMap::get(elementRank, 0, ctx) : id,
          SmallVector<utils::IteratorType>(
              elementRank, reduce ? utils::IteratorType::reduction
                                  : utils::IteratorType::parallel)};
}

class DecompositionEmitter {
public:
  DecompositionEmitter(OpBuilder &builder, Location loc,
                       const CrossEntropyConfig &config, Value logits,
                       Value target, Value weight)
      : b(loc, builder), config(config), logits(logits), target(target),
        weight(weight), rank(config.logitsType.getRank()), axis(config.axis),
        f32(builder.getF32Type()) {}

  SmallVector<Value> emitForward(TypeRange resultTypes,
                                 const RowOutputTypes &rowOutputs);
  Value emitGradient(Value gradOutput);

private:
  //===--- Scalars (usable inside generic bodies through `nb`) -----------===//
  static Value constF32(OpBuilder &nb, Location loc, double v) {
    return arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  /// Widens a float scalar to f32.
  static Value toF32(OpBuilder &nb, Location loc, Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(nb, loc, nb.getF32Type(), v);
  }
  /// Rounds an f32 scalar to `type`.
  static Value fromF32(OpBuilder &nb, Location loc, Value v, Type type) {
    if (type.isF32())
      return v;
    return arith::TruncFOp::create(nb, loc, type, v);
  }
  /// Ends an element generic: each f32 term is added to its accumulator
  /// (`reduce`) or rounded to its output's element type (per element).
  static void emitTermsYield(OpBuilder &nb, Location loc, ValueRange terms,
                             ValueRange outs, bool reduce) {
    SmallVector<Value> yields;
    for (auto [term, acc] : llvm::zip(terms, outs))
      yields.push_back(reduce ? Value(arith::AddFOp::create(nb, loc, acc, term))
                              : fromF32(nb, loc, term, acc.getType()));
    linalg::YieldOp::create(nb, loc, yields);
  }
  /// A logit as the computation sees it: widened to f32 and soft-capped.
  Value emitLogit(OpBuilder &nb, Location loc, Value raw) const;
  /// Derivative of the softcap at the capped value `x`: 1 - (x / cap)².
  Value emitSoftcapSlope(OpBuilder &nb, Location loc, Value capped) const;
  /// The class index of a target as i64, the keep flag (target differs from
  /// ignore_index), the validity flag (0 <= t < C) and a safe index (t when
  /// valid, else 0) for reading `logits` and `weight`.
  struct TargetIndex {
    Value kept, valid, index;
  };
  TargetIndex emitTargetIndex(OpBuilder &nb, Location loc, Value t) const;
  /// weight[index] as f32, or 1 when unweighted.
  Value emitClassWeight(OpBuilder &nb, Location loc, Value index) const;
  /// Probability target q widened and smoothed: q·(1-ε) + ε/C.
  Value emitSmoothedProbability(OpBuilder &nb, Location loc, Value q) const;

  //===--- Shapes and maps --------------------------------------------===//
  AffineMap fullMap() const {
    return AffineMap::getMultiDimIdentityMap(rank, logits.getContext());
  }
  /// (d0 .. d(r-1)) -> all dims but the class axis.
  AffineMap rowMap() const;
  /// (d0 .. d(r-1)) -> (d_axis).
  AffineMap classMap() const {
    return AffineMap::get(rank, 0, getAffineDimExpr(axis, logits.getContext()),
                          logits.getContext());
  }
  /// The sizes of the logits without the class axis.
  SmallVector<OpFoldResult> elementSizes();
  /// C as an index value and as f32.
  Value numClassesIndex();
  Value numClassesF32();
  Value emptyElementTensor(Type elementType);
  Value filledElementTensor(double value);
  Value filledScalarTensor(double value);
  /// Appends an output of a per-element generic and its map: a zero-filled
  /// f32 scalar when the generic reduces every element, else an empty
  /// per-element tensor of `elementType`.
  void addElementOutput(SmallVectorImpl<Value> &outputs,
                        SmallVectorImpl<AffineMap> &maps, AffineMap outMap,
                        bool reduce, Type elementType) {
    outputs.push_back(reduce ? filledScalarTensor(0.0)
                             : emptyElementTensor(elementType));
    maps.push_back(outMap);
  }
  Value castTo(Value v, Type type);
  Value extractScalar(Value rank0) {
    return tensor::ExtractOp::create(b, rank0, ValueRange{});
  }

  //===--- Steps -------------------------------------------------------===//
  Value emitRowMax();
  /// Needs `max`; fills `sumExp` and, when `withExtras`, `weightedGap` (only
  /// if `withGap`) and `weightSum`.
  void emitRowSums(RowStats &stats, bool withExtras, bool withGap);
  /// Per-element terms for class-index targets. With `reduce`, every output
  /// is summed into a rank-0 tensor; otherwise the outputs keep the element
  /// shape, and `loss` / `zLoss` are emitted in `lossType` / `zType` already
  /// combined (loss includes the z term). With `withLoss` false only
  /// `weight` and `kept` are produced.
  ElementTerms emitClassIndexTerms(const RowStats &stats, bool reduce,
                                   bool withLoss, Type lossType, Type zType);
  /// Same for probability targets (every element is kept, weight 1).
  ElementTerms emitProbabilityTerms(const RowStats &stats, bool reduce,
                                    Type lossType, Type zType);

  ImplicitLocOpBuilder b;
  const CrossEntropyConfig &config;
  Value logits, target, weight;
  int64_t rank, axis;
  Type f32;
};

} // namespace

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::emitLogit(OpBuilder &nb, Location loc,
                                      Value raw) const {
  Value x = toF32(nb, loc, raw);
  if (!config.softcap)
    return x;
  Value cap = constF32(nb, loc, *config.softcap);
  Value scaled = arith::DivFOp::create(nb, loc, x, cap);
  Value t = math::TanhOp::create(nb, loc, scaled);
  return arith::MulFOp::create(nb, loc, cap, t);
}

Value DecompositionEmitter::emitSoftcapSlope(OpBuilder &nb, Location loc,
                                             Value capped) const {
  Value cap = constF32(nb, loc, *config.softcap);
  Value t = arith::DivFOp::create(nb, loc, capped, cap);
  Value t2 = arith::MulFOp::create(nb, loc, t, t);
  return arith::SubFOp::create(nb, loc, constF32(nb, loc, 1.0), t2);
}

DecompositionEmitter::TargetIndex
DecompositionEmitter::emitTargetIndex(OpBuilder &nb, Location loc,
                                      Value t) const {
  Type i64 = nb.getI64Type();
  if (t.getType() != i64)
    t = arith::ExtSIOp::create(nb, loc, i64, t);
  auto constI64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(v));
  };
  Value kept = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, t,
                                     constI64(config.ignoreIndex));
  // C is re-read inside the body so that dynamic class counts work too.
  Value c = tensor::DimOp::create(nb, loc, logits, axis);
  Value cI64 = arith::IndexCastOp::create(nb, loc, i64, c);
  Value nonNegative =
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sge, t, constI64(0));
  Value below =
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::slt, t, cI64);
  Value valid = arith::AndIOp::create(nb, loc, nonNegative, below);
  Value safe = arith::SelectOp::create(nb, loc, valid, t, constI64(0));
  Value index =
      arith::IndexCastOp::create(nb, loc, nb.getIndexType(), safe);
  return {kept, valid, index};
}

Value DecompositionEmitter::emitClassWeight(OpBuilder &nb, Location loc,
                                            Value index) const {
  if (!weight)
    return constF32(nb, loc, 1.0);
  Value w = tensor::ExtractOp::create(nb, loc, weight, ValueRange{index});
  return toF32(nb, loc, w);
}

Value DecompositionEmitter::emitSmoothedProbability(OpBuilder &nb,
                                                    Location loc,
                                                    Value q) const {
  q = toF32(nb, loc, q);
  if (config.labelSmoothing == 0.0f)
    return q;
  Value eps = constF32(nb, loc, config.labelSmoothing);
  Value keep = constF32(nb, loc, 1.0 - config.labelSmoothing);
  Value c = tensor::DimOp::create(nb, loc, logits, axis);
  Value cF = arith::UIToFPOp::create(
      nb, loc, nb.getF32Type(),
      arith::IndexCastUIOp::create(nb, loc, nb.getI64Type(), c));
  Value share = arith::DivFOp::create(nb, loc, eps, cF);
  return arith::AddFOp::create(
      nb, loc, arith::MulFOp::create(nb, loc, q, keep), share);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

AffineMap DecompositionEmitter::rowMap() const {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      exprs.push_back(getAffineDimExpr(d, logits.getContext()));
  return AffineMap::get(rank, 0, exprs, logits.getContext());
}

SmallVector<OpFoldResult> DecompositionEmitter::elementSizes() {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, b.getLoc(), logits);
  sizes.erase(sizes.begin() + axis);
  return sizes;
}

Value DecompositionEmitter::numClassesIndex() {
  return tensor::DimOp::create(b, logits, axis);
}

Value DecompositionEmitter::numClassesF32() {
  Value c = arith::IndexCastUIOp::create(b, b.getI64Type(), numClassesIndex());
  return arith::UIToFPOp::create(b, f32, c);
}

Value DecompositionEmitter::emptyElementTensor(Type elementType) {
  return tensor::EmptyOp::create(b, elementSizes(), elementType);
}

Value DecompositionEmitter::filledElementTensor(double value) {
  Value init = emptyElementTensor(f32);
  Value v = constF32(b, b.getLoc(), value);
  return linalg::FillOp::create(b, v, init).getResult(0);
}

Value DecompositionEmitter::filledScalarTensor(double value) {
  Value init = tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f32);
  Value v = constF32(b, b.getLoc(), value);
  return linalg::FillOp::create(b, v, init).getResult(0);
}

Value DecompositionEmitter::castTo(Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, type, v);
}

//===----------------------------------------------------------------------===//
// Row statistics
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::emitRowMax() {
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  Value init =
      filledElementTensor(-std::numeric_limits<double>::infinity());
  auto generic = linalg::GenericOp::create(
      b, init.getType(), ValueRange{logits}, ValueRange{init},
      ArrayRef<AffineMap>{fullMap(), rowMap()}, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = emitLogit(nb, loc, args[0]);
        Value m = arith::MaximumFOp::create(nb, loc, x, args[1]);
        linalg::YieldOp::create(nb, loc, m);
      });
  return generic.getResult(0);
}

void DecompositionEmitter::emitRowSums(RowStats &stats, bool withExtras,
                                       bool withGap) {
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;

  SmallVector<Value> inputs = {logits, stats.max};
  SmallVector<AffineMap> maps = {fullMap(), rowMap()};
  int weightArg = -1, probArg = -1;
  if (withExtras && weight) {
    weightArg = inputs.size();
    inputs.push_back(weight);
    maps.push_back(classMap());
  }
  if (withExtras && config.probabilityTargets) {
    probArg = inputs.size();
    inputs.push_back(target);
    maps.push_back(fullMap());
  }
  unsigned numInputs = inputs.size();
  unsigned numOutputs = 1 + (withExtras ? (withGap ? 2 : 1) : 0);
  SmallVector<Value> outputs;
  for (unsigned i = 0; i < numOutputs; ++i) {
    outputs.push_back(filledElementTensor(0.0));
    maps.push_back(rowMap());
  }
  SmallVector<Type> types(numOutputs, outputs[0].getType());

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = emitLogit(nb, loc, args[0]);
        Value m = args[1];
        Value shifted = arith::SubFOp::create(nb, loc, x, m);
        Value e = math::ExpOp::create(nb, loc, shifted);
        SmallVector<Value> yields = {
            arith::AddFOp::create(nb, loc, args[numInputs], e)};
        if (withExtras) {
          // The factor of each class in the smoothing / probability sums.
          Value factor = weightArg >= 0 ? toF32(nb, loc, args[weightArg])
                                        : constF32(nb, loc, 1.0);
          if (probArg >= 0)
            factor = arith::MulFOp::create(
                nb, loc, factor,
                emitSmoothedProbability(nb, loc, args[probArg]));
          unsigned out = numInputs + 1;
          if (withGap) {
            Value gap = arith::SubFOp::create(nb, loc, m, x);
            Value term = arith::MulFOp::create(nb, loc, factor, gap);
            yields.push_back(
                arith::AddFOp::create(nb, loc, args[out++], term));
          }
          yields.push_back(arith::AddFOp::create(nb, loc, args[out], factor));
        }
        linalg::YieldOp::create(nb, loc, yields);
      });
  stats.sumExp = generic.getResult(0);
  if (withExtras) {
    unsigned r = 1;
    if (withGap)
      stats.weightedGap = generic.getResult(r++);
    stats.weightSum = generic.getResult(r);
  }
}

//===----------------------------------------------------------------------===//
// Per-element terms
//===----------------------------------------------------------------------===//

ElementTerms DecompositionEmitter::emitClassIndexTerms(const RowStats &stats,
                                                       bool reduce,
                                                       bool withLoss,
                                                       Type lossType,
                                                       Type zType) {
  auto [id, outMap, iterators] =
      getElementLoop(b.getContext(), rank - 1, reduce);

  bool smoothing = withLoss && config.labelSmoothing != 0.0f;
  bool zLoss = withLoss && config.zLossScale != 0.0f;
  SmallVector<Value> inputs = {target};
  if (withLoss) {
    inputs.push_back(stats.max);
    inputs.push_back(stats.sumExp);
  }
  if (smoothing) {
    inputs.push_back(stats.weightedGap);
    inputs.push_back(stats.weightSum);
  }
  SmallVector<AffineMap> maps(inputs.size(), id);
  unsigned numInputs = inputs.size();

  // Outputs: [loss, zLoss] when withLoss, then [weight, kept] when reducing.
  SmallVector<Value> outputs;
  auto addOutput = [&](Type elementType) {
    addElementOutput(outputs, maps, outMap, reduce, elementType);
  };
  if (withLoss) {
    addOutput(reduce ? f32 : lossType);
    if (zLoss)
      addOutput(reduce ? f32 : zType);
  }
  if (reduce) {
    addOutput(f32);
    addOutput(f32);
  }
  SmallVector<Type> types = llvm::map_to_vector(
      outputs, [](Value v) { return v.getType(); });

  Value numClasses = withLoss && smoothing ? numClassesF32() : Value();
  float eps = config.labelSmoothing;
  float zScale = config.zLossScale;

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value zero = constF32(nb, loc, 0.0);
        TargetIndex t = emitTargetIndex(nb, loc, args[0]);
        Value wt = emitClassWeight(nb, loc, t.index);
        SmallVector<Value> terms; // per-element values, in output order
        if (withLoss) {
          Value m = args[1], s = args[2];
          Value logS = math::LogOp::create(nb, loc, s);
          // x_t: read logits at the target class.
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank - 1; ++d)
            indices.push_back(linalg::IndexOp::create(nb, loc, d));
          indices.insert(indices.begin() + axis, t.index);
          Value xt = emitLogit(
              nb, loc, tensor::ExtractOp::create(nb, loc, logits, indices));
          // nll = lse - x_t = (m - x_t) + log(s)
          Value nll = arith::AddFOp::create(
              nb, loc, arith::SubFOp::create(nb, loc, m, xt), logS);
          Value loss = arith::MulFOp::create(
              nb, loc, arith::MulFOp::create(nb, loc, constF32(nb, loc, 1.0 - eps), wt),
              nll);
          if (smoothing) {
            // Σ_c w_c (lse - x_c) = Σ_c w_c (m - x_c) + log(s) Σ_c w_c
            Value smooth = arith::AddFOp::create(
                nb, loc, args[3], arith::MulFOp::create(nb, loc, logS, args[4]));
            Value share =
                arith::DivFOp::create(nb, loc, constF32(nb, loc, eps), numClasses);
            loss = arith::AddFOp::create(
                nb, loc, loss, arith::MulFOp::create(nb, loc, share, smooth));
          }
          // An out-of-range class index gives NaN rather than reading out of
          // bounds.
          Value nan = constF32(nb, loc, std::numeric_limits<double>::quiet_NaN());
          loss = arith::SelectOp::create(nb, loc, t.valid, loss, nan);
          Value z;
          if (zLoss) {
            Value lse = arith::AddFOp::create(nb, loc, m, logS);
            z = arith::MulFOp::create(
                nb, loc, constF32(nb, loc, zScale),
                arith::MulFOp::create(nb, loc, lse, lse));
            z = arith::SelectOp::create(nb, loc, t.kept, z, zero);
          }
          loss = arith::SelectOp::create(nb, loc, t.kept, loss, zero);
          if (!reduce && zLoss)
            loss = arith::AddFOp::create(nb, loc, loss, z);
          terms.push_back(loss);
          if (zLoss)
            terms.push_back(z);
        }
        if (reduce) {
          terms.push_back(arith::SelectOp::create(nb, loc, t.kept, wt, zero));
          terms.push_back(arith::SelectOp::create(
              nb, loc, t.kept, constF32(nb, loc, 1.0), zero));
        }
        emitTermsYield(nb, loc, terms, args.drop_front(numInputs), reduce);
      });

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

ElementTerms DecompositionEmitter::emitProbabilityTerms(const RowStats &stats,
                                                        bool reduce,
                                                        Type lossType,
                                                        Type zType) {
  auto [id, outMap, iterators] =
      getElementLoop(b.getContext(), rank - 1, reduce);
  bool zLoss = config.zLossScale != 0.0f;

  SmallVector<Value> inputs = {stats.max, stats.sumExp, stats.weightedGap,
                               stats.weightSum};
  SmallVector<AffineMap> maps(inputs.size(), id);
  unsigned numInputs = inputs.size();
  SmallVector<Value> outputs;
  auto addOutput = [&](Type elementType) {
    addElementOutput(outputs, maps, outMap, reduce, elementType);
  };
  addOutput(reduce ? f32 : lossType);
  if (zLoss)
    addOutput(reduce ? f32 : zType);
  if (reduce)
    addOutput(f32); // element count
  SmallVector<Type> types = llvm::map_to_vector(
      outputs, [](Value v) { return v.getType(); });
  float zScale = config.zLossScale;

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value m = args[0], s = args[1], gap = args[2], mass = args[3];
        Value logS = math::LogOp::create(nb, loc, s);
        // -Σ_c w_c q'_c (x_c - lse) = Σ_c w_c q'_c (m - x_c) + log(s) Σ w_c q'_c
        Value loss = arith::AddFOp::create(
            nb, loc, gap, arith::MulFOp::create(nb, loc, logS, mass));
        SmallVector<Value> terms;
        Value z;
        if (zLoss) {
          Value lse = arith::AddFOp::create(nb, loc, m, logS);
          z = arith::MulFOp::create(nb, loc, constF32(nb, loc, zScale),
                                    arith::MulFOp::create(nb, loc, lse, lse));
          if (!reduce)
            loss = arith::AddFOp::create(nb, loc, loss, z);
        }
        terms.push_back(loss);
        if (zLoss)
          terms.push_back(z);
        if (reduce)
          terms.push_back(constF32(nb, loc, 1.0));
        emitTermsYield(nb, loc, terms, args.drop_front(numInputs), reduce);
      });

  ElementTerms result;
  unsigned r = 0;
  result.loss = generic.getResult(r++);
  if (zLoss)
    result.zLoss = generic.getResult(r++);
  if (reduce) {
    result.kept = generic.getResult(r++);
    result.weight = result.kept;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

SmallVector<Value>
DecompositionEmitter::emitForward(TypeRange resultTypes,
                                  const RowOutputTypes &rowOutputs) {
  bool wantZ = resultTypes.size() > 1;
  bool probs = config.probabilityTargets;
  bool smoothing = config.labelSmoothing != 0.0f;
  bool reduce = config.reduction != Reduction::none;
  Type lossElt = cast<RankedTensorType>(resultTypes[0]).getElementType();
  Type zElt = wantZ ? cast<RankedTensorType>(resultTypes[1]).getElementType()
                    : f32;

  RowStats stats;
  stats.max = emitRowMax();
  emitRowSums(stats, /*withExtras=*/probs || smoothing, /*withGap=*/true);
  ElementTerms terms =
      probs ? emitProbabilityTerms(stats, reduce, lossElt, zElt)
            : emitClassIndexTerms(stats, reduce, /*withLoss=*/true, lossElt,
                                  zElt);
  SmallVector<Value> rows =
      rowOutputs ? buildRowOutputs(b, b.getLoc(), config, logits, target,
                                   stats.max, stats.sumExp, rowOutputs)
                 : SmallVector<Value>();

  if (!reduce) {
    SmallVector<Value> results = {castTo(terms.loss, resultTypes[0])};
    if (wantZ) {
      Value z = terms.zLoss;
      if (!z) // no z-loss configured: it is zero everywhere
        z = linalg::FillOp::create(
                b, fromF32(b, b.getLoc(), constF32(b, b.getLoc(), 0.0), zElt),
                emptyElementTensor(zElt))
                .getResult(0);
      results.push_back(castTo(z, resultTypes[1]));
    }
    llvm::append_range(results, rows);
    return results;
  }

  // Scalar epilogue for `mean` and `sum`.
  Value loss = extractScalar(terms.loss);
  Value z = terms.zLoss ? extractScalar(terms.zLoss)
                        : constF32(b, b.getLoc(), 0.0);
  if (config.reduction == Reduction::mean) {
    loss = arith::DivFOp::create(b, loss, extractScalar(terms.weight));
    // The z-loss part is a mean over kept elements even when its scale is 0,
    // so that it is NaN exactly when the loss is (no kept element).
    if (terms.zLoss || wantZ)
      z = arith::DivFOp::create(b, z, extractScalar(terms.kept));
  }
  if (terms.zLoss)
    loss = arith::AddFOp::create(b, loss, z);
  auto toTensor = [&](Value scalar, Type type) -> Value {
    Type elt = cast<RankedTensorType>(type).getElementType();
    Value v = fromF32(b, b.getLoc(), scalar, elt);
    return tensor::FromElementsOp::create(b, type, ValueRange{v});
  };
  SmallVector<Value> results = {toTensor(loss, resultTypes[0])};
  if (wantZ)
    results.push_back(toTensor(z, resultTypes[1]));
  llvm::append_range(results, rows);
  return results;
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::emitGradient(Value gradOutput) {
  bool probs = config.probabilityTargets;
  bool smoothing = config.labelSmoothing != 0.0f;
  bool zLoss = config.zLossScale != 0.0f;
  Reduction reduction = config.reduction;

  RowStats stats;
  stats.max = emitRowMax();
  // Probability targets need Σ_c w_c q'_c; smoothing needs Σ_c w_c.
  emitRowSums(stats, /*withExtras=*/probs || (smoothing && weight),
              /*withGap=*/false);

  // The scale of each element's loss and z-loss terms.
  Value lossScale, zScaleFactor; // f32 scalars, or null for per-element
  if (reduction != Reduction::none) {
    Value go = toF32(b, b.getLoc(), extractScalar(gradOutput));
    lossScale = zScaleFactor = go;
    if (reduction == Reduction::mean) {
      Value weightTotal, count;
      if (probs) {
        // Mean over elements: the product of the non-class sizes.
        Value n = constF32(b, b.getLoc(), 1.0);
        for (OpFoldResult size : elementSizes()) {
          Value s = getValueOrCreateConstantIndexOp(b, b.getLoc(), size);
          Value sF = arith::UIToFPOp::create(
              b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), s));
          n = arith::MulFOp::create(b, n, sF);
        }
        weightTotal = count = n;
      } else {
        ElementTerms totals = emitClassIndexTerms(
            stats, /*reduce=*/true, /*withLoss=*/false, f32, f32);
        weightTotal = extractScalar(totals.weight);
        count = extractScalar(totals.kept);
      }
      lossScale = arith::DivFOp::create(b, go, weightTotal);
      zScaleFactor = arith::DivFOp::create(b, go, count);
    }
  }

  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  SmallVector<Value> inputs = {logits, target, stats.max, stats.sumExp};
  SmallVector<AffineMap> maps = {fullMap(), probs ? fullMap() : rowMap(),
                                 rowMap(), rowMap()};
  int weightArg = -1, massArg = -1, gradArg = -1;
  if (weight) {
    weightArg = inputs.size();
    inputs.push_back(weight);
    maps.push_back(classMap());
  }
  if (stats.weightSum) {
    massArg = inputs.size();
    inputs.push_back(stats.weightSum);
    maps.push_back(rowMap());
  }
  if (reduction == Reduction::none) {
    gradArg = inputs.size();
    inputs.push_back(gradOutput);
    maps.push_back(rowMap());
  }
  unsigned numInputs = inputs.size();
  Type logitsElt = config.logitsType.getElementType();
  Value init = tensor::EmptyOp::create(
      b, tensor::getMixedSizes(b, b.getLoc(), logits), logitsElt);
  maps.push_back(fullMap());

  Value numClasses = numClassesF32();
  float eps = config.labelSmoothing;
  float zScale = config.zLossScale;

  auto generic = linalg::GenericOp::create(
      b, init.getType(), inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        auto cst = [&](double v) { return constF32(nb, loc, v); };
        Value zero = cst(0.0);
        Value x = emitLogit(nb, loc, args[0]);
        Value m = args[2], s = args[3];
        // p = exp(x - m) / s
        Value p = arith::DivFOp::create(
            nb, loc,
            math::ExpOp::create(nb, loc, arith::SubFOp::create(nb, loc, x, m)),
            s);
        Value wc = weightArg >= 0 ? toF32(nb, loc, args[weightArg]) : cst(1.0);
        Value g = lossScale, gz = zScaleFactor;
        if (gradArg >= 0)
          g = gz = toF32(nb, loc, args[gradArg]);

        Value coef;
        Value kept, valid;
        if (probs) {
          // Σ_k w_k q'_k (p_c - δ_kc) = p_c Σ_k w_k q'_k - w_c q'_c
          Value q = emitSmoothedProbability(nb, loc, args[1]);
          coef = arith::SubFOp::create(
              nb, loc, arith::MulFOp::create(nb, loc, p, args[massArg]),
              arith::MulFOp::create(nb, loc, wc, q));
        } else {
          TargetIndex t = emitTargetIndex(nb, loc, args[1]);
          kept = t.kept;
          valid = t.valid;
          Value c = linalg::IndexOp::create(nb, loc, axis);
          Value isTarget = arith::CmpIOp::create(
              nb, loc, arith::CmpIPredicate::eq, c, t.index);
          Value onehot = arith::SelectOp::create(nb, loc, isTarget, cst(1.0),
                                                 zero);
          Value wt = emitClassWeight(nb, loc, t.index);
          // (1-ε) w_t (p_c - δ_tc)
          coef = arith::MulFOp::create(
              nb, loc, arith::MulFOp::create(nb, loc, cst(1.0 - eps), wt),
              arith::SubFOp::create(nb, loc, p, onehot));
          if (smoothing) {
            // ε/C (Σ_k w_k p_c - w_c); Σ_k w_k = C without weights.
            Value mass = massArg >= 0 ? args[massArg] : numClasses;
            Value share =
                arith::DivFOp::create(nb, loc, cst(eps), numClasses);
            Value term = arith::SubFOp::create(
                nb, loc, arith::MulFOp::create(nb, loc, mass, p), wc);
            coef = arith::AddFOp::create(
                nb, loc, coef, arith::MulFOp::create(nb, loc, share, term));
          }
        }
        Value grad = arith::MulFOp::create(nb, loc, g, coef);
        if (zLoss) {
          // d(z·lse²)/dx_c = 2 z lse p_c
          Value lse = arith::AddFOp::create(nb, loc, m,
                                            math::LogOp::create(nb, loc, s));
          Value dz = arith::MulFOp::create(
              nb, loc, arith::MulFOp::create(nb, loc, cst(2.0 * zScale), lse),
              p);
          grad = arith::AddFOp::create(
              nb, loc, grad, arith::MulFOp::create(nb, loc, gz, dz));
        }
        if (config.softcap)
          grad = arith::MulFOp::create(nb, loc, grad,
                                       emitSoftcapSlope(nb, loc, x));
        if (kept) {
          Value nan = cst(std::numeric_limits<double>::quiet_NaN());
          grad = arith::SelectOp::create(nb, loc, valid, grad, nan);
          grad = arith::SelectOp::create(nb, loc, kept, grad, zero);
        }
        linalg::YieldOp::create(
            nb, loc, fromF32(nb, loc, grad, args[numInputs].getType()));
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

SmallVector<Value> mlir::xent::buildCrossEntropy(
    OpBuilder &b, Location loc, const CrossEntropyConfig &config, Value logits,
    Value target, Value weight, TypeRange resultTypes,
    const RowOutputTypes &rowOutputs) {
  DecompositionEmitter emitter(b, loc, config, logits, target, weight);
  return emitter.emitForward(resultTypes, rowOutputs);
}

RowOutputTypes RowOutputTypes::get(CrossEntropyOpInterface op) {
  auto typeOf = [](Value v) { return v ? v.getType() : Type(); };
  return {typeOf(op.getLse()), typeOf(op.getArgmax()),
          typeOf(op.getAccuracy())};
}

Value mlir::xent::buildCrossEntropyGrad(OpBuilder &b, Location loc,
                                       const CrossEntropyConfig &config,
                                       Value gradOutput, Value logits,
                                       Value target, Value weight) {
  DecompositionEmitter emitter(b, loc, config, logits, target, weight);
  Value dlogits = emitter.emitGradient(gradOutput);
  return dlogits;
}

SmallVector<Value>
mlir::xent::buildCanonicalDecomposition(OpBuilder &b,
                                        CrossEntropyOpInterface op,
                                        ValueRange operands) {
  // Operands in order: grad_output when the op computes a gradient, logits,
  // target, weight when present.
  unsigned first = op.computesGradient() ? 1 : 0;
  Value gradOutput = op.computesGradient() ? operands[0] : Value();
  Value logits = operands[first], target = operands[first + 1];
  Value weight = op.getWeight() ? operands[first + 2] : Value();
  Location loc = op.getLoc();
  CrossEntropyConfig config = op.getConfig();
  SmallVector<Value> results;
  if (op.computesLoss()) {
    SmallVector<Type> lossTypes = {op.getLoss().getType()};
    if (Value z = op.getZLoss())
      lossTypes.push_back(z.getType());
    results = buildCrossEntropy(b, loc, config, logits, target, weight,
                                lossTypes, RowOutputTypes::get(op));
  }
  if (op.computesGradient()) {
    Value dlogits = buildCrossEntropyGrad(b, loc, config, gradOutput, logits,
                                          target, weight);
    Type type = op.getDlogits().getType();
    if (dlogits.getType() != type)
      dlogits = tensor::CastOp::create(b, loc, type, dlogits);
    results.push_back(dlogits);
  }
  return results;
}

void mlir::xent::materializeDecomposition(CrossEntropyOpInterface op) {
  Region &region = op.getDecomposition();
  if (!region.empty())
    return;
  Block *block = new Block();
  region.push_back(block);
  for (Value operand : op->getOperands())
    block->addArgument(operand.getType(), operand.getLoc());
  OpBuilder b = OpBuilder::atBlockBegin(block);
  SmallVector<Value> results =
      op.buildDecomposition(b, block->getArguments());
  YieldOp::create(b, op.getLoc(), results);
}

FailureOr<SmallVector<Value>> mlir::xent::decompose(OpBuilder &b,
                                                   CrossEntropyOpInterface op) {
  Region &region = op.getDecomposition();
  if (region.empty())
    return op.buildDecomposition(b, op->getOperands());
  // The region's body (the matched frontend ops, or a hand-written one),
  // cloned with its arguments replaced by the operands.
  Block &body = region.front();
  IRMapping mapping;
  mapping.map(body.getArguments(), op->getOperands());
  for (Operation &inner : body.without_terminator())
    b.clone(inner, mapping);
  auto yield = cast<YieldOp>(body.getTerminator());
  return llvm::map_to_vector(yield.getValues(), [&](Value v) {
    return mapping.lookupOrDefault(v);
  });
}
