// RUN: rm -f %t.lowered
// RUN: xent-reduce %s -opt-reduction-pass='opt-pass=convert-xent-to-gpu test=%S/Inputs/keep-lowered.sh test-arg=%t.lowered' | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered
// REQUIRES: xent-reduce

// A reduction pass may create ops of dialects the input does not use (here
// bufferization, memref, gpu): xent-reduce has them loaded. The lowered
// candidate reaches the script; it is bigger than the input, so the input is
// the result.

// CHECK-LABEL: func.func @loss(
// CHECK-NEXT:    xent.cross_entropy mean
// CHECK-NOT:     gpu.

// LOWERED-LABEL: func.func @loss(
// LOWERED:         bufferization.to_buffer
// LOWERED:         gpu.launch_func {{ *}}@xent_kernels::@xent_loss_0
// LOWERED:       gpu.module @xent_kernels
// LOWERED-NOT:     xent.cross_entropy

func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
