// RUN: xent-reduce %s -opt-reduction-pass='opt-pass=xent-fuse-forward-backward test=%S/Inputs/has-z-loss.sh' | FileCheck %s
// REQUIRES: xent-reduce

// xent's passes are reductions of xent-reduce: fusing the loss and its
// gradient into one op keeps the module interesting (it still has a z-loss)
// and makes it smaller, so the fused module is the result.

// CHECK-LABEL: func.func @train(
// CHECK:         %[[L:.*]], %[[Z:.*]], %[[D:.*]] = xent.cross_entropy_and_grad mean %{{.*}}, %{{.*}}, %{{.*}} {z_loss_scale = 5.000000e-01 : f32}
// CHECK-NOT:     xent.cross_entropy
// CHECK:         return %[[L]], %[[Z]], %[[D]]

func.func @train(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<f32>, tensor<?x?xbf16>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %l, %z = xent.cross_entropy mean %x, %t {z_loss_scale = 0.5 : f32} : (tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<f32>)
  %d = xent.cross_entropy_grad mean %one, %x, %t {z_loss_scale = 0.5 : f32} : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?x?xbf16>
  return %l, %z, %d : tensor<f32>, tensor<f32>, tensor<?x?xbf16>
}
