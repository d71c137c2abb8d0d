// RUN: xent-opt %s --xent-materialize-decomposition --xent-recognize | FileCheck %s

// The regions of existing xent ops are never searched: the canonical
// decomposition is itself a cross-entropy (and its gradient), which must not
// be raised again into nested ops.

// CHECK-LABEL: func.func @existing_ops
// CHECK: xent.cross_entropy sum
// CHECK-NOT: xent.cross_entropy
// CHECK: xent.yield
// CHECK: xent.cross_entropy_grad mean
// CHECK-NOT: xent.cross_entropy
// CHECK: xent.yield
// CHECK-NOT: xent.cross_entropy
func.func @existing_ops(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x10xf32>) {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return %l, %d : tensor<f32>, tensor<4x10xf32>
}
