// linear-chunk-mib must leave room for a chunk.

// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-mib=0" -verify-diagnostics

// expected-error @+1 {{linear-chunk-mib must be positive, got 0}}
module {
  func.func @f(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
    %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
