//===- XentTransformOps.cpp - Transform dialect extension -----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/TransformOps/XentTransformOps.h"

#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/TransformOps/PayloadRewrite.h"
#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::xent;

//===----------------------------------------------------------------------===//
// Pattern descriptors
//===----------------------------------------------------------------------===//

void transform::ApplyXentInlineDecompositionPatternsOp::populatePatterns(
    RewritePatternSet &patterns) {
  populateXentInlineDecompositionPatterns(patterns);
}

//===----------------------------------------------------------------------===//
// Payload rewrites
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
transform::XentRecognizeOp::apply(transform::TransformRewriter &rewriter,
                                  transform::TransformResults &results,
                                  transform::TransformState &state) {
  return xent::detail::rewriteEachTarget(
      *this, results, state, [&](Operation *target) {
        recognizeCrossEntropy(rewriter, target, getReportFailures(),
                              getAssumeNormalizedLogProbs());
        return success();
      });
}

DiagnosedSilenceableFailure transform::XentFuseForwardBackwardOp::apply(
    transform::TransformRewriter &rewriter,
    transform::TransformResults &results, transform::TransformState &state) {
  return xent::detail::rewriteEachTarget(*this, results, state,
                                         [&](Operation *target) {
                                           fuseForwardBackward(rewriter, target);
                                           return success();
                                         });
}

//===----------------------------------------------------------------------===//
// Extension
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "xent/Dialect/Xent/TransformOps/XentTransformOps.cpp.inc"

namespace {
class XentTransformDialectExtension
    : public transform::TransformDialectExtension<
          XentTransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(XentTransformDialectExtension)

  using Base::Base;

  void init() {
    declareDependentDialect<XentDialect>();
    // What the recognizer and the decomposition create, and bufferization,
    // memref, scf and vector, which this extension declared when it also
    // held transform.xent.convert_to_gpu (kept, so that a script finds the
    // same dialects loaded). The GPU dialects are declared by the GPU
    // lowering's extension (XentToGPUTransformOps.cpp), which
    // registerXentDialects registers as well.
    declareGeneratedDialects<
        arith::ArithDialect, bufferization::BufferizationDialect,
        linalg::LinalgDialect, math::MathDialect, memref::MemRefDialect,
        scf::SCFDialect, tensor::TensorDialect, vector::VectorDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "xent/Dialect/Xent/TransformOps/XentTransformOps.cpp.inc"
        >();
  }

private:
  template <typename... Dialects> void declareGeneratedDialects() {
    (declareGeneratedDialect<Dialects>(), ...);
  }
};
} // namespace

void mlir::xent::registerTransformDialectExtension(DialectRegistry &registry) {
  registry.addExtensions<XentTransformDialectExtension>();
}
