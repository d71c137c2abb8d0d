//===- ShardedLoss.cpp - The partitioned cross entropy --------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// One device's part of a cross-entropy op whose logits are split over rows
// and/or classes, as linalg / tensor / arith / math on tensors plus
// `shard.all_reduce`; where the classes are split and the targets are class
// indices, the slices' work stays in xent ops instead (ShardedSlices.cpp)
// and only steps 3-4 below are emitted here. Per row ("row" as in XentDecomposition.cpp: the C
// logits of one element):
//
//   1. m_local = max over the local classes;   m = all_reduce max (classes)
//   2. local sums relative to the global m:    s = Σ exp(x - m), and as the
//      configuration needs: the target's logit x_t and weight w_t (from the
//      device that holds class t, 0 elsewhere), Σ w_c (m - x_c) and Σ w_c
//      (label smoothing; with probability targets weighted by q'_c).
//   3. one all_reduce sum of those, packed as tensor<rows x k>  (classes)
//   4. per-row loss and z-loss from the global statistics, identical on every
//      device of a row; `mean` / `sum` add the local rows and all-reduce
//      (loss, z-loss, kept weight, kept count) over the row axes
//   5. dlogits where the logits are, with the global class index.
//
// Every collective moves one value per local row (or per op), never one per
// logit. Everything is computed in f32, as the decomposition does.
//
//===----------------------------------------------------------------------===//

#include "ShardedLossEmitter.h"

#include "xent/Dialect/Xent/IR/LossBuilder.h"
#include "xent/Dialect/Xent/IR/LossMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::loss;

using namespace mlir::xent::sharding;

//===----------------------------------------------------------------------===//
// Set-up
//===----------------------------------------------------------------------===//

ShardedLossEmitter::ShardedLossEmitter(OpBuilder &builder,
                                       CrossEntropyOpInterface op,
                                       const LossSharding &sharding,
                                       ValueRange operands)
    : b(op.getLoc(), builder), op(op), sharding(sharding),
      config(op.getConfig().withOperands(operands)),
      f32(builder.getF32Type()) {
  localOperands.assign(operands.begin(), operands.end());
  unsigned first = op.computesGradient() ? 1 : 0;
  if (first)
    gradOutput = operands[0];
  logits = operands[first];
  target = operands[first + 1];
  if (op.getWeight())
    weight = operands[first + 2];
  rank = config.logitsType.getRank();
  axis = config.axis;

  localClasses = tensor::DimOp::create(b, logits, axis);
  if (sharding.classAxes.empty()) {
    classOffset = arith::ConstantIndexOp::create(b, 0);
    numClasses = localClasses;
  } else {
    // The class axis is static and divides evenly (checked by the caller).
    int64_t local = config.getNumClasses() / sharding.classGroupSize;
    Value index =
        shard::createProcessLinearIndex(sharding.grid, sharding.classAxes, b);
    classOffset = arith::MulIOp::create(
        b, index, arith::ConstantIndexOp::create(b, local));
    numClasses = arith::ConstantIndexOp::create(b, config.getNumClasses());
  }
  numClassesF32 = arith::UIToFPOp::create(
      b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), numClasses));
}

ShardedLossEmitter::TargetIndex
ShardedLossEmitter::emitTargetIndex(OpBuilder &nb, Location loc,
                                    Value t) const {
  Type i64 = nb.getI64Type();
  if (t.getType() != i64)
    t = arith::ExtSIOp::create(nb, loc, i64, t);
  auto constI64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(v));
  };
  TargetIndex r;
  r.kept = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, t,
                                 buildIgnoreIndex(nb, loc, config));
  Value c = arith::IndexCastOp::create(nb, loc, i64, numClasses);
  r.valid = arith::AndIOp::create(
      nb, loc,
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sge, t, constI64(0)),
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::slt, t, c));
  Value safe = arith::SelectOp::create(nb, loc, r.valid, t, constI64(0));
  r.index = arith::IndexCastOp::create(nb, loc, nb.getIndexType(), safe);
  if (sharding.classAxes.empty()) {
    r.owned = arith::ConstantOp::create(nb, loc, nb.getBoolAttr(true));
    r.localIndex = r.index;
    return r;
  }
  Value end = arith::AddIOp::create(nb, loc, classOffset, localClasses);
  r.owned = arith::AndIOp::create(
      nb, loc,
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::uge, r.index,
                            classOffset),
      arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult, r.index, end));
  Value local = arith::SubIOp::create(nb, loc, r.index, classOffset);
  Value zero = arith::ConstantIndexOp::create(nb, loc, 0);
  r.localIndex = arith::SelectOp::create(nb, loc, r.owned, local, zero);
  return r;
}

