//===- RowStatsDecomposition.cpp - Decomposition with row statistics ------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The canonical decomposition of the ops that return or take per-row
// statistics, or hold a slice [o, o + c) of the C classes (`class_offset`):
//
//   forward:   the op's results on the slice, from the canonical
//              decomposition on targets made local (t - o where the slice
//              holds t, else ignored), then `row_stats`: m, s = Σ exp(x - m),
//              x_t (-inf where the slice does not hold t), w_t (0 there),
//              Σ w (m - x), Σ w, packed as tensor<rows x K>.
//   gradient:  dlogits from the merged statistics (m, s, w_t, Σ w) without
//              a pass over the row for them; the one-hot term at the global
//              class index, so only where the slice holds the target.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentDecomposition.h"
#include "xent/Dialect/Xent/IR/LossBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::loss;

namespace {

/// Where a class-index target is, seen from a slice of the classes.
struct SliceTarget : ClassTarget {
  /// Kept and one of the slice's classes.
  Value owned;
  /// t - offset where owned, else 0 (index).
  Value localIndex;
};

class RowStatsEmitter final : public ElementReader {
public:
  RowStatsEmitter(OpBuilder &builder, CrossEntropyOpInterface op,
                  ValueRange operands);

  SmallVector<Value> emitForward(CrossEntropyOpInterface op);
  Value emitGradient(Type resultType);

private:
  Value readLogit(OpBuilder &nb, Location loc, Value raw) const override {
    return buildLogit(nb, loc, config, raw);
  }
  Value readSmoothedProbability(OpBuilder &nb, Location loc,
                                Value q) const override {
    return toF32(nb, loc, q); // class-index targets only (verifier)
  }
  ClassTarget readClassTarget(OpBuilder &nb, Location loc,
                              Value t) const override {
    return readSliceTarget(nb, loc, t);
  }
  Value readGlobalClass(OpBuilder &nb, Location loc, Value c) const override {
    return arith::AddIOp::create(nb, loc, c, offset);
  }
  SliceTarget readSliceTarget(OpBuilder &nb, Location loc, Value t) const;

  AffineMap rowIdentity() const {
    return AffineMap::getMultiDimIdentityMap(rank - 1, b.getContext());
  }
  SmallVector<utils::IteratorType> rowIterators() const {
    return SmallVector<utils::IteratorType>(rank - 1,
                                            utils::IteratorType::parallel);
  }
  Value emptyRows(Type type) {
    return tensor::EmptyOp::create(b, getRowSizes(b, b.getLoc(), logits, axis),
                                   type);
  }

  Value emitLocalTargets();
  Value emitStatistics();
  /// Column `j` of the statistics operand, shaped like the rows.
  Value extractColumn(Value stats, int64_t j);

  mutable ImplicitLocOpBuilder b;
  CrossEntropyConfig config;
  Value gradOutput, logits, target, weight, stats;
  int64_t rank, axis;
  Type f32;
  Value offset;        // the slice's first class (index)
  Value localClasses;  // c (index)
  Value numClasses;    // C (index)
};

} // namespace

RowStatsEmitter::RowStatsEmitter(OpBuilder &builder,
                                 CrossEntropyOpInterface op,
                                 ValueRange operands)
    : b(op.getLoc(), builder), config(op.getConfig().withOperands(operands)),
      f32(builder.getF32Type()) {
  unsigned next = 0;
  if (op.computesGradient())
    gradOutput = operands[next++];
  logits = operands[next++];
  target = operands[next++];
  if (op.getWeight())
    weight = operands[next++];
  if (op.takesRowStats())
    stats = operands[next++];
  rank = config.logitsType.getRank();
  axis = config.axis;
  localClasses = tensor::DimOp::create(b, logits, axis);
  if (config.classOffset) {
    offset = arith::IndexCastOp::create(b, b.getIndexType(),
                                        config.classOffset);
    numClasses = buildSliceNumClasses(b, b.getLoc(), config);
  } else {
    offset = arith::ConstantIndexOp::create(b, 0);
    numClasses = localClasses;
  }
}

