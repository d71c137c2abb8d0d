#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> ()>
#map4 = affine_map<() -> ()>
module @jit_t5x_z_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 9.99999974E-5 : f32
    %cst_0 = arith.constant 8.000000e+00 : f32
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant 0x7F800000 : f32
    %cst_3 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.fill ins(%cst_3 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.maximumf %out, %in : f32
      linalg.yield %12 : f32
    } -> tensor<8xf32>
    %3 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%2 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.absf %in : f32
      %13 = arith.cmpf one, %12, %cst_2 : f32
      %14 = arith.select %13, %in, %cst_1 : f32
      linalg.yield %14 : f32
    } -> tensor<8xf32>
    %4 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0, %3 : tensor<8x10xf32>, tensor<8xf32>) outs(%4 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %12 = arith.subf %in, %in_4 : f32
      %13 = math.exp %12 : f32
      %14 = arith.addf %out, %13 : f32
      linalg.yield %14 : f32
    } -> tensor<8xf32>
    %6 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel"]} ins(%5, %3 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %12 = math.absf %in : f32
      %13 = math.log %12 : f32
      %14 = arith.addf %13, %in_4 : f32
      linalg.yield %14 : f32
    } -> tensor<8xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg1, %arg0, %6 : tensor<8xi32>, tensor<8x10xf32>, tensor<8xf32>) outs(%4 : tensor<8xf32>) {
    ^bb0(%in: i32, %in_4: f32, %in_5: f32, %out: f32):
      %12 = linalg.index 1 : index
      %13 = arith.subf %in_4, %in_5 : f32
      %14 = arith.index_cast %12 : index to i32
      %15 = arith.cmpi eq, %in, %14 : i32
      %16 = arith.uitofp %15 : i1 to f32
      %17 = arith.mulf %16, %13 : f32
      %18 = arith.addf %out, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<8xf32>
    %8 = tensor.empty() : tensor<f32>
    %9 = linalg.fill ins(%cst_1 : f32) outs(%8 : tensor<f32>) -> tensor<f32>
    %10 = linalg.generic {indexing_maps = [#map2, #map2, #map3], iterator_types = ["reduction"]} ins(%7, %6 : tensor<8xf32>, tensor<8xf32>) outs(%9 : tensor<f32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %12 = arith.mulf %in_4, %in_4 : f32
      %13 = arith.mulf %12, %cst : f32
      %14 = arith.negf %in : f32
      %15 = arith.addf %14, %13 : f32
      %16 = arith.addf %out, %15 : f32
      linalg.yield %16 : f32
    } -> tensor<f32>
    %11 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = []} ins(%10 : tensor<f32>) outs(%8 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_0 : f32
      linalg.yield %12 : f32
    } -> tensor<f32>
    return %11 : tensor<f32>
  }
}

