// RUN: xent-opt %s | xent-opt | FileCheck %s
// RUN: xent-opt %s --mlir-print-op-generic | xent-opt | FileCheck %s

// CHECK-LABEL: func @forward
// CHECK: xent.linear_cross_entropy mean %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32>
func.func @forward(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @forward_all_attributes
// CHECK: %{{.*}}, %{{.*}} = xent.linear_cross_entropy none %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} class_weight %{{.*}} {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f32, softcap = 3.000000e+01 : f32, z_loss_scale = 5.000000e-01 : f32} : (tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?x?xi32>, tensor<?xf32>) -> (tensor<?x?xbf16>, tensor<?x?xf32>)
func.func @forward_all_attributes(%h: tensor<?x?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?x?xi32>, %cw: tensor<?xf32>) -> (tensor<?x?xbf16>, tensor<?x?xf32>) {
  %l, %z = xent.linear_cross_entropy none %h, %w bias %b, %t class_weight %cw {ignore_index = 0 : i64, label_smoothing = 0.1 : f32, z_loss_scale = 0.5 : f32, softcap = 30.0 : f32} : (tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?x?xi32>, tensor<?xf32>) -> (tensor<?x?xbf16>, tensor<?x?xf32>)
  return %l, %z : tensor<?x?xbf16>, tensor<?x?xf32>
}

// CHECK-LABEL: func @class_weight_without_bias
// CHECK: xent.linear_cross_entropy sum %{{.*}}, %{{.*}}, %{{.*}} class_weight %{{.*}} :
func.func @class_weight_without_bias(%h: tensor<8x64xf16>, %w: tensor<100x64xf16>, %t: tensor<8xi64>, %cw: tensor<100xf16>) -> tensor<f32> {
  %l = xent.linear_cross_entropy sum %h, %w, %t class_weight %cw : (tensor<8x64xf16>, tensor<100x64xf16>, tensor<8xi64>, tensor<100xf16>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @gradient
// CHECK: = xent.linear_cross_entropy_grad sum %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>)
func.func @gradient(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>) {
  %dh, %dw = xent.linear_cross_entropy_grad sum %g, %h, %w, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>)
  return %dh, %dw : tensor<8x64xf32>, tensor<100x64xf32>
}

// CHECK-LABEL: func @gradient_bias
// CHECK: = xent.linear_cross_entropy_grad none %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} {softcap = 2.000000e+01 : f32} : (tensor<2x4xf32>, tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>, tensor<2x4xi64>) -> (tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>)
func.func @gradient_bias(%g: tensor<2x4xf32>, %h: tensor<2x4x64xbf16>, %w: tensor<100x64xbf16>, %b: tensor<100xbf16>, %t: tensor<2x4xi64>) -> (tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>) {
  %dh, %dw, %db = xent.linear_cross_entropy_grad none %g, %h, %w bias %b, %t {softcap = 20.0 : f32} : (tensor<2x4xf32>, tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>, tensor<2x4xi64>) -> (tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>)
  return %dh, %dw, %db : tensor<2x4x64xbf16>, tensor<100x64xbf16>, tensor<100xbf16>
}

// The joint op: which optional results are present follows from the number
// of result types and the bias.

// CHECK-LABEL: func @joint
// CHECK: = xent.linear_cross_entropy_and_grad mean %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>)
func.func @joint(%g: tensor<f32>, %h: tensor<?x64xf32>, %w: tensor<100x64xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t : (tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>)
  return %l, %dh, %dw : tensor<f32>, tensor<?x64xf32>, tensor<100x64xf32>
}

// CHECK-LABEL: func @joint_z_loss
// CHECK: = xent.linear_cross_entropy_and_grad mean %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {z_loss_scale = 2.500000e-01 : f32} : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>)
func.func @joint_z_loss(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<f32>) {
  %l, %z, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t {z_loss_scale = 2.5e-1 : f32} : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>)
  return %l, %z : tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func @joint_bias
// CHECK: = xent.linear_cross_entropy_and_grad sum %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>)
func.func @joint_bias(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<100xf32>, %t: tensor<8xi64>) -> tensor<100xf32> {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad sum %g, %h, %w bias %b, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>)
  return %db : tensor<100xf32>
}

// CHECK-LABEL: func @joint_everything
// CHECK: = xent.linear_cross_entropy_and_grad none %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} class_weight %{{.*}} {ignore_index = 7 : i64, label_smoothing = 5.000000e-02 : f32, softcap = 1.500000e+01 : f32, z_loss_scale = 1.000000e-03 : f32} : (tensor<?x?xbf16>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?x?xi32>, tensor<?xbf16>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>)
// CHECK-SAME: decomposition
// CHECK: xent.yield
func.func @joint_everything(%g: tensor<?x?xbf16>, %h: tensor<?x?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?x?xi32>, %cw: tensor<?xbf16>) -> tensor<?xbf16> {
  %l, %z, %dh, %dw, %db = xent.linear_cross_entropy_and_grad none %g, %h, %w bias %b, %t class_weight %cw {ignore_index = 7 : i64, label_smoothing = 0.05 : f32, z_loss_scale = 1.0e-3 : f32, softcap = 15.0 : f32} : (tensor<?x?xbf16>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?x?xi32>, tensor<?xbf16>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>) decomposition {
  ^bb0(%a0: tensor<?x?xbf16>, %a1: tensor<?x?x64xbf16>, %a2: tensor<?x64xbf16>, %a3: tensor<?xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xbf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n0 = tensor.dim %a4, %c0 : tensor<?x?xi32>
    %n1 = tensor.dim %a4, %c1 : tensor<?x?xi32>
    %l0 = tensor.empty(%n0, %n1) : tensor<?x?xf32>
    xent.yield %l0, %l0, %a1, %a2, %a3 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>
  }
  return %db : tensor<?xbf16>
}