SliceTarget RowStatsEmitter::readSliceTarget(OpBuilder &nb, Location loc,
                                             Value t) const {
  Type i64 = nb.getI64Type();
  if (t.getType() != i64)
    t = arith::ExtSIOp::create(nb, loc, i64, t);
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
    return arith::CmpIOp::create(nb, loc, p, x, y);
  };
  SliceTarget r;
  r.kept = cmp(arith::CmpIPredicate::ne, t, buildIgnoreIndex(nb, loc, config));
  Value zero64 = arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(0));
  Value c64 = arith::IndexCastOp::create(nb, loc, i64, numClasses);
  r.valid = arith::AndIOp::create(nb, loc,
                                  cmp(arith::CmpIPredicate::sge, t, zero64),
                                  cmp(arith::CmpIPredicate::slt, t, c64));
  Value safe = arith::SelectOp::create(nb, loc, r.valid, t, zero64);
  r.index = arith::IndexCastOp::create(nb, loc, nb.getIndexType(), safe);
  Value end = arith::AddIOp::create(nb, loc, offset, localClasses);
  Value inSlice = arith::AndIOp::create(
      nb, loc, cmp(arith::CmpIPredicate::uge, r.index, offset),
      cmp(arith::CmpIPredicate::ult, r.index, end));
  r.owned = arith::AndIOp::create(
      nb, loc, arith::AndIOp::create(nb, loc, r.kept, r.valid), inSlice);
  Value local = arith::SubIOp::create(nb, loc, r.index, offset);
  r.localIndex = arith::SelectOp::create(
      nb, loc, r.owned, local, arith::ConstantIndexOp::create(nb, loc, 0));
  return r;
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// The targets as the slice alone sees them: t - offset where the slice
/// holds t, else -1, the local configuration's ignore_index.
Value RowStatsEmitter::emitLocalTargets() {
  auto type = cast<RankedTensorType>(target.getType());
  AffineMap id = rowIdentity();
  return linalg::GenericOp::create(
             b, type, ValueRange{target},
             ValueRange{emptyRows(type.getElementType())},
             SmallVector<AffineMap>{id, id}, rowIterators(),
             [&](OpBuilder &nb, Location loc, ValueRange args) {
               SliceTarget t = readSliceTarget(nb, loc, args[0]);
               Type elt = args[0].getType();
               Value local = arith::IndexCastOp::create(nb, loc, elt,
                                                        t.localIndex);
               Value none = arith::ConstantOp::create(
                   nb, loc, nb.getIntegerAttr(elt, -1));
               linalg::YieldOp::create(
                   nb, loc,
                   ValueRange{arith::SelectOp::create(nb, loc, t.owned, local,
                                                      none)});
             })
      .getResult(0);
}

