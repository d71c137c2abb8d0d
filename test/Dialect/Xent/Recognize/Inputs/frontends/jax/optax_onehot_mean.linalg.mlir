#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0, d1) -> (0, d1)>
#map4 = affine_map<(d0) -> ()>
#map5 = affine_map<(d0) -> (d0)>
#map6 = affine_map<() -> ()>
module @jit_optax_onehot_mean attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 8.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 0xFF800000 : f32
    %cst_2 = arith.constant dense<0xFF800000> : tensor<f32>
    %0 = tensor.empty() : tensor<8x1xi32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %2 = tensor.empty() : tensor<1x10xi32>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel"]} outs(%2 : tensor<1x10xi32>) {
    ^bb0(%out: i32):
      %34 = linalg.index 1 : index
      %35 = arith.index_cast %34 : index to i32
      linalg.yield %35 : i32
    } -> tensor<1x10xi32>
    %4 = tensor.empty() : tensor<8x10xi32>
    %5 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<8x1xi32>) outs(%4 : tensor<8x10xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x10xi32>
    %6 = linalg.generic {indexing_maps = [#map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<1x10xi32>) outs(%4 : tensor<8x10xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x10xi32>
    %7 = tensor.empty() : tensor<8x10xi1>
    %8 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%5, %6 : tensor<8x10xi32>, tensor<8x10xi32>) outs(%7 : tensor<8x10xi1>) {
    ^bb0(%in: i32, %in_3: i32, %out: i1):
      %34 = arith.cmpi eq, %in, %in_3 : i32
      linalg.yield %34 : i1
    } -> tensor<8x10xi1>
    %9 = tensor.empty() : tensor<8x10xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<8x10xi1>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: i1, %out: f32):
      %34 = arith.uitofp %in : i1 to f32
      linalg.yield %34 : f32
    } -> tensor<8x10xf32>
    %11 = tensor.empty() : tensor<8xf32>
    %12 = linalg.fill ins(%cst_1 : f32) outs(%11 : tensor<8xf32>) -> tensor<8xf32>
    %13 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%12 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.maximumf %out, %in : f32
      linalg.yield %34 : f32
    } -> tensor<8xf32>
    %14 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel"]} ins(%cst_2 : tensor<f32>) outs(%11 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %15 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel"]} ins(%14, %13 : tensor<8xf32>, tensor<8xf32>) outs(%11 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %34 = arith.maximumf %in, %in_3 : f32
      linalg.yield %34 : f32
    } -> tensor<8xf32>
    %16 = tensor.empty() : tensor<8x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<8xf32>) outs(%16 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %18 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%17 : tensor<8x1xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %19 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %18 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %34 = arith.subf %in, %in_3 : f32
      linalg.yield %34 : f32
    } -> tensor<8x10xf32>
    %20 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%19 : tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = math.exp %in : f32
      linalg.yield %34 : f32
    } -> tensor<8x10xf32>
    %21 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<8xf32>) -> tensor<8xf32>
    %22 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%20 : tensor<8x10xf32>) outs(%21 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.addf %out, %in : f32
      linalg.yield %34 : f32
    } -> tensor<8xf32>
    %23 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%22 : tensor<8xf32>) outs(%16 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %24 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%23 : tensor<8x1xf32>) outs(%16 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = math.log %in : f32
      linalg.yield %34 : f32
    } -> tensor<8x1xf32>
    %25 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%24 : tensor<8x1xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %26 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%19, %25 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %34 = arith.subf %in, %in_3 : f32
      linalg.yield %34 : f32
    } -> tensor<8x10xf32>
    %27 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%10, %26 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %34 = arith.mulf %in, %in_3 : f32
      linalg.yield %34 : f32
    } -> tensor<8x10xf32>
    %28 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%27 : tensor<8x10xf32>) outs(%21 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.addf %out, %in : f32
      linalg.yield %34 : f32
    } -> tensor<8xf32>
    %29 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel"]} ins(%28 : tensor<8xf32>) outs(%11 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.negf %in : f32
      linalg.yield %34 : f32
    } -> tensor<8xf32>
    %30 = tensor.empty() : tensor<f32>
    %31 = linalg.fill ins(%cst_0 : f32) outs(%30 : tensor<f32>) -> tensor<f32>
    %32 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["reduction"]} ins(%29 : tensor<8xf32>) outs(%31 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.addf %out, %in : f32
      linalg.yield %34 : f32
    } -> tensor<f32>
    %33 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = []} ins(%32 : tensor<f32>) outs(%30 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.divf %in, %cst : f32
      linalg.yield %34 : f32
    } -> tensor<f32>
    return %33 : tensor<f32>
  }
}

