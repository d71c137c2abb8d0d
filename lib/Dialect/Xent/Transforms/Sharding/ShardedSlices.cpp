//===- ShardedSlices.cpp - Class-split losses as xent ops per slice -------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// A cross entropy whose classes are split, with class-index targets: each
// device runs xent ops on its slice of the classes, and only per-row values
// travel (docs/scale-out.md):
//
//   1. xent.cross_entropy on the slice {return_row_stats} (class_offset = the
//      slice's first class): per row m, s, x_t, [w_t], [Σ w (m - x), Σ w];
//   2. all_reduce max of (m, x_t); the sums rescaled to the global max
//      (s e^(m - M), Σ w (m - x) + Σ w (M - m)); one all_reduce sum of them;
//   3. the loss from the merged values (ShardedLoss.cpp's element terms);
//   4. xent.cross_entropy_grad on the slice with the merged statistics.
//
// So the N x C/p work is in the two xent ops, which convert-xent-to-gpu can
// lower to kernels, and everything between them is O(N).
//
//===----------------------------------------------------------------------===//

#include "ShardedLossEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::sharding;

bool ShardedLossEmitter::usesSliceOps() const {
  return !sharding.classAxes.empty() && !config.probabilityTargets;
}

Value ShardedLossEmitter::packRows(ArrayRef<Value> values) {
  return buildPackedRows(b, b.getLoc(), values, rowSizes());
}

SmallVector<Value> ShardedLossEmitter::unpackRows(Value packed, int64_t k) {
  return buildUnpackedRows(b, b.getLoc(), packed, k, rowSizes());
}

/// The loss attributes of `op` that the slice ops keep (not the reduction,
/// the operand segments or the per-row outputs).
static SmallVector<NamedAttribute> getSliceAttrs(Operation *op, bool withZ) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name == "ignore_index" || name == "label_smoothing" ||
        name == "softcap" || name == "axis" ||
        (withZ && name == "z_loss_scale"))
      attrs.push_back(attr);
  }
  return attrs;
}

/// Appends the present run-time scalars to `operands` and their segment
/// sizes to `segments`.
static void appendScalars(const LossScalars &scalars,
                          SmallVectorImpl<Value> &operands,
                          SmallVectorImpl<int32_t> &segments) {
  for (Value v : {scalars.ignoreIndex, scalars.labelSmoothing,
                  scalars.zLossScale, scalars.softcap}) {
    segments.push_back(v ? 1 : 0);
    if (v)
      operands.push_back(v);
  }
}

Value ShardedLossEmitter::emitMergedStatistics(RowStats &stats) {
  bool smoothing = config.hasLabelSmoothing();
  int64_t k = config.getRowStatsWidth();
  MLIRContext *ctx = b.getContext();

  // 1. The slice's statistics.
  Value offset = arith::IndexCastOp::create(b, b.getI64Type(), classOffset);
  SmallVector<Value> operands = {logits, target};
  if (weight)
    operands.push_back(weight);
  operands.push_back(offset);
  // logits, target, weight, class_offset, num_classes (the attribute).
  SmallVector<int32_t> segments = {1, 1, weight ? 1 : 0, 1, 0};
  appendScalars(config.scalars, operands, segments);
  SmallVector<int64_t> statsShape =
      dropAxis(cast<RankedTensorType>(logits.getType()).getShape(), axis);
  statsShape.push_back(k);
  SmallVector<NamedAttribute> attrs = getSliceAttrs(op, /*withZ=*/true);
  attrs.push_back(b.getNamedAttr("reduction",
                                 ReductionAttr::get(ctx, Reduction::sum)));
  attrs.push_back(b.getNamedAttr("return_row_stats", b.getUnitAttr()));
  attrs.push_back(b.getNamedAttr(
      "num_classes", b.getI64IntegerAttr(config.getNumClasses())));
  attrs.push_back(b.getNamedAttr("operandSegmentSizes",
                                 b.getDenseI32ArrayAttr(segments)));
  OperationState state(b.getLoc(), CrossEntropyOp::getOperationName());
  state.addOperands(operands);
  state.addTypes({RankedTensorType::get({}, f32),
                  RankedTensorType::get(statsShape, f32)});
  state.addAttributes(attrs);
  state.addRegion();
  Value local = b.create(state)->getResult(1);
  SmallVector<Value> columns = unpackRows(local, k);
  Value m = columns[0], s = columns[1], xt = columns[2];
  Value wt = weight ? columns[3] : Value();
  Value gap = smoothing ? columns[k - 2] : Value();
  Value mass = smoothing ? columns[k - 1] : Value();

  // 2. The global max and target logit (-inf where a slice does not hold
  // the target): one max.
  SmallVector<Value> maxes = unpackRows(
      allReduce(packRows({m, xt}), sharding.classAxes,
                shard::ReductionKind::Max),
      2);
  Value globalMax = maxes[0];
  stats.max = globalMax;
  stats.targetLogit = maxes[1];

  // The sums relative to the global max; a slice whose logits are all -inf
  // adds nothing to s.
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank - 1, ctx);
  SmallVector<Value> inputs = {m, globalMax, s};
  if (smoothing)
    inputs.append({gap, mass});
  SmallVector<Value> outputs = {emptyRows(f32)};
  if (smoothing)
    outputs.push_back(emptyRows(f32));
  SmallVector<AffineMap> maps(inputs.size() + outputs.size(), id);
  SmallVector<Type> types(outputs.size(), outputs[0].getType());
  auto rescaled = linalg::GenericOp::create(
      b, types, inputs, outputs, maps,
      SmallVector<utils::IteratorType>(rank - 1,
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value mi = args[0], mg = args[1];
        Value empty = arith::CmpFOp::create(
            nb, loc, arith::CmpFPredicate::OEQ, mi,
            constF32(nb, loc, -std::numeric_limits<double>::infinity()));
        Value scaled = arith::MulFOp::create(
            nb, loc, args[2],
            math::ExpOp::create(nb, loc,
                                arith::SubFOp::create(nb, loc, mi, mg)));
        SmallVector<Value> yields = {arith::SelectOp::create(
            nb, loc, empty, constF32(nb, loc, 0.0), scaled)};
        if (smoothing)
          yields.push_back(arith::AddFOp::create(
              nb, loc, args[3],
              arith::MulFOp::create(nb, loc, args[4],
                                    arith::SubFOp::create(nb, loc, mg, mi))));
        linalg::YieldOp::create(nb, loc, yields);
      });

  // 3. One sum of (s, [w_t], [Σ w (M - x), Σ w]).
  SmallVector<Value> sums = {rescaled.getResult(0)};
  if (wt)
    sums.push_back(wt);
  if (smoothing)
    sums.append({rescaled.getResult(1), mass});
  SmallVector<Value> merged =
      unpackRows(allReduce(packRows(sums), sharding.classAxes,
                           shard::ReductionKind::Sum),
                 sums.size());
  unsigned next = 0;
  stats.sumExp = merged[next++];
  if (wt)
    stats.targetWeight = merged[next++];
  if (smoothing) {
    stats.weightedGap = merged[next++];
    Value weightSum = merged[next++];
    // Unweighted, Σ w is the global C, which the loss reads as a constant.
    if (weight)
      stats.weightSum = weightSum;
    if (!op.computesGradient())
      return Value();
    SmallVector<Value> all = {stats.max, stats.sumExp, stats.targetLogit};
    if (wt)
      all.push_back(stats.targetWeight);
    all.append({stats.weightedGap, weightSum});
    return packRows(all);
  }
  if (!op.computesGradient())
    return Value();
  SmallVector<Value> all = {stats.max, stats.sumExp, stats.targetLogit};
  if (wt)
    all.push_back(stats.targetWeight);
  return packRows(all);
}

