// Variants of jax/take_along_axis_mean.fused.mlir that are raised: the
// log-softmax also returned (kept for its other user), i64 labels (JAX with
// x64 enabled; the wrapped label is never the lowest i64). Checked by
// frontends-jax-near-misses.mlir.

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1, d2) -> (d0)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<() -> ()>
module @jax_other_users {
  func.func @log_softmax_also_returned(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32>, tensor<8x10xf32>) {
    %cst = arith.constant 0x7FC00000 : f32
    %c9_i32 = arith.constant 9 : i32
    %c10_i32 = arith.constant 10 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant 8.000000e+00 : f32
    %c9 = arith.constant 9 : index
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.fill ins(%cst_2 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = arith.maximumf %out, %in : f32
      linalg.yield %17 : f32
    } -> tensor<8xf32>
    %3 = tensor.empty() : tensor<8x10xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<8x10xf32>, tensor<8xf32>) outs(%3 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %17 = arith.subf %in, %in_3 : f32
      linalg.yield %17 : f32
    } -> tensor<8x10xf32>
    %5 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<8x10xf32>) outs(%5 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = math.exp %in : f32
      %18 = arith.addf %out, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<8xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %6 : tensor<8x10xf32>, tensor<8xf32>) outs(%3 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %17 = math.log %in_3 : f32
      %18 = arith.subf %in, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<8x10xf32>
    %8 = tensor.empty() : tensor<8x1xi1>
    %9 = tensor.empty() : tensor<8x1x1xi32>
    %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%9 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      %17 = arith.addi %in, %c10_i32 : i32
      %18 = arith.cmpi slt, %in, %c0_i32 : i32
      %19 = arith.select %18, %17, %in : i32
      linalg.yield %19 : i32
    } -> tensor<8x1x1xi32>
    %11 = linalg.fill ins(%true : i1) outs(%8 : tensor<8x1xi1>) -> tensor<8x1xi1>
    %12 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%10 : tensor<8x1x1xi32>) outs(%11 : tensor<8x1xi1>) {
    ^bb0(%in: i32, %out: i1):
      %17 = arith.cmpi sle, %in, %c9_i32 : i32
      %18 = arith.cmpi sge, %in, %c0_i32 : i32
      %19 = arith.andi %18, %17 : i1
      %20 = arith.andi %out, %19 : i1
      linalg.yield %20 : i1
    } -> tensor<8x1xi1>
    %13 = tensor.empty() : tensor<f32>
    %14 = linalg.fill ins(%cst_1 : f32) outs(%13 : tensor<f32>) -> tensor<f32>
    %15 = linalg.generic {indexing_maps = [#map, #map5], iterator_types = ["reduction", "reduction"]} ins(%12 : tensor<8x1xi1>) outs(%14 : tensor<f32>) {
    ^bb0(%in: i1, %out: f32):
      %17 = linalg.index 0 : index
      %extracted = tensor.extract %10[%17, %c0, %c0] : tensor<8x1x1xi32>
      %18 = arith.index_cast %extracted : i32 to index
      %19 = arith.maxsi %18, %c0 : index
      %20 = arith.minsi %19, %c9 : index
      %extracted_3 = tensor.extract %7[%17, %20] : tensor<8x10xf32>
      %21 = arith.select %in, %extracted_3, %cst : f32
      %22 = arith.addf %out, %21 : f32
      linalg.yield %22 : f32
    } -> tensor<f32>
    %16 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = []} ins(%15 : tensor<f32>) outs(%13 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = arith.divf %in, %cst_0 : f32
      %18 = arith.negf %17 : f32
      linalg.yield %18 : f32
    } -> tensor<f32>
    return %16, %7 : tensor<f32>, tensor<8x10xf32>
  }

  func.func @i64_wrapped(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi64>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 0x7FC00000 : f32
    %c9_i32 = arith.constant 9 : i64
    %c10_i32 = arith.constant 10 : i64
    %c0_i32 = arith.constant 0 : i64
    %cst_0 = arith.constant 8.000000e+00 : f32
    %c9 = arith.constant 9 : index
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.fill ins(%cst_2 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = arith.maximumf %out, %in : f32
      linalg.yield %17 : f32
    } -> tensor<8xf32>
    %3 = tensor.empty() : tensor<8x10xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<8x10xf32>, tensor<8xf32>) outs(%3 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %17 = arith.subf %in, %in_3 : f32
      linalg.yield %17 : f32
    } -> tensor<8x10xf32>
    %5 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<8x10xf32>) outs(%5 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = math.exp %in : f32
      %18 = arith.addf %out, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<8xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %6 : tensor<8x10xf32>, tensor<8xf32>) outs(%3 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %17 = math.log %in_3 : f32
      %18 = arith.subf %in, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<8x10xf32>
    %8 = tensor.empty() : tensor<8x1xi1>
    %9 = tensor.empty() : tensor<8x1x1xi64>
    %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<8xi64>) outs(%9 : tensor<8x1x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %17 = arith.addi %in, %c10_i32 : i64
      %18 = arith.cmpi slt, %in, %c0_i32 : i64
      %19 = arith.select %18, %17, %in : i64
      linalg.yield %19 : i64
    } -> tensor<8x1x1xi64>
    %11 = linalg.fill ins(%true : i1) outs(%8 : tensor<8x1xi1>) -> tensor<8x1xi1>
    %12 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%10 : tensor<8x1x1xi64>) outs(%11 : tensor<8x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %17 = arith.cmpi sle, %in, %c9_i32 : i64
      %18 = arith.cmpi sge, %in, %c0_i32 : i64
      %19 = arith.andi %18, %17 : i1
      %20 = arith.andi %out, %19 : i1
      linalg.yield %20 : i1
    } -> tensor<8x1xi1>
    %13 = tensor.empty() : tensor<f32>
    %14 = linalg.fill ins(%cst_1 : f32) outs(%13 : tensor<f32>) -> tensor<f32>
    %15 = linalg.generic {indexing_maps = [#map, #map5], iterator_types = ["reduction", "reduction"]} ins(%12 : tensor<8x1xi1>) outs(%14 : tensor<f32>) {
    ^bb0(%in: i1, %out: f32):
      %17 = linalg.index 0 : index
      %extracted = tensor.extract %10[%17, %c0, %c0] : tensor<8x1x1xi64>
      %18 = arith.index_cast %extracted : i64 to index
      %19 = arith.maxsi %18, %c0 : index
      %20 = arith.minsi %19, %c9 : index
      %extracted_3 = tensor.extract %7[%17, %20] : tensor<8x10xf32>
      %21 = arith.select %in, %extracted_3, %cst : f32
      %22 = arith.addf %out, %21 : f32
      linalg.yield %22 : f32
    } -> tensor<f32>
    %16 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = []} ins(%15 : tensor<f32>) outs(%13 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %17 = arith.divf %in, %cst_0 : f32
      %18 = arith.negf %17 : f32
      linalg.yield %18 : f32
    } -> tensor<f32>
    return %16 : tensor<f32>
  }

}
