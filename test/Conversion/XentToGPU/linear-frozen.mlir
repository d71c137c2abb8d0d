// A gradient of the linear family that nobody uses is not computed: a
// frozen weight (d_weight and d_bias unused) runs no weight GEMM and
// allocates no V x H f32 accumulator; frozen hidden states (d_hidden unused)
// run no d_hidden GEMM. The launch leaves the result out; the op's result
// becomes an unused tensor.empty, which canonicalization erases.

// RUN: xent-opt %s --convert-xent-to-gpu --cse | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize | FileCheck %s --check-prefix=CANON
// RUN: xent-opt %s --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa" -o /dev/null

// The GEMMs each op calls: the logits' always; d_hidden's (bf16 out) only
// where d_hidden is used; the f32 one (d_weight, d_bias) where either is.
// REMARK: Function=frozen_weight | {{.*}}Gemms="xentGemmBias_bf16_f32, xentGemm_bf16_bf16"
// REMARK: Function=frozen_hidden | {{.*}}Gemms=xentGemm_bf16_f32, Kernels="xent_prologue_0, xent_loss_grad_0, xent_linear_convert_1, xent_convert_0"
// REMARK: Function=frozen_weight_trained_bias | {{.*}}Gemms="xentGemmBias_bf16_f32, xentGemm_bf16_bf16, xentGemm_bf16_f32"
// REMARK: Function=nothing_used | {{.*}}Gemms=xentGemm_bf16_f32,

// Frozen weight and bias: the launch computes the loss and d_hidden; the
// row kernel's bf16 dlogits feed one GEMM.
// CHECK-LABEL: func.func @frozen_weight
// CHECK:       %[[R:.*]]:2 = xent.launch ins({{.*}}) dims({{.*}}) tied [-1, -1] -> (tensor<f32>, tensor<?x64xbf16>)
// CHECK-NEXT:  ^bb0({{.*}}, %[[L:[^:]*]]: memref<f32, {{.*}}>, %[[DH:[^:]*]]: memref<?x?xbf16, {{.*}}>):
// CHECK:         %[[LOGITS:.*]] = gpu.alloc  ({{.*}}) : memref<?x?xf32>
// CHECK:         %[[LOW:.*]] = gpu.alloc  ({{.*}}) : memref<?x?xbf16>
// CHECK-NOT:     gpu.alloc  ({{.*}}) : memref<?x?xf32>
// CHECK-NOT:     gpu.memset
// CHECK:         scf.for
// CHECK:           func.call @xentGemmBias_bf16_f32(
// CHECK:           gpu.launch_func  @xent_kernels::@xent_loss_grad_
// CHECK-NOT:       xent_linear_convert
// CHECK:           %[[DHC:.*]] = memref.subview %[[DH]]
// CHECK-NEXT:      func.call @xentGemm_bf16_bf16(%{{.*}}, %{{.*}}, %[[DHC]],
// CHECK-NOT:       func.call
// CHECK:         }
// CHECK-NOT:     xent_linear_convert
// CHECK:         gpu.launch_func  @xent_kernels::@xent_convert_
// CHECK:       return %[[R]]#0, %[[R]]#1 : tensor<f32>, tensor<?x64xbf16>
// CANON-LABEL: func.func @frozen_weight
// CANON-NOT:   tensor.empty
// CANON:       return
func.func @frozen_weight(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>) {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad mean %g, %h, %w bias %b, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>)
  return %l, %dh : tensor<f32>, tensor<?x64xbf16>
}

// Frozen hidden states (a head trained on a frozen backbone): the
// weight's f32 accumulator, and no d_hidden GEMM.
// CHECK-LABEL: func.func @frozen_hidden
// CHECK:       %[[R:.*]]:2 = xent.launch ins({{.*}}) dims({{.*}}) tied [-1, -1] -> (tensor<f32>, tensor<?x64xbf16>)
// CHECK-NEXT:  ^bb0({{.*}}, %[[L:[^:]*]]: memref<f32, {{.*}}>, %[[DW:[^:]*]]: memref<?x?xbf16, {{.*}}>):
// CHECK:         %[[DW32:.*]] = gpu.alloc  ({{.*}}) : memref<?x?xf32>
// CHECK:         scf.for
// CHECK:           gpu.launch_func  @xent_kernels::@xent_loss_grad_
// CHECK-NOT:       @xentGemm_bf16_bf16
// CHECK:           %[[ACC:.*]] = memref.cast %[[DW32]]
// CHECK-NEXT:      func.call @xentGemm_bf16_f32(%{{.*}}, %{{.*}}, %[[ACC]],
// CHECK-NOT:       func.call
// CHECK:         }
// CHECK:         %[[ACC2:.*]] = memref.cast %[[DW32]]
// CHECK:         gpu.launch_func  @xent_kernels::@xent_linear_convert_{{.*}} args(%[[ACC2]] : {{.*}}, %[[DW]] :
// CHECK:       return %[[R]]#0, %[[R]]#1 : tensor<f32>, tensor<?x64xbf16>
func.func @frozen_hidden(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>)
  return %l, %dw : tensor<f32>, tensor<?x64xbf16>
}

// A frozen weight with a trained bias: the bias's GEMV and its accumulator,
// no d_weight GEMM.
// CHECK-LABEL: func.func @frozen_weight_trained_bias
// CHECK:       xent.launch ins({{.*}}) dims({{.*}}) tied [-1, -1, -1] -> (tensor<f32>, tensor<?x64xbf16>, tensor<?xbf16>)
// CHECK:         gpu.alloc  ({{.*}}) : memref<?x?xf32>
// CHECK-NOT:     gpu.alloc  ({{.*}}) : memref<?x?xf32>
// CHECK:         scf.for
// CHECK:           func.call @xentGemm_bf16_bf16(
// CHECK-NOT:       func.call
// CHECK:           func.call @xentGemm_bf16_f32(
// CHECK-NOT:       func.call
// CHECK:         }
func.func @frozen_weight_trained_bias(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>, tensor<?xbf16>) {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad sum %g, %h, %w bias %b, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>)
  return %l, %dh, %db : tensor<f32>, tensor<?x64xbf16>, tensor<?xbf16>
}

// No gradient used: the chunks' logits GEMM and the row kernel alone.
// CHECK-LABEL: func.func @nothing_used
// CHECK:       xent.launch ins({{.*}}) tied [-1] -> (tensor<f32>)
// CHECK:         scf.for
// CHECK:           func.call @xentGemm_bf16_f32(
// CHECK:           gpu.launch_func  @xent_kernels::@xent_loss_grad_
// CHECK-NOT:       func.call
// CHECK:         }
// CHECK:       return
func.func @nothing_used(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<?xi64>)
    -> tensor<f32> {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>)
  return %l : tensor<f32>
}
