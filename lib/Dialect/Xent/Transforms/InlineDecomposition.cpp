//===- InlineDecomposition.cpp - Replace xent ops by their regions --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTINLINEDECOMPOSITION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

/// Replaces an op of either family by what it computes: its region's body
/// when it has one, the canonical decomposition otherwise (the op's
/// linalg::AggregatedOpInterface; a linear op's holds a cross-entropy op).
static LogicalResult inlineDecomposition(RewriterBase &rewriter,
                                         Operation *op) {
  rewriter.setInsertionPoint(op);
  FailureOr<SmallVector<Value>> results =
      cast<linalg::AggregatedOpInterface>(op).decomposeOperation(rewriter);
  if (failed(results))
    return failure();
  rewriter.replaceOp(op, *results);
  return success();
}

namespace {
/// The rewrite of one family (CrossEntropyOpInterface or
/// LinearCrossEntropyOpInterface).
template <typename FamilyInterface>
struct InlineDecomposition : public OpInterfaceRewritePattern<FamilyInterface> {
  using OpInterfaceRewritePattern<FamilyInterface>::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(FamilyInterface op,
                                PatternRewriter &rewriter) const override {
    if (failed(inlineDecomposition(rewriter, op)))
      return rewriter.notifyMatchFailure(op, "no decomposition");
    return success();
  }
};

/// Inlines every op of a family nested in `root`, in post-order: an op
/// nested in another's region is inlined before its parent, whose region is
/// cloned with the already inlined body.
template <typename FamilyInterface>
LogicalResult inlineAll(RewriterBase &rewriter, Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](FamilyInterface op) { ops.push_back(op); });
  for (Operation *op : ops)
    if (failed(inlineDecomposition(rewriter, op)))
      return failure();
  return success();
}

struct XentInlineDecompositionPass
    : public xent::impl::XentInlineDecompositionBase<
          XentInlineDecompositionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // The linear ops first: their decompositions hold cross-entropy ops.
    if (failed(inlineAll<LinearCrossEntropyOpInterface>(rewriter,
                                                        getOperation())) ||
        failed(inlineAll<CrossEntropyOpInterface>(rewriter, getOperation())))
      signalPassFailure();
  }
};
} // namespace

void mlir::xent::populateXentInlineDecompositionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<InlineDecomposition<CrossEntropyOpInterface>,
               InlineDecomposition<LinearCrossEntropyOpInterface>>(
      patterns.getContext());
}