Value ShardedLossEmitter::emitGradientOp(const RowStats &stats, Value merged,
                                         Totals totals, Type resultType) {
  MLIRContext *ctx = b.getContext();
  Reduction reduction = config.reduction;
  Value go = gradOutput;
  LossScalars scalars = config.scalars;
  bool withZAttr = true;
  if (reduction == Reduction::mean && !sharding.rowAxes.empty()) {
    // The op's mean would divide by its own rows' weight: give it the sum's
    // gradient scaled by the global weight instead, and the z-loss (divided
    // by the kept count) a scale that makes up the difference.
    if (!totals.weight)
      totals = emitGradientTotals(stats);
    Value g = toF32(b, b.getLoc(),
                    tensor::ExtractOp::create(b, gradOutput, ValueRange{}));
    g = arith::DivFOp::create(b, g, totals.weight);
    go = tensor::FromElementsOp::create(b, RankedTensorType::get({}, f32),
                                        ValueRange{g});
    reduction = Reduction::sum;
    if (config.hasZLoss() && weight) {
      Value z = buildZLossScale(b, b.getLoc(), config);
      scalars.zLossScale = arith::DivFOp::create(
          b, arith::MulFOp::create(b, z, totals.weight), totals.kept);
      withZAttr = false;
    }
  }
  Value offset = arith::IndexCastOp::create(b, b.getI64Type(), classOffset);
  SmallVector<Value> operands = {go, logits, target};
  if (weight)
    operands.push_back(weight);
  operands.append({merged, offset});
  // grad_output, logits, target, weight, row_stats, class_offset,
  // num_classes (the attribute).
  SmallVector<int32_t> segments = {1, 1, 1, weight ? 1 : 0, 1, 1, 0};
  appendScalars(scalars, operands, segments);
  SmallVector<NamedAttribute> attrs = getSliceAttrs(op, withZAttr);
  attrs.push_back(
      b.getNamedAttr("reduction", ReductionAttr::get(ctx, reduction)));
  attrs.push_back(b.getNamedAttr(
      "num_classes", b.getI64IntegerAttr(config.getNumClasses())));
  attrs.push_back(b.getNamedAttr("operandSegmentSizes",
                                 b.getDenseI32ArrayAttr(segments)));
  OperationState state(b.getLoc(), CrossEntropyGradOp::getOperationName());
  state.addOperands(operands);
  state.addTypes(resultType);
  state.addAttributes(attrs);
  state.addRegion();
  return b.create(state)->getResult(0);
}

SmallVector<Value> ShardedLossEmitter::emitWithSliceOps(TypeRange resultTypes) {
  RowStats stats;
  Value merged = emitMergedStatistics(stats);
  SmallVector<Value> results;
  Totals totals;
  unsigned numLoss = 0;
  if (op.computesLoss()) {
    numLoss = op.getZLoss() ? 2 : 1;
    results = emitForward(stats, resultTypes.take_front(numLoss), totals);
  }
  if (op.computesGradient())
    results.push_back(
        emitGradientOp(stats, merged, totals, resultTypes[numLoss]));
  return results;
}
