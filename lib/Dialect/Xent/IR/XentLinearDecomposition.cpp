//===- XentLinearDecomposition.cpp - Linear cross-entropy builders --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The canonical decomposition of the linear family: the projection
// `hidden · weightᵀ + bias` as a `linalg.matmul` (transposed-B indexing maps)
// into an f32 accumulator that starts at the bias, the loss as an op of the
// cross-entropy family on those f32 logits, and the gradients
//
//   d_hidden = dlogits · weight      d_weight = dlogitsᵀ · hidden
//   d_bias   = Σ_rows dlogits
//
// as `linalg.matmul` / `linalg.reduce` accumulating in f32, rounded once to
// the operands' types. `[B, T, H]` hidden states are collapsed to rows and
// the results expanded back. The same builders make the body of each chunk
// of xent-chunk-linear-cross-entropy.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentDecomposition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::xent;

//===----------------------------------------------------------------------===//
// Projection builders
//===----------------------------------------------------------------------===//

/// The static size of dimension `dim` of `v` as an OpFoldResult, or a
/// `tensor.dim`.
static OpFoldResult getSize(OpBuilder &b, Location loc, Value v, int64_t dim) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.isDynamicDim(dim))
    return b.getIndexAttr(type.getDimSize(dim));
  return tensor::DimOp::create(b, loc, v, dim).getResult();
}

Value mlir::xent::buildZeroTensor(OpBuilder &b, Location loc,
                                  ArrayRef<OpFoldResult> sizes) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value mlir::xent::convertFloatTensor(OpBuilder &b, Location loc, Value v,
                                     Type elementType) {
  auto type = cast<RankedTensorType>(v.getType());
  Type from = type.getElementType();
  if (from == elementType)
    return v;
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(getSize(b, loc, v, d));
  Value init = tensor::EmptyOp::create(b, loc, sizes, elementType);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  bool widen =
      from.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth();
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), v, init, ArrayRef<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(type.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x =
            widen ? Value(arith::ExtFOp::create(nb, nloc, elementType, args[0]))
                  : Value(arith::TruncFOp::create(nb, nloc, elementType,
                                                  args[0]));
        linalg::YieldOp::create(nb, nloc, x);
      });
  return generic.getResult(0);
}

/// A `linalg.matmul` of `lhs` and `rhs` accumulating into `acc` with the
/// given operand maps over (m, n, k).
static Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         Value acc, AffineMap lhsMap, AffineMap rhsMap) {
  auto matmul = linalg::MatmulOp::create(b, loc, TypeRange{acc.getType()},
                                         ValueRange{lhs, rhs}, ValueRange{acc});
  MLIRContext *ctx = b.getContext();
  AffineMap accMap = AffineMap::get(
      3, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
  matmul.setIndexingMapsAttr(b.getAffineMapArrayAttr({lhsMap, rhsMap, accMap}));
  return matmul.getResult(0);
}

/// The map over (m, n, k) that reads dimensions `i` and `j`.
static AffineMap getMap(MLIRContext *ctx, unsigned i, unsigned j) {
  return AffineMap::get(
      3, 0, {getAffineDimExpr(i, ctx), getAffineDimExpr(j, ctx)}, ctx);
}

Value mlir::xent::buildProjection(OpBuilder &b, Location loc, Value hidden,
                                  Value weight, Value bias) {
  SmallVector<OpFoldResult> sizes = {getSize(b, loc, hidden, 0),
                                     getSize(b, loc, weight, 0)};
  Value acc;
  if (!bias) {
    acc = buildZeroTensor(b, loc, sizes);
  } else {
    // The accumulator starts at the bias, widened to f32, on every row.
    Value init = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
    MLIRContext *ctx = b.getContext();
    AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    auto generic = linalg::GenericOp::create(
        b, loc, init.getType(), bias, init,
        ArrayRef<AffineMap>{row, b.getMultiDimIdentityMap(2)},
        SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value x = args[0];
          if (!x.getType().isF32())
            x = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), x);
          linalg::YieldOp::create(nb, nloc, x);
        });
    acc = generic.getResult(0);
  }
  // logits[m, n] += hidden[m, k] · weight[n, k]
  MLIRContext *ctx = b.getContext();
  return buildMatmul(b, loc, hidden, weight, acc, getMap(ctx, 0, 2),
                     getMap(ctx, 1, 2));
}

