// The linear family has no kernel of its own (its projection needs a device
// GEMM). Under mode=auto it takes its decomposition: a matmul left for the
// host compiler and a cross-entropy op, which the kernels then take; the
// remark says why. mode=kernel rules it out with that reason, and
// xent-gpu-pipeline (no device code generator for the matmul) refuses it.

// RUN: xent-opt %s --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s --convert-xent-to-gpu | FileCheck %s
// RUN: not xent-opt %s --convert-xent-to-gpu=mode=kernel 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: not xent-opt %s --xent-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=PIPELINE

// REMARK: remark: [Missed] decomposition {{.*}} Reason="mode=auto, and there is no kernel for its projection (a device GEMM); its decomposition is a matmul and a cross-entropy op"
// REMARK: remark: [Passed] kernel
// CHECK-LABEL: func.func @linear
// CHECK:       linalg.matmul
// CHECK:       xent.launch
// CHECK:         gpu.launch_func @xent_kernels::@xent_loss_0
// CHECK-NOT:   xent.linear_cross_entropy
// KERNEL: error: {{.*}}there is no kernel for its projection
// PIPELINE: error: {{.*}}xent.linear_cross_entropy
func.func @linear(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
