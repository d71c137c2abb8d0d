//===- XentOps.h - Xent dialect, attributes and ops -------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTOPS_H
#define XENT_DIALECT_XENT_IR_XENTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "xent/Dialect/Xent/IR/XentOpsDialect.h.inc"

#include "xent/Dialect/Xent/IR/XentEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "xent/Dialect/Xent/IR/XentAttrs.h.inc"

namespace mlir::xent {
class CrossEntropyOpInterface;
class LinearCrossEntropyOpInterface;

/// The features of the loss whose values an op takes at run time, as SSA
/// scalar operands instead of attributes (null where the attribute, or its
/// default, gives the value): `ignore_index` (i64), `label_smoothing`,
/// `z_loss_scale`, `softcap` (f32). They are the last operands of an op, in
/// this order.
struct LossScalars {
  Value ignoreIndex, labelSmoothing, zLossScale, softcap;

  /// The present ones, in operand order.
  SmallVector<Value> getValues() const;
  /// The same features on `values`, one per present feature in operand
  /// order (e.g. a decomposition block's last arguments).
  LossScalars remap(ValueRange values) const;
  bool operator==(const LossScalars &other) const {
    return ignoreIndex == other.ignoreIndex &&
           labelSmoothing == other.labelSmoothing &&
           zLossScale == other.zLossScale && softcap == other.softcap;
  }
};

/// Everything that decides what a cross-entropy op computes, in one place:
/// the decomposition builder and the kernel builders read this rather than
/// the op, so every op of the family (and synthesized ones) share one
/// description.
struct CrossEntropyConfig {
  Reduction reduction = Reduction::mean;
  int64_t ignoreIndex = -100;
  float labelSmoothing = 0.0f;
  float zLossScale = 0.0f;
  std::optional<float> softcap;
  int64_t axis = 1;
  bool weighted = false;
  bool probabilityTargets = false;
  RankedTensorType logitsType;
  RankedTensorType targetType;
  /// The values given at run time; the fields above then hold the defaults
  /// and are not read for those features.
  LossScalars scalars;
  /// The op returns (a forward op) or takes (a gradient op) per-row
  /// statistics (`return_row_stats`, `row_stats`).
  bool rowStats = false;
  /// A slice of the classes: the index of its first class (an i64 value)
  /// and the classes of the whole row, by the `num_classes` attribute or,
  /// at run time, an i64 value; null and nullopt for whole rows.
  Value classOffset;
  std::optional<int64_t> globalNumClasses;
  Value dynamicNumClasses;

  static CrossEntropyConfig get(CrossEntropyOpInterface op);

  /// Whether the op has label smoothing, a z-loss or a softcap: a static
  /// value that is not the neutral one (0, 0, absent), or a run-time value
  /// (whatever it is at run time: the terms are emitted). This is what
  /// specializes the code.
  bool hasLabelSmoothing() const {
    return scalars.labelSmoothing || labelSmoothing != 0.0f;
  }
  bool hasZLoss() const { return scalars.zLossScale || zLossScale != 0.0f; }
  bool hasSoftcap() const {
    return scalars.softcap || softcap.has_value();
  }
  /// This configuration with the run-time values taken from `operands`, one
  /// value per operand of the op it describes (block arguments of its
  /// decomposition, the operands of a clone): what builders use.
  CrossEntropyConfig withOperands(ValueRange operands) const;

  bool operator==(const CrossEntropyConfig &other) const;

  /// Number of classes, or ShapedType::kDynamic.
  int64_t getNumClasses() const { return logitsType.getDimSize(axis); }
  /// The number of per-row statistics (K): m, s, x_t, then w_t when
  /// weighted, then Σ w (m - x) and Σ w with label smoothing.
  int64_t getRowStatsWidth() const {
    return 3 + (weighted ? 1 : 0) + (hasLabelSmoothing() ? 2 : 0);
  }
  /// Shape of the per-element loss: the logits' shape without the class axis.
  SmallVector<int64_t> getElementShape() const;
};

/// Shape of `shape` with dimension `axis` removed.
SmallVector<int64_t> dropAxis(ArrayRef<int64_t> shape, int64_t axis);

/// Emits the canonical decomposition of `op` (XentDecomposition.cpp) on
/// `operands`, one value per operand of `op`; returns one value per result.
SmallVector<Value> buildCanonicalDecomposition(OpBuilder &b,
                                               CrossEntropyOpInterface op,
                                               ValueRange operands);

/// Emits what `op` computes at the insertion point of `b`, on its operands:
/// its decomposition region inlined when it has a body, the canonical
/// decomposition otherwise. Returns one value per result
/// (linalg::AggregatedOpInterface::decomposeOperation).
FailureOr<SmallVector<Value>> decompose(OpBuilder &b,
                                        CrossEntropyOpInterface op);

/// Emits the canonical decomposition of a linear cross-entropy op
/// (XentLinearDecomposition.cpp) on `operands`, one value per operand of
/// `op`: the projection as `linalg.matmul`, the loss as an op of the
/// cross-entropy family. Returns one value per result.
SmallVector<Value> buildCanonicalLinearDecomposition(
    OpBuilder &b, LinearCrossEntropyOpInterface op, ValueRange operands);

/// `decompose` for the linear family: the region's body when it has one, the
/// canonical decomposition otherwise.
FailureOr<SmallVector<Value>> decomposeLinear(OpBuilder &b,
                                              LinearCrossEntropyOpInterface op);

namespace detail {
/// The values a decomposition region's body yields, its ops cloned at the
/// insertion point of `b` with the block arguments replaced by `operands`.
SmallVector<Value> cloneDecompositionBody(OpBuilder &b, Region &region,
                                          ValueRange operands);

/// The results of a loss-computing op after `loss`, by name; null when
/// absent.
struct LossExtras {
  Value zLoss, lse, argmax, accuracy;
};
/// Splits `extras` (the results after `loss`, before `dlogits`): `z_loss`
/// when there is one more than the selected per-row outputs, then the
/// selected ones in order. Values that `extras` is too short for are null
/// (the verifier reports the count).
LossExtras getLossExtras(ValueRange extras, bool lse, bool argmax,
                         bool accuracy);
/// Names each result of `op` after its role (loss, z_loss, lse, argmax,
/// accuracy, dlogits) in the printed IR.
void getResultNames(CrossEntropyOpInterface op, OpAsmSetValueNameFn setNameFn);
/// The verifier of every op of the family (CrossEntropyOpInterface).
LogicalResult verifyCrossEntropyOp(CrossEntropyOpInterface op);
/// The verifier of the linear family (LinearCrossEntropyOpInterface).
LogicalResult verifyLinearCrossEntropyOp(LinearCrossEntropyOpInterface op);
/// Checks the decomposition region, when present: one block whose arguments
/// mirror the operands, ending in a `xent.yield` of the result types.
LogicalResult verifyDecompositionRegion(Operation *op);
} // namespace detail
} // namespace mlir::xent

#include "xent/Dialect/Xent/IR/XentInterfaces.h.inc"

#define GET_OP_CLASSES
#include "xent/Dialect/Xent/IR/XentOps.h.inc"

#endif // XENT_DIALECT_XENT_IR_XENTOPS_H
