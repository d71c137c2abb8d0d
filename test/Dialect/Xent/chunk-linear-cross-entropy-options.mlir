// RUN: not xent-opt %s --xent-chunk-linear-cross-entropy=rows=0 2>&1 | FileCheck %s

// CHECK: error: rows must be positive, got 0
func.func @f(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
