#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> ()>
#map3 = affine_map<(d0) -> (d0)>
#map4 = affine_map<(d0, d1) -> (d0, 0)>
#map5 = affine_map<(d0, d1) -> (0, d1)>
#map6 = affine_map<() -> ()>
module @jit_t5x_z_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = arith.constant 8.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 0x7F800000 : f32
    %cst_2 = arith.constant dense<9.99999974E-5> : tensor<f32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_5 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.fill ins(%cst_5 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.maximumf %out, %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %3 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel"]} ins(%cst_4 : tensor<f32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %4 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%3, %2 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.maximumf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %5 = tensor.empty() : tensor<8xi1>
    %6 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%4 : tensor<8xf32>) outs(%5 : tensor<8xi1>) {
    ^bb0(%in: f32, %out: i1):
      %44 = math.absf %in : f32
      %45 = arith.cmpf one, %44, %cst_1 : f32
      linalg.yield %45 : i1
    } -> tensor<8xi1>
    %7 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel"]} ins(%cst_3 : tensor<f32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %8 = linalg.generic {indexing_maps = [#map3, #map3, #map3, #map3], iterator_types = ["parallel"]} ins(%6, %4, %7 : tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: i1, %in_6: f32, %in_7: f32, %out: f32):
      %44 = arith.select %in, %in_6, %in_7 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %9 = tensor.empty() : tensor<8x1xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<8xf32>) outs(%9 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %11 = tensor.empty() : tensor<8x10xf32>
    %12 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<8x1xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %12 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.subf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8x10xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<8x10xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = math.exp %in : f32
      linalg.yield %44 : f32
    } -> tensor<8x10xf32>
    %15 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%14 : tensor<8x10xf32>) outs(%15 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.addf %out, %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %17 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%16 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = math.absf %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %18 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%17 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = math.log %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %19 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%18, %8 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.addf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %20 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%19 : tensor<8xf32>) outs(%9 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %21 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel"]} ins(%20 : tensor<8x1xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %22 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %21 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.subf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8x10xf32>
    %23 = tensor.empty() : tensor<8x1xi32>
    %24 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%23 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %25 = tensor.empty() : tensor<1x10xi32>
    %26 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%25 : tensor<1x10xi32>) {
    ^bb0(%out: i32):
      %44 = linalg.index 1 : index
      %45 = arith.index_cast %44 : index to i32
      linalg.yield %45 : i32
    } -> tensor<1x10xi32>
    %27 = tensor.empty() : tensor<8x10xi32>
    %28 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel"]} ins(%24 : tensor<8x1xi32>) outs(%27 : tensor<8x10xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x10xi32>
    %29 = linalg.generic {indexing_maps = [#map5, #map], iterator_types = ["parallel", "parallel"]} ins(%26 : tensor<1x10xi32>) outs(%27 : tensor<8x10xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x10xi32>
    %30 = tensor.empty() : tensor<8x10xi1>
    %31 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%28, %29 : tensor<8x10xi32>, tensor<8x10xi32>) outs(%30 : tensor<8x10xi1>) {
    ^bb0(%in: i32, %in_6: i32, %out: i1):
      %44 = arith.cmpi eq, %in, %in_6 : i32
      linalg.yield %44 : i1
    } -> tensor<8x10xi1>
    %32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%31 : tensor<8x10xi1>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: i1, %out: f32):
      %44 = arith.uitofp %in : i1 to f32
      linalg.yield %44 : f32
    } -> tensor<8x10xf32>
    %33 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%32, %22 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%11 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.mulf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8x10xf32>
    %34 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%33 : tensor<8x10xf32>) outs(%15 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.addf %out, %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %35 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%34 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.negf %in : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %36 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%19, %19 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.mulf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %37 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel"]} ins(%cst_2 : tensor<f32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %38 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%37, %36 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.mulf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %39 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%35, %38 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %44 = arith.addf %in, %in_6 : f32
      linalg.yield %44 : f32
    } -> tensor<8xf32>
    %40 = tensor.empty() : tensor<f32>
    %41 = linalg.fill ins(%cst_0 : f32) outs(%40 : tensor<f32>) -> tensor<f32>
    %42 = linalg.generic {indexing_maps = [#map3, #map2], iterator_types = ["reduction"]} ins(%39 : tensor<8xf32>) outs(%41 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.addf %out, %in : f32
      linalg.yield %44 : f32
    } -> tensor<f32>
    %43 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = []} ins(%42 : tensor<f32>) outs(%40 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %44 = arith.divf %in, %cst : f32
      linalg.yield %44 : f32
    } -> tensor<f32>
    return %43 : tensor<f32>
  }
}

