// RUN: xent-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(shard-partition))'

shard.grid @grid(shape = 2)

// A split target with replicated logits: the rows would need the logits.
func.func @split_target(%x: tensor<8x64xf32>, %t: tensor<8xi64>) -> tensor<8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %r : tensor<8x64xf32>
  %x1 = shard.shard %x0 to %r annotate_for_users : tensor<8x64xf32>
  %t0 = shard.shard %t to %s : tensor<8xi64>
  %t1 = shard.shard %t0 to %s annotate_for_users : tensor<8xi64>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the target is split as [[0]] but logits split as [[]] need it split as [[]]}}
  %l = xent.cross_entropy none %x1, %t1 : (tensor<8x64xf32>, tensor<8xi64>) -> tensor<8xf32>
  %l0 = shard.shard %l to %s : tensor<8xf32>
  return %l0 : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2)

// Class-sharded logits whose weight is not split with the classes.
func.func @replicated_weight(%x: tensor<8x64xf32>, %t: tensor<8xi64>, %w: tensor<64xf32>) -> tensor<8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %c = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %x0 = shard.shard %x to %c : tensor<8x64xf32>
  %x1 = shard.shard %x0 to %c annotate_for_users : tensor<8x64xf32>
  %t0 = shard.shard %t to %r : tensor<8xi64>
  %t1 = shard.shard %t0 to %r annotate_for_users : tensor<8xi64>
  %w0 = shard.shard %w to %r : tensor<64xf32>
  %w1 = shard.shard %w0 to %r annotate_for_users : tensor<64xf32>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the weight is split as [[]] but logits split as [[], [0]] need it split as [[0]]}}
  %l = xent.cross_entropy none %x1, %t1 weight %w1 : (tensor<8x64xf32>, tensor<8xi64>, tensor<64xf32>) -> tensor<8xf32>
  %l0 = shard.shard %l to %r : tensor<8xf32>
  return %l0 : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2)

// Per-row outputs on split logits are not partitioned (yet): a diagnostic.
func.func @row_outputs(%x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<8x64xf32>
  %x1 = shard.shard %x0 to %s annotate_for_users : tensor<8x64xf32>
  %t0 = shard.shard %t to %s : tensor<8xi64>
  %t1 = shard.shard %t0 to %s annotate_for_users : tensor<8xi64>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the per-row outputs (lse, argmax, accuracy) are not supported on split logits}}
  %l, %lse = xent.cross_entropy none %x1, %t1 {return_lse} : (tensor<8x64xf32>, tensor<8xi64>) -> (tensor<8xf32>, tensor<8xf32>)
  %l0 = shard.shard %l to %s : tensor<8xf32>
  %lse0 = shard.shard %lse to %s : tensor<8xf32>
  return %l0, %lse0 : tensor<8xf32>, tensor<8xf32>
}
