// RUN: xent-opt %s --transform-interpreter --split-input-file --verify-diagnostics | FileCheck %s

// The transform-dialect extension: xent's rewrites for compilers driven by
// transform scripts instead of pass pipelines.

// A pattern descriptor: the ops become their decomposition.

// CHECK-LABEL: func.func @inline
// CHECK-NOT:   xent.cross_entropy
// CHECK:       linalg.generic
// CHECK:       %[[L:.*]] = tensor.from_elements
// CHECK-NOT:   xent.cross_entropy
// CHECK:       return %[[L]] : tensor<f32>
func.func @inline(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.xent.inline_decomposition
    } : !transform.any_op
    transform.yield
  }
}

// -----

// Recognition, then the fusion of the raised loss with a gradient of the
// same configuration, each on the function's handle; the handle each
// returns is the same function.

// CHECK-LABEL: func.func @recognize_then_fuse
// CHECK-SAME:  (%[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8xi32>, %[[G:.*]]: tensor<f32>)
// CHECK:       %[[L:.*]], %[[D:.*]] = xent.cross_entropy_and_grad sum %[[G]], %[[X]], %[[T]] {ignore_index = -100 : i64}
// CHECK-NOT:   tosa.
// CHECK:       return %[[L]], %[[D]]
func.func @recognize_then_fuse(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi32>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>) {
  %0 = tosa.reduce_max %arg0 {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
  %1 = tosa.sub %arg0, %0 : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  %2 = tosa.exp %1 : (tensor<8x10xf32>) -> tensor<8x10xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
  %4 = tosa.log %3 : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %5 = tosa.sub %1, %4 : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  %6 = "tosa.const"() <{values = dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]> : tensor<1x10xi32>}> : () -> tensor<1x10xi32>
  %7 = tosa.const_shape  {values = dense<[8, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %8 = tosa.reshape %arg1, %7 : (tensor<8xi32>, !tosa.shape<2>) -> tensor<8x1xi32>
  %9 = tosa.equal %6, %8 : (tensor<1x10xi32>, tensor<8x1xi32>) -> tensor<8x10xi1>
  %10 = tosa.cast %9 : (tensor<8x10xi1>) -> tensor<8x10xi8>
  %11 = tosa.cast %10 : (tensor<8x10xi8>) -> tensor<8x10xf32>
  %12 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %13 = tosa.mul %11, %5, %12 : (tensor<8x10xf32>, tensor<8x10xf32>, tensor<1xi8>) -> tensor<8x10xf32>
  %14 = tosa.reduce_sum %13 {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
  %15 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
  %16 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
  %17 = tosa.negate %14, %15, %16 : (tensor<8x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x1xf32>
  %18 = tosa.const_shape  {values = dense<8> : tensor<1xindex>} : () -> !tosa.shape<1>
  %19 = tosa.reshape %17, %18 : (tensor<8x1xf32>, !tosa.shape<1>) -> tensor<8xf32>
  %20 = "tosa.const"() <{values = dense<-100> : tensor<i32>}> : () -> tensor<i32>
  %21 = tosa.const_shape  {values = dense<1> : tensor<1xindex>} : () -> !tosa.shape<1>
  %22 = tosa.reshape %20, %21 : (tensor<i32>, !tosa.shape<1>) -> tensor<1xi32>
  %23 = tosa.equal %arg1, %22 : (tensor<8xi32>, tensor<1xi32>) -> tensor<8xi1>
  %24 = tosa.logical_not %23 : (tensor<8xi1>) -> tensor<8xi1>
  %25 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %26 = tosa.const_shape  {values = dense<1> : tensor<1xindex>} : () -> !tosa.shape<1>
  %27 = tosa.reshape %25, %26 : (tensor<f32>, !tosa.shape<1>) -> tensor<1xf32>
  %28 = tosa.select %24, %19, %27 : (tensor<8xi1>, tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %29 = tosa.reduce_sum %28 {axis = 0 : i32} : (tensor<8xf32>) -> tensor<1xf32>
  %30 = tosa.const_shape  {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %31 = tosa.reshape %29, %30 : (tensor<1xf32>, !tosa.shape<0>) -> tensor<f32>
  %d = xent.cross_entropy_grad sum %g, %arg0, %arg1 {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi32>) -> tensor<8x10xf32>
  return %31, %d : tensor<f32>, tensor<8x10xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %f1 = transform.xent.recognize %f : (!transform.any_op) -> !transform.any_op
    %f2 = transform.xent.fuse_forward_backward %f1 : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// The GPU lowering on a module's handle, with the pass's options as
// attributes.

// CHECK-LABEL: module @payload attributes {gpu.container_module}
// CHECK:       func.func @lower
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_0 {{.*}} threads in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:   xent.cross_entropy
// CHECK:       gpu.module @xent_kernels
// CHECK:       gpu.func @xent_loss_0
// CHECK-SAME:  known_block_size = array<i32: 256, 1, 1>
module @payload {
  func.func @lower(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
    %l = xent.cross_entropy sum %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %m = transform.structured.match ops{["builtin.module"]} attributes{sym_name = "payload"} in %root : (!transform.any_op) -> !transform.any_op
    %m1 = transform.xent.convert_to_gpu %m {threads = 256 : i64} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// Options the kernels cannot take: the pass's diagnostic, and a definite
// failure of the transform.

module @payload {
  // expected-error @+2 {{threads must be a multiple of 32 in [32, 1024], got 100}}
  // expected-note @+1 {{to this op}}
  func.func @bad(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
    %l = xent.cross_entropy sum %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{could not apply transform.xent.convert_to_gpu}}
    %f1 = transform.xent.convert_to_gpu %f {threads = 100 : i64} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// The mode attribute: the decomposition instead of the kernels.

// CHECK-LABEL: func.func @lower_inline
// CHECK-NOT:   xent.
// CHECK:       linalg.generic
// CHECK-NOT:   gpu.module
module @payload {
  func.func @lower_inline(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
    %l = xent.cross_entropy sum %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %m = transform.structured.match ops{["builtin.module"]} attributes{sym_name = "payload"} in %root : (!transform.any_op) -> !transform.any_op
    %m1 = transform.xent.convert_to_gpu %m {mode = "inline"} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// An op the mode rules out: the pass's diagnostic, and a definite failure.

module @payload {
  // expected-note @+1 {{to this op}}
  func.func @ruled_out(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
    // expected-error @+1 {{would take the decomposition (mode=inline), but allow-decomposition=false}}
    %l = xent.cross_entropy sum %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{could not apply transform.xent.convert_to_gpu}}
    %f1 = transform.xent.convert_to_gpu %f {mode = "inline", allow_decomposition = false} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %m = transform.structured.match ops{["builtin.module"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{'transform.xent.convert_to_gpu' op mode must be "auto", "kernel" or "inline", got "fast"}}
    %m1 = transform.xent.convert_to_gpu %m {mode = "fast"} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