Value mlir::xent::buildHiddenGradient(OpBuilder &b, Location loc, Value dlogits,
                                      Value weight, Value acc) {
  // acc[m, n] += dlogits[m, k] · weight[k, n]
  MLIRContext *ctx = b.getContext();
  return buildMatmul(b, loc, dlogits, weight, acc, getMap(ctx, 0, 2),
                     getMap(ctx, 2, 1));
}

Value mlir::xent::buildWeightGradient(OpBuilder &b, Location loc, Value dlogits,
                                      Value hidden, Value acc) {
  // acc[m, n] += dlogits[k, m] · hidden[k, n]
  MLIRContext *ctx = b.getContext();
  return buildMatmul(b, loc, dlogits, hidden, acc, getMap(ctx, 2, 0),
                     getMap(ctx, 2, 1));
}

Value mlir::xent::buildBiasGradient(OpBuilder &b, Location loc, Value dlogits,
                                    Value acc) {
  auto reduce = linalg::ReduceOp::create(
      b, loc, dlogits, acc, /*dimensions=*/{0},
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, nloc, args[0], args[1]);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return reduce.getResult(0);
}

SmallVector<NamedAttribute>
mlir::xent::getLossAttributes(LinearCrossEntropyOpInterface op,
                              Reduction reduction) {
  Builder b(op.getContext());
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("reduction",
                     ReductionAttr::get(b.getContext(), reduction)),
      b.getNamedAttr(
          "label_smoothing",
          b.getF32FloatAttr(op.getLabelSmoothing().convertToFloat())),
      b.getNamedAttr("z_loss_scale",
                     b.getF32FloatAttr(op.getZLossScale().convertToFloat()))};
  if (IntegerAttr ignoreIndex = op.getIgnoreIndexAttr())
    attrs.push_back(b.getNamedAttr("ignore_index", ignoreIndex));
  if (std::optional<APFloat> softcap = op.getSoftcap())
    attrs.push_back(b.getNamedAttr(
        "softcap", b.getF32FloatAttr(softcap->convertToFloat())));
  return attrs;
}

//===----------------------------------------------------------------------===//
// The canonical decomposition
//===----------------------------------------------------------------------===//

Value mlir::xent::collapseRows(OpBuilder &b, Location loc, Value v,
                               int64_t rows) {
  if (rows != 2)
    return v;
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<ReassociationIndices> groups = {{0, 1}};
  for (int64_t d = 2; d < rank; ++d)
    groups.push_back({d});
  return tensor::CollapseShapeOp::create(b, loc, v, groups);
}

Value mlir::xent::restoreRows(OpBuilder &b, Location loc, Value v, Value hidden,
                              Type type) {
  auto resultType = cast<RankedTensorType>(type);
  v = convertFloatTensor(b, loc, v, resultType.getElementType());
  auto vType = cast<RankedTensorType>(v.getType());
  int64_t hiddenRank = cast<RankedTensorType>(hidden.getType()).getRank();
  if (hiddenRank == 3 && vType.getRank() + 1 == resultType.getRank()) {
    SmallVector<ReassociationIndices> groups = {{0, 1}};
    SmallVector<OpFoldResult> sizes = {getSize(b, loc, hidden, 0),
                                       getSize(b, loc, hidden, 1)};
    SmallVector<int64_t> shape = {
        cast<RankedTensorType>(hidden.getType()).getDimSize(0),
        cast<RankedTensorType>(hidden.getType()).getDimSize(1)};
    for (int64_t d = 1; d < vType.getRank(); ++d) {
      groups.push_back({d + 1});
      sizes.push_back(getSize(b, loc, v, d));
      shape.push_back(vType.getDimSize(d));
    }
    v = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, vType.getElementType()), v, groups,
        sizes);
  }
  if (v.getType() != type)
    v = tensor::CastOp::create(b, loc, type, v);
  return v;
}

