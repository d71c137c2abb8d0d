// RUN: xent-opt %s --xent-fuse-forward-backward --split-input-file | FileCheck %s

// A loss and its gradient with the same run-time scalar are one
// configuration: fused, the joint op takes the scalar.

// CHECK-LABEL: func @same_operand
// CHECK-SAME: %[[E:[^:]*]]: f32)
// CHECK:   %[[L:.*]], %[[D:.*]] = xent.cross_entropy_and_grad mean %{{.*}}, %{{.*}}, %{{.*}} label_smoothing %[[E]] {softcap = 3.000000e+01 : f32} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, f32) -> (tensor<f32>, tensor<4x10xf32>)
// CHECK-NOT: xent.cross_entropy
// CHECK:   return %[[L]], %[[D]]
func.func @same_operand(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f32) -> (tensor<f32>, tensor<4x10xf32>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %l = xent.cross_entropy mean %x, %t label_smoothing %e {softcap = 30.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %one, %x, %t label_smoothing %e {softcap = 30.0 : f32} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<4x10xf32>
  return %l, %d : tensor<f32>, tensor<4x10xf32>
}

// -----

// Different operands (even if they may hold the same value): two losses.
// CHECK-LABEL: func @different_operands
// CHECK: xent.cross_entropy mean
// CHECK: xent.cross_entropy_grad mean
// CHECK-NOT: xent.cross_entropy_and_grad
func.func @different_operands(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f32, %f: f32) -> (tensor<f32>, tensor<4x10xf32>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %l = xent.cross_entropy mean %x, %t z_loss_scale %e : (tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %one, %x, %t z_loss_scale %f : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<4x10xf32>
  return %l, %d : tensor<f32>, tensor<4x10xf32>
}

// -----

// An operand on one side, an attribute on the other: two losses.
// CHECK-LABEL: func @operand_and_attribute
// CHECK: xent.cross_entropy mean
// CHECK: xent.cross_entropy_grad mean
// CHECK-NOT: xent.cross_entropy_and_grad
func.func @operand_and_attribute(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %i: i64) -> (tensor<f32>, tensor<4x10xf32>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %l = xent.cross_entropy mean %x, %t ignore_index %i : (tensor<4x10xf32>, tensor<4xi64>, i64) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %one, %x, %t {ignore_index = 5 : i64} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return %l, %d : tensor<f32>, tensor<4x10xf32>
}