Value ShardedLossEmitter::readSmoothedProbability(OpBuilder &nb, Location loc,
                                                  Value q) const {
  q = toF32(nb, loc, q);
  if (!config.hasLabelSmoothing())
    return q;
  // ε / C of the global C.
  auto numClasses = [&] { return numClassesF32; };
  MathDialectLossMath math(nb, loc, config, numClasses);
  return smoothedProbability(math, q);
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

void ShardedLossEmitter::allReduceRowSums(ArrayRef<Value *> values) {
  if (sharding.classAxes.empty() || values.empty())
    return;
  SmallVector<Value> columns =
      llvm::map_to_vector(values, [](Value *v) { return *v; });
  Value sums = allReduce(packRows(columns), sharding.classAxes,
                         shard::ReductionKind::Sum);
  for (auto [v, column] : llvm::zip(values, unpackRows(sums, values.size())))
    *v = column;
}

void ShardedLossEmitter::allReduceTotals(ArrayRef<Value *> scalars) {
  if (sharding.rowAxes.empty())
    return;
  SmallVector<Value> elements =
      llvm::map_to_vector(scalars, [](Value *v) { return *v; });
  auto type = RankedTensorType::get({(int64_t)elements.size()}, f32);
  Value packed = tensor::FromElementsOp::create(b, type, elements);
  Value sums = allReduce(packed, sharding.rowAxes, shard::ReductionKind::Sum);
  for (auto [i, v] : llvm::enumerate(scalars))
    *v = tensor::ExtractOp::create(
        b, sums, ValueRange{arith::ConstantIndexOp::create(b, i)});
}

//===----------------------------------------------------------------------===//
// Row statistics
//===----------------------------------------------------------------------===//

Value ShardedLossEmitter::emitRowMax() {
  Value max = buildRowMax(b, b.getLoc(), config, logits);
  return allReduce(max, sharding.classAxes, shard::ReductionKind::Max);
}

void ShardedLossEmitter::emitRowSums(RowStats &stats, bool withGap,
                                     bool withMass) {
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  SmallVector<Value> inputs = {logits, stats.max};
  SmallVector<AffineMap> maps = {fullMap(), rowMap()};
  int probArg = -1, weightArg = -1;
  if (config.probabilityTargets && (withGap || withMass)) {
    probArg = inputs.size();
    inputs.push_back(target);
    maps.push_back(fullMap());
  }
  if (weight && (withGap || withMass)) {
    weightArg = inputs.size();
    inputs.push_back(weight);
    maps.push_back(classMap());
  }
  unsigned numInputs = inputs.size();
  SmallVector<Value> outputs = {filledRows(0.0)};
  if (withGap)
    outputs.push_back(filledRows(0.0));
  if (withMass)
    outputs.push_back(filledRows(0.0));
  maps.append(outputs.size(), rowMap());
  SmallVector<Type> types(outputs.size(), outputs[0].getType());

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = readLogit(nb, loc, args[0]);
        Value m = args[1];
        Value e = math::ExpOp::create(nb, loc,
                                      arith::SubFOp::create(nb, loc, x, m));
        unsigned out = numInputs;
        SmallVector<Value> yields = {
            arith::AddFOp::create(nb, loc, args[out++], e)};
        Value factor = weightArg >= 0 ? toF32(nb, loc, args[weightArg])
                                      : constF32(nb, loc, 1.0);
        if (probArg >= 0)
          factor = arith::MulFOp::create(
              nb, loc, factor, readSmoothedProbability(nb, loc, args[probArg]));
        if (withGap) {
          Value gap = arith::MulFOp::create(
              nb, loc, factor, arith::SubFOp::create(nb, loc, m, x));
          yields.push_back(arith::AddFOp::create(nb, loc, args[out++], gap));
        }
        if (withMass)
          yields.push_back(arith::AddFOp::create(nb, loc, args[out++], factor));
        linalg::YieldOp::create(nb, loc, yields);
      });
  unsigned r = 0;
  stats.sumExp = generic.getResult(r++);
  if (withGap)
    stats.weightedGap = generic.getResult(r++);
  if (withMass)
    stats.weightSum = generic.getResult(r++);
}

