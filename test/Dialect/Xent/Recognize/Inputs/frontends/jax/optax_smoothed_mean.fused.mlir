#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> ()>
#map4 = affine_map<() -> ()>
module @jit_optax_smoothed_mean attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 0.00999999977 : f32
    %cst_0 = arith.constant 0.899999976 : f32
    %cst_1 = arith.constant 8.000000e+00 : f32
    %cst_2 = arith.constant 0.000000e+00 : f32
    %cst_3 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8x10xf32>
    %1 = tensor.empty() : tensor<8xf32>
    %2 = linalg.fill ins(%cst_3 : f32) outs(%1 : tensor<8xf32>) -> tensor<8xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%2 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.maximumf %out, %in : f32
      linalg.yield %12 : f32
    } -> tensor<8xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3 : tensor<8x10xf32>, tensor<8xf32>) outs(%0 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %12 = arith.subf %in, %in_4 : f32
      linalg.yield %12 : f32
    } -> tensor<8x10xf32>
    %5 = linalg.fill ins(%cst_2 : f32) outs(%1 : tensor<8xf32>) -> tensor<8xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<8x10xf32>) outs(%5 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.exp %in : f32
      %13 = arith.addf %out, %12 : f32
      linalg.yield %13 : f32
    } -> tensor<8xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg1, %4, %6 : tensor<8xi32>, tensor<8x10xf32>, tensor<8xf32>) outs(%5 : tensor<8xf32>) {
    ^bb0(%in: i32, %in_4: f32, %in_5: f32, %out: f32):
      %12 = linalg.index 1 : index
      %13 = math.log %in_5 : f32
      %14 = arith.subf %in_4, %13 : f32
      %15 = arith.index_cast %12 : index to i32
      %16 = arith.cmpi eq, %in, %15 : i32
      %17 = arith.uitofp %16 : i1 to f32
      %18 = arith.mulf %17, %cst_0 : f32
      %19 = arith.addf %18, %cst : f32
      %20 = arith.mulf %19, %14 : f32
      %21 = arith.addf %out, %20 : f32
      linalg.yield %21 : f32
    } -> tensor<8xf32>
    %8 = tensor.empty() : tensor<f32>
    %9 = linalg.fill ins(%cst_2 : f32) outs(%8 : tensor<f32>) -> tensor<f32>
    %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["reduction"]} ins(%7 : tensor<8xf32>) outs(%9 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.negf %in : f32
      %13 = arith.addf %out, %12 : f32
      linalg.yield %13 : f32
    } -> tensor<f32>
    %11 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = []} ins(%10 : tensor<f32>) outs(%8 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_1 : f32
      linalg.yield %12 : f32
    } -> tensor<f32>
    return %11 : tensor<f32>
  }
}

