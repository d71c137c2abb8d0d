//===- InitAllXent.h - Register everything xent provides --------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The entry points a tool or a downstream compiler calls to make xent
// available, as mlir/InitAllDialects.h and mlir/InitAllPasses.h do for
// upstream: the dialect with its transform-dialect extensions, and every pass
// and pipeline with the global registries (command lines, textual
// pipelines). A pass manager that builds its pipeline in C++ needs neither
// registry: it calls the create…() functions of
// xent/Dialect/Xent/Transforms/Passes.h and xent/Conversion/Passes.h, or the
// pipeline builders of xent/Pipelines/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_INITALLXENT_H
#define XENT_INITALLXENT_H

#include "xent/Conversion/Passes.h"
#include "xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.h"
#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/TransformOps/XentTransformOps.h"
#include "xent/Dialect/Xent/Transforms/BufferizableOpInterfaceImpl.h"
#include "xent/Dialect/Xent/Transforms/Passes.h"
#include "xent/Dialect/Xent/Transforms/ShardingInterfaceImpl.h"
#include "xent/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::xent {

/// Adds the xent dialect, its transform-dialect extensions (the dialect's,
/// MLIRXentTransformOps, and the GPU lowering's, MLIRXentToGPUTransformOps),
/// the bufferization of `xent.launch`, the ops' shard::ShardingInterface
/// models and the memory effects of mpi.allreduce (MLIRXentSharding; for
/// partitioned modules on the CPU pipeline) to `registry`.
inline void registerXentDialects(DialectRegistry &registry) {
  registry.insert<XentDialect>();
  registerTransformDialectExtension(registry);
  registerXentToGPUTransformDialectExtension(registry);
  registerBufferizableOpInterfaceExternalModels(registry);
  registerShardingInterfaceExternalModels(registry);
  registerMPIMemoryEffectModels(registry);
}

/// Registers every xent pass (`xent-*`, `convert-xent-to-gpu`) and pipeline
/// (`xent-cpu-pipeline`, `xent-gpu-pipeline`) with the global registries.
inline void registerXentPassesAndPipelines() {
  registerXentPasses();
  registerXentConversionPasses();
  registerXentPipelines();
}

} // namespace mlir::xent

#endif // XENT_INITALLXENT_H
