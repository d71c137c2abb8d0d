// RUN: xent-opt %s | xent-opt | FileCheck %s
// RUN: xent-opt %s --mlir-print-op-generic | xent-opt | FileCheck %s

// ignore_index, label_smoothing, z_loss_scale and softcap given at run time:
// SSA scalars after the tensor operands, each after its keyword, their types
// in the functional type (after the tensors', in this order).

// CHECK-LABEL: func @every_scalar
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4xi64>, %[[W:.*]]: tensor<10xf32>, %[[I:.*]]: i64, %[[E:.*]]: f32, %[[Z:.*]]: f32, %[[C:.*]]: f32)
// CHECK: xent.cross_entropy mean %[[X]], %[[T]] weight %[[W]] ignore_index %[[I]] label_smoothing %[[E]] z_loss_scale %[[Z]] softcap %[[C]] : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>, i64, f32, f32, f32) -> (tensor<f32>, tensor<f32>)
func.func @every_scalar(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<10xf32>, %i: i64, %e: f32, %z: f32, %c: f32) -> (tensor<f32>, tensor<f32>) {
  %l, %zl = xent.cross_entropy mean %x, %t weight %w ignore_index %i label_smoothing %e z_loss_scale %z softcap %c : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>, i64, f32, f32, f32) -> (tensor<f32>, tensor<f32>)
  return %l, %zl : tensor<f32>, tensor<f32>
}

// Some features as attributes, others as operands.
// CHECK-LABEL: func @mixed
// CHECK: xent.cross_entropy_grad sum %{{.*}}, %{{.*}}, %{{.*}} label_smoothing %{{.*}} {ignore_index = 3 : i64, softcap = 2.000000e+00 : f32} : (tensor<f32>, tensor<4x10xbf16>, tensor<4xi32>, f32) -> tensor<4x10xbf16>
func.func @mixed(%g: tensor<f32>, %x: tensor<4x10xbf16>, %t: tensor<4xi32>, %e: f32) -> tensor<4x10xbf16> {
  %d = xent.cross_entropy_grad sum %g, %x, %t label_smoothing %e {ignore_index = 3 : i64, softcap = 2.0 : f32} : (tensor<f32>, tensor<4x10xbf16>, tensor<4xi32>, f32) -> tensor<4x10xbf16>
  return %d : tensor<4x10xbf16>
}

// CHECK-LABEL: func @joint
// CHECK: xent.cross_entropy_and_grad none %{{.*}}, %{{.*}}, %{{.*}} z_loss_scale %{{.*}} softcap %{{.*}} : (tensor<4xf32>, tensor<4x10xf32>, tensor<4x10xf32>, f32, f32) -> (tensor<4xf32>, tensor<4x10xf32>)
func.func @joint(%g: tensor<4xf32>, %x: tensor<4x10xf32>, %q: tensor<4x10xf32>, %z: f32, %c: f32) -> (tensor<4xf32>, tensor<4x10xf32>) {
  %l, %d = xent.cross_entropy_and_grad none %g, %x, %q z_loss_scale %z softcap %c : (tensor<4xf32>, tensor<4x10xf32>, tensor<4x10xf32>, f32, f32) -> (tensor<4xf32>, tensor<4x10xf32>)
  return %l, %d : tensor<4xf32>, tensor<4x10xf32>
}

// The linear family takes them too.
// CHECK-LABEL: func @linear
// CHECK: xent.linear_cross_entropy mean %{{.*}}, %{{.*}}, %{{.*}} ignore_index %{{.*}} label_smoothing %{{.*}} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, i64, f32) -> tensor<f32>
// CHECK: xent.linear_cross_entropy_grad sum %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} softcap %{{.*}} : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> (tensor<8x16xf32>, tensor<32x16xf32>)
// CHECK: xent.linear_cross_entropy_and_grad mean %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} z_loss_scale %{{.*}} : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> (tensor<f32>, tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>)
func.func @linear(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %i: i64, %e: f32, %z: f32, %c: f32) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<f32>, tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>) {
  %l = xent.linear_cross_entropy mean %h, %w, %t ignore_index %i label_smoothing %e : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, i64, f32) -> tensor<f32>
  %dh, %dw = xent.linear_cross_entropy_grad sum %g, %h, %w, %t softcap %c : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> (tensor<8x16xf32>, tensor<32x16xf32>)
  %l2, %z2, %dh2, %dw2 = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t z_loss_scale %z : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> (tensor<f32>, tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>)
  return %l, %dh, %dw, %l2, %z2, %dh2, %dw2 : tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<f32>, tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>
}
