//===- FuseForwardBackward.cpp - Merge a loss and its gradient ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTFUSEFORWARDBACKWARD
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

/// The forward op in `grad`'s block computing the same loss, if any.
static CrossEntropyOp findForward(CrossEntropyGradOp grad) {
  // The joint op computes its statistics itself, over whole rows: a pair on
  // a class slice or with statistics in between stays apart.
  if (grad.getRowStats() || grad.getClassOffset())
    return nullptr;
  CrossEntropyConfig config = grad.getConfig();
  for (Operation *user : grad.getLogits().getUsers()) {
    auto fwd = dyn_cast<CrossEntropyOp>(user);
    if (!fwd || fwd->getBlock() != grad->getBlock() || fwd.getRowStats() ||
        fwd.getClassOffset())
      continue;
    if (fwd.getTarget() == grad.getTarget() &&
        fwd.getWeight() == grad.getWeight() && fwd.getConfig() == config)
      return fwd;
  }
  return nullptr;
}

namespace {
/// Replaces an xent.cross_entropy_grad and the xent.cross_entropy of its
/// block that computes the same loss by one xent.cross_entropy_and_grad at
/// the earlier of the two, when grad_output is available there.
struct FuseForwardBackward : public OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyGradOp grad,
                                PatternRewriter &rewriter) const override {
    CrossEntropyOp fwd = findForward(grad);
    if (!fwd)
      return rewriter.notifyMatchFailure(
          grad, "no xent.cross_entropy in the block computes the same loss");
    Operation *first = fwd->isBeforeInBlock(grad) ? fwd.getOperation()
                                                  : grad.getOperation();
    DominanceInfo dominance;
    if (!dominance.properlyDominates(grad.getGradOutput(), first))
      return rewriter.notifyMatchFailure(
          grad, "grad_output does not dominate the earlier op of the pair");
    rewriter.setInsertionPoint(first);
    // The forward's results (loss, z_loss, the per-row outputs its
    // attributes select), then dlogits; the run-time scalars are the pair's
    // (the configs compare them).
    LossScalars scalars = fwd.getLossScalars();
    SmallVector<Type> extras(fwd.getExtraResults().getTypes());
    auto joint = CrossEntropyAndGradOp::create(
        rewriter, fwd.getLoc(), fwd.getLoss().getType(), extras,
        grad.getDlogits().getType(), grad.getGradOutput(), fwd.getLogits(),
        fwd.getTarget(), fwd.getWeight(), scalars.ignoreIndex,
        scalars.labelSmoothing, scalars.zLossScale, scalars.softcap,
        fwd.getReductionAttr(), fwd.getIgnoreIndexAttr(),
        fwd.getLabelSmoothingAttr(), fwd.getZLossScaleAttr(),
        fwd.getSoftcapAttr(), fwd.getAxisAttr(), fwd.getReturnLseAttr(),
        fwd.getReturnArgmaxAttr(), fwd.getReturnAccuracyAttr());
    rewriter.modifyOpInPlace(joint, [&] {
      joint->setDiscardableAttrs(fwd->getDiscardableAttrDictionary());
    });
    // The regions of the pair are not reused; the joint op's canonical
    // decomposition is materialized when it is needed.
    rewriter.replaceOp(grad, joint.getDlogits());
    rewriter.replaceOp(fwd, joint->getResults().drop_back());
    return success();
  }
};
} // namespace

void mlir::xent::populateXentFuseForwardBackwardPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseForwardBackward>(patterns.getContext());
}

void mlir::xent::fuseForwardBackward(RewriterBase &rewriter, Operation *root) {
  // The gradient ops in program order (post-order), each tried once. The
  // greedy driver pops its worklist from the back, hence the reversed list;
  // with ExistingOps, the joint ops it creates are never visited, and it
  // neither folds nor touches any other op. An unused gradient op is left
  // out, and so left alone (the driver would erase it).
  SmallVector<Operation *> grads;
  root->walk([&](CrossEntropyGradOp op) {
    if (!isOpTriviallyDead(op))
      grads.push_back(op);
  });
  std::reverse(grads.begin(), grads.end());
  RewritePatternSet patterns(root->getContext());
  populateXentFuseForwardBackwardPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setListener(
          dyn_cast_if_present<RewriterBase::Listener>(rewriter.getListener()));
  (void)applyOpPatternsGreedily(grads, std::move(patterns), config);
}

void mlir::xent::fuseForwardBackward(Operation *root) {
  IRRewriter rewriter(root->getContext());
  fuseForwardBackward(rewriter, root);
}

namespace {
struct XentFuseForwardBackwardPass
    : public xent::impl::XentFuseForwardBackwardBase<
          XentFuseForwardBackwardPass> {
  void runOnOperation() override { fuseForwardBackward(getOperation()); }
};
} // namespace