void ShardedLossEmitter::emitTargetTerms(RowStats &stats, bool withLogit,
                                         bool withWeight) {
  if (!withLogit && !withWeight)
    return;
  int64_t rowRank = rank - 1;
  AffineMap id = AffineMap::getMultiDimIdentityMap(rowRank, b.getContext());
  SmallVector<Value> outputs;
  if (withLogit)
    outputs.push_back(emptyRows(f32));
  if (withWeight)
    outputs.push_back(emptyRows(f32));
  SmallVector<AffineMap> maps(outputs.size() + 1, id);
  SmallVector<Type> types(outputs.size(), outputs[0].getType());
  auto generic = linalg::GenericOp::create(
      b, types, ValueRange{target}, outputs, maps,
      SmallVector<utils::IteratorType>(rowRank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        TargetIndex t = emitTargetIndex(nb, loc, args[0]);
        Value zero = constF32(nb, loc, 0.0);
        SmallVector<Value> yields;
        if (withLogit) {
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rowRank; ++d)
            indices.push_back(linalg::IndexOp::create(nb, loc, d));
          indices.insert(indices.begin() + axis, t.localIndex);
          Value x = readLogit(
              nb, loc, tensor::ExtractOp::create(nb, loc, logits, indices));
          yields.push_back(arith::SelectOp::create(nb, loc, t.owned, x, zero));
        }
        if (withWeight) {
          Value w = toF32(nb, loc,
                          tensor::ExtractOp::create(nb, loc, weight,
                                                    ValueRange{t.localIndex}));
          yields.push_back(arith::SelectOp::create(nb, loc, t.owned, w, zero));
        }
        linalg::YieldOp::create(nb, loc, yields);
      });
  unsigned r = 0;
  if (withLogit)
    stats.targetLogit = generic.getResult(r++);
  if (withWeight)
    stats.targetWeight = generic.getResult(r++);
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

