// RUN: xent-opt %s --convert-xent-to-gpu -verify-diagnostics

// The linear family has no GPU lowering (its projection needs a device GEMM):
// a clear diagnostic, not a failure to legalize.
func.func @linear(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'xent.linear_cross_entropy' op has no GPU lowering: its projection needs a device GEMM}}
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
