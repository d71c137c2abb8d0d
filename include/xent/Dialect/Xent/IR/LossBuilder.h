//===- LossBuilder.h - Shared pieces of the loss decompositions -*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Builders shared by the emitters of the cross-entropy math as linalg /
// tensor / arith / math on tensors: the canonical decomposition
// (XentDecomposition.cpp, RowOutputsDecomposition.cpp) and the partitioned
// one (Transforms/Sharding/ShardedLoss.cpp). "Row" means the C logits of one
// element; every scalar is f32. The scalar builders take the builder and
// location of a linalg.generic body.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_LOSSBUILDER_H
#define XENT_DIALECT_XENT_IR_LOSSBUILDER_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::xent::loss {

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

/// An f32 constant.
Value constF32(OpBuilder &b, Location loc, double v);
/// Widens a float scalar to f32.
Value toF32(OpBuilder &b, Location loc, Value v);
/// Rounds an f32 scalar to `type`.
Value fromF32(OpBuilder &b, Location loc, Value v, Type type);
/// An index scalar as f32.
Value indexToF32(OpBuilder &b, Location loc, Value v);
/// The run-time features' values as f32 (i64 for ignore_index) scalars: the
/// operand when the config has one (`CrossEntropyConfig::scalars`), else a
/// constant of the static value. `scale` and `offset` give `offset + scale·v`
/// (a constant folded on the host for a static value, two ops otherwise).
Value buildLabelSmoothing(OpBuilder &b, Location loc,
                          const CrossEntropyConfig &config, double scale = 1.0,
                          double offset = 0.0);
Value buildZLossScale(OpBuilder &b, Location loc,
                      const CrossEntropyConfig &config, double scale = 1.0);
Value buildSoftcap(OpBuilder &b, Location loc,
                   const CrossEntropyConfig &config);
Value buildIgnoreIndex(OpBuilder &b, Location loc,
                       const CrossEntropyConfig &config);
/// The classes of the whole row of a class slice (index): a constant of
/// the `num_classes` attribute or the run-time operand; null for whole rows
/// (the class axis's size is the count).
Value buildSliceNumClasses(OpBuilder &b, Location loc,
                           const CrossEntropyConfig &config);
/// A logit as the computation sees it: widened to f32 and soft-capped (a
/// run-time softcap of 0 is none; loss::softcapLogit, LossMath.h).
Value buildLogit(OpBuilder &b, Location loc, const CrossEntropyConfig &config,
                 Value raw);
/// Derivative of the softcap at the capped value `x`: 1 - (x / cap)² (1
/// for a run-time softcap of 0).
Value buildSoftcapSlope(OpBuilder &b, Location loc,
                        const CrossEntropyConfig &config, Value capped);
/// The softmax probability exp(x - m) / s.
Value buildProbability(OpBuilder &b, Location loc, Value x, Value m, Value s);

/// The class-index loss of one element, NaN when the target is out of range:
/// (1-ε) w_t ((m - x_t) + log s), plus ε/C (gap + log(s) mass) with label
/// smoothing.
Value buildClassIndexLoss(OpBuilder &b, Location loc,
                          const CrossEntropyConfig &config, Value m, Value xt,
                          Value logS, Value wt, Value valid, Value gap,
                          Value mass, Value numClasses);
/// Appends the loss and z-loss terms of an element generic to `terms`: the
/// z-loss z·lse², both zeroed where `kept` (when given) is false; per element
/// the loss includes the z-loss.
void appendLossTerms(OpBuilder &b, Location loc,
                     const CrossEntropyConfig &config, bool reduce, Value m,
                     Value logS, Value loss, Value kept, Value zero,
                     SmallVectorImpl<Value> &terms);
/// The reduced results of a forward decomposition from the f32 scalars
/// `loss` and `z`: the loss (plus z when `addZ`: the op's loss includes the
/// z-loss) and, when `wantZ`, z, as tensors of `resultTypes`.
SmallVector<Value> buildReducedLossResults(OpBuilder &b, Location loc,
                                           Value loss, Value z, bool addZ,
                                           bool wantZ, TypeRange resultTypes);
/// Ends an element generic: each f32 term is added to its accumulator
/// (`reduce`) or rounded to its output's element type (per element).
void buildTermsYield(OpBuilder &b, Location loc, ValueRange terms,
                     ValueRange outs, bool reduce);

/// The dlogits coefficient of a class for class-index targets:
/// (1-ε) w_t (p_c - δ_tc), plus ε/C (mass p_c - w_c) with label smoothing.
Value buildClassIndexCoefficient(OpBuilder &b, Location loc,
                                 const CrossEntropyConfig &config, Value p,
                                 Value onehot, Value wt, Value wc, Value mass,
                                 Value numClasses);
/// The dlogits coefficient for probability targets: p_c mass - w_c q'_c.
Value buildProbabilityCoefficient(OpBuilder &b, Location loc, Value p,
                                  Value mass, Value wc, Value q);
