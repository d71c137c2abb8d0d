//===- InlineDecomposition.cpp - Replace xent ops by their regions --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "xent/Dialect/Xent/IR/XentDecomposition.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTINLINEDECOMPOSITION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

/// Clones the body of `op`'s decomposition region before `op` and replaces
/// `op` by the yielded values.
static void inlineDecomposition(RewriterBase &rewriter, Operation *op) {
  Block &body = op->getRegion(0).front();
  IRMapping mapping;
  mapping.map(body.getArguments(), op->getOperands());
  rewriter.setInsertionPoint(op);
  for (Operation &inner : body.without_terminator())
    rewriter.clone(inner, mapping);
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Value> results = llvm::map_to_vector(
      yield.getValues(), [&](Value v) { return mapping.lookupOrDefault(v); });
  rewriter.replaceOp(op, results);
}

namespace {
struct XentInlineDecompositionPass
    : public xent::impl::XentInlineDecompositionBase<XentInlineDecompositionPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    // Post-order: an op nested in another's region is inlined before its
    // parent, whose region is cloned with the already inlined body.
    getOperation()->walk([&](Operation *op) {
      if (isa<CrossEntropyOp, CrossEntropyGradOp, CrossEntropyAndGradOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      (void)materializeDecomposition(op);
      inlineDecomposition(rewriter, op);
    }
  }
};
} // namespace
