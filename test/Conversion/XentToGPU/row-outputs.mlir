// The kernels do not compute the per-row outputs (lse, argmax, accuracy):
// under mode=auto such an op takes its decomposition, with a remark saying
// why; mode=kernel rules it out with that reason; xent-gpu-pipeline refuses
// it. The CPU fallback (xent-inline-decomposition) computes them.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu | FileCheck %s
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics
// RUN: not xent-opt %s -split-input-file --xent-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=PIPELINE

// REMARK: remark: [Missed] decomposition {{.*}}Function=lse | Reason="mode=auto, and the kernels do not compute the per-row outputs (lse, argmax, accuracy)"
// CHECK-LABEL: func.func @lse
// CHECK-NOT:   xent.
// CHECK:       linalg.generic
// PIPELINE: error: {{.*}}the kernels do not compute the per-row outputs
func.func @lse(%x: tensor<8x64xbf16>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>) {
  // expected-error @+1 {{cannot take the kernel (mode=kernel): the kernels do not compute the per-row outputs (lse, argmax, accuracy)}}
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse} : (tensor<8x64xbf16>, tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>)
  return %l, %lse : tensor<f32>, tensor<8xf32>
}

// -----

// REMARK: remark: [Missed] decomposition {{.*}}Function=joint_accuracy
// CHECK-LABEL: func.func @joint_accuracy
// CHECK-NOT:   xent.
// CHECK:       linalg.generic
func.func @joint_accuracy(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>) {
  // expected-error @+1 {{cannot take the kernel (mode=kernel)}}
  %l, %acc, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_accuracy} : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>)
  return %l, %acc, %d : tensor<f32>, tensor<f32>, tensor<8x64xf32>
}
