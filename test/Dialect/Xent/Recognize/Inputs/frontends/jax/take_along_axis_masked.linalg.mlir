#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> ()>
#map3 = affine_map<(d0) -> (d0)>
#map4 = affine_map<(d0, d1) -> (d0, 0)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0, d1, d2) -> ()>
#map7 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map8 = affine_map<(d0, d1, d2) -> (d2)>
#map9 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map10 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map11 = affine_map<() -> ()>
module @jit_take_along_axis_masked attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>, %arg2: tensor<8xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c9 = arith.constant 9 : index
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant dense<0> : tensor<i32>
    %cst_1 = arith.constant dense<10> : tensor<i32>
    %cst_2 = arith.constant dense<9> : tensor<1xi32>
    %cst_3 = arith.constant dense<0x7FC00000> : tensor<f32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_5 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.fill ins(%cst_5 : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = arith.maximumf %out, %in : f32
      linalg.yield %46 : f32
    } -> tensor<8xf32>
    %3 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel"]} ins(%cst_4 : tensor<f32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %4 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%3, %2 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %46 = arith.maximumf %in, %in_6 : f32
      linalg.yield %46 : f32
    } -> tensor<8xf32>
    %5 = tensor.empty() : tensor<8x1xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<8xf32>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %7 = tensor.empty() : tensor<8x10xf32>
    %8 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<8x1xf32>) outs(%7 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %8 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%7 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %46 = arith.subf %in, %in_6 : f32
      linalg.yield %46 : f32
    } -> tensor<8x10xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<8x10xf32>) outs(%7 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = math.exp %in : f32
      linalg.yield %46 : f32
    } -> tensor<8x10xf32>
    %11 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%10 : tensor<8x10xf32>) outs(%11 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = arith.addf %out, %in : f32
      linalg.yield %46 : f32
    } -> tensor<8xf32>
    %13 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<8xf32>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<8x1xf32>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = math.log %in : f32
      linalg.yield %46 : f32
    } -> tensor<8x1xf32>
    %15 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel"]} ins(%14 : tensor<8x1xf32>) outs(%7 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%9, %15 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%7 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %46 = arith.subf %in, %in_6 : f32
      linalg.yield %46 : f32
    } -> tensor<8x10xf32>
    %17 = tensor.empty() : tensor<8x1xi32>
    %18 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%17 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %19 = linalg.generic {indexing_maps = [#map5, #map], iterator_types = ["parallel", "parallel"]} ins(%cst_0 : tensor<i32>) outs(%17 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %20 = tensor.empty() : tensor<8x1xi1>
    %21 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%18, %19 : tensor<8x1xi32>, tensor<8x1xi32>) outs(%20 : tensor<8x1xi1>) {
    ^bb0(%in: i32, %in_6: i32, %out: i1):
      %46 = arith.cmpi slt, %in, %in_6 : i32
      linalg.yield %46 : i1
    } -> tensor<8x1xi1>
    %22 = linalg.generic {indexing_maps = [#map5, #map], iterator_types = ["parallel", "parallel"]} ins(%cst_1 : tensor<i32>) outs(%17 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %23 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%18, %22 : tensor<8x1xi32>, tensor<8x1xi32>) outs(%17 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %in_6: i32, %out: i32):
      %46 = arith.addi %in, %in_6 : i32
      linalg.yield %46 : i32
    } -> tensor<8x1xi32>
    %24 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%21, %23, %18 : tensor<8x1xi1>, tensor<8x1xi32>, tensor<8x1xi32>) outs(%17 : tensor<8x1xi32>) {
    ^bb0(%in: i1, %in_6: i32, %in_7: i32, %out: i32):
      %46 = arith.select %in, %in_6, %in_7 : i32
      linalg.yield %46 : i32
    } -> tensor<8x1xi32>
    %expanded = tensor.expand_shape %24 [[0], [1, 2]] output_shape [8, 1, 1] : tensor<8x1xi32> into tensor<8x1x1xi32>
    %25 = tensor.empty() : tensor<8x1x1xi32>
    %26 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_0 : tensor<i32>) outs(%25 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1x1xi32>
    %27 = tensor.empty() : tensor<8x1x1xi1>
    %28 = linalg.generic {indexing_maps = [#map7, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %26 : tensor<8x1x1xi32>, tensor<8x1x1xi32>) outs(%27 : tensor<8x1x1xi1>) {
    ^bb0(%in: i32, %in_6: i32, %out: i1):
      %46 = arith.cmpi sge, %in, %in_6 : i32
      linalg.yield %46 : i1
    } -> tensor<8x1x1xi1>
    %29 = tensor.empty() : tensor<1x1x1xi32>
    %30 = linalg.generic {indexing_maps = [#map8, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_2 : tensor<1xi32>) outs(%29 : tensor<1x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<1x1x1xi32>
    %31 = linalg.generic {indexing_maps = [#map9, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%30 : tensor<1x1x1xi32>) outs(%25 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1x1xi32>
    %32 = linalg.generic {indexing_maps = [#map7, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %31 : tensor<8x1x1xi32>, tensor<8x1x1xi32>) outs(%27 : tensor<8x1x1xi1>) {
    ^bb0(%in: i32, %in_6: i32, %out: i1):
      %46 = arith.cmpi sle, %in, %in_6 : i32
      linalg.yield %46 : i1
    } -> tensor<8x1x1xi1>
    %33 = linalg.generic {indexing_maps = [#map7, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28, %32 : tensor<8x1x1xi1>, tensor<8x1x1xi1>) outs(%27 : tensor<8x1x1xi1>) {
    ^bb0(%in: i1, %in_6: i1, %out: i1):
      %46 = arith.andi %in, %in_6 : i1
      linalg.yield %46 : i1
    } -> tensor<8x1x1xi1>
    %34 = linalg.fill ins(%true : i1) outs(%20 : tensor<8x1xi1>) -> tensor<8x1xi1>
    %35 = linalg.generic {indexing_maps = [#map7, #map10], iterator_types = ["parallel", "parallel", "reduction"]} ins(%33 : tensor<8x1x1xi1>) outs(%34 : tensor<8x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %46 = arith.andi %out, %in : i1
      linalg.yield %46 : i1
    } -> tensor<8x1xi1>
    %36 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%5 : tensor<8x1xf32>) {
    ^bb0(%out: f32):
      %46 = linalg.index 0 : index
      %extracted = tensor.extract %expanded[%46, %c0, %c0] : tensor<8x1x1xi32>
      %47 = arith.index_cast %extracted : i32 to index
      %48 = arith.maxsi %47, %c0 : index
      %49 = arith.minsi %48, %c9 : index
      %extracted_6 = tensor.extract %16[%46, %49] : tensor<8x10xf32>
      linalg.yield %extracted_6 : f32
    } -> tensor<8x1xf32>
    %37 = linalg.generic {indexing_maps = [#map5, #map], iterator_types = ["parallel", "parallel"]} ins(%cst_3 : tensor<f32>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %38 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%35, %36, %37 : tensor<8x1xi1>, tensor<8x1xf32>, tensor<8x1xf32>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: i1, %in_6: f32, %in_7: f32, %out: f32):
      %46 = arith.select %in, %in_6, %in_7 : f32
      linalg.yield %46 : f32
    } -> tensor<8x1xf32>
    %collapsed = tensor.collapse_shape %38 [[0, 1]] : tensor<8x1xf32> into tensor<8xf32>
    %39 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%collapsed : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = arith.negf %in : f32
      linalg.yield %46 : f32
    } -> tensor<8xf32>
    %40 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel"]} ins(%39, %arg2 : tensor<8xf32>, tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %46 = arith.mulf %in, %in_6 : f32
      linalg.yield %46 : f32
    } -> tensor<8xf32>
    %41 = tensor.empty() : tensor<f32>
    %42 = linalg.fill ins(%cst : f32) outs(%41 : tensor<f32>) -> tensor<f32>
    %43 = linalg.generic {indexing_maps = [#map3, #map2], iterator_types = ["reduction"]} ins(%40 : tensor<8xf32>) outs(%42 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = arith.addf %out, %in : f32
      linalg.yield %46 : f32
    } -> tensor<f32>
    %44 = linalg.generic {indexing_maps = [#map3, #map2], iterator_types = ["reduction"]} ins(%arg2 : tensor<8xf32>) outs(%42 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %46 = arith.addf %out, %in : f32
      linalg.yield %46 : f32
    } -> tensor<f32>
    %45 = linalg.generic {indexing_maps = [#map11, #map11, #map11], iterator_types = []} ins(%43, %44 : tensor<f32>, tensor<f32>) outs(%41 : tensor<f32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %46 = arith.divf %in, %in_6 : f32
      linalg.yield %46 : f32
    } -> tensor<f32>
    return %45 : tensor<f32>
  }
}

