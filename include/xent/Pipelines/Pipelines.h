//===- Pipelines.h - Registered xent pass pipelines -------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_PIPELINES_PIPELINES_H
#define XENT_PIPELINES_PIPELINES_H

#include "xent/Conversion/XentToGPU/XentToGPU.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::xent {

/// Options of `xent-cpu-pipeline`.
struct XentCPUPipelineOptions
    : public PassPipelineOptions<XentCPUPipelineOptions> {
  PassOptions::Option<unsigned> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Lanes of the class loops' vectors (0: as many f32 as "
                     "the host's widest vector register holds; 1: none)"),
      llvm::cl::init(0)};
  PassOptions::Option<unsigned> threads{
      *this, "threads",
      llvm::cl::desc("Threads the rows are spread over, through OpenMP (0: "
                     "the OpenMP runtime's choice, OMP_NUM_THREADS or the "
                     "host's cores; 1: no OpenMP, rows one after another)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> nativeBF16{
      *this, "native-bf16",
      llvm::cl::desc("Leave bf16 <-> f32 conversions to LLVM, for a target "
                     "CPU that has them (x86 with AVX512-BF16: "
                     "vcvtneps2bf16); off: expanded to integer ops, which "
                     "any CPU runs (LLVM would call __truncsfbf2, which "
                     "Debian 12's libgcc lacks)"),
      llvm::cl::init(false)};

  /// The pipeline as text (docs/user-guide.md shows it).
  std::string getPipelineText() const;
};

/// Appends the CPU fallback pipeline to `pm` (a module pass manager): the
/// xent ops are replaced by their decomposition, its rows tiled over
/// threads and its class loops vectorized (xent-cpu-vectorize-rows), then
/// everything is bufferized and lowered to the LLVM dialect. Functions keep
/// their signatures (tensors become identity-layout memrefs), so entry
/// points with `llvm.emit_c_interface` can be called from C or
/// `mlir-runner`. Unless `threads` is 1, the code calls the OpenMP runtime
/// (libomp).
LogicalResult buildXentCPUPipeline(OpPassManager &pm,
                                   const XentCPUPipelineOptions &options);
/// The same with the default options.
LogicalResult buildXentCPUPipeline(OpPassManager &pm);

/// Options of `xent-gpu-pipeline`: those of convert-xent-to-gpu, under the
/// same names and with the same defaults (`chip` also names the chip the
/// kernels are compiled for; but for `allow-decomposition`, which the
/// pipeline turns off), and those of the kernels' binary.
struct XentGPUPipelineOptions
    : public PassPipelineOptions<XentGPUPipelineOptions> {
  // convert-xent-to-gpu (Passes.td describes them).
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("NVIDIA chip (sm_80 or newer)"),
      llvm::cl::init(ConvertXentToGPUOptions().chip)};
  PassOptions::Option<unsigned> threads{
      *this, "threads", llvm::cl::desc("Threads per block"),
      llvm::cl::init(ConvertXentToGPUOptions().threads)};
  PassOptions::Option<unsigned> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Elements per load (0: 16 bytes' worth)"),
      llvm::cl::init(ConvertXentToGPUOptions().vectorWidth)};
  PassOptions::Option<bool> residentRows{
      *this, "resident-rows",
      llvm::cl::desc("Gradient kernels keep each row on chip (sm_90+)"),
      llvm::cl::init(ConvertXentToGPUOptions().residentRows)};
  PassOptions::Option<int64_t> splitExponentials{
      *this, "split-exponentials",
      llvm::cl::desc("Soft-capped bf16 / f16 gradient walks form one "
                     "exponential in N (2, 4 or 8) on the FMA pipe (0: none)"),
      llvm::cl::init(ConvertXentToGPUOptions().splitExponentials)};
  PassOptions::Option<bool> runtimeDispatch{
      *this, "runtime-dispatch",
      llvm::cl::desc("The host code picks each call's kernel variant at run "
                     "time (threads, features whose value is 0)"),
      llvm::cl::init(ConvertXentToGPUOptions().runtimeDispatch)};
  PassOptions::Option<LoweringMode> mode{
      *this, "mode",
      llvm::cl::desc("Per op, the kernel or the decomposition; the pipeline "
                     "lowers no decomposition (allow-decomposition=false), "
                     "so an op that would take one is an error"),
      llvm::cl::init(ConvertXentToGPUOptions().mode), getLoweringModeValues()};
  PassOptions::Option<int64_t> linearChunkRows{
      *this, "linear-chunk-rows",
      llvm::cl::desc("Rows per chunk of a linear cross-entropy op (0: as "
                     "many as linear-chunk-mib allows)"),
      llvm::cl::init(ConvertXentToGPUOptions().linearChunkRows)};
  PassOptions::Option<int64_t> linearChunkMiB{
      *this, "linear-chunk-mib",
      llvm::cl::desc("With linear-chunk-rows=0, the most rows (a multiple of "
                     "128, at least 128) whose f32 logits fit in this many "
                     "MiB"),
      llvm::cl::init(ConvertXentToGPUOptions().linearChunkMiB)};
  PassOptions::Option<bool> linearTiles{
      *this, "linear-tiles",
      llvm::cl::desc("On sm_90a, the loss of a linear op without gradients "
                     "from tile kernels that never write the logits (false: "
                     "always the row chunks)"),
      llvm::cl::init(ConvertXentToGPUOptions().linearTiles)};
  PassOptions::Option<int64_t> linearTileCluster{
      *this, "linear-tile-cluster",
      llvm::cl::desc("Blocks per cluster of the linear tile kernel: 1, or 2 "
                     "(each block loads half of the weight tile and "
                     "multicasts it to both)"),
      llvm::cl::init(ConvertXentToGPUOptions().linearTileCluster)};

  // The kernels' binary.
  PassOptions::Option<std::string> features{*this, "features",
                                            llvm::cl::desc("PTX features"),
                                            llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary format: bin (cubin, needs ptxas), isa "
                     "(PTX) or fatbin"),
      llvm::cl::init("bin")};
  PassOptions::Option<bool> compress{
      *this, "compress",
      llvm::cl::desc("With format=bin, each cubin becomes a fatbin holding "
                     "it compressed (xent-compress-gpu-binaries, the CUDA "
                     "toolkit's fatbinary)"),
      llvm::cl::init(true)};

  /// The options of the pipeline's convert-xent-to-gpu.
  ConvertXentToGPUOptions getConversionOptions() const;
};

/// Appends the GPU pipeline: convert-xent-to-gpu (with
/// `allow-decomposition=false`: an op that would take the decomposition is
/// an error, for nothing here lowers linalg to the device; on host tensors
/// it would be host loops over device memory), bufferization of the host code,
/// then upstream's gpu-lower-to-nvvm-pipeline (kernels to NVVM and a binary,
/// host to LLVM calling the mgpu* runtime ABI) and, for cubins with
/// `compress`, xent-compress-gpu-binaries.
LogicalResult buildXentGPUPipeline(OpPassManager &pm,
                                   const XentGPUPipelineOptions &options);

/// Registers `xent-cpu-pipeline` and `xent-gpu-pipeline` with the global
/// pass pipeline registry.
void registerXentPipelines();

} // namespace mlir::xent

#endif // XENT_PIPELINES_PIPELINES_H
