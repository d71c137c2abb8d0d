//===- RowOutputsDecomposition.cpp - Decomposition of the per-row outputs -===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The canonical decomposition of the per-row outputs of the loss-computing
// ops (`return_lse`, `return_argmax`, `return_accuracy`), given the row
// statistics that XentDecomposition.cpp computes:
//
//   lse      = m + log(s)                                  (per row)
//   argmax   = first c with x_c > every earlier x (NaN counting as largest),
//              one reduction over the class axis           (per row)
//   accuracy = [kept ∧ argmax = target], summed, or divided by the number of
//              kept elements for `mean`                    (reduced)
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

static Value constF32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

static Value convertFromF32(OpBuilder &b, Location loc, Value v, Type type) {
  if (type.isF32())
    return v;
  return arith::TruncFOp::create(b, loc, type, v);
}

static Value castTo(ImplicitLocOpBuilder &b, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, type, v);
}

namespace {
/// Shapes and maps of the element loops over `logits`.
struct RowLoops {
  RowLoops(ImplicitLocOpBuilder &b, const CrossEntropyConfig &config,
           Value logits)
      : b(b), config(config), logits(logits),
        rank(config.logitsType.getRank()) {}

  /// (d0 .. d(r-1)) -> all dims but the class axis.
  AffineMap rowMap() const {
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != config.axis)
        exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(rank, 0, exprs, b.getContext());
  }
  Value emptyElementTensor(Type elementType) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), logits);
    sizes.erase(sizes.begin() + config.axis);
    return tensor::EmptyOp::create(b, sizes, elementType);
  }
  Value filled(Value init, Value v) {
    return linalg::FillOp::create(b, v, init).getResult(0);
  }

  ImplicitLocOpBuilder &b;
  const CrossEntropyConfig &config;
  Value logits;
  int64_t rank;
};
} // namespace

/// The index of the first largest soft-capped logit of each row as i64, with
/// NaN larger than every number (torch.argmax).
static Value emitRowArgmax(RowLoops &loops) {
  ImplicitLocOpBuilder &b = loops.b;
  const CrossEntropyConfig &config = loops.config;
  SmallVector<utils::IteratorType> iterators(loops.rank,
                                             utils::IteratorType::parallel);
  iterators[config.axis] = utils::IteratorType::reduction;
  Value best = loops.filled(
      loops.emptyElementTensor(b.getF32Type()),
      constF32(b, b.getLoc(), -std::numeric_limits<double>::infinity()));
  Value index = loops.filled(
      loops.emptyElementTensor(b.getI64Type()),
      arith::ConstantOp::create(b, b.getI64IntegerAttr(0)));
  AffineMap full = AffineMap::getMultiDimIdentityMap(loops.rank,
                                                     b.getContext());
  AffineMap row = loops.rowMap();
  auto generic = linalg::GenericOp::create(
      b, TypeRange{best.getType(), index.getType()}, ValueRange{loops.logits},
      ValueRange{best, index}, ArrayRef<AffineMap>{full, row, row}, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = args[0];
        x = loss::buildLogit(nb, loc, config, x);
        Value m = args[1];
        // x replaces the best so far when larger, or when it is the first
        // NaN: ties keep the earlier class.
        Value larger =
            arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OGT, x, m);
        Value xNaN =
            arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::UNO, x, x);
        Value mNumber =
            arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::ORD, m, m);
        Value take = arith::OrIOp::create(
            nb, loc, larger, arith::AndIOp::create(nb, loc, xNaN, mNumber));
        Value c = arith::IndexCastOp::create(
            nb, loc, nb.getI64Type(),
            linalg::IndexOp::create(nb, loc, config.axis));
        linalg::YieldOp::create(
            nb, loc,
            ValueRange{arith::SelectOp::create(nb, loc, take, x, m),
                       arith::SelectOp::create(nb, loc, take, c, args[2])});
      });
  return generic.getResult(1);
}

/// `m + log(s)` per row, in `elementType`.
static Value emitRowLse(RowLoops &loops, Value max, Value sumExp,
                        Type elementType) {
  ImplicitLocOpBuilder &b = loops.b;
  int64_t rank = loops.rank - 1;
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  Value init = loops.emptyElementTensor(elementType);
  auto generic = linalg::GenericOp::create(
      b, init.getType(), ValueRange{max, sumExp}, ValueRange{init},
      ArrayRef<AffineMap>{id, id, id},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value lse = arith::AddFOp::create(
            nb, loc, args[0], math::LogOp::create(nb, loc, args[1]));
        linalg::YieldOp::create(
            nb, loc, convertFromF32(nb, loc, lse, elementType));
      });
  return generic.getResult(0);
}

