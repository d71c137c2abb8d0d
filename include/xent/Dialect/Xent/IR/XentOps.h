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
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "xent/Dialect/Xent/IR/XentOpsDialect.h.inc"

#include "xent/Dialect/Xent/IR/XentEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "xent/Dialect/Xent/IR/XentAttrs.h.inc"

namespace mlir::xent {
class CrossEntropyOp;
class CrossEntropyGradOp;
class CrossEntropyAndGradOp;

/// Everything that decides what a cross-entropy op computes, in one place:
/// the decomposition builder and the kernel builders read this rather than
/// the op, so both ops (and synthesized ones) share one description.
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

  static CrossEntropyConfig get(CrossEntropyOp op);
  static CrossEntropyConfig get(CrossEntropyGradOp op);
  static CrossEntropyConfig get(CrossEntropyAndGradOp op);

  bool operator==(const CrossEntropyConfig &other) const;

  /// Number of classes, or ShapedType::kDynamic.
  int64_t getNumClasses() const { return logitsType.getDimSize(axis); }
  /// Shape of the per-element loss: the logits' shape without the class axis.
  SmallVector<int64_t> getElementShape() const;
};

/// Shape of `shape` with dimension `axis` removed.
SmallVector<int64_t> dropAxis(ArrayRef<int64_t> shape, int64_t axis);
} // namespace mlir::xent

#define GET_OP_CLASSES
#include "xent/Dialect/Xent/IR/XentOps.h.inc"

#endif // XENT_DIALECT_XENT_IR_XENTOPS_H
