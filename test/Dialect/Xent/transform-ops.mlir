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
// CHECK-SAME:  (%[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8xi64>, %[[G:.*]]: tensor<f32>)
// CHECK:       %[[L:.*]], %[[D:.*]] = xent.cross_entropy_and_grad mean %[[G]], %[[X]], %[[T]] {ignore_index = -100 : i64}
// CHECK-NOT:   tosa.
// CHECK:       return %[[L]], %[[D]]
func.func @recognize_then_fuse(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>) {
  %0 = tosa.reduce_max %arg0 {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
  %1 = "tosa.const"() <{values = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %2 = tosa.const_shape  {values = dense<1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %3 = tosa.reshape %1, %2 : (tensor<f32>, !tosa.shape<2>) -> tensor<1x1xf32>
  %4 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %5 = tosa.mul %0, %3, %4 : (tensor<8x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<8x1xf32>
  %6 = tosa.sub %arg0, %5 : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  %7 = tosa.exp %6 : (tensor<8x10xf32>) -> tensor<8x10xf32>
  %8 = tosa.reduce_sum %7 {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
  %9 = tosa.log %8 : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %10 = "tosa.const"() <{values = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %11 = tosa.const_shape  {values = dense<1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %12 = tosa.reshape %10, %11 : (tensor<f32>, !tosa.shape<2>) -> tensor<1x1xf32>
  %13 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %14 = tosa.mul %9, %12, %13 : (tensor<8x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<8x1xf32>
  %15 = tosa.sub %6, %14 : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  %16 = "tosa.const"() <{values = dense<-100> : tensor<i64>}> : () -> tensor<i64>
  %17 = tosa.const_shape  {values = dense<1> : tensor<1xindex>} : () -> !tosa.shape<1>
  %18 = tosa.reshape %16, %17 : (tensor<i64>, !tosa.shape<1>) -> tensor<1xi64>
  %19 = tosa.equal %arg1, %18 : (tensor<8xi64>, tensor<1xi64>) -> tensor<8xi1>
  %20 = tosa.logical_not %19 : (tensor<8xi1>) -> tensor<8xi1>
  %21 = "tosa.const"() <{values = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %22 = tosa.const_shape  {values = dense<1> : tensor<1xindex>} : () -> !tosa.shape<1>
  %23 = tosa.reshape %21, %22 : (tensor<i64>, !tosa.shape<1>) -> tensor<1xi64>
  %24 = tosa.select %20, %arg1, %23 : (tensor<8xi1>, tensor<8xi64>, tensor<1xi64>) -> tensor<8xi64>
  %25 = tosa.const_shape  {values = dense<[8, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %26 = tosa.reshape %24, %25 : (tensor<8xi64>, !tosa.shape<2>) -> tensor<8x1xi64>
  %27 = tosa.cast %26 : (tensor<8x1xi64>) -> tensor<8x1xi32>
  %28 = tosa.const_shape  {values = dense<[8, 1, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %29 = tosa.reshape %27, %28 : (tensor<8x1xi32>, !tosa.shape<3>) -> tensor<8x1x1xi32>
  %30 = "tosa.const"() <{values = dense<[[[0]], [[1]], [[2]], [[3]], [[4]], [[5]], [[6]], [[7]]]> : tensor<8x1x1xi32>}> : () -> tensor<8x1x1xi32>
  %31 = tosa.concat %30, %29 {axis = 2 : i32} : (tensor<8x1x1xi32>, tensor<8x1x1xi32>) -> tensor<8x1x2xi32>
  %32 = tosa.const_shape  {values = dense<[1, 80, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %33 = tosa.reshape %15, %32 : (tensor<8x10xf32>, !tosa.shape<3>) -> tensor<1x80x1xf32>
  %34 = tosa.const_shape  {values = dense<[8, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %35 = tosa.reshape %31, %34 : (tensor<8x1x2xi32>, !tosa.shape<2>) -> tensor<8x2xi32>
  %36 = "tosa.const"() <{values = dense<[10, 1]> : tensor<2xi32>}> : () -> tensor<2xi32>
  %37 = tosa.const_shape  {values = dense<[1, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %38 = tosa.reshape %36, %37 : (tensor<2xi32>, !tosa.shape<2>) -> tensor<1x2xi32>
  %39 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %40 = tosa.mul %35, %38, %39 : (tensor<8x2xi32>, tensor<1x2xi32>, tensor<1xi8>) -> tensor<8x2xi32>
  %41 = tosa.reduce_sum %40 {axis = 1 : i32} : (tensor<8x2xi32>) -> tensor<8x1xi32>
  %42 = tosa.const_shape  {values = dense<[1, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %43 = tosa.reshape %41, %42 : (tensor<8x1xi32>, !tosa.shape<2>) -> tensor<1x8xi32>
  %44 = tosa.gather %33, %43 : (tensor<1x80x1xf32>, tensor<1x8xi32>) -> tensor<1x8x1xf32>
  %45 = tosa.const_shape  {values = dense<[8, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %46 = tosa.reshape %44, %45 : (tensor<1x8x1xf32>, !tosa.shape<2>) -> tensor<8x1xf32>
  %47 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
  %48 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
  %49 = tosa.negate %46, %47, %48 : (tensor<8x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x1xf32>
  %50 = tosa.const_shape  {values = dense<8> : tensor<1xindex>} : () -> !tosa.shape<1>
  %51 = tosa.reshape %49, %50 : (tensor<8x1xf32>, !tosa.shape<1>) -> tensor<8xf32>
  %52 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %53 = tosa.const_shape  {values = dense<1> : tensor<1xindex>} : () -> !tosa.shape<1>
  %54 = tosa.reshape %52, %53 : (tensor<f32>, !tosa.shape<1>) -> tensor<1xf32>
  %55 = tosa.select %20, %51, %54 : (tensor<8xi1>, tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %56 = tosa.reduce_sum %55 {axis = 0 : i32} : (tensor<8xf32>) -> tensor<1xf32>
  %57 = tosa.const_shape  {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %58 = tosa.reshape %56, %57 : (tensor<1xf32>, !tosa.shape<0>) -> tensor<f32>
  %59 = tosa.cast %20 : (tensor<8xi1>) -> tensor<8xi8>
  %60 = tosa.cast %59 : (tensor<8xi8>) -> tensor<8xf32>
  %61 = tosa.reduce_sum %60 {axis = 0 : i32} : (tensor<8xf32>) -> tensor<1xf32>
  %62 = tosa.const_shape  {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %63 = tosa.reshape %61, %62 : (tensor<1xf32>, !tosa.shape<0>) -> tensor<f32>
  %64 = tosa.reciprocal %63 : (tensor<f32>) -> tensor<f32>
  %65 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %66 = tosa.mul %58, %64, %65 : (tensor<f32>, tensor<f32>, tensor<1xi8>) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %g, %arg0, %arg1 {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32>
  return %66, %d : tensor<f32>, tensor<8x10xf32>
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
