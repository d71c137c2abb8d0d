//===- FuseForwardBackward.cpp - Merge a loss and its gradient ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTFUSEFORWARDBACKWARD
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

/// The forward op in `grad`'s block computing the same loss, if any.
static CrossEntropyOp findForward(CrossEntropyGradOp grad) {
  CrossEntropyConfig config = grad.getConfig();
  for (Operation *user : grad.getLogits().getUsers()) {
    auto fwd = dyn_cast<CrossEntropyOp>(user);
    if (!fwd || fwd->getBlock() != grad->getBlock())
      continue;
    if (fwd.getTarget() == grad.getTarget() &&
        fwd.getWeight() == grad.getWeight() && fwd.getConfig() == config)
      return fwd;
  }
  return nullptr;
}

void mlir::xent::fuseForwardBackward(Operation *root) {
  SmallVector<CrossEntropyGradOp> grads;
  root->walk([&](CrossEntropyGradOp op) { grads.push_back(op); });
  DominanceInfo dominance(root);
  IRRewriter rewriter(root->getContext());
  for (CrossEntropyGradOp grad : grads) {
    CrossEntropyOp fwd = findForward(grad);
    if (!fwd)
      continue;
    Operation *first = fwd->isBeforeInBlock(grad) ? fwd.getOperation()
                                                  : grad.getOperation();
    if (!dominance.properlyDominates(grad.getGradOutput(), first))
      continue;
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
    joint->setDiscardableAttrs(fwd->getDiscardableAttrDictionary());
    // The regions of the pair are not reused; the joint op's canonical
    // decomposition is materialized when it is needed.
    rewriter.replaceOp(grad, joint.getDlogits());
    rewriter.replaceOp(fwd, joint->getResults().drop_back());
  }
}

namespace {
struct XentFuseForwardBackwardPass
    : public xent::impl::XentFuseForwardBackwardBase<
          XentFuseForwardBackwardPass> {
  void runOnOperation() override { fuseForwardBackward(getOperation()); }
};
} // namespace
