// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize | FileCheck %s

// The joint op is one row kernel that writes the loss and dlogits: the
// logits of a row are walked once for the statistics and once for the
// gradient, in the same block.

// CHECK-LABEL: func @joint
// CHECK:   gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK:   gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_0]]
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @[[K]](
// CHECK:   scf.for
// CHECK:   memref.atomic_rmw addf
// CHECK:   scf.for
// CHECK:     memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16, strided<[?, ?], offset: ?>>
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
