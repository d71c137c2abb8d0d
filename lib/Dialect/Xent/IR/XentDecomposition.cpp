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
#include "xent/Dialect/Xent/IR/LossBuilder.h"
#include "xent/Dialect/Xent/IR/LossMath.h"

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
using namespace mlir::xent::loss;

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

/// Builds the decomposition of one op configuration.
class DecompositionEmitter final : public ElementReader {
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
  // The ElementReader's: what the dlogits generic reads (LossBuilder.h).
  Value readLogit(OpBuilder &nb, Location loc, Value raw) const override {
    return buildLogit(nb, loc, config, raw);
  }
  /// The class index of a target as i64, the keep flag (target differs from
  /// ignore_index), the validity flag (0 <= t < C) and a safe index (t when
  /// valid, else 0) for reading `logits` and `weight`.
  ClassTarget readClassTarget(OpBuilder &nb, Location loc,
                              Value t) const override;
  /// weight[index] as f32, or 1 when unweighted.
  Value readTargetWeight(OpBuilder &nb, Location loc,
                         Value index) const override;
  /// Probability target q widened and smoothed: q·(1-ε) + ε/C.
  Value readSmoothedProbability(OpBuilder &nb, Location loc,
                                Value q) const override;

  //===--- Shapes and maps --------------------------------------------===//
  AffineMap fullMap() const {
    return AffineMap::getMultiDimIdentityMap(rank, logits.getContext());
  }
  AffineMap rowMap() const {
    return getRowMap(logits.getContext(), rank, axis);
  }
  AffineMap classMap() const {
    return getClassMap(logits.getContext(), rank, axis);
  }
  /// C as an index value and as f32.
  Value numClassesIndex();
  Value numClassesF32();
  Value emptyElementTensor(Type elementType);
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
  Value castTo(Value v, Type type) {
    return castTensor(b, b.getLoc(), v, type);
  }
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

ClassTarget DecompositionEmitter::readClassTarget(OpBuilder &nb, Location loc,
                                                  Value t) const {
  Type i64 = nb.getI64Type();
  if (t.getType() != i64)
    t = arith::ExtSIOp::create(nb, loc, i64, t);
  auto constI64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(v));
  };
  Value kept = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, t,
                                     buildIgnoreIndex(nb, loc, config));
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

Value DecompositionEmitter::readTargetWeight(OpBuilder &nb, Location loc,
                                             Value index) const {
  if (!weight)
    return constF32(nb, loc, 1.0);
  Value w = tensor::ExtractOp::create(nb, loc, weight, ValueRange{index});
  return toF32(nb, loc, w);
}

Value DecompositionEmitter::readSmoothedProbability(OpBuilder &nb,
                                                    Location loc,
                                                    Value q) const {
  q = toF32(nb, loc, q);
  if (!config.hasLabelSmoothing())
    return q;
  // C is re-read inside the body so that dynamic class counts work too.
  auto numClasses = [&] {
    return indexToF32(nb, loc, tensor::DimOp::create(nb, loc, logits, axis));
  };
  MathDialectLossMath math(nb, loc, config, numClasses);
  return smoothedProbability(math, q);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::numClassesIndex() {
  // A class slice's label smoothing spreads ε over the classes of the row.
  if (Value global = buildSliceNumClasses(b, b.getLoc(), config))
    return global;
  return tensor::DimOp::create(b, logits, axis);
}

Value DecompositionEmitter::numClassesF32() {
  return indexToF32(b, b.getLoc(), numClassesIndex());
}

Value DecompositionEmitter::emptyElementTensor(Type elementType) {
  return tensor::EmptyOp::create(b, getRowSizes(b, b.getLoc(), logits, axis),
                                 elementType);
}

Value DecompositionEmitter::filledScalarTensor(double value) {
  Value init = tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f32);
  Value v = constF32(b, b.getLoc(), value);
  return linalg::FillOp::create(b, v, init).getResult(0);
}

