// RUN: xent-opt %s -allow-unregistered-dialect -split-input-file | xent-opt -allow-unregistered-dialect -split-input-file | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: xent-opt %s -allow-unregistered-dialect -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -canonicalize -split-input-file | FileCheck %s

// xent.launch bufferizes by its BufferizableOpInterface: one-shot analysis
// decides whether a result tied to an input takes the input's buffer; a
// result it does not take is allocated on the device (gpu.alloc) without a
// copy; a destination (an init) is always written. The body is inlined on
// the buffers.

#strided2 = strided<[?, ?], offset: ?>

// ROUNDTRIP-LABEL: func.func @dead
// ROUNDTRIP:       xent.launch ins(%{{.*}} : tensor<?x?xf32>) dims(%{{.*}}, %{{.*}}) tied [0] -> (tensor<?x?xf32>) {
// ROUNDTRIP-NEXT:  ^bb0(%{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>):
// ROUNDTRIP:         "test.write"

// Nothing reads %x after the op: the result is %x's buffer.
// CHECK-LABEL: func.func @dead
// CHECK-SAME:  (%[[X:.*]]: memref<?x?xf32>)
// CHECK-NOT:   gpu.alloc
// CHECK-NOT:   memref.alloc
// CHECK:       %[[V:.*]] = memref.cast %[[X]]
// CHECK:       "test.write"(%[[V]], %[[V]])
// CHECK:       return %[[X]]
func.func @dead(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r = xent.launch ins(%x : tensor<?x?xf32>) dims(%n, %c) tied [0] -> (tensor<?x?xf32>) {
  ^bb0(%in: memref<?x?xf32, #strided2>, %out: memref<?x?xf32, #strided2>):
    "test.write"(%in, %out) : (memref<?x?xf32, #strided2>, memref<?x?xf32, #strided2>) -> ()
  }
  return %r : tensor<?x?xf32>
}

// -----

#strided2 = strided<[?, ?], offset: ?>

// %x is returned as well: the result gets device memory of its own, sized by
// `dims`, and %x is not copied.
// CHECK-LABEL: func.func @live
// CHECK-SAME:  (%[[X:.*]]: memref<?x?xf32>)
// CHECK-DAG:   %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG:   %[[C:.*]] = memref.dim %[[X]], %c1
// CHECK:       %[[R:.*]] = gpu.alloc (%[[N]], %[[C]]) : memref<?x?xf32>
// CHECK-NOT:   memref.copy
// CHECK:       return %[[R]], %[[X]]
func.func @live(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r = xent.launch ins(%x : tensor<?x?xf32>) dims(%n, %c) tied [0] -> (tensor<?x?xf32>) {
  ^bb0(%in: memref<?x?xf32, #strided2>, %out: memref<?x?xf32, #strided2>):
    "test.write"(%in, %out) : (memref<?x?xf32, #strided2>, memref<?x?xf32, #strided2>) -> ()
  }
  return %r, %x : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

#strided2 = strided<[?, ?], offset: ?>

// A later op reads %x: not in place.
// CHECK-LABEL: func.func @read_later
// CHECK:       gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xf32>
// CHECK-NOT:   memref.copy
func.func @read_later(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r = xent.launch ins(%x : tensor<?x?xf32>) dims(%n, %c) tied [0] -> (tensor<?x?xf32>) {
  ^bb0(%in: memref<?x?xf32, #strided2>, %out: memref<?x?xf32, #strided2>):
    "test.write"(%in, %out) : (memref<?x?xf32, #strided2>, memref<?x?xf32, #strided2>) -> ()
  }
  %e = tensor.extract %x[%c0, %c0] : tensor<?x?xf32>
  return %r, %e : tensor<?x?xf32>, f32
}

// -----

#strided2 = strided<[?, ?], offset: ?>

// The input is a view (a slice of a dead, padded tensor): its buffer has
// strides, so the result gets a dense buffer of its own rather than leaving
// in the view.
// CHECK-LABEL: func.func @view
// CHECK-SAME:  (%[[XP:.*]]: memref<4x16xf32>)
// CHECK:       %[[S:.*]] = memref.subview %[[XP]]
// CHECK:       %[[R:.*]] = gpu.alloc () : memref<4x10xf32>
// CHECK-NOT:   memref.copy
// CHECK:       return %[[R]]
func.func @view(%xp: tensor<4x16xf32>) -> tensor<4x10xf32> {
  %x = tensor.extract_slice %xp[0, 0] [4, 10] [1, 1] : tensor<4x16xf32> to tensor<4x10xf32>
  %r = xent.launch ins(%x : tensor<4x10xf32>) tied [0] -> (tensor<4x10xf32>) {
  ^bb0(%in: memref<?x?xf32, #strided2>, %out: memref<?x?xf32, #strided2>):
    "test.write"(%in, %out) : (memref<?x?xf32, #strided2>, memref<?x?xf32, #strided2>) -> ()
  }
  return %r : tensor<4x10xf32>
}

// -----

// A result tied to an init is written into the init's buffer (here a
// caller's buffer taken as a tensor); an untied scalar result is allocated.
// CHECK-LABEL: func.func @destination
// CHECK-SAME:  (%[[X:.*]]: memref<8xf32>, %[[DEST:.*]]: memref<8xf32>)
// CHECK:       %[[S:.*]] = gpu.alloc () : memref<f32>
// CHECK:       "test.write"(%[[X]], %[[S]], %[[DEST]])
// CHECK-NOT:   memref.copy
// CHECK:       return %[[S]]
func.func @destination(%x: tensor<8xf32>, %dest: memref<8xf32>) -> tensor<f32> {
  %d = bufferization.to_tensor %dest restrict writable : memref<8xf32> to tensor<8xf32>
  %s, %r = xent.launch ins(%x : tensor<8xf32>) outs(%d : tensor<8xf32>) tied [-1, 1] -> (tensor<f32>, tensor<8xf32>) {
  ^bb0(%in: memref<8xf32>, %sum: memref<f32>, %out: memref<8xf32>):
    "test.write"(%in, %sum, %out) : (memref<8xf32>, memref<f32>, memref<8xf32>) -> ()
  }
  return %s : tensor<f32>
}

// -----

#strided2 = strided<[?, ?], offset: ?>

// A scalar input (a run-time value for the kernels) is no buffer: it
// reaches the body as it is, and the result tied to the tensor input still
// takes that input's buffer.
// ROUNDTRIP-LABEL: func.func @scalar_input
// ROUNDTRIP:       xent.launch ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?xf32>, f32, i64) dims(%{{.*}}, %{{.*}}) tied [0] -> (tensor<?x?xf32>) {
// ROUNDTRIP-NEXT:  ^bb0(%{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}}: f32, %{{.*}}: i64, %{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>):

// CHECK-LABEL: func.func @scalar_input
// CHECK-SAME:  (%[[X:.*]]: memref<?x?xf32>, %[[E:.*]]: f32, %[[I:.*]]: i64)
// CHECK-NOT:   gpu.alloc
// CHECK:       %[[V:.*]] = memref.cast %[[X]]
// CHECK:       "test.write"(%[[V]], %[[E]], %[[I]], %[[V]])
// CHECK:       return %[[X]]
func.func @scalar_input(%x: tensor<?x?xf32>, %e: f32, %i: i64) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r = xent.launch ins(%x, %e, %i : tensor<?x?xf32>, f32, i64) dims(%n, %c) tied [0] -> (tensor<?x?xf32>) {
  ^bb0(%in: memref<?x?xf32, #strided2>, %s: f32, %k: i64, %out: memref<?x?xf32, #strided2>):
    "test.write"(%in, %s, %k, %out) : (memref<?x?xf32, #strided2>, f32, i64, memref<?x?xf32, #strided2>) -> ()
  }
  return %r : tensor<?x?xf32>
}
