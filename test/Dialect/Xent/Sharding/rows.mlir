// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s
// RUN: xent-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' \
// RUN:   | grep -E 'shard\.(all_|gather|scatter|reduce|broadcast|send|recv|shift)' | FileCheck %s --check-prefix=COMM

// Batch-sharded losses: each device computes its rows. `none` and `sum` keep
// the op on the local rows; `sum` adds the totals in one all-reduce. `mean`,
// whose divisor is global, goes through the partitioned form and all-reduces
// (loss, z-loss, kept weight, kept count) once.

shard.grid @grid2(shape = 2)
shard.grid @grid4(shape = 4)

// CHECK-LABEL: func.func @forward_none_2
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>, %[[T:.*]]: tensor<4xi64>, %[[W:.*]]: tensor<64xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[L:.*]], %[[Z:.*]] = xent.cross_entropy none %[[X]], %[[T]] weight %[[W]] {z_loss_scale = {{.*}}} : (tensor<4x64xf32>, tensor<4xi64>, tensor<64xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: return %[[L]], %[[Z]]
func.func @forward_none_2(%x: tensor<8x64xf32>, %t: tensor<8xi64>, %w: tensor<64xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l, %z = xent.cross_entropy none %xs, %t weight %w {z_loss_scale = 1.0e-04 : f32}
      : (tensor<8x64xf32>, tensor<8xi64>, tensor<64xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %l, %z : tensor<8xf32>, tensor<8xf32>
}

// The local totals are f32 and rounded to bf16 once, after the sum.
// CHECK-LABEL: func.func @forward_sum_4
// CHECK-SAME: (%[[X:.*]]: tensor<2x64xbf16>, %[[T:.*]]: tensor<2xi32>) -> (tensor<bf16>, tensor<bf16>)
// CHECK: %[[L:.*]], %[[Z:.*]] = xent.cross_entropy sum %[[X]], %[[T]] {{.*}} -> (tensor<f32>, tensor<f32>)
// CHECK: %[[P:.*]] = tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @grid4 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @forward_sum_4(%x: tensor<8x64xbf16>, %t: tensor<8xi32>) -> (tensor<bf16>, tensor<bf16>) {
  %s = shard.sharding @grid4 split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xbf16>
  %l, %z = xent.cross_entropy sum %xs, %t {softcap = 3.0e+01 : f32, z_loss_scale = 1.0e-04 : f32}
      : (tensor<8x64xbf16>, tensor<8xi32>) -> (tensor<bf16>, tensor<bf16>)
  return %l, %z : tensor<bf16>, tensor<bf16>
}

// A gradient of `sum` needs nothing from the other devices.
// CHECK-LABEL: func.func @grad_sum_4
// CHECK-NEXT: %[[D:.*]] = xent.cross_entropy_grad sum %{{.*}} : (tensor<f32>, tensor<2x64xf32>, tensor<2xi64>) -> tensor<2x64xf32>
// CHECK-NEXT: return %[[D]]
func.func @grad_sum_4(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> tensor<8x64xf32> {
  %s = shard.sharding @grid4 split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %d = xent.cross_entropy_grad sum %g, %xs, %t {label_smoothing = 1.0e-01 : f32}
      : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// The per-row grad_output is split with the rows.
// CHECK-LABEL: func.func @grad_none_2
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4x64xf32>, %[[T:.*]]: tensor<4xi64>)
// CHECK-NEXT: xent.cross_entropy_grad none %[[G]], %[[X]], %[[T]]
func.func @grad_none_2(%g: tensor<8xf32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> tensor<8x64xf32> {
  %s = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %d = xent.cross_entropy_grad none %g, %xs, %t
      : (tensor<8xf32>, tensor<8x64xf32>, tensor<8xi64>) -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// CHECK-LABEL: func.func @joint_mean_2
// CHECK-SAME: -> (tensor<f32>, tensor<4x64xf32>)
// CHECK-NOT: xent.
// CHECK: %[[P:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = shard.all_reduce %[[P]] on @grid2 grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: } -> tensor<4x64xf32>
func.func @joint_mean_2(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>, %w: tensor<64xf32>) -> (tensor<f32>, tensor<8x64xf32>) {
  %s = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l, %d = xent.cross_entropy_and_grad mean %g, %xs, %t weight %w {ignore_index = 0 : i64, z_loss_scale = 1.0e-04 : f32}
      : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>, tensor<64xf32>) -> (tensor<f32>, tensor<8x64xf32>)
  return %l, %d : tensor<f32>, tensor<8x64xf32>
}

// Rows and classes together on a 2-D grid: row statistics over axis 1,
// totals over axis 0.
// CHECK-LABEL: func.func @rows_and_classes
// CHECK-SAME: -> tensor<f32>
// CHECK: xent.cross_entropy sum {{.*}} class_offset {{.*}} -> (tensor<f32>, tensor<4x3xf32>)
// CHECK: shard.all_reduce %{{.*}} on @grid2x2 grid_axes = [1] reduction = max : tensor<4x2xf32> -> tensor<4x2xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid2x2 grid_axes = [1] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK: shard.all_reduce %{{.*}} on @grid2x2 grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
shard.grid @grid2x2(shape = 2x2)
func.func @rows_and_classes(%x: tensor<8x64xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s = shard.sharding @grid2x2 split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %l = xent.cross_entropy mean %xs, %t : (tensor<8x64xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// A mean gradient over split rows: the slice's gradient op takes the sum's
// form, grad_output over the global kept weight, and a z-loss scale that
// gives the z-loss its divisor (the kept count).
// CHECK-LABEL: func.func @rows_and_classes_grad
// CHECK: %[[TOT:.*]] = shard.all_reduce %{{.*}} on @grid2x2 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
// CHECK: %[[G:.*]] = tensor.from_elements %{{.*}} : tensor<f32>
// CHECK: %[[Z:.*]] = arith.divf
// CHECK: xent.cross_entropy_grad sum %[[G]], %{{.*}}, %{{.*}} weight %{{.*}} row_stats %{{.*}} class_offset %{{.*}} z_loss_scale %[[Z]] {num_classes = 64 : i64} : (tensor<f32>, tensor<4x32xf32>, tensor<4xi64>, tensor<32xf32>, tensor<4x4xf32>, i64, f32) -> tensor<4x32xf32>
func.func @rows_and_classes_grad(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>, %w: tensor<64xf32>) -> tensor<8x64xf32> {
  %s = shard.sharding @grid2x2 split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x64xf32>
  %d = xent.cross_entropy_grad mean %g, %xs, %t weight %w {z_loss_scale = 1.0e-04 : f32}
      : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>, tensor<64xf32>) -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// COMM:      all_reduce {{.*}} : tensor<2xf32> -> tensor<2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<4xf32> -> tensor<4xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<4x2xf32> -> tensor<4x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<4x1xf32> -> tensor<4x1xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<4xf32> -> tensor<4xf32>
// COMM-NEXT: all_reduce {{.*}} reduction = max : tensor<4x2xf32> -> tensor<4x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<4x2xf32> -> tensor<4x2xf32>
// COMM-NEXT: all_reduce {{.*}} : tensor<2xf32> -> tensor<2xf32>
// COMM-NOT: shard.