Value RowStatsEmitter::emitStatistics() {
  MLIRContext *ctx = b.getContext();
  bool smoothing = config.hasLabelSmoothing();
  Value max = buildRowMax(b, b.getLoc(), config, logits);

  // s, and with label smoothing Σ w (m - x) and Σ w, in one pass.
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  AffineMap full = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap rows = getRowMap(ctx, rank, axis);
  SmallVector<Value> inputs = {logits, max};
  SmallVector<AffineMap> maps = {full, rows};
  if (weight && smoothing) {
    inputs.push_back(weight);
    maps.push_back(getClassMap(ctx, rank, axis));
  }
  SmallVector<Value> outputs(smoothing ? 3 : 1,
                             buildFilledRows(b, b.getLoc(), logits, axis, 0.0));
  maps.append(outputs.size(), rows);
  SmallVector<Type> types(outputs.size(), outputs[0].getType());
  unsigned numInputs = inputs.size();
  auto sums = linalg::GenericOp::create(
      b, types, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = readLogit(nb, loc, args[0]), m = args[1];
        Value e =
            math::ExpOp::create(nb, loc, arith::SubFOp::create(nb, loc, x, m));
        ValueRange acc = args.drop_front(numInputs);
        SmallVector<Value> yields = {arith::AddFOp::create(nb, loc, acc[0], e)};
        if (smoothing) {
          Value w = numInputs > 2 ? toF32(nb, loc, args[2])
                                  : constF32(nb, loc, 1.0);
          Value gap = arith::MulFOp::create(
              nb, loc, w, arith::SubFOp::create(nb, loc, m, x));
          yields.push_back(arith::AddFOp::create(nb, loc, acc[1], gap));
          yields.push_back(arith::AddFOp::create(nb, loc, acc[2], w));
        }
        linalg::YieldOp::create(nb, loc, yields);
      });

  // x_t and w_t where the slice holds the target.
  int64_t rowRank = rank - 1;
  SmallVector<Value> targetOuts = {emptyRows(f32)};
  if (weight)
    targetOuts.push_back(emptyRows(f32));
  SmallVector<AffineMap> targetMaps(targetOuts.size() + 1, rowIdentity());
  SmallVector<Type> targetTypes(targetOuts.size(), targetOuts[0].getType());
  auto terms = linalg::GenericOp::create(
      b, targetTypes, ValueRange{target}, targetOuts, targetMaps,
      rowIterators(), [&](OpBuilder &nb, Location loc, ValueRange args) {
        SliceTarget t = readSliceTarget(nb, loc, args[0]);
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rowRank; ++d)
          indices.push_back(linalg::IndexOp::create(nb, loc, d));
        indices.insert(indices.begin() + axis, t.localIndex);
        Value x = readLogit(
            nb, loc, tensor::ExtractOp::create(nb, loc, logits, indices));
        Value minusInf =
            constF32(nb, loc, -std::numeric_limits<double>::infinity());
        SmallVector<Value> yields = {
            arith::SelectOp::create(nb, loc, t.owned, x, minusInf)};
        if (weight) {
          Value w = toF32(nb, loc,
                          tensor::ExtractOp::create(nb, loc, weight,
                                                    ValueRange{t.localIndex}));
          yields.push_back(arith::SelectOp::create(nb, loc, t.owned, w,
                                                   constF32(nb, loc, 0.0)));
        }
        linalg::YieldOp::create(nb, loc, yields);
      });

  // Pack (rows..., j) -> column j.
  SmallVector<Value> columns = {max, sums.getResult(0), terms.getResult(0)};
  if (weight)
    columns.push_back(terms.getResult(1));
  if (smoothing)
    columns.append({sums.getResult(1), sums.getResult(2)});
  return buildPackedRows(b, b.getLoc(), columns,
                         getRowSizes(b, b.getLoc(), logits, axis));
}

