// xent-cpu-pipeline's options: rows through OpenMP unless threads=1; the
// class loops in vectors of vector-width lanes (4 per step), exp as a
// polynomial (no libm call); vector-width=1 leaves scalar loops.
// RUN: xent-opt %s --xent-cpu-pipeline="vector-width=8 threads=2" | FileCheck %s
// RUN: xent-opt %s --xent-cpu-pipeline="vector-width=8 threads=1" | FileCheck %s --check-prefix=SERIAL
// RUN: xent-opt %s --xent-cpu-pipeline="vector-width=1 threads=1" | FileCheck %s --check-prefix=SCALAR
// RUN: not xent-opt %s --xent-cpu-pipeline="threads=-2" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: '-2' value invalid for uint argument

// CHECK-LABEL: llvm.func @joint
// CHECK: omp.parallel num_threads(%{{.*}} : i32)
// CHECK: omp.wsloop
// CHECK: llvm.fmul %{{.*}} : vector<32xf32>
// CHECK-NOT: llvm.call @expf
// CHECK-NOT: llvm.intr.exp
// CHECK: llvm.return

// SERIAL-LABEL: llvm.func @joint
// SERIAL-NOT: omp.
// SERIAL: vector<32xf32>
// SERIAL: llvm.return

// SCALAR-LABEL: llvm.func @joint
// SCALAR-NOT: vector<
// SCALAR: llvm.return
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>) attributes {llvm.emit_c_interface} {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {ignore_index = -100 : i64} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}
