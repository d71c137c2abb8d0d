// RUN: xent-opt %s | xent-opt | FileCheck %s
// RUN: xent-opt %s --mlir-print-op-generic | xent-opt | FileCheck %s

// CHECK-LABEL: func @mean_2d
// CHECK: xent.cross_entropy mean %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
func.func @mean_2d(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @all_attributes
// CHECK: %{{.*}}, %{{.*}} = xent.cross_entropy none %{{.*}}, %{{.*}} weight %{{.*}} {axis = 1 : i64, ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f32, softcap = 3.000000e+01 : f32, z_loss_scale = 5.000000e-01 : f32} : (tensor<?x?x3xbf16>, tensor<?x3xi32>, tensor<?xf32>) -> (tensor<?x3xbf16>, tensor<?x3xf32>)
func.func @all_attributes(%x: tensor<?x?x3xbf16>, %t: tensor<?x3xi32>, %w: tensor<?xf32>) -> (tensor<?x3xbf16>, tensor<?x3xf32>) {
  %l, %z = xent.cross_entropy none %x, %t weight %w {axis = 1 : i64, ignore_index = 0 : i64, label_smoothing = 0.1 : f32, z_loss_scale = 0.5 : f32, softcap = 30.0 : f32} : (tensor<?x?x3xbf16>, tensor<?x3xi32>, tensor<?xf32>) -> (tensor<?x3xbf16>, tensor<?x3xf32>)
  return %l, %z : tensor<?x3xbf16>, tensor<?x3xf32>
}

// CHECK-LABEL: func @unbatched
// CHECK: xent.cross_entropy sum %{{.*}}, %{{.*}} : (tensor<7xf16>, tensor<i32>) -> tensor<f32>
func.func @unbatched(%x: tensor<7xf16>, %t: tensor<i32>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<7xf16>, tensor<i32>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @class_axis_last
// CHECK: xent.cross_entropy mean %{{.*}}, %{{.*}} {axis = 2 : i64}
func.func @class_axis_last(%x: tensor<2x5x32xf32>, %t: tensor<2x5xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t {axis = 2 : i64} : (tensor<2x5x32xf32>, tensor<2x5xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @probabilities
// CHECK: xent.cross_entropy mean %{{.*}}, %{{.*}} {label_smoothing = 2.500000e-01 : f32} : (tensor<8x100xf32>, tensor<8x100xf32>) -> tensor<f32>
func.func @probabilities(%x: tensor<8x100xf32>, %p: tensor<8x100xf32>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %p {label_smoothing = 0.25 : f32} : (tensor<8x100xf32>, tensor<8x100xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @gradients
// CHECK: xent.cross_entropy_grad mean %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<?x32000xbf16>, tensor<?xi64>) -> tensor<?x32000xbf16>
// CHECK: xent.cross_entropy_grad none %{{.*}}, %{{.*}}, %{{.*}} weight %{{.*}} {ignore_index = 3 : i64} : (tensor<4xf32>, tensor<4x9xf32>, tensor<4xi64>, tensor<9xf32>) -> tensor<4x9xf32>
func.func @gradients(%g: tensor<f32>, %x: tensor<?x32000xbf16>, %t: tensor<?xi64>,
                     %gn: tensor<4xf32>, %y: tensor<4x9xf32>, %u: tensor<4xi64>, %w: tensor<9xf32>)
    -> (tensor<?x32000xbf16>, tensor<4x9xf32>) {
  %d = xent.cross_entropy_grad mean %g, %x, %t : (tensor<f32>, tensor<?x32000xbf16>, tensor<?xi64>) -> tensor<?x32000xbf16>
  %e = xent.cross_entropy_grad none %gn, %y, %u weight %w {ignore_index = 3 : i64} : (tensor<4xf32>, tensor<4x9xf32>, tensor<4xi64>, tensor<9xf32>) -> tensor<4x9xf32>
  return %d, %e : tensor<?x32000xbf16>, tensor<4x9xf32>
}

// A decomposition written by hand is kept as written.
// CHECK-LABEL: func @explicit_region
// CHECK: xent.cross_entropy sum %{{.*}}, %{{.*}} : (tensor<1x1xf32>, tensor<1xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x1xf32>, %[[T:.*]]: tensor<1xi64>):
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:   xent.yield %[[ZERO]] : tensor<f32>
// CHECK-NEXT: }
func.func @explicit_region(%x: tensor<1x1xf32>, %t: tensor<1xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<1x1xf32>, tensor<1xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<1x1xf32>, %b: tensor<1xi64>):
    %zero = arith.constant dense<0.0> : tensor<f32>
    xent.yield %zero : tensor<f32>
  }
  return %l : tensor<f32>
}

// The reduction attribute on its own.
// CHECK-LABEL: func @reduction_attr
// CHECK: xent.reduction = #xent.reduction<sum>
func.func @reduction_attr() attributes {xent.reduction = #xent.reduction<sum>} {
  return
}

// CHECK-LABEL: func @joint
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = xent.cross_entropy_and_grad sum %{{.*}}, %{{.*}}, %{{.*}} weight %{{.*}} {label_smoothing = 2.500000e-01 : f32} : (tensor<f32>, tensor<?x7xf16>, tensor<?xi32>, tensor<7xf32>) -> (tensor<f32>, tensor<f32>, tensor<?x7xf16>)
// CHECK: %{{.*}}, %{{.*}} = xent.cross_entropy_and_grad none %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3x5xf32>)
func.func @joint(%g: tensor<f32>, %x: tensor<?x7xf16>, %t: tensor<?xi32>, %w: tensor<7xf32>,
                 %gn: tensor<3xf32>, %y: tensor<3x5xf32>, %p: tensor<3x5xf32>) {
  %l, %z, %d = xent.cross_entropy_and_grad sum %g, %x, %t weight %w {label_smoothing = 0.25 : f32} : (tensor<f32>, tensor<?x7xf16>, tensor<?xi32>, tensor<7xf32>) -> (tensor<f32>, tensor<f32>, tensor<?x7xf16>)
  %l2, %d2 = xent.cross_entropy_and_grad none %gn, %y, %p : (tensor<3xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3x5xf32>)
  return
}

// Per-row outputs: each `return_*` unit attribute selects one result after
// the loss (and the z-loss when there is one more result).

// CHECK-LABEL: func @row_outputs
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = xent.cross_entropy mean %{{.*}}, %{{.*}} {return_accuracy, return_argmax, return_lse} : (tensor<4x10xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>, tensor<4xi64>, tensor<f32>)
func.func @row_outputs(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>, tensor<4xi64>, tensor<f32>) {
  %l, %lse, %am, %acc = xent.cross_entropy mean %x, %t {return_lse, return_argmax, return_accuracy} : (tensor<4x10xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>, tensor<4xi64>, tensor<f32>)
  return %l, %lse, %am, %acc : tensor<f32>, tensor<4xf32>, tensor<4xi64>, tensor<f32>
}

// CHECK-LABEL: func @row_outputs_with_z_loss
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = xent.cross_entropy none %{{.*}}, %{{.*}} {return_argmax, z_loss_scale = 5.000000e-01 : f32} : (tensor<?x?xf32>, tensor<?xi64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi32>)
func.func @row_outputs_with_z_loss(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi32>) {
  %l, %z, %am = xent.cross_entropy none %x, %t {z_loss_scale = 0.5 : f32, return_argmax} : (tensor<?x?xf32>, tensor<?xi64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi32>)
  return %l, %z, %am : tensor<?xf32>, tensor<?xf32>, tensor<?xi32>
}

// CHECK-LABEL: func @lse_probability_targets
// CHECK: xent.cross_entropy sum %{{.*}}, %{{.*}} {axis = 2 : i64, return_lse, softcap = 3.000000e+01 : f32} : (tensor<2x3x8xf16>, tensor<2x3x8xf16>) -> (tensor<f32>, tensor<2x3xf16>)
func.func @lse_probability_targets(%x: tensor<2x3x8xf16>, %q: tensor<2x3x8xf16>) -> (tensor<f32>, tensor<2x3xf16>) {
  %l, %lse = xent.cross_entropy sum %x, %q {axis = 2 : i64, softcap = 30.0 : f32, return_lse} : (tensor<2x3x8xf16>, tensor<2x3x8xf16>) -> (tensor<f32>, tensor<2x3xf16>)
  return %l, %lse : tensor<f32>, tensor<2x3xf16>
}

// CHECK-LABEL: func @joint_row_outputs
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = xent.cross_entropy_and_grad sum %{{.*}}, %{{.*}}, %{{.*}} {return_accuracy, return_lse, z_loss_scale = 5.000000e-01 : f32} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<4x10xf32>)
func.func @joint_row_outputs(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<4x10xf32>) {
  %l, %z, %lse, %acc, %d = xent.cross_entropy_and_grad sum %g, %x, %t {z_loss_scale = 0.5 : f32, return_lse, return_accuracy} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<4x10xf32>)
  return %l, %z, %lse, %acc, %d : tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<4x10xf32>
}
