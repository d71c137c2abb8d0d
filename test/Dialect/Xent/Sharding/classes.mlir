// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s
// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' \
// RUN:   | grep -E 'shard\.(all_|gather|scatter|reduce|broadcast|send|recv|shift)' | FileCheck %s --check-prefix=COMM

// Class-sharded (vocabulary-parallel) losses: every collective moves one
// value per row (8 rows, at most 5 per row), never the 8 x 64 logits or a
// shard of them (8 x 32 on 2 devices, 8 x 16 on 4).

shard.grid @grid2(shape = 2)
shard.grid @grid4(shape = 4)

// CHECK-LABEL: func.func @forward_mean_2
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[T:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
// CHECK: %[[RANK:.*]] = shard.process_multi_index on @grid2 axes = [0]
// CHECK: %[[OFFSET:.*]] = arith.muli %[[RANK]], %c32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[X]] : tensor<8x32xf32>)
// CHECK: arith.maximumf
// CHECK: %[[M:.*]] = shard.all_reduce %{{.*}} on @grid2 grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[M]], %[[W]] : tensor<8x32xf32>, tensor<8xf32>, tensor<32xf32>)
// CHECK: math.exp
// CHECK: } -> tensor<8x5xf32>
// CHECK-NEXT: %[[SUMS:.*]] = shard.all_reduce %{{.*}} on @grid2 grid_axes = [0] : tensor<8x5xf32> -> tensor<8x5xf32>
// CHECK-COUNT-5: tensor.extract_slice %[[SUMS]]
// CHECK-NOT: shard.all_reduce
// CHECK: return
func.func @forward_mean_2(%x: tensor<8x64xf32>, %t: tensor<8xi64>, %w: tensor<64xf32>) -> (tensor<f32>, tensor<f32>) {
  %s = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l, %z = xent.cross_entropy mean %xs, %t weight %w
      {ignore_index = 0 : i64, label_smoothing = 1.0e-01 : f32, z_loss_scale = 1.0e-04 : f32, softcap = 3.0e+01 : f32}
      : (tensor<8x64xf32>, tensor<8xi64>, tensor<64xf32>) -> (tensor<f32>, tensor<f32>)
  return %l, %z : tensor<f32>, tensor<f32>
}

// The gradient stays sharded like the logits; the target's weight and the
// weight sum come with the packed row sums.
// CHECK-LABEL: func.func @grad_mean_4
// CHECK-SAME: -> tensor<8x16xbf16>
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] : tensor<8x3xf32> -> tensor<8x3xf32>
// CHECK: %[[D:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: } -> tensor<8x16xbf16>
// CHECK-NEXT: return %[[D]]
func.func @grad_mean_4(%g: tensor<f32>, %x: tensor<8x64xbf16>, %t: tensor<8xi32>, %w: tensor<64xf32>) -> tensor<8x64xbf16> {
  %s = shard.sharding @grid4 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xbf16>
  %d = xent.cross_entropy_grad mean %g, %xs, %t weight %w {label_smoothing = 1.0e-01 : f32}
      : (tensor<f32>, tensor<8x64xbf16>, tensor<8xi32>, tensor<64xf32>) -> tensor<8x64xbf16>
  return %d : tensor<8x64xbf16>
}

// CHECK-LABEL: func.func @joint_sum_4
// CHECK-SAME: -> (tensor<f32>, tensor<8x16xf32>)
// CHECK: reduction = max : tensor<8xf32> -> tensor<8xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] : tensor<8x2xf32> -> tensor<8x2xf32>
func.func @joint_sum_4(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>) {
  %s = shard.sharding @grid4 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l, %d = xent.cross_entropy_and_grad sum %g, %xs, %t
      : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>)
  return %l, %d : tensor<f32>, tensor<8x64xf32>
}

// Per-row losses are whole on every device of a row.
// CHECK-LABEL: func.func @none_probs_2
// CHECK-SAME: (%{{.*}}: tensor<8x32xf32>, %{{.*}}: tensor<8x32xf32>) -> tensor<8xf32>
// CHECK: shard.all_reduce %{{.*}} : tensor<8x3xf32> -> tensor<8x3xf32>
func.func @none_probs_2(%x: tensor<8x64xf32>, %q: tensor<8x64xf32>) -> tensor<8xf32> {
  %s = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l = xent.cross_entropy none %xs, %q {label_smoothing = 1.0e-01 : f32}
      : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// Every collective of the file, in order: none moves a logits-sized tensor.
// COMM:      all_reduce {{.*}} reduction = max : tensor<8xf32> -> tensor<8xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x5xf32> -> tensor<8x5xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8xf32> -> tensor<8xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x3xf32> -> tensor<8x3xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8xf32> -> tensor<8xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x2xf32> -> tensor<8x2xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8xf32> -> tensor<8xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x3xf32> -> tensor<8x3xf32>
// COMM-NOT: shard.
