// A result materialized in a caller's buffer is computed in it:
// eliminate-empty-tensors gives the gradient's rows that buffer, so after
// bufferization the only allocations are per-row statistics and scalars (no
// buffer of two dynamic sizes, no copy into the argument).
// RUN: xent-opt %s --xent-cpu-pipeline --mlir-print-ir-after=one-shot-bufferize 2>&1 >/dev/null \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @joint(
// CHECK-SAME: %[[D:[a-z0-9]+]]: memref<?x?xf32>)
// CHECK-NOT: memref.alloc(%{{[^)]*}}, %{{[^)]*}})
// CHECK-NOT: memref.copy %{{.*}}, %[[D]]
// CHECK: scf.forall
// CHECK: memref.subview %[[D]]
// CHECK-NOT: memref.alloc(%{{[^)]*}}, %{{[^)]*}})
// CHECK: return
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>,
                 %d: memref<?x?xf32>) -> tensor<f32> attributes {llvm.emit_c_interface} {
  %l, %dx = xent.cross_entropy_and_grad mean %g, %x, %t {ignore_index = -100 : i64}
      : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  bufferization.materialize_in_destination %dx in restrict writable %d
      : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
  return %l : tensor<f32>
}
