//===- CPUApproximateMath.cpp - f32 math as polynomials -------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// exp, log and tanh of f32 as upstream's polynomial approximations, so that
// the vectorized class loops of xent-cpu-pipeline call no libm (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTCPUAPPROXIMATEMATH
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;

namespace {

struct XentCPUApproximateMathPass
    : public xent::impl::XentCPUApproximateMathBase<
          XentCPUApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == "math.exp" || name == "math.log" || name == "math.tanh";
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
