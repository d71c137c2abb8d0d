// RUN: rm -f %t.lowered %t.pipeline
// RUN: xent-reduce %s -opt-reduction-pass='opt-pass=convert-xent-to-gpu test=%S/Inputs/keep-lowered.sh test-arg=%t.lowered' | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered
// RUN: xent-reduce %s -opt-reduction-pass='opt-pass=xent-gpu-pipeline{chip=sm_90 format=isa} test=%S/Inputs/keep-lowered.sh test-arg=%t.pipeline' | FileCheck %s
// RUN: FileCheck %s --check-prefix=PIPELINE < %t.pipeline
// REQUIRES: xent-reduce

// A reduction pass may create ops of dialects the input does not use (here
// bufferization, memref, gpu) and translate kernels to LLVM IR in-process
// (gpu-module-to-binary in xent-gpu-pipeline), as in xent-opt. The lowered
// candidate reaches the script; it is bigger than the input, so the input is
// the result.

// CHECK-LABEL: func.func @loss(
// CHECK-NEXT:    xent.cross_entropy mean
// CHECK-NOT:     gpu.

// LOWERED-LABEL: func.func @loss(
// LOWERED:         xent.launch
// LOWERED:         gpu.launch_func {{ *}}@xent_kernels::@xent_loss_0
// LOWERED:       gpu.module @xent_kernels
// LOWERED-NOT:     xent.cross_entropy

// PIPELINE-LABEL: llvm.func @loss(
// PIPELINE:         gpu.launch_func {{.*}}@xent_kernels::@xent_loss_0
// PIPELINE:       gpu.binary @xent_kernels {{ *}}[#gpu.object<#nvvm.target<{{.*}}chip = "sm_90"
// PIPELINE-NOT:     xent.cross_entropy

func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
