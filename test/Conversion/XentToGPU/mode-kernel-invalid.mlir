// mode=kernel on an op the kernels cannot take is an error that says why and
// what to use instead; nothing is rewritten.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics

func.func @in_launch(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %out: memref<f32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'xent.cross_entropy' op cannot take the kernel (mode=kernel): it is in device code (inside 'gpu.launch'), which cannot launch the kernels; use mode=auto or mode=inline to take its decomposition}}
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %v = tensor.extract %l[] : tensor<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  return
}

// -----

gpu.module @user {
  gpu.func @in_func(%xm: memref<4x10xf32>, %tm: memref<4xi64>, %out: memref<4x10xf32>) kernel {
    %x = bufferization.to_tensor %xm : memref<4x10xf32> to tensor<4x10xf32>
    %t = bufferization.to_tensor %tm : memref<4xi64> to tensor<4xi64>
    %g = arith.constant dense<1.0> : tensor<f32>
    // expected-error @+1 {{'xent.cross_entropy_grad' op cannot take the kernel (mode=kernel): it is in device code (inside 'gpu.func'), which cannot launch the kernels; use mode=auto or mode=inline to take its decomposition}}
    %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
    bufferization.materialize_in_destination %d in writable %out : (tensor<4x10xf32>, memref<4x10xf32>) -> ()
    gpu.return
  }
}

// -----

// The kernels go into @xent_kernels, which must be a gpu.module.
func.func private @xent_kernels()

func.func @clash(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'xent.cross_entropy' op cannot take the kernel (mode=kernel): the module's symbol @xent_kernels, which the kernels go into, is not a gpu.module; use mode=auto or mode=inline to take its decomposition}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
