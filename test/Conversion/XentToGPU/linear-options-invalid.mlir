// Bad chunk options of the linear lowering are diagnosed on the module.

// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-rows=-1" -verify-diagnostics
// RUN: xent-opt %s --xent-gpu-pipeline="linear-chunk-rows=-1 format=isa" -verify-diagnostics

// expected-error @+1 {{linear-chunk-rows must be 0 (automatic) or positive, got -1}}
module {
  func.func @f(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
    %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
