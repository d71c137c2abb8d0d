//===- Verification.h - What the ops' verifiers share -----------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Helpers of the verifiers of both op families (XentOps.cpp for the
// cross-entropy family, XentLinearOps.cpp for the linear one).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_IR_VERIFICATION_H
#define XENT_LIB_DIALECT_XENT_IR_VERIFICATION_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include <optional>
#include <string>

namespace mlir::xent::detail {

/// `[2, ?, 8]`.
std::string formatShape(ArrayRef<int64_t> shape);
/// Checks the attributes that every op of the dialect shares.
LogicalResult verifyLossAttributes(OpState op, const APFloat &smoothing,
                                   const APFloat &zLossScale,
                                   std::optional<APFloat> softcap);
/// Checks that no feature is given both by its attribute and by a run-time
/// scalar (a default-valued attribute at its default counts as absent).
LogicalResult verifyLossScalars(Operation *op, LossScalars scalars);
/// Two shapes are compatible when they have the same rank and every pair
/// of static dimensions agrees.
bool areShapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b);
/// Checks the per-row statistics and the class slice (`return_row_stats`,
/// `row_stats`, `class_offset`, `num_classes`; RowStatsVerification.cpp).
LogicalResult verifyRowStats(CrossEntropyOpInterface op);

} // namespace mlir::xent::detail

#endif // XENT_LIB_DIALECT_XENT_IR_VERIFICATION_H