/// The i64 row argmax converted to `elementType` (i32 or i64).
static Value emitArgmaxResult(RowLoops &loops, Value argmax,
                              Type elementType) {
  if (elementType.isInteger(64))
    return argmax;
  ImplicitLocOpBuilder &b = loops.b;
  int64_t rank = loops.rank - 1;
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  Value init = loops.emptyElementTensor(elementType);
  auto generic = linalg::GenericOp::create(
      b, init.getType(), ValueRange{argmax}, ValueRange{init},
      ArrayRef<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            nb, loc,
            Value(arith::TruncIOp::create(nb, loc, elementType, args[0])));
      });
  return generic.getResult(0);
}

/// The accuracy of the row argmax against class-index `target`, reduced like
/// the loss, as a tensor of `type`.
static Value emitAccuracy(RowLoops &loops, Value target, Value argmax,
                          RankedTensorType type) {
  ImplicitLocOpBuilder &b = loops.b;
  const CrossEntropyConfig &config = loops.config;
  Type f32 = b.getF32Type();
  Type elementType = type.getElementType();
  int64_t rank = loops.rank - 1;
  bool reduce = config.reduction != Reduction::none;
  bool mean = config.reduction == Reduction::mean;
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  AffineMap out = reduce ? AffineMap::get(rank, 0, b.getContext()) : id;
  auto zeroScalar = [&]() {
    Value init = tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f32);
    return loops.filled(init, constF32(b, b.getLoc(), 0.0));
  };
  SmallVector<Value> outputs = {reduce ? zeroScalar()
                                       : loops.emptyElementTensor(elementType)};
  if (mean)
    outputs.push_back(zeroScalar()); // the number of kept elements
  SmallVector<AffineMap> maps = {id, id};
  maps.append(outputs.size(), out);
  SmallVector<Type> types =
      llvm::map_to_vector(outputs, [](Value v) { return v.getType(); });
  auto generic = linalg::GenericOp::create(
      b, types, ValueRange{target, argmax}, outputs, maps,
      SmallVector<utils::IteratorType>(rank,
                                       reduce ? utils::IteratorType::reduction
                                              : utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value t = args[0];
        if (!t.getType().isInteger(64))
          t = arith::ExtSIOp::create(nb, loc, nb.getI64Type(), t);
        Value ignore = loss::buildIgnoreIndex(nb, loc, config);
        Value kept =
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, t, ignore);
        Value hit = arith::AndIOp::create(
            nb, loc, kept,
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq, t,
                                  args[1]));
        Value one = constF32(nb, loc, 1.0), zero = constF32(nb, loc, 0.0);
        Value correct = arith::SelectOp::create(nb, loc, hit, one, zero);
        SmallVector<Value> yields;
        if (!reduce) {
          yields.push_back(convertFromF32(nb, loc, correct, elementType));
        } else {
          yields.push_back(arith::AddFOp::create(nb, loc, args[2], correct));
          if (mean)
            yields.push_back(arith::AddFOp::create(
                nb, loc, args[3],
                arith::SelectOp::create(nb, loc, kept, one, zero)));
        }
        linalg::YieldOp::create(nb, loc, yields);
      });
  if (!reduce)
    return castTo(b, generic.getResult(0), type);
  Value sum = tensor::ExtractOp::create(b, generic.getResult(0), ValueRange{});
  if (mean)
    sum = arith::DivFOp::create(
        b, sum, tensor::ExtractOp::create(b, generic.getResult(1),
                                          ValueRange{}));
  Value v = convertFromF32(b, b.getLoc(), sum, elementType);
  return tensor::FromElementsOp::create(b, type, ValueRange{v});
}

SmallVector<Value> mlir::xent::buildRowOutputs(
    OpBuilder &builder, Location loc, const CrossEntropyConfig &config,
    Value logits, Value target, Value max, Value sumExp,
    const RowOutputTypes &types) {
  ImplicitLocOpBuilder b(loc, builder);
  RowLoops loops(b, config, logits);
  SmallVector<Value> results;
  if (types.lse) {
    auto type = cast<RankedTensorType>(types.lse);
    results.push_back(castTo(
        b, emitRowLse(loops, max, sumExp, type.getElementType()), type));
  }
  Value argmax;
  if (types.argmax || types.accuracy)
    argmax = emitRowArgmax(loops);
  if (types.argmax) {
    auto type = cast<RankedTensorType>(types.argmax);
    results.push_back(castTo(
        b, emitArgmaxResult(loops, argmax, type.getElementType()), type));
  }
  if (types.accuracy)
    results.push_back(emitAccuracy(loops, target, argmax,
                                   cast<RankedTensorType>(types.accuracy)));
  return results;
}
