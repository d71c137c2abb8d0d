//===- InlineDecomposition.cpp - Replace xent ops by their regions --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTINLINEDECOMPOSITION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

/// Replaces an op of the family by what it computes: its region's body when
/// it has one, the canonical decomposition otherwise (the op's
/// linalg::AggregatedOpInterface).
static LogicalResult inlineDecomposition(RewriterBase &rewriter,
                                         CrossEntropyOpInterface op) {
  rewriter.setInsertionPoint(op);
  FailureOr<SmallVector<Value>> results = decompose(rewriter, op);
  if (failed(results))
    return failure();
  rewriter.replaceOp(op, *results);
  return success();
}

/// The same for an op of the linear family, whose canonical decomposition
/// holds an op of the cross-entropy family.
static LogicalResult inlineDecomposition(RewriterBase &rewriter,
                                         LinearCrossEntropyOpInterface op) {
  rewriter.setInsertionPoint(op);
  FailureOr<SmallVector<Value>> results = decomposeLinear(rewriter, op);
  if (failed(results))
    return failure();
  rewriter.replaceOp(op, *results);
  return success();
}

namespace {
struct InlineDecomposition
    : public OpInterfaceRewritePattern<CrossEntropyOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (failed(inlineDecomposition(rewriter, op)))
      return rewriter.notifyMatchFailure(op, "no decomposition");
    return success();
  }
};

struct InlineLinearDecomposition
    : public OpInterfaceRewritePattern<LinearCrossEntropyOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(LinearCrossEntropyOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (failed(inlineDecomposition(rewriter, op)))
      return rewriter.notifyMatchFailure(op, "no decomposition");
    return success();
  }
};

struct XentInlineDecompositionPass
    : public xent::impl::XentInlineDecompositionBase<
          XentInlineDecompositionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // The linear ops first: their decompositions hold cross-entropy ops.
    SmallVector<LinearCrossEntropyOpInterface> linearOps;
    getOperation()->walk(
        [&](LinearCrossEntropyOpInterface op) { linearOps.push_back(op); });
    for (LinearCrossEntropyOpInterface op : linearOps)
      if (failed(inlineDecomposition(rewriter, op)))
        return signalPassFailure();
    // Post-order: an op nested in another's region is inlined before its
    // parent, whose region is cloned with the already inlined body.
    SmallVector<CrossEntropyOpInterface> ops;
    getOperation()->walk(
        [&](CrossEntropyOpInterface op) { ops.push_back(op); });
    for (CrossEntropyOpInterface op : ops)
      if (failed(inlineDecomposition(rewriter, op)))
        return signalPassFailure();
  }
};
} // namespace

void mlir::xent::populateXentInlineDecompositionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<InlineDecomposition, InlineLinearDecomposition>(
      patterns.getContext());
}
