func.func @f(%x: tensor<2x3xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %l = "xent.cross_entropy"(%x, %t) ({}) {reduction = #xent.reduction<median>} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
