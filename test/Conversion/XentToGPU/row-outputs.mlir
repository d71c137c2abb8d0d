// RUN: xent-opt %s --convert-xent-to-gpu -split-input-file -verify-diagnostics

// The kernels do not compute the per-row outputs: a diagnostic, not a crash
// or a wrong launch. The CPU fallback (xent-inline-decomposition) computes
// them.

func.func @lse(%x: tensor<8x64xbf16>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>) {
  // expected-error @+1 {{cannot be lowered to GPU kernels: the per-row outputs (lse, argmax, accuracy) are computed only by the decomposition (xent-inline-decomposition)}}
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse} : (tensor<8x64xbf16>, tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>)
  return %l, %lse : tensor<f32>, tensor<8xf32>
}

// -----

func.func @joint_accuracy(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>) {
  // expected-error @+1 {{cannot be lowered to GPU kernels}}
  %l, %acc, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_accuracy} : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>)
  return %l, %acc, %d : tensor<f32>, tensor<f32>, tensor<8x64xf32>
}
