//===- ShardedLossEmitter.h - One device's part of a loss -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The emitter of the partitioned cross entropy, shared by ShardedLoss.cpp
// (the linalg form and the driver) and ShardedSlices.cpp (the form whose
// per-slice work stays in xent ops).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSSEMITTER_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSSEMITTER_H

#include "ShardedLoss.h"

#include "xent/Dialect/Xent/IR/LossBuilder.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::xent::sharding {

using namespace mlir::xent::loss;


/// Per-row statistics, f32 tensors shaped like the local rows; null when the
/// configuration does not need them. After combineRowSums they are global.
struct RowStats {
  Value max;          // m = max_c x_c
  Value sumExp;       // Σ_c exp(x_c - m)
  Value targetLogit;  // x_t
  Value targetWeight; // w_t
  Value weightedGap;  // Σ_c f_c (m - x_c), f_c = w_c or w_c q'_c
  Value weightSum;    // Σ_c f_c
};

/// Global totals of a reduced loss, f32 scalars.
struct Totals {
  Value loss, zLoss, weight, kept;
};

class ShardedLossEmitter final : public ElementReader {
public:
  ShardedLossEmitter(OpBuilder &builder, CrossEntropyOpInterface op,
                     const LossSharding &sharding, ValueRange operands);

  SmallVector<Value> emit(TypeRange resultTypes);

private:
  //===--- Scalars ------------------------------------------------------===//
  // The ElementReader's: what the dlogits generic reads (LossBuilder.h).
  Value readLogit(OpBuilder &nb, Location loc, Value raw) const override {
    return buildLogit(nb, loc, config, raw);
  }
  /// A class-index target: kept (t != ignore_index), valid (0 <= t < C),
  /// `index` (t when valid, else 0, as index), and where this device holds
  /// that class: `owned` and the local index (0 when not owned).
  struct TargetIndex : ClassTarget {
    Value owned, localIndex;
  };
  TargetIndex emitTargetIndex(OpBuilder &nb, Location loc, Value t) const;
  ClassTarget readClassTarget(OpBuilder &nb, Location loc,
                              Value t) const override {
    return emitTargetIndex(nb, loc, t);
  }
  Value readSmoothedProbability(OpBuilder &nb, Location loc,
                                Value q) const override;
  /// The class index of the local class `c` in the unsharded logits.
  Value readGlobalClass(OpBuilder &nb, Location loc, Value c) const override {
    if (sharding.classAxes.empty())
      return c;
    return arith::AddIOp::create(nb, loc, c, classOffset);
  }

  //===--- Shapes -------------------------------------------------------===//
  AffineMap fullMap() const {
    return AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  }
  AffineMap rowMap() const { return getRowMap(b.getContext(), rank, axis); }
  AffineMap classMap() const {
    return getClassMap(b.getContext(), rank, axis);
  }
  SmallVector<OpFoldResult> rowSizes() {
    return getRowSizes(b, b.getLoc(), logits, axis);
  }
  Value emptyRows(Type elementType) {
    return tensor::EmptyOp::create(b, rowSizes(), elementType);
  }
  Value filledRows(double value) {
    return buildFilledRows(b, b.getLoc(), logits, axis, value);
  }
  Value filledScalar(double value) {
    Value init = tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f32);
    return linalg::FillOp::create(b, constF32(b, b.getLoc(), value), init)
        .getResult(0);
  }
  Value extractScalar(Value rank0) {
    return tensor::ExtractOp::create(b, rank0, ValueRange{});
  }
  Value castTo(Value v, Type type) {
    return castTensor(b, b.getLoc(), v, type);
  }

  //===--- Communication ------------------------------------------------===//
  Value allReduce(Value v, ArrayRef<shard::GridAxis> axes,
                  shard::ReductionKind kind) {
    if (axes.empty())
      return v;
    return shard::AllReduceOp::create(b, v, sharding.grid, axes, kind)
        .getResult();
  }
  /// Packs per-row tensors into one tensor<rows x k>, all-reduces it with a
  /// sum over the class axes and unpacks it into `values`.
  void allReduceRowSums(ArrayRef<Value *> values);
  /// All-reduces f32 scalars with one sum over the row axes.
  void allReduceTotals(ArrayRef<Value *> scalars);

  //===--- Steps --------------------------------------------------------===//
  Value emitRowMax();
  void emitRowSums(RowStats &stats, bool withGap, bool withMass);
  void emitTargetTerms(RowStats &stats, bool withLogit, bool withWeight);
  ElementTerms emitElementTerms(const RowStats &stats, bool reduce,
                                bool withLoss, Type lossType, Type zType);
  SmallVector<Value> emitForward(const RowStats &stats, TypeRange resultTypes,
                                 Totals &totals);
  Totals emitGradientTotals(const RowStats &stats);
  Value emitGradient(const RowStats &stats, Totals totals, Type resultType);

  //===--- Per-slice work in xent ops (ShardedSlices.cpp) ---------------===//
  /// Whether the slices' work stays in xent ops: the classes are split and
  /// the targets are class indices.
  bool usesSliceOps() const;
  SmallVector<Value> emitWithSliceOps(TypeRange resultTypes);
  /// A local xent.cross_entropy returning its slice's statistics, merged
  /// over the class axes (one max, one sum); fills `stats` from them and
  /// returns them packed as the gradient op takes them.
  Value emitMergedStatistics(RowStats &stats);
  /// dlogits from a local xent.cross_entropy_grad on the merged statistics.
  Value emitGradientOp(const RowStats &stats, Value merged, Totals totals,
                       Type resultType);
  /// Packs per-row f32 tensors into tensor<rows x k> and back.
  Value packRows(ArrayRef<Value> values);
  SmallVector<Value> unpackRows(Value packed, int64_t k);

  mutable ImplicitLocOpBuilder b;
  CrossEntropyOpInterface op;
  const LossSharding &sharding;
  CrossEntropyConfig config;
  Value gradOutput, logits, target, weight;
  SmallVector<Value> localOperands;
  int64_t rank, axis;
  Type f32;
  Value classOffset;       // index of this device's first class
  Value localClasses;      // local C (index)
  Value numClasses;        // global C (index)
  Value numClassesF32;     // global C (f32)
};

} // namespace mlir::xent::sharding

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSSEMITTER_H
