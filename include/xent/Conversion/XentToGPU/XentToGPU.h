//===- XentToGPU.h - Lowering of xent ops to fused GPU kernels --*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
#define XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H

#include "mlir/Pass/Pass.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir {
class RewritePatternSet;

namespace xent {

/// Which lowering convert-xent-to-gpu gives each op (its `mode` option).
enum class LoweringMode {
  /// The kernel where it can take the op, the decomposition elsewhere.
  Auto,
  /// The kernel for every op; an op it cannot take is an error.
  Kernel,
  /// The decomposition for every op.
  Inline,
};

/// The spellings of LoweringMode on a command line (`mode=auto|kernel|inline`),
/// for every option that takes one.
llvm::cl::ValuesClass getLoweringModeValues();
/// The mode a spelling names (`auto`, `kernel`, `inline`), if any.
std::optional<LoweringMode> parseLoweringMode(StringRef spelling);

// The pass and its options, ConvertXentToGPUOptions: the knobs of the
// generated kernels, from which the launch geometry is derived in one place.
#define GEN_PASS_DECL_CONVERTXENTTOGPU
#include "xent/Conversion/Passes.h.inc"

/// The kernel options of anything that declares them under the pass's names
/// (the pass itself, xent-gpu-pipeline's options): one list of fields.
template <typename Options>
ConvertXentToGPUOptions getKernelOptions(const Options &from) {
  ConvertXentToGPUOptions options;
  options.chip = from.chip;
  options.threads = from.threads;
  options.vectorWidth = from.vectorWidth;
  options.residentRows = from.residentRows;
  options.splitExponentials = from.splitExponentials;
  options.runtimeDispatch = from.runtimeDispatch;
  options.mode = from.mode;
  options.linearChunkRows = from.linearChunkRows;
  options.linearChunkMiB = from.linearChunkMiB;
  options.linearTiles = from.linearTiles;
  options.linearTileCluster = from.linearTileCluster;
  return options;
}

/// Why the kernels cannot take `op` with `options`, or nothing when they can.
/// Ops outside the cross-entropy family have no kernel; the kernels take every
/// verified configuration of the family in host code, but cannot be launched
/// from device code (inside `gpu.module`, `gpu.func` or `gpu.launch`) nor
/// generated without an enclosing `builtin.module`.
std::optional<std::string>
getKernelUnsupportedReason(Operation *op,
                           const ConvertXentToGPUOptions &options);

/// What convert-xent-to-gpu does, on the ops nested in `root` (a module, or
/// an op inside one): diagnoses options the kernels cannot take and ops that
/// `options.mode` (or `options.allowDecomposition`) rules out, then replaces
/// every xent op by kernel launches or by its decomposition, as the mode
/// says (its patterns, xent ops illegal). Each op reports the path it took
/// and why as an optimization remark (category `convert-xent-to-gpu`).
LogicalResult convertXentToGPU(Operation *root,
                               const ConvertXentToGPUOptions &options);

/// Adds the patterns that replace xent ops by launches of kernels generated
/// into `@xent_kernels` of the enclosing module, or by their decomposition
/// (linalg/tensor/arith/math on tensors), as `options.mode` and
/// getKernelUnsupportedReason decide for each op. The options are those of
/// `convert-xent-to-gpu` and should be valid for it; an op that the mode
/// rules out (mode=kernel where the kernels cannot take it) is left as it is.
void populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options);

} // namespace xent
} // namespace mlir

#endif // XENT_CONVERSION_XENTTOGPU_XENTTOGPU_H
