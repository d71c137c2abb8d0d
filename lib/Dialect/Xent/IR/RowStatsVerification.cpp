//===- RowStatsVerification.cpp - Rules of the per-row statistics ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The verifier's rules for a loss over a slice of the classes: the forward
// op's `row_stats` result (`return_row_stats`), the gradient op's merged
// `row_stats` operand, and `class_offset` with `num_classes`.
//
//===----------------------------------------------------------------------===//

#include "Verification.h"

using namespace mlir;
using namespace mlir::xent;

/// Checks `stats` (the result or the operand) against the layout the
/// configuration selects: f32, the per-element shape plus K values.
static LogicalResult verifyRowStatsType(CrossEntropyOpInterface op,
                                        Value stats) {
  CrossEntropyConfig config = op.getConfig();
  auto type = cast<RankedTensorType>(stats.getType());
  if (!type.getElementType().isF32())
    return op.emitOpError("row_stats element type ")
           << type.getElementType() << " must be f32";
  SmallVector<int64_t> expected =
      dropAxis(op.getLogits().getType().getShape(), config.axis);
  expected.push_back(config.getRowStatsWidth());
  if (!xent::detail::areShapesCompatible(type.getShape(), expected))
    return op.emitOpError("row_stats shape ")
           << xent::detail::formatShape(type.getShape()) << " must be "
           << xent::detail::formatShape(expected) << " (m, s, x_t"
           << (config.weighted ? ", w_t" : "")
           << (config.hasLabelSmoothing() ? ", Σ w (m - x), Σ w" : "")
           << " per row)";
  return success();
}

LogicalResult mlir::xent::detail::verifyRowStats(CrossEntropyOpInterface op) {
  Operation *operation = op.getOperation();
  bool returnsStats = operation->hasAttr("return_row_stats");
  bool slice = op.isClassSlice();
  IntegerAttr numClasses = op.getNumClassesAttr();
  Value dynamicNumClasses = op.getDynamicNumClasses();
  if (!returnsStats && !op.getRowStats() && !slice && !numClasses &&
      !dynamicNumClasses)
    return success();

  if (numClasses && dynamicNumClasses)
    return op.emitOpError("num_classes must be given by its attribute or "
                          "its operand, not both");
  if (slice != (numClasses || dynamicNumClasses))
    return op.emitOpError("class_offset and num_classes must be given "
                          "together");
  if (op.hasProbabilityTargets())
    return op.emitOpError("row statistics and class slices require "
                          "class-index targets");
  if (returnsStats && !op.getRowStats())
    return op.emitOpError("return_row_stats requires a row_stats result "
                          "after the other results");
  if (slice && op.computesLoss() && !returnsStats)
    return op.emitOpError("class_offset requires return_row_stats");
  if (slice && op.computesGradient() && !op.getRowStats())
    return op.emitOpError("class_offset requires a row_stats operand");
  if (numClasses) {
    int64_t global = numClasses.getInt();
    int64_t local = op.getLogits().getType().getDimSize(op.getClassAxis());
    if (global < 1 || (!ShapedType::isDynamic(local) && local > global))
      return op.emitOpError("num_classes ")
             << global << " must be at least the " << local
             << " classes of the logits";
  }
  if (Value stats = op.getRowStats())
    return verifyRowStatsType(op, stats);
  return success();
}
