// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu --one-shot-bufferize --canonicalize --cse | FileCheck %s
// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=BUF

// The kernels take every buffer in its own rank with any strides: a row is
// an index of every dim but the class axis (the block id delinearized,
// innermost dim fastest), and each load goes through the buffer's strides.
// With the class axis in the middle there is no vector path.

// CHECK-LABEL: func.func @class_axis_1
// CHECK:       %[[D0:.*]] = tensor.dim %{{.*}}, %c0
// CHECK:       %[[D2:.*]] = tensor.dim %{{.*}}, %c2
// CHECK:       %[[ROWS:.*]] = arith.muli %[[D0]], %[[D2]] : index
// CHECK:       %[[GRID:.*]] = arith.maxui %[[ROWS]], %c1
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_[0-9]+]] blocks in (%[[GRID]], %c1, %c1) {{.*}} args(%{{.*}} : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %{{.*}} : memref<?x?xi32, strided<[?, ?], offset: ?>>, %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}} : i64)
// CHECK:       gpu.func @[[K]](%[[X:.*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[T:.*]]: memref<?x?xi32, strided<[?, ?], offset: ?>>, %[[L:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}}: i64)
// CHECK:         %[[B:.*]] = gpu.block_id x
// CHECK:         %[[C:.*]] = memref.dim %[[X]], %c1
// CHECK:         %[[N2:.*]] = memref.dim %[[X]], %c2
// CHECK:         scf.if
// CHECK:           %[[I2:.*]] = arith.remui %[[B]], %[[N2]] : index
// CHECK:           %[[I0:.*]] = arith.divui %[[B]], %[[N2]] : index
// CHECK:           memref.load %[[T]][%[[I0]], %[[I2]]]
// CHECK-NOT:       vector.load
// CHECK:           scf.for %[[CL:.*]] = %{{.*}} to %[[C]]
// CHECK:             memref.load %[[X]][%[[I0]], %[[CL]], %[[I2]]]
// CHECK:           memref.store %{{.*}}, %[[L]][%[[I0]], %[[I2]]]
func.func @class_axis_1(%x: tensor<?x?x?xf32>, %t: tensor<?x?xi32>) -> tensor<?x?xf32> {
  %l = xent.cross_entropy none %x, %t {axis = 1 : i64} : (tensor<?x?x?xf32>, tensor<?x?xi32>) -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// How a framework passes views (xent.torch): buffers with strides taken as
// tensors. Bufferization hands them to the kernels as they are: no host
// allocation, no copy; the row kernel checks at run time whether the class
// stride is 1 and the row 16-byte aligned before it uses vector loads.

// BUF-LABEL: func.func @views
// BUF-SAME: (%[[X:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[T:.*]]: memref<?xi64, strided<[?], offset: ?>>, %[[DX:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>
// BUF-NOT:  memref.alloc
// BUF-NOT:  memref.copy
// BUF:      gpu.launch_func @xent_kernels::@xent_loss_grad_{{[0-9]+}} {{.*}} args(%[[X]] : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[T]] : memref<?xi64, strided<[?], offset: ?>>, {{.*}}, %[[DX]] : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %{{.*}} : i64)
// BUF-NOT:  memref.copy
// BUF:      return
func.func @views(%x: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %t: memref<?xi64, strided<[?], offset: ?>>,
                 %dx: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %g: memref<f32>, %loss: memref<f32>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x?xbf16, strided<[?, ?], offset: ?>> to tensor<?x?xbf16>
  %tt = bufferization.to_tensor %t restrict : memref<?xi64, strided<[?], offset: ?>> to tensor<?xi64>
  %gt = bufferization.to_tensor %g restrict : memref<f32> to tensor<f32>
  %l, %d = xent.cross_entropy_and_grad mean %gt, %xt, %tt : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  bufferization.materialize_in_destination %l in restrict writable %loss : (tensor<f32>, memref<f32>) -> ()
  bufferization.materialize_in_destination %d in restrict writable %dx : (tensor<?x?xbf16>, memref<?x?xbf16, strided<[?, ?], offset: ?>>) -> ()
  return
}
