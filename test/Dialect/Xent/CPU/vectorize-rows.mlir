// xent-cpu-vectorize-rows on the decomposition: rows over an scf.forall,
// classes over vectors of 4 x vector-width lanes.
// RUN: xent-opt %s --split-input-file --xent-inline-decomposition --canonicalize --cse \
// RUN:   | xent-opt --split-input-file \
// RUN:       --pass-pipeline="builtin.module(func.func(xent-cpu-vectorize-rows{vector-width=8}),canonicalize,cse)" \
// RUN:   | FileCheck %s
// No vectors with vector-width=1; the rows are still tiled.
// RUN: xent-opt %s --split-input-file --xent-inline-decomposition --canonicalize --cse \
// RUN:   | xent-opt --split-input-file \
// RUN:       --pass-pipeline="builtin.module(func.func(xent-cpu-vectorize-rows{vector-width=1}))" \
// RUN:   | FileCheck %s --check-prefix=SCALAR
// A negative width is no width.
// RUN: not xent-opt %s --pass-pipeline="builtin.module(func.func(xent-cpu-vectorize-rows{vector-width=-1}))" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-WIDTH
// BAD-WIDTH: '-1' value invalid for uint argument

// The joint op: one loop over rows computes the row max, the sum of
// exponentials and the gradient's row; the loss over rows reads the row
// statistics that loop yields (no second walk over the logits).
// CHECK-LABEL: func.func @joint
// CHECK: %[[ROWS:.*]]:3 = scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: scf.for %{{.*}} step %c32 iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// CHECK:   arith.maximumf %{{.*}} : vector<32xf32>
// The last, partial tile stays scalar.
// CHECK: scf.for
// CHECK:   linalg.generic
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} [0] : vector<32xf32> to f32
// CHECK: scf.for %{{.*}} step %c32 iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// CHECK:   math.exp %{{.*}} : vector<32xf32>
// CHECK: vector.multi_reduction <add>, %{{.*}} [0] : vector<32xf32> to f32
// The row's target is one scalar: read once, its checks (ignored, in
// range) scalar i1 values, no 64-bit vector of it.
// CHECK: %[[T:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK-DAG: %[[KEPT:.*]] = arith.cmpi ne, %[[T]], %{{.*}} : i64
// CHECK-DAG: %[[INRANGE:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-DAG: %[[TIDX:.*]] = arith.index_cast %{{.*}} : i64 to index
// The division by the row's sum is one reciprocal per row.
// CHECK: %[[RCP:.*]] = arith.divf %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK: scf.for %[[J:.*]] = %{{.*}} step %c32
// CHECK-NOT: arith.divf
// CHECK-NOT: xi64>
// CHECK-NOT: xindex>
// CHECK:   arith.mulf %{{.*}}, %[[RCP]] : vector<32xf32>
// The one-hot term: lanes [0, 32) of i32 against the target's offset in
// the step (-1 outside it).
// CHECK:   %[[OFF:.*]] = arith.subi %[[TIDX]], %[[J]] : index
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[OFF]], %c32 : index
// CHECK:   %[[OFF32:.*]] = arith.index_cast %[[OFF]] : index to i32
// CHECK:   %[[LANE:.*]] = arith.select %[[IN]], %[[OFF32]], %c-1_i32 : i32
// CHECK:   %[[LANES:.*]] = vector.broadcast %[[LANE]] : i32 to vector<32xi32>
// CHECK:   arith.cmpi eq, %[[LANES]], %{{.*}} : vector<32xi32>
// Ignored or out of range: a select on the scalar, not a per-lane blend.
// CHECK:   arith.select %[[INRANGE]], %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK:   arith.select %[[KEPT]], %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK:   vector.transfer_write %{{.*}} : vector<32xf32>, tensor<32xf32>
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK-NOT: iterator_types = ["parallel", "reduction"]
// The sums over rows accumulate in f64, rounded to f32 once.
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}}, %[[ROWS]]#2, %[[ROWS]]#1 :
// CHECK-SAME: outs(%{{.*}} : tensor<f64>, tensor<f64>, tensor<f64>)
// CHECK: %[[V:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}}, %[[V]] : f64
// CHECK: linalg.yield %{{.*}} : f64, f64, f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: return

// SCALAR-LABEL: func.func @joint
// SCALAR: scf.forall
// SCALAR-NOT: vector.
// SCALAR: return
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {ignore_index = -100 : i64} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}

// -----

// Rows shorter than a step are one vector each. The reduction that also
// counts the classes for label smoothing (a sum of a constant, which LLVM
// 22's vectorizer would add once, not once per class) stays a linalg op.
// CHECK-LABEL: func.func @short_rows
// CHECK: scf.forall
// CHECK-NOT: scf.for
// CHECK: vector.transfer_read %{{.*}} : tensor<7xf32>, vector<7xf32>
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} : vector<7xf32> to f32
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK:   math.exp %{{.*}} : f32
// CHECK: scf.forall.in_parallel
func.func @short_rows(%x: tensor<4x7xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t {label_smoothing = 0.5 : f32} : (tensor<4x7xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// No rows: nothing to tile (upstream tiling divides by a loop's size).
// CHECK-LABEL: func.func @no_rows
// CHECK-NOT: scf.forall
// CHECK: return
func.func @no_rows(%x: tensor<0x10xf32>, %t: tensor<0xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<0x10xf32>, tensor<0xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