SmallVector<Value> RowStatsEmitter::emitForward(CrossEntropyOpInterface op) {
  // The slice alone: targets it does not hold are ignored; ε/C keeps the
  // global C (the configuration's globalNumClasses).
  CrossEntropyConfig local = config;
  local.rowStats = false;
  local.classOffset = {};
  Value localTarget = target;
  if (config.classOffset) {
    localTarget = emitLocalTargets();
    local.scalars.ignoreIndex = {};
    local.ignoreIndex = -1;
  }
  SmallVector<Type> lossTypes = {op.getLoss().getType()};
  if (Value z = op.getZLoss())
    lossTypes.push_back(z.getType());
  SmallVector<Value> results =
      buildCrossEntropy(b, b.getLoc(), local, logits, localTarget, weight,
                        lossTypes, RowOutputTypes::get(op));
  Value rowStats = emitStatistics();
  Type type = op.getRowStats().getType();
  results.push_back(castTensor(b, b.getLoc(), rowStats, type));
  return results;
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

Value RowStatsEmitter::extractColumn(Value stats, int64_t j) {
  int64_t rowRank = rank - 1;
  auto statsType = cast<RankedTensorType>(stats.getType());
  SmallVector<OpFoldResult> offsets(rowRank + 1, b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(rowRank + 1, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = getRowSizes(b, b.getLoc(), logits, axis);
  sizes.push_back(b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(j);
  SmallVector<int64_t> rowShape(statsType.getShape().drop_back());
  for (auto [d, size] : llvm::enumerate(rowShape))
    if (ShapedType::isDynamic(size))
      rowShape[d] = getConstantIntValue(sizes[d]).value_or(ShapedType::kDynamic);
  auto rowType = RankedTensorType::get(rowShape, f32);
  return tensor::ExtractSliceOp::create(b, rowType, stats, offsets, sizes,
                                        strides);
}

Value RowStatsEmitter::emitGradient(Type resultType) {
  bool smoothing = config.hasLabelSmoothing();
  int64_t k = config.getRowStatsWidth();
  Value max = extractColumn(stats, 0), sumExp = extractColumn(stats, 1);
  Value targetWeight = weight ? extractColumn(stats, 3) : Value();
  Value mass = weight && smoothing ? extractColumn(stats, k - 1) : Value();

  Value lossScale, zScale; // f32 scalars, or null for per element
  if (config.reduction != Reduction::none) {
    Value go = toF32(b, b.getLoc(),
                     tensor::ExtractOp::create(b, gradOutput, ValueRange{}));
    lossScale = zScale = go;
    if (config.reduction == Reduction::mean) {
      // Σ w_t and the count of the kept elements, w_t from the statistics.
      auto [id, outMap, iterators] =
          getElementLoop(b.getContext(), rank - 1, /*reduce=*/true);
      SmallVector<Value> inputs = {target};
      if (targetWeight)
        inputs.push_back(targetWeight);
      SmallVector<AffineMap> maps(inputs.size(), id);
      Value zeroInit = tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f32);
      Value zero = linalg::FillOp::create(b, constF32(b, b.getLoc(), 0.0),
                                          zeroInit)
                       .getResult(0);
      maps.append(2, outMap);
      auto totals = linalg::GenericOp::create(
          b, TypeRange{zero.getType(), zero.getType()}, inputs,
          ValueRange{zero, zero}, maps, iterators,
          [&](OpBuilder &nb, Location loc, ValueRange args) {
            SliceTarget t = readSliceTarget(nb, loc, args[0]);
            Value zeroF = constF32(nb, loc, 0.0), one = constF32(nb, loc, 1.0);
            Value wt = targetWeight ? args[1] : one;
            unsigned out = inputs.size();
            linalg::YieldOp::create(
                nb, loc,
                ValueRange{arith::AddFOp::create(
                               nb, loc, args[out],
                               arith::SelectOp::create(nb, loc, t.kept, wt,
                                                       zeroF)),
                           arith::AddFOp::create(
                               nb, loc, args[out + 1],
                               arith::SelectOp::create(nb, loc, t.kept, one,
                                                       zeroF))});
          });
      Value weightTotal =
          tensor::ExtractOp::create(b, totals.getResult(0), ValueRange{});
      Value count =
          tensor::ExtractOp::create(b, totals.getResult(1), ValueRange{});
      lossScale = arith::DivFOp::create(b, go, weightTotal);
      zScale = arith::DivFOp::create(b, go, count);
    }
  }

  GradientOperands operands = {logits, target,       max,      sumExp,
                               weight, targetWeight, mass,     gradOutput,
                               lossScale, zScale};
  operands.init = tensor::EmptyOp::create(
      b, tensor::getMixedSizes(b, b.getLoc(), logits),
      config.logitsType.getElementType());
  operands.numClasses = indexToF32(b, b.getLoc(), numClasses);
  return castTensor(b, b.getLoc(),
                    buildGradientGeneric(b, b.getLoc(), config, operands,
                                         *this),
                    resultType);
}

SmallVector<Value>
mlir::xent::buildRowStatsDecomposition(OpBuilder &b,
                                       CrossEntropyOpInterface op,
                                       ValueRange operands) {
  RowStatsEmitter emitter(b, op, operands);
  if (op.computesGradient())
    return {emitter.emitGradient(op.getDlogits().getType())};
  return emitter.emitForward(op);
}
