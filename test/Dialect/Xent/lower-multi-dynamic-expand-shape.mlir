// RUN: xent-opt %s --xent-lower-multi-dynamic-expand-shape --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-lower-multi-dynamic-expand-shape --expand-strided-metadata --split-input-file -o /dev/null

// Two dynamic sizes in one group: a reinterpret_cast of the base buffer with
// the output shape as sizes and the strides formed from the innermost out.
// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%[[A:.*]]: memref<?xf32>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK:         %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[A]]
// CHECK:         memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[T]]], strides: [%[[T]], 1] : memref<f32> to memref<?x?xf32>
// CHECK-NOT:     memref.expand_shape
func.func @rows(%a: memref<?xf32>, %b: index, %t: index) -> memref<?x?xf32> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%b, %t] : memref<?xf32> into memref<?x?xf32>
  return %e : memref<?x?xf32>
}

// -----

// A strided source with a static inner size: the group's strides scale the
// source's stride.
// CHECK-LABEL: func.func @strided
// CHECK-SAME:    (%[[A:.*]]: memref<?x8xf32, strided<[?, 1], offset: ?>>, %[[X:.*]]: index, %[[Y:.*]]: index, %[[Z:.*]]: index)
// CHECK:         %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[S:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK-DAG:     %[[YZ:.*]] = arith.muli %[[S]]#0, %[[Z]]
// CHECK-DAG:     %[[XYZ:.*]] = arith.muli %[[YZ]], %[[Y]]
// CHECK:         memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[X]], %[[Y]], %[[Z]], 8], strides: [%[[XYZ]], %[[YZ]], %[[S]]#0, 1]
func.func @strided(%a: memref<?x8xf32, strided<[?, 1], offset: ?>>, %x: index, %y: index, %z: index) -> memref<?x?x?x8xf32, strided<[?, ?, ?, 1], offset: ?>> {
  %e = memref.expand_shape %a [[0, 1, 2], [3]] output_shape [%x, %y, %z, 8] : memref<?x8xf32, strided<[?, 1], offset: ?>> into memref<?x?x?x8xf32, strided<[?, ?, ?, 1], offset: ?>>
  return %e : memref<?x?x?x8xf32, strided<[?, ?, ?, 1], offset: ?>>
}

// -----

// One dynamic size a group: left to expand-strided-metadata.
// CHECK-LABEL: func.func @single
// CHECK:         memref.expand_shape
// CHECK-NOT:     memref.reinterpret_cast
func.func @single(%a: memref<?xf32>, %b: index) -> memref<?x4xf32> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%b, 4] : memref<?xf32> into memref<?x4xf32>
  return %e : memref<?x4xf32>
}
