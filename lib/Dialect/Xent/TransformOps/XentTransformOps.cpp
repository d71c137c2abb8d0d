//===- XentTransformOps.cpp - Transform dialect extension -----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/TransformOps/XentTransformOps.h"

#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
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

/// Runs `rewrite` on every payload op of `target` and hands the same ops
/// back through `transformed`.
template <typename OpTy, typename Fn>
static DiagnosedSilenceableFailure
rewriteEachTarget(OpTy op, transform::TransformResults &results,
                  transform::TransformState &state, Fn rewrite) {
  SmallVector<Operation *> targets =
      llvm::to_vector(state.getPayloadOps(op.getTarget()));
  for (Operation *target : targets) {
    if (succeeded(rewrite(target)))
      continue;
    DiagnosedDefiniteFailure diag = emitDefiniteFailure(op, "could not apply ")
                                    << op->getName();
    diag.attachNote(target->getLoc()) << "to this op";
    return diag;
  }
  results.set(cast<OpResult>(op.getTransformed()), targets);
  return DiagnosedSilenceableFailure::success();
}

DiagnosedSilenceableFailure
transform::XentRecognizeOp::apply(transform::TransformRewriter &rewriter,
                                  transform::TransformResults &results,
                                  transform::TransformState &state) {
  return rewriteEachTarget(*this, results, state, [&](Operation *target) {
    recognizeCrossEntropy(rewriter, target, getReportFailures(),
                          getAssumeNormalizedLogProbs());
    return success();
  });
}

DiagnosedSilenceableFailure transform::XentFuseForwardBackwardOp::apply(
    transform::TransformRewriter &rewriter,
    transform::TransformResults &results, transform::TransformState &state) {
  return rewriteEachTarget(*this, results, state, [&](Operation *target) {
    fuseForwardBackward(rewriter, target);
    return success();
  });
}

LogicalResult transform::XentConvertToGPUOp::verify() {
  if (auto mode = getMode(); mode && !parseLoweringMode(*mode))
    return emitOpError("mode must be \"auto\", \"kernel\" or \"inline\", "
                       "got \"")
           << *mode << "\"";
  return success();
}

DiagnosedSilenceableFailure
transform::XentConvertToGPUOp::apply(transform::TransformRewriter &rewriter,
                                     transform::TransformResults &results,
                                     transform::TransformState &state) {
  // The pass's defaults, overridden by the attributes that are present.
  ConvertXentToGPUOptions options;
  if (auto chip = getChip())
    options.chip = chip->str();
  if (auto threads = getThreads())
    options.threads = *threads;
  if (auto width = getVectorWidth())
    options.vectorWidth = *width;
  if (auto resident = getResidentRows())
    options.residentRows = *resident;
  if (auto mode = getMode())
    options.mode = *parseLoweringMode(*mode);
  if (auto allow = getAllowDecomposition())
    options.allowDecomposition = *allow;
  return rewriteEachTarget(*this, results, state, [&](Operation *target) {
    return convertXentToGPU(target, options);
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
    // What the recognizer, the decomposition and the GPU lowering create.
    declareGeneratedDialects<
        arith::ArithDialect, bufferization::BufferizationDialect,
        gpu::GPUDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
        math::MathDialect, memref::MemRefDialect, nvgpu::NVGPUDialect,
        NVVM::NVVMDialect, scf::SCFDialect, tensor::TensorDialect,
        vector::VectorDialect>();
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
