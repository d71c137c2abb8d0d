//===- XentDecomposition.h - Canonical decomposition builders ---*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The canonical decomposition of the xent ops into upstream tensor-level ops
// (linalg, tensor, arith, math): the numerically stable max-shifted
// log-sum-exp, accumulated in f32 whatever the logits' type.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTDECOMPOSITION_H
#define XENT_DIALECT_XENT_IR_XENTDECOMPOSITION_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::xent {

/// The types of the per-row outputs of a loss-computing op; null for those
/// it does not return.
struct RowOutputTypes {
  Type lse, argmax, accuracy;
  static RowOutputTypes get(CrossEntropyOpInterface op);
  explicit operator bool() const { return lse || argmax || accuracy; }
};

/// Emits the computation of `xent.cross_entropy` described by `config` on
/// `logits`, `target` and `weight` (null when unweighted) at the insertion
/// point of `b`. Returns the loss and, when `resultTypes` has two entries,
/// the z-loss, converted to `resultTypes`, then the per-row outputs that
/// `rowOutputs` has types for, in the op's order (lse, argmax, accuracy).
SmallVector<Value> buildCrossEntropy(OpBuilder &b, Location loc,
                                     const CrossEntropyConfig &config,
                                     Value logits, Value target, Value weight,
                                     TypeRange resultTypes,
                                     const RowOutputTypes &rowOutputs = {});

/// Emits the per-row outputs that `types` has types for (lse, argmax,
/// accuracy, in this order) from the row maximum `max` and the row sum
/// `sumExp` of exp(x - max) (f32, shaped like the per-element loss) of the
/// soft-capped `logits` (RowOutputsDecomposition.cpp).
SmallVector<Value> buildRowOutputs(OpBuilder &b, Location loc,
                                   const CrossEntropyConfig &config,
                                   Value logits, Value target, Value max,
                                   Value sumExp, const RowOutputTypes &types);

/// Emits the computation of `xent.cross_entropy_grad`; returns `dlogits`
/// typed like `logits`.
Value buildCrossEntropyGrad(OpBuilder &b, Location loc,
                            const CrossEntropyConfig &config, Value gradOutput,
                            Value logits, Value target, Value weight);

/// Emits the canonical decomposition of an op with per-row statistics or on
/// a class slice (RowStatsDecomposition.cpp): a forward op's results on the
/// slice followed by its `row_stats`, or a gradient op's `dlogits` from its
/// merged `row_stats` operand. `operands` as for buildCanonicalDecomposition.
SmallVector<Value> buildRowStatsDecomposition(OpBuilder &b,
                                              CrossEntropyOpInterface op,
                                              ValueRange operands);

/// Fills the empty decomposition region of `op` with the canonical one
/// (CrossEntropyOpInterface::buildDecomposition). Does nothing when the
/// region already has a body.
void materializeDecomposition(CrossEntropyOpInterface op);

//===----------------------------------------------------------------------===//
// The linear family (XentLinearDecomposition.cpp)
//===----------------------------------------------------------------------===//

/// Emits `hidden · weightᵀ + bias` for `hidden` `[M, H]`, `weight` `[V, H]`
/// and `bias` `[V]` (null without a bias) as a `linalg.matmul` accumulating
/// into f32; returns the f32 logits `[M, V]`.
Value buildProjection(OpBuilder &b, Location loc, Value hidden, Value weight,
                      Value bias);

/// Emits `acc + dlogits · weight` (`[M, V]` · `[V, H]`, f32 `acc` `[M, H]`).
Value buildHiddenGradient(OpBuilder &b, Location loc, Value dlogits,
                          Value weight, Value acc);

/// Emits `acc + dlogitsᵀ · hidden` (`[M, V]`ᵀ · `[M, H]`, f32 `acc`
/// `[V, H]`).
Value buildWeightGradient(OpBuilder &b, Location loc, Value dlogits,
                          Value hidden, Value acc);

/// Emits `acc + Σ_rows dlogits` (f32 `acc` `[V]`).
Value buildBiasGradient(OpBuilder &b, Location loc, Value dlogits, Value acc);

/// An f32 tensor of `sizes` filled with zeros.
Value buildZeroTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes);

/// `v` with its float elements converted to `elementType` (`v` itself when
/// they already are).
Value convertFloatTensor(OpBuilder &b, Location loc, Value v, Type elementType);

/// The attributes of an op of the cross-entropy family computing the loss of
/// `op`'s logits, with `reduction`.
SmallVector<NamedAttribute> getLossAttributes(LinearCrossEntropyOpInterface op,
                                              Reduction reduction);

/// `v` with its two leading dimensions collapsed into one when `rows` (the
/// number of row dimensions of the op's hidden) is 2; `v` itself otherwise.
Value collapseRows(OpBuilder &b, Location loc, Value v, int64_t rows);

/// Gives `v`, a value of the collapsed rows, the result type `type`: rounded
/// to its element type, the rows expanded back to `hidden`'s leading sizes
/// when `type` has one dimension more, cast to the sizes `type` states.
Value restoreRows(OpBuilder &b, Location loc, Value v, Value hidden, Type type);

/// Creates the op of the cross-entropy family that computes `op`'s loss
/// (and z-loss when `op` has one) and/or `dlogits`, on the f32 `logits` of
/// `[M, V]` rows, with `reduction`; its results are f32, its `dlogits` typed
/// like `logits`; `scalars` are the values of `op`'s run-time features where
/// the new op is built (`op`'s operands, or its block's arguments).
Operation *buildLinearLoss(OpBuilder &b, Location loc,
                           LinearCrossEntropyOpInterface op,
                           Reduction reduction, Value gradOutput, Value logits,
                           Value target, Value classWeight,
                           const LossScalars &scalars);

} // namespace mlir::xent

#endif // XENT_DIALECT_XENT_IR_XENTDECOMPOSITION_H