//===----------------------------------------------------------------------===//
// Row statistics
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::emitRowMax() {
  return buildRowMax(b, b.getLoc(), config, logits);
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
    outputs.push_back(buildFilledRows(b, b.getLoc(), logits, axis, 0.0));
    maps.push_back(rowMap());
  }
  SmallVector<Type> types(numOutputs, outputs[0].getType());

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = readLogit(nb, loc, args[0]);
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
                readSmoothedProbability(nb, loc, args[probArg]));
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

  bool smoothing = withLoss && config.hasLabelSmoothing();
  bool zLoss = withLoss && config.hasZLoss();
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

  SmallVector<Value> outputs;
  forEachElementOutput(withLoss, zLoss, reduce, lossType, zType,
                       [&](Type elementType) {
                         addElementOutput(outputs, maps, outMap, reduce,
                                          elementType);
                       });
  SmallVector<Type> types = llvm::map_to_vector(
      outputs, [](Value v) { return v.getType(); });

  Value numClasses = withLoss && smoothing ? numClassesF32() : Value();

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value zero = constF32(nb, loc, 0.0);
        ClassTarget t = readClassTarget(nb, loc, args[0]);
        Value wt = readTargetWeight(nb, loc, t.index);
        SmallVector<Value> terms; // per-element values, in output order
        if (withLoss) {
          Value m = args[1], s = args[2];
          Value logS = math::LogOp::create(nb, loc, s);
          // x_t: read logits at the target class.
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank - 1; ++d)
            indices.push_back(linalg::IndexOp::create(nb, loc, d));
          indices.insert(indices.begin() + axis, t.index);
          Value xt = readLogit(
              nb, loc, tensor::ExtractOp::create(nb, loc, logits, indices));
          Value loss = buildClassIndexLoss(
              nb, loc, config, m, xt, logS, wt, t.valid,
              smoothing ? args[3] : Value(), smoothing ? args[4] : Value(),
              numClasses);
          appendLossTerms(nb, loc, config, reduce, m, logS, loss, t.kept,
                          zero, terms);
        }
        if (reduce) {
          terms.push_back(arith::SelectOp::create(nb, loc, t.kept, wt, zero));
          terms.push_back(arith::SelectOp::create(
              nb, loc, t.kept, constF32(nb, loc, 1.0), zero));
        }
        buildTermsYield(nb, loc, terms, args.drop_front(numInputs), reduce);
      });

  return getElementTerms(generic, withLoss, zLoss, reduce);
}

ElementTerms DecompositionEmitter::emitProbabilityTerms(const RowStats &stats,
                                                        bool reduce,
                                                        Type lossType,
                                                        Type zType) {
  auto [id, outMap, iterators] =
      getElementLoop(b.getContext(), rank - 1, reduce);
  bool zLoss = config.hasZLoss();

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

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value m = args[0], s = args[1], gap = args[2], mass = args[3];
        Value logS = math::LogOp::create(nb, loc, s);
        // -Σ_c w_c q'_c (x_c - lse) = Σ_c w_c q'_c (m - x_c) + log(s) Σ w_c q'_c
        Value loss = arith::AddFOp::create(
            nb, loc, gap, arith::MulFOp::create(nb, loc, logS, mass));
        SmallVector<Value> terms;
        appendLossTerms(nb, loc, config, reduce, m, logS, loss,
                        /*kept=*/Value(), /*zero=*/Value(), terms);
        if (reduce)
          terms.push_back(constF32(nb, loc, 1.0));
        buildTermsYield(nb, loc, terms, args.drop_front(numInputs), reduce);
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
  bool smoothing = config.hasLabelSmoothing();
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
  SmallVector<Value> results =
      buildReducedLossResults(b, b.getLoc(), loss, z,
                              static_cast<bool>(terms.zLoss), wantZ,
                              resultTypes);
  llvm::append_range(results, rows);
  return results;
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

Value DecompositionEmitter::emitGradient(Value gradOutput) {
  bool probs = config.probabilityTargets;
  bool smoothing = config.hasLabelSmoothing();
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
        weightTotal = count = buildRowCount(b, b.getLoc(), logits, axis);
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

  GradientOperands operands = {logits,       target,     stats.max,
                               stats.sumExp, weight,     Value(),
                               stats.weightSum, gradOutput, lossScale,
                               zScaleFactor};
  operands.init = tensor::EmptyOp::create(
      b, tensor::getMixedSizes(b, b.getLoc(), logits),
      config.logitsType.getElementType());
  operands.numClasses = numClassesF32();
  return buildGradientGeneric(b, b.getLoc(), config, operands, *this);
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
  if (op.getRowStats() || op.isClassSlice())
    return buildRowStatsDecomposition(b, op, operands);
  // Operands in order: grad_output when the op computes a gradient, logits,
  // target, weight when present.
  unsigned first = op.computesGradient() ? 1 : 0;
  Value gradOutput = op.computesGradient() ? operands[0] : Value();
  Value logits = operands[first], target = operands[first + 1];
  Value weight = op.getWeight() ? operands[first + 2] : Value();
  Location loc = op.getLoc();
  // The run-time scalars are the last operands.
  CrossEntropyConfig config = op.getConfig().withOperands(operands);
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

SmallVector<Value> mlir::xent::detail::cloneDecompositionBody(
    OpBuilder &b, Region &region, ValueRange operands) {
  Block &body = region.front();
  IRMapping mapping;
  mapping.map(body.getArguments(), operands);
  for (Operation &inner : body.without_terminator())
    b.clone(inner, mapping);
  auto yield = cast<YieldOp>(body.getTerminator());
  return llvm::map_to_vector(yield.getValues(), [&](Value v) {
    return mapping.lookupOrDefault(v);
  });
}

FailureOr<SmallVector<Value>> mlir::xent::decompose(OpBuilder &b,
                                                   CrossEntropyOpInterface op) {
  Region &region = op.getDecomposition();
  if (region.empty())
    return op.buildDecomposition(b, op->getOperands());
  // The region's body (the matched frontend ops, or a hand-written one).
  return detail::cloneDecompositionBody(b, region, op->getOperands());
}
