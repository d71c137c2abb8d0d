// split-exponentials is one exponential in 2, 4 or 8 on the FMA pipe, or 0.

// RUN: xent-opt %s --convert-xent-to-gpu="split-exponentials=3" -verify-diagnostics
// RUN: xent-opt %s --xent-gpu-pipeline="split-exponentials=-1" -verify-diagnostics

// expected-error @+1 {{split-exponentials must be 0, 2, 4 or 8, got}}
module {
  func.func @f(%x: tensor<4x8xbf16>, %t: tensor<4xi64>) -> tensor<f32> {
    %l = xent.cross_entropy mean %x, %t {softcap = 30.0 : f32} : (tensor<4x8xbf16>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
