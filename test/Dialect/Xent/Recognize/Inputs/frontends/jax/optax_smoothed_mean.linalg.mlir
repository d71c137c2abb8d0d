#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0, d1) -> (0, d1)>
#map4 = affine_map<(d0, d1) -> ()>
#map5 = affine_map<(d0) -> ()>
#map6 = affine_map<(d0) -> (d0)>
#map7 = affine_map<() -> ()>
module @jit_optax_smoothed_mean attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 8.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 0xFF800000 : f32
    %cst_2 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_3 = arith.constant dense<0.00999999977> : tensor<f32>
    %cst_4 = arith.constant dense<0.899999976> : tensor<f32>
    %0 = tensor.empty() : tensor<8x1xi32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %2 = tensor.empty() : tensor<1x10xi32>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel"]} outs(%2 : tensor<1x10xi32>) {
    ^bb0(%out: i32):
      %38 = linalg.index 1 : index
      %39 = arith.index_cast %38 : index to i32
      linalg.yield %39 : i32
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
    ^bb0(%in: i32, %in_5: i32, %out: i1):
      %38 = arith.cmpi eq, %in, %in_5 : i32
      linalg.yield %38 : i1
    } -> tensor<8x10xi1>
    %9 = tensor.empty() : tensor<8x10xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<8x10xi1>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: i1, %out: f32):
      %38 = arith.uitofp %in : i1 to f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %11 = linalg.generic {indexing_maps = [#map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_4 : tensor<f32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %12 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%11, %10 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.mulf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %13 = linalg.generic {indexing_maps = [#map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_3 : tensor<f32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %14 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%12, %13 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.addf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %15 = tensor.empty() : tensor<8xf32>
    %16 = linalg.fill ins(%cst_1 : f32) outs(%15 : tensor<8xf32>) -> tensor<8xf32>
    %17 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%16 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.maximumf %out, %in : f32
      linalg.yield %38 : f32
    } -> tensor<8xf32>
    %18 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel"]} ins(%cst_2 : tensor<f32>) outs(%15 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %19 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%18, %17 : tensor<8xf32>, tensor<8xf32>) outs(%15 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.maximumf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8xf32>
    %20 = tensor.empty() : tensor<8x1xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%19 : tensor<8xf32>) outs(%20 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %22 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%21 : tensor<8x1xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %23 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %22 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.subf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %24 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%23 : tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.exp %in : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %25 = linalg.fill ins(%cst_0 : f32) outs(%15 : tensor<8xf32>) -> tensor<8xf32>
    %26 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%24 : tensor<8x10xf32>) outs(%25 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %out, %in : f32
      linalg.yield %38 : f32
    } -> tensor<8xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%26 : tensor<8xf32>) outs(%20 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %28 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%27 : tensor<8x1xf32>) outs(%20 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.log %in : f32
      linalg.yield %38 : f32
    } -> tensor<8x1xf32>
    %29 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%28 : tensor<8x1xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %30 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%23, %29 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.subf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %31 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%14, %30 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%9 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %38 = arith.mulf %in, %in_5 : f32
      linalg.yield %38 : f32
    } -> tensor<8x10xf32>
    %32 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%31 : tensor<8x10xf32>) outs(%25 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %out, %in : f32
      linalg.yield %38 : f32
    } -> tensor<8xf32>
    %33 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel"]} ins(%32 : tensor<8xf32>) outs(%15 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.negf %in : f32
      linalg.yield %38 : f32
    } -> tensor<8xf32>
    %34 = tensor.empty() : tensor<f32>
    %35 = linalg.fill ins(%cst_0 : f32) outs(%34 : tensor<f32>) -> tensor<f32>
    %36 = linalg.generic {indexing_maps = [#map6, #map5], iterator_types = ["reduction"]} ins(%33 : tensor<8xf32>) outs(%35 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %out, %in : f32
      linalg.yield %38 : f32
    } -> tensor<f32>
    %37 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = []} ins(%36 : tensor<f32>) outs(%34 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.divf %in, %cst : f32
      linalg.yield %38 : f32
    } -> tensor<f32>
    return %37 : tensor<f32>
  }
}

