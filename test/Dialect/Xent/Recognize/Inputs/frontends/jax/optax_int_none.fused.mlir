#map = affine_map<(d0, d1, d2) -> (d0)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0) -> (d0)>
#map5 = affine_map<(d0) -> ()>
#map6 = affine_map<(d0, d1) -> (d0)>
module @jit_optax_int_none attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<8xf32> {jax.result_info = "result"}) {
    %cst = arith.constant 0x7FC00000 : f32
    %c9_i32 = arith.constant 9 : i32
    %c10_i32 = arith.constant 10 : i32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 0x7F800000 : f32
    %cst_2 = arith.constant 0xFF800000 : f32
    %c0_i32 = arith.constant 0 : i32
    %c9 = arith.constant 9 : index
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %0 = tensor.empty() : tensor<8x1xi1>
    %1 = tensor.empty() : tensor<8x1x1xi32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%1 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      %19 = arith.addi %in, %c10_i32 : i32
      %20 = arith.cmpi slt, %in, %c0_i32 : i32
      %21 = arith.select %20, %19, %in : i32
      linalg.yield %21 : i32
    } -> tensor<8x1x1xi32>
    %3 = linalg.fill ins(%true : i1) outs(%0 : tensor<8x1xi1>) -> tensor<8x1xi1>
    %4 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<8x1x1xi32>) outs(%3 : tensor<8x1xi1>) {
    ^bb0(%in: i32, %out: i1):
      %19 = arith.cmpi sle, %in, %c9_i32 : i32
      %20 = arith.cmpi sge, %in, %c0_i32 : i32
      %21 = arith.andi %20, %19 : i1
      %22 = arith.andi %out, %21 : i1
      linalg.yield %22 : i1
    } -> tensor<8x1xi1>
    %5 = tensor.empty() : tensor<8x1xf32>
    %6 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<8x1xi1>) outs(%5 : tensor<8x1xf32>) {
    ^bb0(%in: i1, %out: f32):
      %19 = linalg.index 0 : index
      %extracted = tensor.extract %2[%19, %c0, %c0] : tensor<8x1x1xi32>
      %20 = arith.index_cast %extracted : i32 to index
      %21 = arith.maxsi %20, %c0 : index
      %22 = arith.minsi %21, %c9 : index
      %extracted_3 = tensor.extract %arg0[%19, %22] : tensor<8x10xf32>
      %23 = arith.select %in, %extracted_3, %cst : f32
      linalg.yield %23 : f32
    } -> tensor<8x1xf32>
    %7 = tensor.empty() : tensor<i1>
    %8 = tensor.empty() : tensor<1xi32>
    %9 = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel"]} outs(%8 : tensor<1xi32>) {
    ^bb0(%out: i32):
      linalg.yield %c0_i32 : i32
    } -> tensor<1xi32>
    %10 = linalg.fill ins(%true : i1) outs(%7 : tensor<i1>) -> tensor<i1>
    %11 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["reduction"]} ins(%9 : tensor<1xi32>) outs(%10 : tensor<i1>) {
    ^bb0(%in: i32, %out: i1):
      %19 = arith.cmpi sle, %in, %c0_i32 : i32
      %20 = arith.cmpi sge, %in, %c0_i32 : i32
      %21 = arith.andi %20, %19 : i1
      %22 = arith.andi %out, %21 : i1
      linalg.yield %22 : i1
    } -> tensor<i1>
    %12 = tensor.empty() : tensor<8xf32>
    %13 = linalg.fill ins(%cst_2 : f32) outs(%12 : tensor<8xf32>) -> tensor<8xf32>
    %14 = linalg.generic {indexing_maps = [#map3, #map6], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%13 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = arith.maximumf %out, %in : f32
      linalg.yield %19 : f32
    } -> tensor<8xf32>
    %15 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel"]} ins(%14 : tensor<8xf32>) outs(%12 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %19 = math.absf %in : f32
      %20 = arith.cmpf one, %19, %cst_1 : f32
      %21 = arith.select %20, %in, %cst_0 : f32
      linalg.yield %21 : f32
    } -> tensor<8xf32>
    %16 = linalg.fill ins(%cst_0 : f32) outs(%12 : tensor<8xf32>) -> tensor<8xf32>
    %17 = linalg.generic {indexing_maps = [#map3, #map6, #map6], iterator_types = ["parallel", "reduction"]} ins(%arg0, %15 : tensor<8x10xf32>, tensor<8xf32>) outs(%16 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %19 = arith.subf %in, %in_3 : f32
      %20 = math.exp %19 : f32
      %21 = arith.addf %out, %20 : f32
      linalg.yield %21 : f32
    } -> tensor<8xf32>
    %18 = linalg.generic {indexing_maps = [#map4, #map4, #map5, #map4], iterator_types = ["parallel"]} ins(%17, %15, %11 : tensor<8xf32>, tensor<8xf32>, tensor<i1>) outs(%12 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %in_4: i1, %out: f32):
      %19 = linalg.index 0 : index
      %extracted = tensor.extract %9[%c0] : tensor<1xi32>
      %20 = arith.index_cast %extracted : i32 to index
      %21 = arith.maxsi %20, %c0 : index
      %22 = arith.minsi %21, %c0 : index
      %extracted_5 = tensor.extract %6[%19, %22] : tensor<8x1xf32>
      %23 = arith.select %in_4, %extracted_5, %cst : f32
      %24 = math.absf %in : f32
      %25 = math.log %24 : f32
      %26 = arith.addf %25, %in_3 : f32
      %27 = arith.subf %26, %23 : f32
      linalg.yield %27 : f32
    } -> tensor<8xf32>
    return %18 : tensor<8xf32>
  }
}

