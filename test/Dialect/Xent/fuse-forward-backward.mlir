// RUN: xent-opt %s --xent-fuse-forward-backward --split-input-file | FileCheck %s

// A loss and its gradient on the same operands and attributes become one op
// placed at the forward; both results are replaced.

// CHECK-LABEL: func @fused
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[T:.*]]: tensor<?xi64>, %[[W:.*]]: tensor<?xf32>)
// CHECK:   %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:   %[[L:.*]], %[[Z:.*]], %[[D:.*]] = xent.cross_entropy_and_grad mean %[[ONE]], %[[X]], %[[T]] weight %[[W]] {ignore_index = 7 : i64, z_loss_scale = 5.000000e-01 : f32}
// CHECK-NOT: xent.cross_entropy
// CHECK:   return %[[L]], %[[Z]], %[[D]]
func.func @fused(%x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>) -> (tensor<f32>, tensor<f32>, tensor<?x?xbf16>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %l, %z = xent.cross_entropy mean %x, %t weight %w {ignore_index = 7 : i64, z_loss_scale = 0.5 : f32} : (tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<f32>, tensor<f32>)
  %d = xent.cross_entropy_grad mean %one, %x, %t weight %w {ignore_index = 7 : i64, z_loss_scale = 0.5 : f32} : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> tensor<?x?xbf16>
  return %l, %z, %d : tensor<f32>, tensor<f32>, tensor<?x?xbf16>
}

// -----

// Different attributes: two different losses, left alone.

// CHECK-LABEL: func @different_attributes
// CHECK: xent.cross_entropy mean
// CHECK: xent.cross_entropy_grad mean
func.func @different_attributes(%x: tensor<4x9xf32>, %t: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x9xf32>) {
  %l = xent.cross_entropy mean %x, %t {label_smoothing = 0.1 : f32} : (tensor<4x9xf32>, tensor<4xi64>) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %g, %x, %t : (tensor<f32>, tensor<4x9xf32>, tensor<4xi64>) -> tensor<4x9xf32>
  return %l, %d : tensor<f32>, tensor<4x9xf32>
}

// -----

// grad_output is computed from the loss: it does not dominate the forward,
// so the pair cannot become one op.

// CHECK-LABEL: func @grad_output_after_forward
// CHECK: %[[L:.*]] = xent.cross_entropy sum
// CHECK: %[[G:.*]] = arith.mulf %[[L]], %[[L]]
// CHECK: xent.cross_entropy_grad sum %[[G]]
func.func @grad_output_after_forward(%x: tensor<4x9xf32>, %t: tensor<4xi64>) -> tensor<4x9xf32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x9xf32>, tensor<4xi64>) -> tensor<f32>
  %g = arith.mulf %l, %l : tensor<f32>
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x9xf32>, tensor<4xi64>) -> tensor<4x9xf32>
  return %d : tensor<4x9xf32>
}

// -----

// A different target: not the same loss.

// CHECK-LABEL: func @different_target
// CHECK-NOT: xent.cross_entropy_and_grad
func.func @different_target(%x: tensor<4x9xf32>, %t: tensor<4xi64>, %u: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x9xf32>) {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x9xf32>, tensor<4xi64>) -> tensor<f32>
  %d = xent.cross_entropy_grad sum %g, %x, %u : (tensor<f32>, tensor<4x9xf32>, tensor<4xi64>) -> tensor<4x9xf32>
  return %l, %d : tensor<f32>, tensor<4x9xf32>
}

// -----

// The joint op carries the forward's per-row outputs (and their attributes)
// between z_loss and dlogits.

// CHECK-LABEL: func @fused_row_outputs
// CHECK:   %[[L:.*]], %[[Z:.*]], %[[LSE:.*]], %[[AM:.*]], %[[ACC:.*]], %[[D:.*]] = xent.cross_entropy_and_grad sum %{{.*}}, %{{.*}}, %{{.*}} {return_accuracy, return_argmax, return_lse, z_loss_scale = 5.000000e-01 : f32} : (tensor<f32>, tensor<4x9xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<4x9xf32>)
// CHECK-NOT: xent.cross_entropy
// CHECK:   return %[[L]], %[[Z]], %[[LSE]], %[[AM]], %[[ACC]], %[[D]]
func.func @fused_row_outputs(%x: tensor<4x9xf32>, %t: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<4x9xf32>) {
  %l, %z, %lse, %am, %acc = xent.cross_entropy sum %x, %t {z_loss_scale = 0.5 : f32, return_lse, return_argmax, return_accuracy} : (tensor<4x9xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>)
  %d = xent.cross_entropy_grad sum %g, %x, %t {z_loss_scale = 0.5 : f32} : (tensor<f32>, tensor<4x9xf32>, tensor<4xi64>) -> tensor<4x9xf32>
  return %l, %z, %lse, %am, %acc, %d : tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<4x9xf32>
}
