// xent-cpu-vectorize-rows on linalg that is not a decomposition: what it
// leaves alone.
// RUN: xent-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(xent-cpu-vectorize-rows{vector-width=8}),canonicalize,cse)" \
// RUN:   | FileCheck %s

// A contraction is not fused into the row loop (it would read the whole
// weight once per row): the GEMM stays whole, the max over its rows is
// tiled.
// CHECK-LABEL: func.func @gemm_then_max
// CHECK: linalg.matmul
// CHECK: scf.forall
// CHECK-NOT: linalg.matmul
// CHECK: vector.multi_reduction <maximumf>
// CHECK: scf.forall.in_parallel
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @gemm_then_max(%h: tensor<?x?xf32>, %w: tensor<?x?xf32>, %z: tensor<?x?xf32>, %m: tensor<?xf32>) -> tensor<?xf32> {
  %logits = linalg.matmul ins(%h, %w : tensor<?x?xf32>, tensor<?x?xf32>) outs(%z : tensor<?x?xf32>) -> tensor<?x?xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<?x?xf32>) outs(%m : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<?xf32>
  return %max : tensor<?xf32>
}

// -----

// i1 in memory is a byte per element, a vector of i1 packed bits: an op on
// i1 tensors is tiled but not vectorized.
// CHECK-LABEL: func.func @bytes_of_i1
// CHECK: scf.forall
// CHECK-NOT: vector<{{.*}}xi1>
// CHECK: linalg.generic
// CHECK-NOT: vector<{{.*}}xi1>
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @bytes_of_i1(%a: tensor<4x64xi1>, %b: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x64xi1>) outs(%b : tensor<4x64xf32>) {
  ^bb0(%in: i1, %out: f32):
    %1 = arith.uitofp %in : i1 to f32
    linalg.yield %1 : f32
  } -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// An operand read through a constant index (`(d0, 0)`) is not tiled by
// upstream: the op is left as it is.
// CHECK-LABEL: func.func @broadcast_map
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
func.func @broadcast_map(%a: tensor<8x10xf32>, %b: tensor<8x1xf32>) -> tensor<8x1xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x10xf32>) outs(%b : tensor<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %1 = arith.addf %in, %out : f32
    linalg.yield %1 : f32
  } -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// -----

// A reduction reading linalg.index is not split into partial results (LLVM
// 22's partial-reduction tiling leaves the index relative to the tile): its
// rows are tiled, its class loop stays whole.
// CHECK-LABEL: func.func @reads_the_index
// CHECK: scf.forall
// CHECK-NOT: scf.for
// CHECK: linalg.index
// CHECK: scf.forall.in_parallel
#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @reads_the_index(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x?xf32>) outs(%b : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %m = arith.mulf %in, %f : f32
    %s = arith.addf %m, %out : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A sum over all its loops outside the rows is accumulated in f64 and
// rounded once (the loss over rows); a max, or a sum whose accumulator is
// read for more than the addition, keeps f32.
// CHECK-LABEL: func.func @sums_over_rows
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}} : f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: arith.maximumf %{{.*}} : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: arith.mulf
// CHECK-NOT: f64
// CHECK: return
#all = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
func.func @sums_over_rows(%v: tensor<?xf32>, %z: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %sum = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%v : tensor<?xf32>) outs(%z : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  %max = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%v : tensor<?xf32>) outs(%z : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  %scaled = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%v : tensor<?xf32>) outs(%z : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %out, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<f32>
  return %sum, %max, %scaled : tensor<f32>, tensor<f32>, tensor<f32>
}
