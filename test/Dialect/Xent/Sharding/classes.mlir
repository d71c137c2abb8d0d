// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s
// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' \
// RUN:   | grep -E 'shard\.(all_|gather|scatter|reduce|broadcast|send|recv|shift)' | FileCheck %s --check-prefix=COMM
// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition),convert-xent-to-gpu{mode=kernel})' \
// RUN:   | FileCheck %s --check-prefix=GPU

// On a GPU each shard's xent ops are kernels (mode=kernel: an op that the
// kernels did not take would be an error): the statistics' forward, then
// the gradient from the merged statistics.
// GPU-LABEL: func.func @forward_mean_2
// GPU:         gpu.launch_func @xent_kernels::@xent_loss_{{[0-9]+}}
// GPU-NOT:     linalg.generic {{.*}}tensor<8x32x
// GPU-LABEL: func.func @grad_mean_4
// GPU:         gpu.launch_func @xent_kernels::@xent_loss_{{[0-9]+}}
// GPU:         gpu.launch_func @xent_kernels::@xent_grad_{{[0-9]+}}
// GPU-LABEL: func.func @joint_sum_4
// GPU:         gpu.launch_func @xent_kernels::@xent_loss_{{[0-9]+}}
// GPU:         gpu.launch_func @xent_kernels::@xent_grad_{{[0-9]+}}

// Class-sharded (vocabulary-parallel) losses: with class-index targets each
// device runs xent ops on its slice of the classes (statistics, then the
// gradient from the merged statistics), and every collective moves a few
// values per row (8 rows), never the 8 x 64 logits or a shard of them
// (8 x 32 on 2 devices, 8 x 16 on 4).

shard.grid @grid2(shape = 2)
shard.grid @grid4(shape = 4)

// CHECK-LABEL: func.func @forward_mean_2
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[T:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
// CHECK: %[[RANK:.*]] = shard.process_multi_index on @grid2 axes = [0]
// CHECK: %[[OFFSET:.*]] = arith.muli %[[RANK]], %c32
// CHECK: %[[O:.*]] = arith.index_cast %[[OFFSET]] : index to i64
// CHECK: %[[LOSS:[^ ,]+]], %[[STATS:[^ ,]+]] = xent.cross_entropy sum %[[X]], %[[T]] weight %[[W]] class_offset %[[O]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f32, num_classes = 64 : i64, return_row_stats, softcap = 3.000000e+01 : f32, z_loss_scale = {{.*}}} : (tensor<8x32xf32>, tensor<8xi64>, tensor<32xf32>, i64) -> (tensor<f32>, tensor<8x6xf32>)
// CHECK-NOT: tensor<8x32xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid2 grid_axes = [0] reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid2 grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK-NOT: xent.
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
// weight sum come with the merged statistics.
// CHECK-LABEL: func.func @grad_mean_4
// CHECK-SAME: (%[[G:.*]]: tensor<f32>, %[[X:.*]]: tensor<8x16xbf16>, %[[T:.*]]: tensor<8xi32>, %[[W:.*]]: tensor<16xf32>) -> tensor<8x16xbf16>
// CHECK: xent.cross_entropy sum %[[X]], %[[T]] weight %[[W]] class_offset %{{.*}} {label_smoothing = 1.000000e-01 : f32, num_classes = 64 : i64, return_row_stats} : {{.*}} -> (tensor<f32>, tensor<8x6xf32>)
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: } -> tensor<8x6xf32>
// CHECK: %[[D:.*]] = xent.cross_entropy_grad mean %[[G]], %[[X]], %[[T]] weight %[[W]] row_stats %[[M]] class_offset %{{.*}} {label_smoothing = 1.000000e-01 : f32, num_classes = 64 : i64}
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
// CHECK: xent.cross_entropy sum {{.*}} -> (tensor<f32>, tensor<8x3xf32>)
// CHECK: reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid4 grid_axes = [0] : tensor<8x1xf32> -> tensor<8x1xf32>
// CHECK: xent.cross_entropy_grad sum {{.*}} row_stats {{.*}} -> tensor<8x16xf32>
func.func @joint_sum_4(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>) {
  %s = shard.sharding @grid4 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l, %d = xent.cross_entropy_and_grad sum %g, %xs, %t
      : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>)
  return %l, %d : tensor<f32>, tensor<8x64xf32>
}

// Per-row losses are whole on every device of a row. Probability targets
// keep the linalg form.
// CHECK-LABEL: func.func @none_probs_2
// CHECK-SAME: (%{{.*}}: tensor<8x32xf32>, %{{.*}}: tensor<8x32xf32>) -> tensor<8xf32>
// CHECK-NOT: xent.
// CHECK: shard.all_reduce %{{.*}} : tensor<8x3xf32> -> tensor<8x3xf32>
func.func @none_probs_2(%x: tensor<8x64xf32>, %q: tensor<8x64xf32>) -> tensor<8xf32> {
  %s = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l = xent.cross_entropy none %xs, %q {label_smoothing = 1.0e-01 : f32}
      : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// Every collective of the file, in order: none moves a logits-sized tensor.
// COMM:      all_reduce {{.*}} reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x4xf32> -> tensor<8x4xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x4xf32> -> tensor<8x4xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8x2xf32> -> tensor<8x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x1xf32> -> tensor<8x1xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<8xf32> -> tensor<8xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<8x3xf32> -> tensor<8x3xf32>
// COMM-NOT: shard.
