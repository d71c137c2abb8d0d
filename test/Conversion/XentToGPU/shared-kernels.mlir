// RUN: xent-opt %s --convert-xent-to-gpu --split-input-file | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu="runtime-dispatch=true" --split-input-file | FileCheck %s --check-prefix=DISPATCH
// RUN: xent-opt %s --convert-xent-to-gpu --split-input-file --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// A kernel identical to one the module already holds is not built again
// (one library of several entry functions compiles each distinct kernel
// once). A mean and a sum share their row kernel: both divide the row's
// terms by the divisors their prologue leaves in the scratch (the kept
// weight and count, or 1). The prologues differ; a second op with the same
// signature shares both kernels. The fingerprints that find them are not
// left on the kernels.

// REMARK: remark: [Passed] kernel {{.*}}Function=mean | Kernels="xent_prologue_0, xent_loss_0"
// REMARK: remark: [Passed] kernel {{.*}}Function=sum | Kernels="xent_prologue_1, xent_loss_0"
// REMARK: remark: [Passed] kernel {{.*}}Function=mean_again | Kernels="xent_prologue_0, xent_loss_0"
// REMARK: remark: [Passed] kernel {{.*}}Function=none | Kernels=xent_loss_1,

// CHECK-LABEL: func.func @mean
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_0
func.func @mean(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @sum
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_1
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_0
func.func @sum(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @mean_again
// CHECK: gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_0
func.func @mean_again(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// Per-row losses: another row kernel (no scratch, no prologue).
// CHECK-LABEL: func.func @none
// CHECK-NOT: gpu.launch_func @xent_kernels::@xent_prologue
// CHECK: gpu.launch_func @xent_kernels::@xent_loss_1
func.func @none(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// The mean's prologue counts the kept rows (it takes ignore_index) and
// stores the divisors; the sum's stores 1.
// CHECK: gpu.module @xent_kernels
// CHECK-NOT: xent.kernel_fingerprint
// CHECK: gpu.func @xent_prologue_0({{.*}}, %{{.*}}: i64)
// CHECK: gpu.func @xent_loss_0(
// CHECK: gpu.func @xent_prologue_1(
// CHECK-SAME: memref<6xf64>, %{{[^:]*}}: memref<f32, strided<[], offset: ?>>) workgroup
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: gpu.func @xent_loss_1(
// CHECK-NOT: gpu.func
// CHECK: // -----

// -----

// Under runtime-dispatch the loss's type is a run-time choice of the row
// kernel where it is f32 or the logits' bf16 / f16: a loss in either type
// takes the same kernel, which writes the buffer the flag names (the op's
// buffer; the other a private constant global of one element, which the
// kernel does not touch). Here the kernels of the two ops are the same two
// (256 and 512 threads).

// DISPATCH-DAG:   memref.global "private" constant @xent_unused_bf16_1 : memref<1xbf16> = dense<0.000000e+00>
// DISPATCH-DAG:   memref.global "private" constant @xent_unused_f32_1 : memref<1xf32> = dense<0.000000e+00>
// DISPATCH-LABEL: func.func @f32_loss
// DISPATCH:       memref.get_global @xent_unused_bf16_1 : memref<1xbf16>
// DISPATCH:       %[[F:.*]] = arith.constant false
// DISPATCH:       gpu.launch_func @xent_kernels::@xent_loss_grad_0 {{.*}} args({{.*}}: memref<?xf32, strided<[?], offset: ?>>, %{{.*}} : memref<?xbf16, strided<[?], offset: ?>>, {{.*}}, %[[F]] : i1)
// DISPATCH:       gpu.launch_func @xent_kernels::@xent_loss_grad_1
func.func @f32_loss(%g: tensor<?xf32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<?xf32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad none %g, %x, %t : (tensor<?xf32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<?xf32>, tensor<?x?xbf16>)
  return %l, %d : tensor<?xf32>, tensor<?x?xbf16>
}

// DISPATCH-LABEL: func.func @bf16_loss
// DISPATCH:       memref.get_global @xent_unused_f32_1 : memref<1xf32>
// DISPATCH:       %[[T:.*]] = arith.constant true
// DISPATCH:       gpu.launch_func @xent_kernels::@xent_loss_grad_0 {{.*}} args({{.*}}: memref<?xf32, strided<[?], offset: ?>>, %{{.*}} : memref<?xbf16, strided<[?], offset: ?>>, {{.*}}, %[[T]] : i1)
// DISPATCH:       gpu.launch_func @xent_kernels::@xent_loss_grad_1
func.func @bf16_loss(%g: tensor<?xf32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<?xbf16>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad none %g, %x, %t : (tensor<?xf32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<?xbf16>, tensor<?x?xbf16>)
  return %l, %d : tensor<?xbf16>, tensor<?x?xbf16>
}

// The kernel stores the row's loss into the buffer of the flag's type.
// DISPATCH:       gpu.module @xent_kernels
// DISPATCH:       gpu.func @xent_loss_grad_0({{.*}}, %[[L32:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[L16:[^:]*]]: memref<?xbf16, strided<[?], offset: ?>>, {{.*}}, %[[FLAG:[^:]*]]: i1) workgroup
// DISPATCH:         scf.if %[[FLAG]] {
// DISPATCH-NEXT:      arith.truncf %{{.*}} : f32 to bf16
// DISPATCH-NEXT:      memref.store %{{.*}}, %[[L16]]
// DISPATCH-NEXT:    } else {
// DISPATCH-NEXT:      memref.store %{{.*}}, %[[L32]]
// DISPATCH:       gpu.func @xent_loss_grad_1(
// DISPATCH-NOT:   gpu.func