ElementTerms ShardedLossEmitter::emitElementTerms(const RowStats &stats,
                                                  bool reduce, bool withLoss,
                                                  Type lossType, Type zType) {
  auto [id, outMap, iterators] =
      getElementLoop(b.getContext(), rank - 1, reduce);
  bool probs = config.probabilityTargets;
  bool smoothing = withLoss && !probs && config.hasLabelSmoothing();
  bool zLoss = withLoss && config.hasZLoss();

  // Inputs: target (class indices), m, s, x_t, w_t, gap, mass, as present.
  SmallVector<Value> inputs;
  int targetArg = -1, maxArg = -1, sumArg = -1, logitArg = -1, weightArg = -1,
      gapArg = -1, massArg = -1;
  auto addInput = [&](int &arg, Value v) {
    arg = inputs.size();
    inputs.push_back(v);
  };
  if (!probs)
    addInput(targetArg, target);
  if (withLoss) {
    addInput(maxArg, stats.max);
    addInput(sumArg, stats.sumExp);
    if (!probs)
      addInput(logitArg, stats.targetLogit);
    if (probs || smoothing)
      addInput(gapArg, stats.weightedGap);
    if (stats.weightSum && (probs || smoothing))
      addInput(massArg, stats.weightSum);
  }
  if (!probs && stats.targetWeight)
    addInput(weightArg, stats.targetWeight);
  SmallVector<AffineMap> maps(inputs.size(), id);
  unsigned numInputs = inputs.size();

  SmallVector<Value> outputs;
  auto addOutput = [&](Type elementType) {
    outputs.push_back(reduce ? filledScalar(0.0) : emptyRows(elementType));
    maps.push_back(outMap);
  };
  forEachElementOutput(withLoss, zLoss, reduce, lossType, zType, addOutput);
  SmallVector<Type> types =
      llvm::map_to_vector(outputs, [](Value v) { return v.getType(); });

  auto generic = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        auto cst = [&](double v) { return constF32(nb, loc, v); };
        Value zero = cst(0.0), one = cst(1.0);
        Value kept, valid, wt = one;
        if (targetArg >= 0) {
          TargetIndex t = emitTargetIndex(nb, loc, args[targetArg]);
          kept = t.kept;
          valid = t.valid;
        }
        if (weightArg >= 0)
          wt = args[weightArg];
        SmallVector<Value> terms;
        if (withLoss) {
          Value m = args[maxArg];
          Value logS = math::LogOp::create(nb, loc, args[sumArg]);
          Value loss;
          if (probs) {
            // Σ_c f_c (m - x_c) + log(s) Σ_c f_c
            loss = arith::AddFOp::create(
                nb, loc, args[gapArg],
                arith::MulFOp::create(nb, loc, logS, args[massArg]));
          } else {
            Value mass = massArg >= 0 ? args[massArg] : numClassesF32;
            loss = buildClassIndexLoss(
                nb, loc, config, m, args[logitArg], logS, wt, valid,
                gapArg >= 0 ? args[gapArg] : Value(), mass, numClassesF32);
          }
          appendLossTerms(nb, loc, config, reduce, m, logS, loss, kept, zero,
                          terms);
        }
        if (reduce) {
          terms.push_back(kept ? arith::SelectOp::create(nb, loc, kept, wt, zero)
                               : one);
          terms.push_back(kept ? arith::SelectOp::create(nb, loc, kept, one, zero)
                               : one);
        }
        buildTermsYield(nb, loc, terms, args.drop_front(numInputs), reduce);
      });

  return getElementTerms(generic, withLoss, zLoss, reduce);
}

