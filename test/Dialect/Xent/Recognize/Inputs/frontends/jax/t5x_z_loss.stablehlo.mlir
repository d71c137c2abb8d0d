module @jit_t5x_z_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<8xf32>
    %3 = stablehlo.is_finite %2 : (tensor<8xf32>) -> tensor<8xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.select %3, %2, %4 : tensor<8xi1>, tensor<8xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %8 = stablehlo.subtract %arg0, %7 : tensor<8x10xf32>
    %9 = stablehlo.exponential %8 : tensor<8x10xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %11 = stablehlo.abs %10 : tensor<8xf32>
    %12 = stablehlo.log %11 : tensor<8xf32>
    %13 = stablehlo.add %12, %5 : tensor<8xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %16 = stablehlo.subtract %arg0, %15 : tensor<8x10xf32>
    %17 = call @_one_hot(%arg1) : (tensor<8xi32>) -> tensor<8x10xf32>
    %18 = stablehlo.multiply %17, %16 : tensor<8x10xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.reduce(%18 init: %cst_3) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %20 = stablehlo.negate %19 : tensor<8xf32>
    %21 = stablehlo.multiply %13, %13 : tensor<8xf32>
    %cst_4 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %23 = stablehlo.multiply %22, %21 : tensor<8xf32>
    %24 = stablehlo.add %20, %23 : tensor<8xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = stablehlo.reduce(%24 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %cst_6 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %26 = stablehlo.divide %25, %cst_6 : tensor<f32>
    return %26 : tensor<f32>
  }
  func.func private @_one_hot(%arg0: tensor<8xi32>) -> tensor<8x10xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x10xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<8x1xi32>) -> tensor<8x10xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x10xi32>) -> tensor<8x10xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<8x10xi32>, tensor<8x10xi32>) -> tensor<8x10xi1>
    %5 = stablehlo.convert %4 : (tensor<8x10xi1>) -> tensor<8x10xf32>
    return %5 : tensor<8x10xf32>
  }
}
