// Found by xent-fuzz-op (docs/reliability.md): convert-xent-to-gpu let dlogits
// take the logits' buffer whenever the logits die at the op, also when the
// dlogits type is only compatible with the logits type (a dynamic size where
// the logits have a static one); the bufferization.to_tensor it then built
// did not verify. The buffer is now reused only for equal types.

// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu | FileCheck %s
// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func.func @compatible
// CHECK: gpu.launch_func
// BUF-LABEL: func.func @compatible
// BUF:       %[[D:.*]] = gpu.alloc (%{{.*}}) : memref<?x10xf32>
// BUF:       return %[[D]]
func.func @compatible(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<?x10xf32> {
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<?x10xf32>
  return %d : tensor<?x10xf32>
}

// -----

// CHECK-LABEL: func.func @equal
// CHECK: gpu.launch_func
// BUF-LABEL: func.func @equal
// BUF-SAME:  %[[X:[^:]*]]: memref<4x10xf32>
// BUF-NOT:   gpu.alloc {{.*}}memref<4x10xf32>
// BUF:       return %[[X]]
func.func @equal(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<4x10xf32> {
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}
