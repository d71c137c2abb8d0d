// RUN: xent-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation))'

shard.grid @grid(shape = 4)

func.func @uneven_classes(%x: tensor<8x50xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x50xf32>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: logits dimension 1 of size 50 does not split evenly over 4 devices}}
  %l = xent.cross_entropy mean %xs, %t : (tensor<8x50xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

shard.grid @grid(shape = 4)

func.func @dynamic_classes(%x: tensor<8x?xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x?xf32>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the class axis is split but its size is dynamic}}
  %l = xent.cross_entropy mean %xs, %t : (tensor<8x?xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

shard.grid @grid(shape = ?)

func.func @dynamic_grid(%x: tensor<8x64xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the class axis is split over a grid axis of dynamic size}}
  %l = xent.cross_entropy mean %xs, %t : (tensor<8x64xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

shard.grid @grid(shape = 2)

// Propagation sees every result (one indexing map each) and reports the
// per-row outputs it cannot split.
func.func @row_outputs(%x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8xi32>, tensor<f32>) {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  // expected-error @+1 {{'xent.cross_entropy' op cannot be partitioned: the per-row outputs (lse, argmax, accuracy) are not supported on split logits}}
  %l, %am, %acc = xent.cross_entropy mean %xs, %t {return_argmax, return_accuracy} : (tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8xi32>, tensor<f32>)
  return %l, %am, %acc : tensor<f32>, tensor<8xi32>, tensor<f32>
}
