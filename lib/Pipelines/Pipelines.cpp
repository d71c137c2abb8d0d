//===- Pipelines.cpp - Registered xent pass pipelines ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

/// The CPU fallback, as a textual pipeline so that it reads the same here,
/// in docs/ and on a command line. Every pass after the first two is
/// upstream MLIR.
static constexpr llvm::StringLiteral kCPUPipeline =
    "xent-inline-decomposition,"
    "canonicalize,cse,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,"
    "convert-linalg-to-loops,"
    "expand-strided-metadata,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-func-to-llvm,"
    "reconcile-unrealized-casts";

LogicalResult mlir::xent::buildXentCPUPipeline(OpPassManager &pm) {
  return parsePassPipeline(kCPUPipeline, pm);
}

void mlir::xent::registerXentPipelines() {
  PassPipelineRegistration<>(
      "xent-cpu-pipeline",
      "Lower a module with xent ops through their decomposition to the LLVM "
      "dialect (CPU fallback)",
      [](OpPassManager &pm) {
        // The registry has no way to report a failure here; the pipeline
        // text is constant and covered by tests.
        (void)buildXentCPUPipeline(pm);
      });
}