/// The operands of the dlogits generic (buildGradientGeneric); null where
/// the configuration has no such value.
struct GradientOperands {
  Value logits;
  Value target;       // class indices per row, or probabilities per element
  Value max, sumExp;  // m and s per row
  Value weight;       // class weights [C]
  Value targetWeight; // w_t per row, where the caller has it
  Value mass;         // Σ_c w_c (smoothing) or Σ_c w_c q'_c per row
  Value gradOutput;   // the op's; per row for reduction none
  Value lossScale, zLossScale; // f32 g and gz of mean / sum
  Value numClasses;   // C as f32
  Value init;         // the dlogits tensor the generic writes
};
/// A class-index target inside a generic body: kept (t != ignore_index),
/// valid (0 <= t < C) and a safe index (t when valid, else 0).
struct ClassTarget {
  Value kept, valid, index;
};
/// How a decomposition reads, inside a generic body, what the canonical and
/// the sharded one read differently (the sharded one holds a slice of the
/// classes).
class ElementReader {
public:
  virtual ~ElementReader() = default;
  /// A raw logit as the loss sees it (buildLogit).
  virtual Value readLogit(OpBuilder &b, Location loc, Value raw) const = 0;
  /// A probability target widened and smoothed.
  virtual Value readSmoothedProbability(OpBuilder &b, Location loc,
                                        Value q) const = 0;
  virtual ClassTarget readClassTarget(OpBuilder &b, Location loc,
                                      Value t) const = 0;
  /// The class of the generic's class index `c`.
  virtual Value readGlobalClass(OpBuilder &b, Location loc, Value c) const {
    return c;
  }
  /// w_t at the target's `index`, where GradientOperands::targetWeight is
  /// null.
  virtual Value readTargetWeight(OpBuilder &b, Location loc,
                                 Value index) const {
    return constF32(b, loc, 1.0);
  }
};
/// The dlogits generic, parallel over the logits: per element the class-index
/// or probability coefficient times g, plus the z-loss term gz·2z·lse·p,
/// through the softcap's slope, NaN where the target is not valid and 0
/// where it is not kept, rounded to the element type of `init`.
Value buildGradientGeneric(OpBuilder &b, Location loc,
                           const CrossEntropyConfig &config,
                           const GradientOperands &operands,
                           const ElementReader &reader);

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// (d0 .. d(r-1)) -> all dims but the class axis.
AffineMap getRowMap(MLIRContext *ctx, int64_t rank, int64_t axis);
/// (d0 .. d(r-1)) -> (d_axis).
AffineMap getClassMap(MLIRContext *ctx, int64_t rank, int64_t axis);
/// The sizes of `logits` without the class axis.
SmallVector<OpFoldResult> getRowSizes(OpBuilder &b, Location loc, Value logits,
                                      int64_t axis);
/// The f32 per-row tensors `columns` (each of the row shape `rowSizes`)
/// packed as one tensor (rows..., k): element (r, j) is columns[j][r].
Value buildPackedRows(OpBuilder &b, Location loc, ValueRange columns,
                      ArrayRef<OpFoldResult> rowSizes);
/// The `k` columns of a tensor packed by buildPackedRows, each a rank-reduced
/// slice of the row shape `rowSizes`.
SmallVector<Value> buildUnpackedRows(OpBuilder &b, Location loc, Value packed,
                                     int64_t k,
                                     ArrayRef<OpFoldResult> rowSizes);
/// An f32 tensor of the row shape filled with `value`.
Value buildFilledRows(OpBuilder &b, Location loc, Value logits, int64_t axis,
                      double value);
/// `v` cast to the tensor type `type` when it differs.
Value castTensor(OpBuilder &b, Location loc, Value v, Type type);
/// A tensor of `type` holding the f32 scalar `v` rounded to its element type.
Value buildScalarTensor(OpBuilder &b, Location loc, Value v, Type type);
/// The number of rows of `logits` as f32.
Value buildRowCount(OpBuilder &b, Location loc, Value logits, int64_t axis);

/// The loop of a generic over the per-element values (the logits' dims but
/// the class axis): identity maps for its inputs, and for its outputs the
/// identity, or the map to a scalar when the loop reduces every element.
struct ElementLoop {
  AffineMap inputMap, outputMap;
  SmallVector<utils::IteratorType> iterators;
};
ElementLoop getElementLoop(MLIRContext *ctx, int64_t elementRank, bool reduce);

/// The outputs of an element generic: [loss, zLoss] with the loss, then
/// [weight, kept] when it reduces.
struct ElementTerms {
  Value loss;   // f32 loss without the z-loss term
  Value zLoss;  // z·lse² on kept elements, else 0
  Value weight; // w_t on kept elements, else 0
  Value kept;   // 1 on kept elements, else 0
};
/// Calls `addOutput` with the element type of each output of an element
/// generic, in the order of ElementTerms.
void forEachElementOutput(bool withLoss, bool zLoss, bool reduce,
                          Type lossType, Type zType,
                          function_ref<void(Type)> addOutput);
/// The results of an element generic whose outputs follow
/// forEachElementOutput.
ElementTerms getElementTerms(linalg::GenericOp generic, bool withLoss,
                             bool zLoss, bool reduce);

/// m = max_c x_c of the soft-capped logits, per row.
Value buildRowMax(OpBuilder &b, Location loc, const CrossEntropyConfig &config,
                  Value logits);

} // namespace mlir::xent::loss

#endif // XENT_DIALECT_XENT_IR_LOSSBUILDER_H
