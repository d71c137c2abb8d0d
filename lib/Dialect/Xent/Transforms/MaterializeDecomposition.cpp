//===- MaterializeDecomposition.cpp - Fill empty decomposition regions ----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "xent/Dialect/Xent/IR/XentDecomposition.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTMATERIALIZEDECOMPOSITION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

namespace {
struct XentMaterializeDecompositionPass
    : public xent::impl::XentMaterializeDecompositionBase<
          XentMaterializeDecompositionPass> {
  void runOnOperation() override {
    getOperation()->walk(
        [](CrossEntropyOpInterface op) { materializeDecomposition(op); });
  }
};
} // namespace
