func.func @f(%x: tensor<2x10xf32>, %t: tensor<2xi64>, %w: tensor<3xf32>) -> tensor<f32> {
  %l = "xent.cross_entropy"(%x, %t, %w) ({}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0>, reduction = #xent.reduction<mean>} : (tensor<2x10xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
