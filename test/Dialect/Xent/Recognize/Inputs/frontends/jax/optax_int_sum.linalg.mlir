#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> ()>
#map3 = affine_map<(d0, d1, d2) -> ()>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map5 = affine_map<(d0, d1, d2) -> (d2)>
#map6 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map7 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map8 = affine_map<() -> ()>
#map9 = affine_map<(d0) -> ()>
#map10 = affine_map<(d0) -> (d0)>
#map11 = affine_map<(d0, d1) -> (d0, 0)>
module @jit_optax_int_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c1_i32 = arith.constant 1 : i32
    %false = arith.constant false
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0x7F800000 : f32
    %cst_1 = arith.constant 0xFF800000 : f32
    %c0_i32 = arith.constant 0 : i32
    %c9 = arith.constant 9 : index
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %cst_2 = arith.constant dense<10> : tensor<i32>
    %cst_3 = arith.constant dense<9> : tensor<1xi32>
    %cst_4 = arith.constant dense<0x7FC00000> : tensor<f32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_6 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_7 = arith.constant dense<0> : tensor<i32>
    %0 = tensor.empty() : tensor<8x1xi32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<8xi32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %2 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_7 : tensor<i32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %3 = tensor.empty() : tensor<8x1xi1>
    %4 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%1, %2 : tensor<8x1xi32>, tensor<8x1xi32>) outs(%3 : tensor<8x1xi1>) {
    ^bb0(%in: i32, %in_8: i32, %out: i1):
      %64 = arith.cmpi slt, %in, %in_8 : i32
      linalg.yield %64 : i1
    } -> tensor<8x1xi1>
    %5 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_2 : tensor<i32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1xi32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%1, %5 : tensor<8x1xi32>, tensor<8x1xi32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i32, %in_8: i32, %out: i32):
      %64 = arith.addi %in, %in_8 : i32
      linalg.yield %64 : i32
    } -> tensor<8x1xi32>
    %7 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%4, %6, %1 : tensor<8x1xi1>, tensor<8x1xi32>, tensor<8x1xi32>) outs(%0 : tensor<8x1xi32>) {
    ^bb0(%in: i1, %in_8: i32, %in_9: i32, %out: i32):
      %64 = arith.select %in, %in_8, %in_9 : i32
      linalg.yield %64 : i32
    } -> tensor<8x1xi32>
    %expanded = tensor.expand_shape %7 [[0], [1, 2]] output_shape [8, 1, 1] : tensor<8x1xi32> into tensor<8x1x1xi32>
    %8 = tensor.empty() : tensor<8x1x1xi32>
    %9 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_7 : tensor<i32>) outs(%8 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1x1xi32>
    %10 = tensor.empty() : tensor<8x1x1xi1>
    %11 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %9 : tensor<8x1x1xi32>, tensor<8x1x1xi32>) outs(%10 : tensor<8x1x1xi1>) {
    ^bb0(%in: i32, %in_8: i32, %out: i1):
      %64 = arith.cmpi sge, %in, %in_8 : i32
      linalg.yield %64 : i1
    } -> tensor<8x1x1xi1>
    %12 = tensor.empty() : tensor<1x1x1xi32>
    %13 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_3 : tensor<1xi32>) outs(%12 : tensor<1x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<1x1x1xi32>
    %14 = linalg.generic {indexing_maps = [#map6, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13 : tensor<1x1x1xi32>) outs(%8 : tensor<8x1x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x1x1xi32>
    %15 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %14 : tensor<8x1x1xi32>, tensor<8x1x1xi32>) outs(%10 : tensor<8x1x1xi1>) {
    ^bb0(%in: i32, %in_8: i32, %out: i1):
      %64 = arith.cmpi sle, %in, %in_8 : i32
      linalg.yield %64 : i1
    } -> tensor<8x1x1xi1>
    %16 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %15 : tensor<8x1x1xi1>, tensor<8x1x1xi1>) outs(%10 : tensor<8x1x1xi1>) {
    ^bb0(%in: i1, %in_8: i1, %out: i1):
      %64 = arith.andi %in, %in_8 : i1
      linalg.yield %64 : i1
    } -> tensor<8x1x1xi1>
    %17 = linalg.fill ins(%true : i1) outs(%3 : tensor<8x1xi1>) -> tensor<8x1xi1>
    %18 = linalg.generic {indexing_maps = [#map4, #map7], iterator_types = ["parallel", "parallel", "reduction"]} ins(%16 : tensor<8x1x1xi1>) outs(%17 : tensor<8x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %64 = arith.andi %out, %in : i1
      linalg.yield %64 : i1
    } -> tensor<8x1xi1>
    %19 = tensor.empty() : tensor<8x1xf32>
    %20 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel"]} outs(%19 : tensor<8x1xf32>) {
    ^bb0(%out: f32):
      %64 = linalg.index 0 : index
      %extracted = tensor.extract %expanded[%64, %c0, %c0] : tensor<8x1x1xi32>
      %65 = arith.index_cast %extracted : i32 to index
      %66 = arith.maxsi %65, %c0 : index
      %67 = arith.minsi %66, %c9 : index
      %extracted_8 = tensor.extract %arg0[%64, %67] : tensor<8x10xf32>
      linalg.yield %extracted_8 : f32
    } -> tensor<8x1xf32>
    %21 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_4 : tensor<f32>) outs(%19 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %22 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%18, %20, %21 : tensor<8x1xi1>, tensor<8x1xf32>, tensor<8x1xf32>) outs(%19 : tensor<8x1xf32>) {
    ^bb0(%in: i1, %in_8: f32, %in_9: f32, %out: f32):
      %64 = arith.select %in, %in_8, %in_9 : f32
      linalg.yield %64 : f32
    } -> tensor<8x1xf32>
    %23 = tensor.empty() : tensor<i1>
    %24 = linalg.generic {indexing_maps = [#map8], iterator_types = []} outs(%23 : tensor<i1>) {
    ^bb0(%out: i1):
      linalg.yield %false : i1
    } -> tensor<i1>
    %25 = tensor.empty() : tensor<i32>
    %26 = linalg.generic {indexing_maps = [#map8], iterator_types = []} outs(%25 : tensor<i32>) {
    ^bb0(%out: i32):
      linalg.yield %c1_i32 : i32
    } -> tensor<i32>
    %27 = linalg.generic {indexing_maps = [#map8, #map8, #map8], iterator_types = []} ins(%24, %26 : tensor<i1>, tensor<i32>) outs(%25 : tensor<i32>) {
    ^bb0(%in: i1, %in_8: i32, %out: i32):
      %64 = arith.select %in, %in_8, %c0_i32 : i32
      linalg.yield %64 : i32
    } -> tensor<i32>
    %28 = tensor.empty() : tensor<1xi32>
    %29 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%27 : tensor<i32>) outs(%28 : tensor<1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<1xi32>
    %30 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%cst_7 : tensor<i32>) outs(%28 : tensor<1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<1xi32>
    %31 = tensor.empty() : tensor<1xi1>
    %32 = linalg.generic {indexing_maps = [#map10, #map10, #map10], iterator_types = ["parallel"]} ins(%29, %30 : tensor<1xi32>, tensor<1xi32>) outs(%31 : tensor<1xi1>) {
    ^bb0(%in: i32, %in_8: i32, %out: i1):
      %64 = arith.cmpi sge, %in, %in_8 : i32
      linalg.yield %64 : i1
    } -> tensor<1xi1>
    %33 = linalg.generic {indexing_maps = [#map10, #map10], iterator_types = ["parallel"]} ins(%29 : tensor<1xi32>) outs(%31 : tensor<1xi1>) {
    ^bb0(%in: i32, %out: i1):
      %64 = arith.cmpi sle, %in, %c0_i32 : i32
      linalg.yield %64 : i1
    } -> tensor<1xi1>
    %34 = linalg.generic {indexing_maps = [#map10, #map10, #map10], iterator_types = ["parallel"]} ins(%32, %33 : tensor<1xi1>, tensor<1xi1>) outs(%31 : tensor<1xi1>) {
    ^bb0(%in: i1, %in_8: i1, %out: i1):
      %64 = arith.andi %in, %in_8 : i1
      linalg.yield %64 : i1
    } -> tensor<1xi1>
    %35 = linalg.fill ins(%true : i1) outs(%23 : tensor<i1>) -> tensor<i1>
    %36 = linalg.generic {indexing_maps = [#map10, #map9], iterator_types = ["reduction"]} ins(%34 : tensor<1xi1>) outs(%35 : tensor<i1>) {
    ^bb0(%in: i1, %out: i1):
      %64 = arith.andi %out, %in : i1
      linalg.yield %64 : i1
    } -> tensor<i1>
    %37 = tensor.empty() : tensor<8xf32>
    %38 = linalg.generic {indexing_maps = [#map10], iterator_types = ["parallel"]} outs(%37 : tensor<8xf32>) {
    ^bb0(%out: f32):
      %64 = linalg.index 0 : index
      %extracted = tensor.extract %29[%c0] : tensor<1xi32>
      %65 = arith.index_cast %extracted : i32 to index
      %66 = arith.maxsi %65, %c0 : index
      %67 = arith.minsi %66, %c0 : index
      %extracted_8 = tensor.extract %22[%64, %67] : tensor<8x1xf32>
      linalg.yield %extracted_8 : f32
    } -> tensor<8xf32>
    %39 = tensor.empty() : tensor<8xi1>
    %40 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%36 : tensor<i1>) outs(%39 : tensor<8xi1>) {
    ^bb0(%in: i1, %out: i1):
      linalg.yield %in : i1
    } -> tensor<8xi1>
    %41 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%cst_4 : tensor<f32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %42 = linalg.generic {indexing_maps = [#map10, #map10, #map10, #map10], iterator_types = ["parallel"]} ins(%40, %38, %41 : tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: i1, %in_8: f32, %in_9: f32, %out: f32):
      %64 = arith.select %in, %in_8, %in_9 : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %43 = linalg.fill ins(%cst_1 : f32) outs(%37 : tensor<8xf32>) -> tensor<8xf32>
    %44 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%43 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = arith.maximumf %out, %in : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %45 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%cst_6 : tensor<f32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %46 = linalg.generic {indexing_maps = [#map10, #map10, #map10], iterator_types = ["parallel"]} ins(%45, %44 : tensor<8xf32>, tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %64 = arith.maximumf %in, %in_8 : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %47 = linalg.generic {indexing_maps = [#map10, #map10], iterator_types = ["parallel"]} ins(%46 : tensor<8xf32>) outs(%39 : tensor<8xi1>) {
    ^bb0(%in: f32, %out: i1):
      %64 = math.absf %in : f32
      %65 = arith.cmpf one, %64, %cst_0 : f32
      linalg.yield %65 : i1
    } -> tensor<8xi1>
    %48 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel"]} ins(%cst_5 : tensor<f32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %49 = linalg.generic {indexing_maps = [#map10, #map10, #map10, #map10], iterator_types = ["parallel"]} ins(%47, %46, %48 : tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: i1, %in_8: f32, %in_9: f32, %out: f32):
      %64 = arith.select %in, %in_8, %in_9 : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %50 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%49 : tensor<8xf32>) outs(%19 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x1xf32>
    %51 = tensor.empty() : tensor<8x10xf32>
    %52 = linalg.generic {indexing_maps = [#map11, #map1], iterator_types = ["parallel", "parallel"]} ins(%50 : tensor<8x1xf32>) outs(%51 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x10xf32>
    %53 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %52 : tensor<8x10xf32>, tensor<8x10xf32>) outs(%51 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %64 = arith.subf %in, %in_8 : f32
      linalg.yield %64 : f32
    } -> tensor<8x10xf32>
    %54 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%53 : tensor<8x10xf32>) outs(%51 : tensor<8x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = math.exp %in : f32
      linalg.yield %64 : f32
    } -> tensor<8x10xf32>
    %55 = linalg.fill ins(%cst : f32) outs(%37 : tensor<8xf32>) -> tensor<8xf32>
    %56 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "reduction"]} ins(%54 : tensor<8x10xf32>) outs(%55 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = arith.addf %out, %in : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %57 = linalg.generic {indexing_maps = [#map10, #map10], iterator_types = ["parallel"]} ins(%56 : tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = math.absf %in : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %58 = linalg.generic {indexing_maps = [#map10, #map10], iterator_types = ["parallel"]} ins(%57 : tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = math.log %in : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %59 = linalg.generic {indexing_maps = [#map10, #map10, #map10], iterator_types = ["parallel"]} ins(%58, %49 : tensor<8xf32>, tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %64 = arith.addf %in, %in_8 : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %60 = linalg.generic {indexing_maps = [#map10, #map10, #map10], iterator_types = ["parallel"]} ins(%59, %42 : tensor<8xf32>, tensor<8xf32>) outs(%37 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %64 = arith.subf %in, %in_8 : f32
      linalg.yield %64 : f32
    } -> tensor<8xf32>
    %61 = tensor.empty() : tensor<f32>
    %62 = linalg.fill ins(%cst : f32) outs(%61 : tensor<f32>) -> tensor<f32>
    %63 = linalg.generic {indexing_maps = [#map10, #map9], iterator_types = ["reduction"]} ins(%60 : tensor<8xf32>) outs(%62 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %64 = arith.addf %out, %in : f32
      linalg.yield %64 : f32
    } -> tensor<f32>
    return %63 : tensor<f32>
  }
}

