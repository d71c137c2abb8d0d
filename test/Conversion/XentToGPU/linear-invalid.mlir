// What the chunked GPU lowering of the linear family refuses, each with the
// reason the remark and mode=kernel give.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics

// A linear op in device code cannot launch kernels nor call the GEMMs.
func.func @in_launch(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>, %out: memref<f32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'xent.linear_cross_entropy' op cannot take the kernel (mode=kernel): it is in device code (inside 'gpu.launch'), which cannot launch the kernels; use mode=auto or mode=inline to take its decomposition}}
    %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
    %v = tensor.extract %l[] : tensor<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  return
}

// -----

// The module already has a symbol named like a runtime GEMM the op calls.
func.func @xentGemm_f32_f32(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %b: memref<?x?xf32, strided<[?, ?], offset: ?>>, %c: memref<?x?xf32, strided<[?, ?], offset: ?>>, %ta: i32, %tb: i32, %alpha: f32, %beta: f32) {
  return
}

func.func @clash(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'xent.linear_cross_entropy' op cannot take the kernel (mode=kernel): the module's symbol @xentGemm_f32_f32, the runtime's GEMM it calls, is not its declaration; use mode=auto or mode=inline to take its decomposition}}
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A declaration of another signature is not the runtime's either.
func.func private @xentGemm_bf16_f32(memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xf32>, i32, i32, f32, f32)

func.func @other_signature(%h: tensor<4x8xbf16>, %w: tensor<10x8xbf16>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{the module's symbol @xentGemm_bf16_f32, the runtime's GEMM it calls, is not its declaration}}
  %l = xent.linear_cross_entropy sum %h, %w, %t : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
