// RUN: xent-opt %s -split-input-file --xent-host-compute-to-device | FileCheck %s
// RUN: xent-opt %s -split-input-file --xent-host-compute-to-device="threads=128" | FileCheck %s --check-prefix=T128

// In xent-gpu-pipeline the buffers are device memory: what the host code
// computes on them (the linalg a frontend leaves around the raised op) runs
// as kernels, allocations are device allocations.

// CHECK-LABEL: func.func @labels_and_a_sum
// The label remapping: blocks of 256 threads along its one parallel loop.
// CHECK:         %[[T:.*]] = gpu.alloc () : memref<8xi32>
// CHECK:         %[[STEP:.*]] = arith.muli %{{.*}}, %c256 : index
// CHECK:         %[[THREADS:.*]] = affine.apply #{{.*}}(%[[STEP]])
// CHECK:         gpu.launch_func @[[K1:[a-z_0-9]+]]::@{{.*}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%[[THREADS]], %{{.*}}, %{{.*}}) args({{.*}}%arg0 : memref<8xi32>, %[[T]] : memref<8xi32>
// T128:          arith.muli %{{.*}}, %c128 : index
// A reduction with no parallel loop: one block of one thread.
// CHECK:         gpu.launch_func @[[K2:[a-z_0-9]+]]::@{{.*}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}}) args({{.*}}%arg1 : memref<8x10xf32>, %arg2 : memref<f32>)
// A copy on the device; the remapped labels freed after their last use,
// the returned buffer left to the caller.
// CHECK:         %[[R:.*]] = gpu.alloc () : memref<8xi32>
// CHECK-NEXT:    gpu.memcpy %[[R]], %[[T]]
// CHECK-NEXT:    gpu.dealloc %[[T]]
// CHECK-NOT:     gpu.dealloc
// CHECK:         return %[[R]]
// CHECK:       gpu.module @[[K1]]
// CHECK:         arith.cmpi ult
// CHECK:         scf.if
// CHECK:           memref.store
// CHECK:       gpu.module @[[K2]]
// CHECK:         scf.for
// CHECK:           scf.for
func.func @labels_and_a_sum(%t: memref<8xi32>, %x: memref<8x10xf32>, %out: memref<f32>) -> memref<8xi32> {
  %c10 = arith.constant 10 : i32
  %c0 = arith.constant 0 : i32
  %alloc = memref.alloc() : memref<8xi32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : memref<8xi32>) outs(%alloc : memref<8xi32>) {
  ^bb0(%in: i32, %o: i32):
    %a = arith.addi %in, %c10 : i32
    %n = arith.cmpi slt, %in, %c0 : i32
    %s = arith.select %n, %a, %in : i32
    linalg.yield %s : i32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%x : memref<8x10xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %in, %o : f32
    linalg.yield %r : f32
  }
  %scratch = memref.alloc() : memref<8xi32>
  memref.copy %alloc, %scratch : memref<8xi32> to memref<8xi32>
  return %scratch : memref<8xi32>
}

// -----

// Rows x classes: one loop over the N x C elements (the classes fastest:
// neighbouring threads read neighbouring elements), blocks of 256 threads
// along x whatever the op's rank (a launch's y and z have smaller limits),
// at least one block (an empty op launches one that does nothing).
// CHECK-LABEL: func.func @one_hot
// CHECK:         %[[N:.*]] = arith.ceildivui
// CHECK:         %[[C:.*]] = arith.ceildivui
// CHECK:         %[[NC:.*]] = arith.muli %{{.*}}, %[[C]] : index
// CHECK:         %[[BOUND:.*]] = arith.maxui %[[NC]], %c1{{.*}} : index
// CHECK:         %[[STEP:.*]] = arith.muli %{{.*}}, %c256 : index
// CHECK:         %[[BX:.*]] = affine.apply #{{.*}}(%[[BOUND]])[%{{.*}}, %[[STEP]]]
// CHECK:         gpu.launch_func @[[K:[a-z_0-9]+]]::@{{.*}} blocks in (%[[BX]], %c1{{.*}}, %c1{{.*}}) threads in (%{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK:       gpu.module @[[K]]
// CHECK:         %[[I:.*]] = arith.addi
// CHECK:         scf.if
// CHECK-NEXT:      arith.cmpi ult, %[[I]], %{{.*}} : index
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        %[[CLASS:.*]] = arith.remui %[[I]],
// CHECK-NEXT:        %[[ROW:.*]] = arith.divui %[[I]],
func.func @one_hot(%t: memref<?xi64>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?xi64>) outs(%out : memref<?x?xf32>) {
  ^bb0(%in: i64, %o: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %in, %ci : i64
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %eq, %one, %zero : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// A host constant that a kernel reads is copied to the device first.
// CHECK-LABEL: func.func @constant_table
// CHECK:         %[[G:.*]] = memref.get_global @table
// CHECK:         %[[D:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[D]], %[[G]]
// CHECK:         gpu.launch_func {{.*}} args({{.*}}%[[D]] : memref<4xf32>
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @constant_table(%out: memref<4xf32>) {
  %g = memref.get_global @table : memref<4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : memref<4xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}
