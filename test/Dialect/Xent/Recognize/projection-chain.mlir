// RUN: xent-opt %s --xent-recognize | FileCheck %s

// A projection feeding a chain that xent-recognize raises (the
// linalg.softmax form of F.cross_entropy(x, t) from
// Inputs/linalg_softmax.mlir, its logits a linalg.matmul against the
// transposed weight): the chain becomes xent.cross_entropy, then the
// projection and that op one xent.linear_cross_entropy.

// CHECK-LABEL: func @projected_chain
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<10x16xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy mean %[[H]], %[[W]], %[[T]] {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<10x16xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK:        linalg.matmul
// CHECK:        xent.cross_entropy mean
// CHECK:          linalg.softmax
// CHECK:      return %[[L]] : tensor<f32>
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0) -> ()>
#map3 = affine_map<() -> ()>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @projected_chain(%h: tensor<8x16xf32>, %w: tensor<10x16xf32>, %arg1: tensor<8xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x10xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x10xf32>) -> tensor<8x10xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<10x16xf32>) outs(%acc : tensor<8x10xf32>) -> tensor<8x10xf32>
  %0 = tensor.empty() : tensor<8x10xf32>
  %1 = linalg.softmax dimension(1) ins(%logits : tensor<8x10xf32>) outs(%0 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %2 = tensor.empty() : tensor<8x10xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<8x10xf32>) outs(%2 : tensor<8x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = math.log %in : f32
    linalg.yield %16 : f32
  } -> tensor<8x10xf32>
  %4 = tensor.empty() : tensor<8xf32>
  %c-100_i64 = arith.constant -100 : i64
  %cst = arith.constant 0.000000e+00 : f32
  %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel"]} ins(%arg1 : tensor<8xi64>) outs(%4 : tensor<8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %16 = arith.index_cast %in : i64 to index
    %17 = linalg.index 0 : index
    %extracted = tensor.extract %3[%17, %16] : tensor<8x10xf32>
    %18 = arith.negf %extracted : f32
    %19 = arith.cmpi ne, %in, %c-100_i64 : i64
    %20 = arith.select %19, %18, %cst : f32
    linalg.yield %20 : f32
  } -> tensor<8xf32>
  %cst_0 = arith.constant 0.000000e+00 : f32
  %6 = tensor.empty() : tensor<f32>
  %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<f32>) -> tensor<f32>
  %8 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["reduction"]} ins(%5 : tensor<8xf32>) outs(%7 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.addf %in, %out : f32
    linalg.yield %16 : f32
  } -> tensor<f32>
  %c0_i64 = arith.constant 0 : i64
  %9 = tensor.empty() : tensor<i64>
  %10 = linalg.fill ins(%c0_i64 : i64) outs(%9 : tensor<i64>) -> tensor<i64>
  %c-100_i64_1 = arith.constant -100 : i64
  %11 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["reduction"]} ins(%arg1 : tensor<8xi64>) outs(%10 : tensor<i64>) {
  ^bb0(%in: i64, %out: i64):
    %16 = arith.cmpi ne, %in, %c-100_i64_1 : i64
    %17 = arith.extui %16 : i1 to i64
    %18 = arith.addi %out, %17 : i64
    linalg.yield %18 : i64
  } -> tensor<i64>
  %12 = tensor.empty() : tensor<f32>
  %13 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = []} ins(%11 : tensor<i64>) outs(%12 : tensor<f32>) {
  ^bb0(%in: i64, %out: f32):
    %16 = arith.sitofp %in : i64 to f32
    linalg.yield %16 : f32
  } -> tensor<f32>
  %14 = tensor.empty() : tensor<f32>
  %15 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = []} ins(%8, %13 : tensor<f32>, tensor<f32>) outs(%14 : tensor<f32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %16 = arith.divf %in, %in_2 : f32
    linalg.yield %16 : f32
  } -> tensor<f32>
  return %15 : tensor<f32>
}
