//===- Pipelines.cpp - Registered xent pass pipelines ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Pipelines/Pipelines.h"

#include "xent/Conversion/Passes.h"
#include "xent/Conversion/XentToGPU/NVIDIAChip.h"
#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

/// The CPU fallback, as a textual pipeline so that it reads the same here,
/// in docs/ and on a command line. `{0}` is the vector width; `{1}` how the
/// row loops run: in parallel through OpenMP, or one after another. Every
/// pass but the xent-* ones is upstream MLIR. Without its xent stages it is
/// the Python package's lowering for the stock mlir-opt
/// (xent.runtime.pipelines.CPU_LOWERING_PASSES), which
/// python/tests/test_pipelines.py compares with it, as it compares
/// xent-gpu-pipeline with the package's gpu-dialect pipeline.
static constexpr llvm::StringLiteral kCPUPipeline =
    "xent-inline-decomposition,"
    "canonicalize,cse,"
    // Rows over threads (scf.forall), classes over vector lanes.
    "func.func(xent-cpu-vectorize-rows{{vector-width={0}}),"
    "canonicalize,cse,"
    // A result materialized in a caller's buffer is computed there.
    "eliminate-empty-tensors,"
    // Identity-layout memrefs at function boundaries: every argument and
    // result is a plain contiguous descriptor (C interface, mlir-runner).
    "one-shot-bufferize{{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    // A row's slices are the same subviews: the copies between them vanish.
    "canonicalize,cse,"
    // Temporaries are freed; returned buffers are owned by the caller.
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,"
    "func.func(convert-linalg-to-loops),"
    "{1},"
    // LLVM 22's expand-strided-metadata crashes on an expand_shape group of
    // several dynamic sizes (the per-row loss of [B, T, H] hidden states).
    "xent-lower-multi-dynamic-expand-shape,"
    "expand-strided-metadata,"
    "lower-affine,"
    // Vectors: transfers to loads and stores, reductions across lanes to
    // shuffles.
    "func.func(convert-vector-to-scf{{full-unroll=true}),"
    "func.func(lower-vector-multi-reduction),"
    // bf16 arithmetic is emulated in f32 and, unless the target converts
    // natively (native-bf16), its conversions expanded to integer ops:
    // Debian 12's libgcc has no __truncsfbf2.
    "math-extend-to-supported-types{{extra-types=f16 target-type=f32},"
    // exp, log, tanh... of f32 as polynomials (vectors too), not libm calls.
    "xent-cpu-approximate-math,"
    "arith-emulate-unsupported-floats{{source-types=bf16 target-type=f32},"
    "arith-expand{{include-bf16={2}},"
    "memref-expand,"
    "convert-vector-to-llvm,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    // Before scf-to-cf: the alloca scope of an OpenMP region's body holds one
    // block.
    "finalize-memref-to-llvm,"
    "convert-scf-to-cf,"
    "convert-cf-to-llvm,"
    "convert-ub-to-llvm,"
    "convert-func-to-llvm,"
    // OpenMP regions; MPI calls of a partitioned module
    // (convert-shard-to-mpi), whose dlti.map "MPI:Implementation" picks the
    // ABI.
    "convert-to-llvm,"
    "reconcile-unrealized-casts";

std::string mlir::xent::XentCPUPipelineOptions::getPipelineText() const {
  std::string rows =
      threads == 1
          ? std::string("scf-forall-to-for")
          : llvm::formatv("scf-forall-to-parallel,convert-scf-to-openmp{{"
                          "num-threads={0}}",
                          unsigned(threads))
                .str();
  return llvm::formatv(kCPUPipeline.data(), unsigned(vectorWidth), rows,
                       nativeBF16 ? "false" : "true")
      .str();
}

LogicalResult
mlir::xent::buildXentCPUPipeline(OpPassManager &pm,
                                 const XentCPUPipelineOptions &options) {
  return parsePassPipeline(options.getPipelineText(), pm);
}

LogicalResult mlir::xent::buildXentCPUPipeline(OpPassManager &pm) {
  return buildXentCPUPipeline(pm, XentCPUPipelineOptions());
}

xent::ConvertXentToGPUOptions
mlir::xent::XentGPUPipelineOptions::getConversionOptions() const {
  ConvertXentToGPUOptions conversion = getKernelOptions(*this);
  // Every xent op takes its kernels: a decomposition would be linalg over
  // whole rows, which xent-host-compute-to-device would run one thread per
  // element and row with no row-wise reductions fused.
  conversion.allowDecomposition = false;
  return conversion;
}

LogicalResult
mlir::xent::buildXentGPUPipeline(OpPassManager &pm,
                                 const XentGPUPipelineOptions &options) {
  // A loss and its gradient in the same graph become one kernel.
  pm.addPass(createXentFuseForwardBackward());
  pm.addPass(createConvertXentToGPU(options.getConversionOptions()));
  // A chip the conversion rejects would also trip the NVVM target while the
  // pipeline is built; stop here and let the conversion's diagnostic speak.
  if (!NVIDIAChip::parse(options.chip))
    return success();
  // Host code: tensors become identity-layout memrefs; buffers returned by
  // the kernels are device memory owned by the caller (no host-side
  // deallocation pass may touch them).
  if (failed(parsePassPipeline(
          "canonicalize,cse,"
          "one-shot-bufferize{bufferize-function-boundaries "
          "function-boundary-type-conversion=identity-layout-map},"
          "canonicalize,"
          // What the host code computes beside the xent ops (a frontend's
          // label remapping, a mean's division) on the device: the buffers
          // are device memory.
          "xent-host-compute-to-device,"
          // Stream-ordered launches, allocations and frees: what gpu-to-llvm
          // lowers (one stream per call, the caller's with xentSetStream).
          "func.func(gpu-async-region),"
          // Before the NVVM pipeline's expand-strided-metadata (LLVM 22
          // crashes on an expand_shape group of several dynamic sizes).
          "xent-lower-multi-dynamic-expand-shape",
          pm)))
    return failure();
  // Kernels and host code down to LLVM, kernels serialized by ptxas.
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  // The cubins compressed (a tenth of their size; the driver decompresses
  // them when it loads the module).
  if (options.format == "bin" && options.compress)
    pm.addPass(createXentCompressGPUBinaries());
  return success();
}

void mlir::xent::registerXentPipelines() {
  PassPipelineRegistration<XentGPUPipelineOptions>(
      "xent-gpu-pipeline",
      "Lower a module with xent ops to fused CUDA kernels (embedded as a "
      "cubin) and LLVM host code calling the mgpu* runtime",
      [](OpPassManager &pm, const XentGPUPipelineOptions &options) {
        (void)buildXentGPUPipeline(pm, options);
      });
  PassPipelineRegistration<XentCPUPipelineOptions>(
      "xent-cpu-pipeline",
      "Lower a module with xent ops through their decomposition to the LLVM "
      "dialect (CPU fallback): rows in parallel through OpenMP, classes in "
      "vectors",
      [](OpPassManager &pm, const XentCPUPipelineOptions &options) {
        // The registry has no way to report a failure here; the pipeline
        // text is fixed but for two integers, and covered by tests.
        (void)buildXentCPUPipeline(pm, options);
      });
}
