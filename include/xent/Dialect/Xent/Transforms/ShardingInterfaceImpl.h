//===- ShardingInterfaceImpl.h - xent ops through the shard dialect -*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// MLIR's shard::ShardingInterface for the cross-entropy family, so that
// upstream `sharding-propagation` and `shard-partition` split a loss over
// a device grid by rows (batch) and by classes (vocabulary) with O(N)
// communication (docs/scale-out.md).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMS_SHARDINGINTERFACEIMPL_H
#define XENT_DIALECT_XENT_TRANSFORMS_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace xent {

/// Attaches shard::ShardingInterface to `xent.cross_entropy`,
/// `xent.cross_entropy_grad` and `xent.cross_entropy_and_grad` when the xent
/// dialect is loaded.
void registerShardingInterfaceExternalModels(DialectRegistry &registry);

/// Declares the memory effects of `mpi.allreduce` (reads its send buffer,
/// writes its receive buffer), so that the CPU pipeline's buffer
/// deallocation accepts a partitioned module after `convert-shard-to-mpi`.
void registerMPIMemoryEffectModels(DialectRegistry &registry);

} // namespace xent
} // namespace mlir

#endif // XENT_DIALECT_XENT_TRANSFORMS_SHARDINGINTERFACEIMPL_H