SmallVector<Value> ShardedLossEmitter::emitForward(const RowStats &stats,
                                                   TypeRange resultTypes,
                                                   Totals &totals) {
  bool wantZ = resultTypes.size() > 1;
  bool reduce = config.reduction != Reduction::none;
  Type lossElt = cast<RankedTensorType>(resultTypes[0]).getElementType();
  Type zElt =
      wantZ ? cast<RankedTensorType>(resultTypes[1]).getElementType() : f32;
  ElementTerms terms =
      emitElementTerms(stats, reduce, /*withLoss=*/true, lossElt, zElt);

  if (!reduce) {
    SmallVector<Value> results = {castTo(terms.loss, resultTypes[0])};
    if (wantZ) {
      Value z = terms.zLoss;
      if (!z)
        z = linalg::FillOp::create(
                b, fromF32(b, b.getLoc(), constF32(b, b.getLoc(), 0.0), zElt),
                emptyRows(zElt))
                .getResult(0);
      results.push_back(castTo(z, resultTypes[1]));
    }
    return results;
  }

  // Local totals of the rows here, then one sum over the row axes.
  totals.loss = extractScalar(terms.loss);
  totals.zLoss = terms.zLoss ? extractScalar(terms.zLoss)
                             : constF32(b, b.getLoc(), 0.0);
  totals.weight = extractScalar(terms.weight);
  totals.kept = extractScalar(terms.kept);
  allReduceTotals({&totals.loss, &totals.zLoss, &totals.weight, &totals.kept});

  Value loss = totals.loss, z = totals.zLoss;
  if (config.reduction == Reduction::mean) {
    loss = arith::DivFOp::create(b, loss, totals.weight);
    if (terms.zLoss || wantZ)
      z = arith::DivFOp::create(b, z, totals.kept);
  }
  return buildReducedLossResults(b, b.getLoc(), loss, z,
                                 static_cast<bool>(terms.zLoss), wantZ,
                                 resultTypes);
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

Totals ShardedLossEmitter::emitGradientTotals(const RowStats &stats) {
  Totals totals;
  if (config.probabilityTargets) {
    // Every element is kept with weight 1: the local element count.
    Value n = buildRowCount(b, b.getLoc(), logits, axis);
    totals.weight = n;
    totals.kept = n;
  } else {
    ElementTerms terms = emitElementTerms(stats, /*reduce=*/true,
                                          /*withLoss=*/false, f32, f32);
    totals.weight = extractScalar(terms.weight);
    totals.kept = extractScalar(terms.kept);
  }
  allReduceTotals({&totals.weight, &totals.kept});
  return totals;
}

Value ShardedLossEmitter::emitGradient(const RowStats &stats, Totals totals,
                                       Type resultType) {
  Reduction reduction = config.reduction;

  Value lossScale, zScale; // f32 scalars, or null for per-element
  if (reduction != Reduction::none) {
    Value go = toF32(b, b.getLoc(), extractScalar(gradOutput));
    lossScale = zScale = go;
    if (reduction == Reduction::mean) {
      if (!totals.weight)
        totals = emitGradientTotals(stats);
      lossScale = arith::DivFOp::create(b, go, totals.weight);
      zScale = arith::DivFOp::create(b, go, totals.kept);
    }
  }

  // The target's weight is a row sum of the local classes (w_t where this
  // device holds t).
  GradientOperands operands = {
      logits,          target,     stats.max, stats.sumExp,
      weight,          stats.targetWeight,   stats.weightSum,
      gradOutput,      lossScale,  zScale};
  operands.init = tensor::EmptyOp::create(
      b, tensor::getMixedSizes(b, b.getLoc(), logits),
      cast<RankedTensorType>(resultType).getElementType());
  operands.numClasses = numClassesF32;
  return castTo(buildGradientGeneric(b, b.getLoc(), config, operands, *this),
                resultType);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

SmallVector<Value> ShardedLossEmitter::emit(TypeRange resultTypes) {
  if (usesSliceOps())
    return emitWithSliceOps(resultTypes);
  bool forward = op.computesLoss(), gradient = op.computesGradient();
  bool probs = config.probabilityTargets;
  bool smoothing = config.hasLabelSmoothing();

  RowStats stats;
  stats.max = emitRowMax();
  emitRowSums(stats, /*withGap=*/forward && (probs || smoothing),
              /*withMass=*/probs || (smoothing && weight));
  if (!probs)
    emitTargetTerms(stats, /*withLogit=*/forward,
                    /*withWeight=*/static_cast<bool>(weight));
  SmallVector<Value *> rowSums = {&stats.sumExp};
  for (Value *v : {&stats.targetLogit, &stats.targetWeight,
                   &stats.weightedGap, &stats.weightSum})
    if (*v)
      rowSums.push_back(v);
  allReduceRowSums(rowSums);

  SmallVector<Value> results;
  Totals totals;
  unsigned numLoss = 0;
  if (forward) {
    numLoss = op.getZLoss() ? 2 : 1;
    results = emitForward(stats, resultTypes.take_front(numLoss), totals);
  }
  if (gradient)
    results.push_back(emitGradient(stats, totals, resultTypes[numLoss]));
  return results;
}

SmallVector<Value> mlir::xent::buildShardedCrossEntropy(
    OpBuilder &b, CrossEntropyOpInterface op, const LossSharding &sharding,
    ValueRange localOperands, TypeRange localResultTypes) {
  ShardedLossEmitter emitter(b, op, sharding, localOperands);
  return emitter.emit(localResultTypes);
}
