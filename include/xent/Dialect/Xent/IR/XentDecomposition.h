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

/// Fills the empty decomposition region of `op` with the canonical one
/// (CrossEntropyOpInterface::buildDecomposition). Does nothing when the
/// region already has a body.
void materializeDecomposition(CrossEntropyOpInterface op);

} // namespace mlir::xent

#endif // XENT_DIALECT_XENT_IR_XENTDECOMPOSITION_H
