//===- LowerMultiDynamicExpandShape.cpp - expand_shape by strides ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// memref.expand_shape with several dynamic sizes in one reassociation group
// as a memref.reinterpret_cast of its source's base buffer, for LLVM 22's
// expand-strided-metadata, which crashes on them (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTLOWERMULTIDYNAMICEXPANDSHAPE
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;

namespace {

/// Whether a group of `op` holds more than one dynamic size.
bool hasMultiDynamicGroup(memref::ExpandShapeOp op) {
  MemRefType type = op.getResultType();
  return llvm::any_of(op.getReassociationIndices(), [&](const auto &group) {
    return llvm::count_if(group, [&](int64_t d) {
             return type.isDynamicDim(d);
           }) > 1;
  });
}

struct LowerMultiDynamicExpandShape
    : public OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMultiDynamicGroup(op))
      return rewriter.notifyMatchFailure(op, "at most one dynamic size a group");
    if (!op.getSrcType().isStrided())
      return rewriter.notifyMatchFailure(op, "the source is not strided");
    Location loc = op.getLoc();
    auto meta =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> sourceStrides = meta.getConstifiedMixedStrides();
    SmallVector<OpFoldResult> strides(sizes.size());
    auto multiply = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      std::optional<int64_t> ca = getConstantIntValue(a);
      std::optional<int64_t> cb = getConstantIntValue(b);
      if (ca && cb)
        return rewriter.getIndexAttr(*ca * *cb);
      if (ca == 1)
        return b;
      if (cb == 1)
        return a;
      return arith::MulIOp::create(
                 rewriter, loc,
                 getValueOrCreateConstantIndexOp(rewriter, loc, a),
                 getValueOrCreateConstantIndexOp(rewriter, loc, b))
          .getResult();
    };
    for (auto [sourceDim, group] :
         llvm::enumerate(op.getReassociationIndices())) {
      OpFoldResult stride = sourceStrides[sourceDim];
      for (int64_t i = static_cast<int64_t>(group.size()) - 1; i >= 0; --i) {
        strides[group[i]] = stride;
        if (i > 0)
          stride = multiply(stride, sizes[group[i]]);
      }
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, op.getResultType(), meta.getBaseBuffer(),
        meta.getConstifiedMixedOffset(), sizes, strides);
    return success();
  }
};

struct XentLowerMultiDynamicExpandShapePass
    : public xent::impl::XentLowerMultiDynamicExpandShapeBase<
          XentLowerMultiDynamicExpandShapePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerMultiDynamicExpandShape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
