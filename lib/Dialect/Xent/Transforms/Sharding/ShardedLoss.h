//===- ShardedLoss.h - The partitioned cross entropy ------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What one device computes of a cross-entropy op whose logits are split over
// a `shard.grid`: the op's rows over `rowAxes` and its classes over
// `classAxes`. Shared by the ShardingInterface model
// (ShardingInterfaceImpl.cpp) and the emitter of the partitioned form
// (ShardedLoss.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSS_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSS_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::xent {

/// How the logits of one op are split over a grid.
struct LossSharding {
  /// The grid's symbol name.
  StringRef grid;
  /// Grid axes that split a dimension other than the class axis (rows).
  SmallVector<shard::GridAxis> rowAxes;
  /// Grid axes that split the class axis.
  SmallVector<shard::GridAxis> classAxes;
  /// The number of devices sharing one row: the product of the sizes of
  /// `classAxes` (static).
  int64_t classGroupSize = 1;

  bool isReplicated() const { return rowAxes.empty() && classAxes.empty(); }
};

/// Emits at the insertion point of `b` what one device computes of `op`
/// split as `sharding` says: `localOperands` are the device's shards of the
/// op's operands (in order), `localResultTypes` the types of its shards of
/// the results. Row statistics are combined with `shard.all_reduce` over the
/// class axes (one max, one sum of the packed per-row sums), totals of
/// `mean` / `sum` over the row axes (one sum of at most four scalars); the
/// gradient is computed where its logits are. Returns one value per result.
SmallVector<Value> buildShardedCrossEntropy(OpBuilder &b,
                                            CrossEntropyOpInterface op,
                                            const LossSharding &sharding,
                                            ValueRange localOperands,
                                            TypeRange localResultTypes);

} // namespace mlir::xent

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_SHARDING_SHARDEDLOSS_H