Operation *mlir::xent::buildLinearLoss(OpBuilder &b, Location loc,
                                       LinearCrossEntropyOpInterface op,
                                       Reduction reduction, Value gradOutput,
                                       Value logits, Value target,
                                       Value classWeight,
                                       const LossScalars &scalars) {
  auto logitsType = cast<RankedTensorType>(logits.getType());
  auto lossType = RankedTensorType::get(
      reduction == Reduction::none ? ArrayRef<int64_t>{logitsType.getDimSize(0)}
                                   : ArrayRef<int64_t>{},
      b.getF32Type());
  SmallVector<Value> operands;
  if (op.computesGradient())
    operands.push_back(gradOutput);
  operands.append({logits, target});
  if (classWeight)
    operands.push_back(classWeight);
  SmallVector<int32_t> segments(operands.size(), 1);
  if (!classWeight)
    segments.push_back(0);
  // No row statistics and no class slice: the forward op's class_offset
  // and num_classes, the gradient op's row_stats, class_offset and
  // num_classes.
  if (!op.computesGradient())
    segments.append({0, 0});
  else if (!op.computesLoss())
    segments.append({0, 0, 0});
  for (Value v : {scalars.ignoreIndex, scalars.labelSmoothing,
                  scalars.zLossScale, scalars.softcap}) {
    segments.push_back(v ? 1 : 0);
    if (v)
      operands.push_back(v);
  }
  SmallVector<Type> types;
  if (op.computesLoss()) {
    types.push_back(lossType);
    if (op.getZLoss())
      types.push_back(lossType);
  }
  if (op.computesGradient())
    types.push_back(logitsType);
  SmallVector<NamedAttribute> attrs = getLossAttributes(op, reduction);
  attrs.push_back(b.getNamedAttr("operandSegmentSizes",
                                 b.getDenseI32ArrayAttr(segments)));
  if (!op.computesGradient())
    return CrossEntropyOp::create(b, loc, types, operands, attrs);
  if (!op.computesLoss())
    return CrossEntropyGradOp::create(b, loc, types, operands, attrs);
  return CrossEntropyAndGradOp::create(b, loc, types, operands, attrs);
}

SmallVector<Value> mlir::xent::buildCanonicalLinearDecomposition(
    OpBuilder &b, LinearCrossEntropyOpInterface op, ValueRange operands) {
  // Operands in order: grad_output when the op computes gradients, hidden,
  // weight, bias when present, target, class_weight when present.
  Location loc = op.getLoc();
  unsigned next = 0;
  Value gradOutput = op.computesGradient() ? operands[next++] : Value();
  Value hidden = operands[next++];
  Value weight = operands[next++];
  Value bias = op.getBias() ? operands[next++] : Value();
  Value target = operands[next++];
  Value classWeight = op.getClassWeight() ? operands[next++] : Value();

  int64_t rowDims = cast<RankedTensorType>(hidden.getType()).getRank() - 1;
  bool perRow = op.getReduction() == Reduction::none;
  Value rows = collapseRows(b, loc, hidden, rowDims);
  Value rowTarget = collapseRows(b, loc, target, rowDims);
  if (gradOutput && perRow)
    gradOutput = collapseRows(b, loc, gradOutput, rowDims);

  Value logits = buildProjection(b, loc, rows, weight, bias);
  LossScalars scalars = op.getLossScalars().remap(
      operands.take_back(op.getLossScalars().getValues().size()));
  Operation *ce = buildLinearLoss(b, loc, op, op.getReduction(), gradOutput,
                                  logits, rowTarget, classWeight, scalars);

  SmallVector<Value> results;
  unsigned ceResult = 0;
  if (op.computesLoss()) {
    results.push_back(restoreRows(b, loc, ce->getResult(ceResult++), hidden,
                                  op.getLoss().getType()));
    if (Value z = op.getZLoss())
      results.push_back(
          restoreRows(b, loc, ce->getResult(ceResult++), hidden, z.getType()));
  }
  if (!op.computesGradient())
    return results;

  Value dlogits = ce->getResult(ceResult);
  Value dRows = buildHiddenGradient(
      b, loc, dlogits, weight,
      buildZeroTensor(b, loc,
                      {getSize(b, loc, rows, 0), getSize(b, loc, rows, 1)}));
  results.push_back(
      restoreRows(b, loc, dRows, hidden, op.getDHidden().getType()));
  Value dWeight = buildWeightGradient(
      b, loc, dlogits, rows,
      buildZeroTensor(
          b, loc, {getSize(b, loc, weight, 0), getSize(b, loc, weight, 1)}));
  results.push_back(
      restoreRows(b, loc, dWeight, hidden, op.getDWeight().getType()));
  if (Value dBiasResult = op.getDBias()) {
    Value dBias = buildBiasGradient(
        b, loc, dlogits, buildZeroTensor(b, loc, {getSize(b, loc, weight, 0)}));
    results.push_back(
        restoreRows(b, loc, dBias, hidden, dBiasResult.getType()));
  }
  return results;
}

FailureOr<SmallVector<Value>>
mlir::xent::decomposeLinear(OpBuilder &b, LinearCrossEntropyOpInterface op) {
  Region &region = op.getDecomposition();
  if (region.empty())
    return op.buildDecomposition(b, op->getOperands());
  return detail::cloneDecompositionBody(b, region, op->getOperands());
}
