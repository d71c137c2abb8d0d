// xent-gpu-pipeline lowers only the kernels to the device (it runs
// convert-xent-to-gpu with allow-decomposition=false): an op that would take
// the decomposition is an error that says what to use instead, never host
// loops over device memory nor linalg left in a kernel.

// RUN: xent-opt %s -split-input-file --xent-gpu-pipeline="mode=inline format=isa" -verify-diagnostics
// RUN: not xent-opt %s -split-input-file --xent-gpu-pipeline="format=isa" 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not xent-opt %s -split-input-file --convert-xent-to-gpu="allow-decomposition=false" 2>&1 | FileCheck %s --check-prefix=AUTO

// In host code, mode=auto takes the kernel.
// AUTO-NOT: mode-pipeline-invalid.mlir:[[@LINE+3]]
func.func @host(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'xent.cross_entropy' op would take the decomposition (mode=inline), but allow-decomposition=false (as in xent-gpu-pipeline, which lowers only the kernels to the device): its decomposition computes on host tensors; use mode=auto or mode=kernel, or lower it with convert-xent-to-gpu{mode=inline} in a compiler that lowers linalg to the device, or with xent-cpu-pipeline}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @in_launch(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %out: memref<f32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // AUTO: mode-pipeline-invalid.mlir:[[@LINE+2]]:10: error: 'xent.cross_entropy' op would take the decomposition (mode=auto, and it is in device code (inside 'gpu.launch'), which cannot launch the kernels), but allow-decomposition=false (as in xent-gpu-pipeline, which lowers only the kernels to the device): lower it with convert-xent-to-gpu in a compiler that lowers linalg in device code
    // expected-error @+1 {{'xent.cross_entropy' op would take the decomposition (mode=inline), but allow-decomposition=false (as in xent-gpu-pipeline, which lowers only the kernels to the device): lower it with convert-xent-to-gpu in a compiler that lowers linalg in device code}}
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %v = tensor.extract %l[] : tensor<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  return
}
