// mode picks the kernel or the decomposition per op, and each op reports the
// path it took and why as an optimization remark when the remark engine is on
// (category convert-xent-to-gpu). The first part is host code, which the
// kernels take; the second is device code, which cannot launch them.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: not xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=inline --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=INLINE

// Without the remark flags, nothing is printed; and what each path leaves.
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=QUIET --allow-empty
// QUIET-NOT: {{.}}
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu | FileCheck %s --check-prefix=AUTO-IR
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=inline | FileCheck %s --check-prefix=INLINE-IR --implicit-check-not=xent. --implicit-check-not=gpu.launch_func

// AUTO-IR-LABEL: func.func @loss
// AUTO-IR: xent.launch
// INLINE-IR-LABEL: func.func @loss
// INLINE-IR: linalg.generic
func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // AUTO: mode.mlir:[[@LINE+3]]:8: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=loss | Kernels="xent_prologue_0, xent_loss_0", Reason="mode=auto, and the kernels take this op", Remark="lowered to the fused kernels"
  // KERNEL: mode.mlir:[[@LINE+2]]:8: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=loss | Kernels="xent_prologue_0, xent_loss_0", Reason=mode=kernel, Remark="lowered to the fused kernels"
  // INLINE: mode.mlir:[[@LINE+1]]:8: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=loss | Reason=mode=inline, Remark="lowered to the decomposition"
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// AUTO-IR-LABEL: func.func @grad
// AUTO-IR: xent.launch
// INLINE-IR-LABEL: func.func @grad
// INLINE-IR: linalg.generic
func.func @grad(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<4x10xf32> {
  // AUTO: mode.mlir:[[@LINE+3]]:8: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=grad | Kernels="xent_prologue_1, xent_grad_0", Reason="mode=auto, and the kernels take this op", Remark="lowered to the fused kernels"
  // KERNEL: mode.mlir:[[@LINE+2]]:8: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=grad | Kernels="xent_prologue_1, xent_grad_0", Reason=mode=kernel, Remark="lowered to the fused kernels"
  // INLINE: mode.mlir:[[@LINE+1]]:8: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=grad | Reason=mode=inline, Remark="lowered to the decomposition"
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}

// AUTO-IR: gpu.module @xent_kernels
// INLINE-IR-NOT: gpu.module

// -----

// The decomposition stays where the op was: in the kernel.
// AUTO-IR-LABEL: func.func @in_launch
// AUTO-IR: gpu.launch
// AUTO-IR: linalg.generic
// AUTO-IR: memref.store
// AUTO-IR: gpu.terminator
// INLINE-IR-LABEL: func.func @in_launch
func.func @in_launch(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %out: memref<f32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // AUTO: mode.mlir:[[@LINE+3]]:10: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=in_launch | Reason="mode=auto, and it is in device code (inside 'gpu.launch'), which cannot launch the kernels", Remark="lowered to the decomposition"
    // KERNEL: mode.mlir:[[@LINE+2]]:10: error: 'xent.cross_entropy' op cannot take the kernel (mode=kernel): it is in device code (inside 'gpu.launch'), which cannot launch the kernels; use mode=auto or mode=inline to take its decomposition
    // INLINE: mode.mlir:[[@LINE+1]]:10: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=in_launch | Reason=mode=inline, Remark="lowered to the decomposition"
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %v = tensor.extract %l[] : tensor<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  return
}

// AUTO-IR-LABEL: gpu.func @in_func
// AUTO-IR: linalg.generic
// AUTO-IR-NOT: gpu.module @xent_kernels
gpu.module @user {
  gpu.func @in_func(%xm: memref<4x10xf32>, %tm: memref<4xi64>, %out: memref<f32>) kernel {
    %x = bufferization.to_tensor %xm : memref<4x10xf32> to tensor<4x10xf32>
    %t = bufferization.to_tensor %tm : memref<4xi64> to tensor<4xi64>
    // AUTO: mode.mlir:[[@LINE+3]]:10: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=in_func | Reason="mode=auto, and it is in device code (inside 'gpu.func'), which cannot launch the kernels", Remark="lowered to the decomposition"
    // KERNEL: mode.mlir:[[@LINE+2]]:10: error: 'xent.cross_entropy' op cannot take the kernel (mode=kernel): it is in device code (inside 'gpu.func'), which cannot launch the kernels; use mode=auto or mode=inline to take its decomposition
    // INLINE: mode.mlir:[[@LINE+1]]:10: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=in_func | Reason=mode=inline, Remark="lowered to the decomposition"
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %v = tensor.extract %l[] : tensor<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.return
  }
}
