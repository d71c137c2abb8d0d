// The linear tile kernel runs in clusters of 1 or 2 blocks.

// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a linear-tile-cluster=4" -verify-diagnostics
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90a linear-tile-cluster=0" -verify-diagnostics

// expected-error @+1 {{linear-tile-cluster must be 1 or 2, got}}
module {
  func.func @f(%h: tensor<4x8xbf16>, %w: tensor<10x8xbf16>, %t: tensor<4xi64>) -> tensor<f32> {
    %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
