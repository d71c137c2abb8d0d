//===- XentToGPUTransformOps.cpp - GPU lowering transform ops -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.h"

#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/TransformOps/PayloadRewrite.h"

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
  return xent::detail::rewriteEachTarget(
      *this, results, state,
      [&](Operation *target) { return convertXentToGPU(target, options); });
}

//===----------------------------------------------------------------------===//
// Extension
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.cpp.inc"

namespace {
class XentToGPUTransformDialectExtension
    : public transform::TransformDialectExtension<
          XentToGPUTransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(
      XentToGPUTransformDialectExtension)

  using Base::Base;

  void init() {
    declareDependentDialect<XentDialect>();
    // What the GPU lowering creates: the kernels (gpu, nvgpu, NVVM, LLVM,
    // vector, memref, scf), the host side (bufferization, memref) and, for
    // the ops it decomposes, the decomposition (linalg, tensor, arith, math).
    declareGeneratedDialects<
        arith::ArithDialect, bufferization::BufferizationDialect,
        gpu::GPUDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
        math::MathDialect, memref::MemRefDialect, nvgpu::NVGPUDialect,
        NVVM::NVVMDialect, scf::SCFDialect, tensor::TensorDialect,
        vector::VectorDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.cpp.inc"
        >();
  }

private:
  template <typename... Dialects> void declareGeneratedDialects() {
    (declareGeneratedDialect<Dialects>(), ...);
  }
};
} // namespace

void mlir::xent::registerXentToGPUTransformDialectExtension(
    DialectRegistry &registry) {
  registry.addExtensions<XentToGPUTransformDialectExtension>();
}
