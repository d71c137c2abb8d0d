// The kernels do not compute or take per-row statistics yet: mode=kernel
// and the GPU pipeline's allow-decomposition=false reject such ops with a
// reason, and mode=auto takes their decomposition.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics
// RUN: not xent-opt %s -split-input-file --convert-xent-to-gpu="allow-decomposition=false" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=auto | FileCheck %s --check-prefix=AUTO

// PIPELINE: would take the decomposition (mode=auto, and the kernels do not compute or take per-row statistics (return_row_stats, row_stats, class_offset) yet)
// AUTO-LABEL: func.func @forward
// AUTO-NOT: xent.
// AUTO: linalg.generic
func.func @forward(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) -> tensor<4x3xf32> {
  // expected-error @+1 {{'xent.cross_entropy' op cannot take the kernel (mode=kernel): the kernels do not compute or take per-row statistics (return_row_stats, row_stats, class_offset) yet; use mode=auto or mode=inline to take its decomposition}}
  %l, %s = xent.cross_entropy sum %x, %t class_offset %o {num_classes = 20 : i64, return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>, i64) -> (tensor<f32>, tensor<4x3xf32>)
  return %s : tensor<4x3xf32>
}

// -----

// AUTO-LABEL: func.func @gradient
// AUTO-NOT: xent.
// AUTO: linalg.generic
func.func @gradient(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %s: tensor<4x3xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'xent.cross_entropy_grad' op cannot take the kernel (mode=kernel): the kernels do not compute or take per-row statistics (return_row_stats, row_stats, class_offset) yet; use mode=auto or mode=inline to take its decomposition}}
  %d = xent.cross_entropy_grad mean %g, %x, %t row_stats %s
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, tensor<4x3xf32>) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}
