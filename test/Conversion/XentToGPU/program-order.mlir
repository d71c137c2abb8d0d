// convert-xent-to-gpu is populateXentToGPUConversionPatterns under a partial
// conversion in which every xent op but xent.launch is illegal, so every
// test of the pass exercises the patterns. This one checks what the driver
// adds: ops are lowered in program order, across functions and nested
// regions (kernels are numbered and placed in that order), no xent op is
// left after bufferization, and an op whose logits are an earlier op's
// dlogits sees them as that op left them (their only use: dlogits is written
// in place). A kernel identical to one already built (the same computation
// for another op) is not built again: @chain's prologue is @first's, its
// second gradient kernel @nested's.

// RUN: xent-opt %s --convert-xent-to-gpu --one-shot-bufferize | FileCheck %s --implicit-check-not=xent.

// CHECK-LABEL: func.func @first
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_0
func.func @first(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @nested
// CHECK: scf.if
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_1
// CHECK: gpu.launch_func @xent_kernels::@xent_grad_0
// CHECK: } else {
func.func @nested(%c: i1, %g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<4x10xf32> {
  %r = scf.if %c -> tensor<4x10xf32> {
    %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
    scf.yield %d : tensor<4x10xf32>
  } else {
    scf.yield %x : tensor<4x10xf32>
  }
  return %r : tensor<4x10xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK: %[[L:.*]] = gpu.alloc () : memref<f32>
// CHECK: %[[D:.*]] = gpu.alloc () : memref<4x10xf32>
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_grad_0
// CHECK: %[[LT:.*]] = bufferization.to_tensor %[[L]]
// CHECK-NOT: gpu.alloc () : memref<4x10xf32>
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_1
// CHECK: gpu.launch_func @xent_kernels::@xent_grad_0
// CHECK: %[[DT:.*]] = bufferization.to_tensor %[[D]]
// CHECK: return %[[LT]], %[[DT]]
func.func @chain(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>) {
  %l, %d = xent.cross_entropy_and_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>)
  %d2 = xent.cross_entropy_grad sum %g, %d, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return %l, %d2 : tensor<f32>, tensor<4x10xf32>
}

// CHECK: gpu.module @xent_kernels
// CHECK: gpu.func @xent_prologue_0(
// CHECK: gpu.func @xent_loss_0(
// CHECK: gpu.func @xent_prologue_1(
// CHECK: gpu.func @xent_grad_0(
// CHECK: gpu.func @xent_loss_grad_0(
// CHECK-NOT: gpu.func
