//===- Pipelines.h - Registered xent pass pipelines -------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_PIPELINES_PIPELINES_H
#define XENT_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::xent {

/// Appends the CPU fallback pipeline to `pm` (a module pass manager): the
/// xent ops are replaced by their decomposition, then everything is
/// bufferized and lowered to the LLVM dialect. Functions keep their
/// signatures (tensors become identity-layout memrefs), so entry points with
/// `llvm.emit_c_interface` can be called from C or `mlir-runner`.
LogicalResult buildXentCPUPipeline(OpPassManager &pm);

/// Registers `xent-cpu-pipeline` with the global pass pipeline registry.
void registerXentPipelines();

} // namespace mlir::xent

#endif // XENT_PIPELINES_PIPELINES_H
