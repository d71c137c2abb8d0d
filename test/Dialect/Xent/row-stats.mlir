// RUN: xent-opt %s | xent-opt | FileCheck %s

// CHECK-LABEL: func.func @forward_slice
// CHECK: xent.cross_entropy sum %{{.*}}, %{{.*}} weight %{{.*}} class_offset %{{.*}} {label_smoothing = 1.000000e-01 : f32, num_classes = 64 : i64, return_row_stats}
// CHECK-SAME: (tensor<4x32xf32>, tensor<4xi64>, tensor<32xf32>, i64) -> (tensor<f32>, tensor<4x6xf32>)
func.func @forward_slice(%x: tensor<4x32xf32>, %t: tensor<4xi64>,
                         %w: tensor<32xf32>, %o: i64) -> tensor<4x6xf32> {
  %l, %s = xent.cross_entropy sum %x, %t weight %w class_offset %o
      {num_classes = 64 : i64, return_row_stats, label_smoothing = 0.1 : f32}
      : (tensor<4x32xf32>, tensor<4xi64>, tensor<32xf32>, i64)
      -> (tensor<f32>, tensor<4x6xf32>)
  return %s : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @forward_whole_rows
// CHECK: xent.cross_entropy mean %{{.*}}, %{{.*}} {return_lse, return_row_stats}
func.func @forward_whole_rows(%x: tensor<2x3x10xbf16>, %t: tensor<2x10xi32>)
    -> tensor<2x10x3xf32> {
  %l, %lse, %s = xent.cross_entropy mean %x, %t {return_lse, return_row_stats}
      : (tensor<2x3x10xbf16>, tensor<2x10xi32>)
      -> (tensor<f32>, tensor<2x10xf32>, tensor<2x10x3xf32>)
  return %s : tensor<2x10x3xf32>
}

// CHECK-LABEL: func.func @gradient_slice
// CHECK: xent.cross_entropy_grad mean %{{.*}}, %{{.*}}, %{{.*}} row_stats %{{.*}} class_offset %{{.*}} z_loss_scale %{{.*}} {num_classes = 64 : i64}
func.func @gradient_slice(%g: tensor<f32>, %x: tensor<?x32xf16>,
                          %t: tensor<?xi64>, %s: tensor<?x3xf32>, %o: i64,
                          %z: f32) -> tensor<?x32xf16> {
  %d = xent.cross_entropy_grad mean %g, %x, %t row_stats %s class_offset %o
      z_loss_scale %z {num_classes = 64 : i64}
      : (tensor<f32>, tensor<?x32xf16>, tensor<?xi64>, tensor<?x3xf32>, i64,
         f32) -> tensor<?x32xf16>
  return %d : tensor<?x32xf16>
}

// CHECK-LABEL: func.func @gradient_whole_rows
// CHECK: xent.cross_entropy_grad none %{{.*}}, %{{.*}}, %{{.*}} weight %{{.*}} row_stats %{{.*}} :
func.func @gradient_whole_rows(%g: tensor<4xf32>, %x: tensor<4x10xf32>,
                               %t: tensor<4xi64>, %w: tensor<10xf32>,
                               %s: tensor<4x4xf32>) -> tensor<4x10xf32> {
  %d = xent.cross_entropy_grad none %g, %x, %t weight %w row_stats %s
      : (tensor<4xf32>, tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>,
         tensor<4x4xf32>) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}

// num_classes at run time: an i64 operand after class_offset (one compiled
// op serves every vocabulary and split).
// CHECK-LABEL: func.func @dynamic_num_classes
// CHECK: xent.cross_entropy none %{{.*}}, %{{.*}} class_offset %[[O:[^ ]*]] num_classes %[[N:[^ ]*]] ignore_index %{{.*}} {return_row_stats}
// CHECK-SAME: (tensor<?x?xbf16>, tensor<?xi64>, i64, i64, i64) -> (tensor<?xf32>, tensor<?x3xf32>)
// CHECK: xent.cross_entropy_grad sum %{{.*}}, %{{.*}}, %{{.*}} row_stats %{{.*}} class_offset %[[O]] num_classes %[[N]] :
func.func @dynamic_num_classes(%x: tensor<?x?xbf16>, %t: tensor<?xi64>, %g: tensor<f32>,
                               %o: i64, %n: i64, %ii: i64) -> tensor<?x?xbf16> {
  %l, %s = xent.cross_entropy none %x, %t class_offset %o num_classes %n ignore_index %ii
      {return_row_stats}
      : (tensor<?x?xbf16>, tensor<?xi64>, i64, i64, i64) -> (tensor<?xf32>, tensor<?x3xf32>)
  %d = xent.cross_entropy_grad sum %g, %x, %t row_stats %s class_offset %o num_classes %n
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?x3xf32>, i64, i64)
      -> tensor<?x?xbf16>
  return %d : tensor<?x?xbf16>
}
