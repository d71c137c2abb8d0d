// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu --canonicalize \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --canonicalize | FileCheck %s --check-prefixes=CHECK,RESIDENT
// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu="resident-rows=false" --canonicalize \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --canonicalize | FileCheck %s --check-prefixes=CHECK,TWOPASS

// dlogits takes the logits' buffer only when the logits are dead after the
// op (their only use): each thread reads a class's logit before writing that
// class's gradient, after the row's statistics are complete.

// The joint op: in place with the two-pass kernel. Not on the resident path
// (the default on sm_90): there block 0 reads the target's logit for the loss
// after the cluster's exchange, when the block holding that element may
// already have written its gradient.

// CHECK-LABEL: func.func @dead
// CHECK-SAME: (%{{.*}}: memref<f32>, %[[X:.*]]: memref<?x?xbf16>, %{{.*}}: memref<?xi64>)
// TWOPASS-NOT: gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xbf16>
// RESIDENT:    %[[D:.*]] = gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xbf16>
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_grad_0
// TWOPASS:     return %{{.*}}, %[[X]] : memref<f32>, memref<?x?xbf16>
// RESIDENT:    return %{{.*}}, %[[D]] : memref<f32>, memref<?x?xbf16>
func.func @dead(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

// -----

// A gradient op alone has no loss to read: in place on both paths.

// CHECK-LABEL: func.func @dead_grad
// CHECK-SAME: (%{{.*}}: memref<f32>, %[[X:.*]]: memref<?x?xbf16>, %{{.*}}: memref<?xi64>)
// CHECK-NOT:   gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xbf16>
// CHECK:       gpu.launch_func @xent_kernels::@xent_grad_{{[0-9]+}}
// CHECK:       return %[[X]] : memref<?x?xbf16>
func.func @dead_grad(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<?x?xbf16> {
  %d = xent.cross_entropy_grad mean %g, %x, %t : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?x?xbf16>
  return %d : tensor<?x?xbf16>
}

// -----

// The logits are returned as well: never in place.

// CHECK-LABEL: func.func @live
// CHECK-SAME: (%{{.*}}: memref<f32>, %[[X:.*]]: memref<?x?xbf16>, %{{.*}}: memref<?xi64>)
// CHECK:       %[[D:.*]] = gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xbf16>
// CHECK:       return %{{.*}}, %[[D]], %[[X]] : memref<f32>, memref<?x?xbf16>, memref<?x?xbf16>
func.func @live(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d, %x : tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>
}

// -----

// A gradient op whose logits feed another op afterwards: never in place.

// CHECK-LABEL: func.func @read_later
// CHECK:       gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xf32>
func.func @read_later(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<f32>) {
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  %l = xent.cross_entropy sum %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  return %d, %l : tensor<?x?xf32>, tensor<f32>
}

// -----

// Logits that are a view (here a slice of a padded vocabulary) are read
// through their strides, without a copy; dlogits then gets its own dense
// buffer even though the logits are dead: a gradient written into the view
// would have to be copied (on the host) to be returned.

// CHECK-LABEL: func.func @dead_slice
// CHECK-SAME: (%{{.*}}: memref<f32>, %[[XP:.*]]: memref<?x32064xbf16>, %{{.*}}: memref<?xi64>)
// CHECK-NOT:   memref.alloc
// CHECK-NOT:   memref.copy
// CHECK:       %[[SLICE:.*]] = memref.subview %[[XP]][0, 0] [%{{.*}}, 32000] [1, 1] : memref<?x32064xbf16> to memref<?x32000xbf16, strided<[32064, 1]>>
// CHECK:       %[[SV:.*]] = memref.cast %[[SLICE]] : memref<?x32000xbf16, strided<[32064, 1]>> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK:       %[[D:.*]] = gpu.alloc (%{{.*}}) : memref<?x32000xbf16>
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_grad_{{[0-9]+}} {{.*}} args(%[[SV]] : memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK-NOT:   memref.copy
// CHECK:       return %{{.*}}, %[[D]] : memref<f32>, memref<?x32000xbf16>
func.func @dead_slice(%g: tensor<f32>, %xp: tensor<?x32064xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x32000xbf16>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xp, %c0 : tensor<?x32064xbf16>
  %x = tensor.extract_slice %xp[0, 0] [%n, 32000] [1, 1] : tensor<?x32064xbf16> to tensor<?x32000xbf16>
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<?x32000xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x32000xbf16>)
  return %l, %d : tensor<f32>, tensor<?x32000xbf16>
}
