// RUN: xent-opt %s --xent-recognize --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-recognize --xent-inline-decomposition --split-input-file \
// RUN:   | FileCheck %s --check-prefix=INLINE
// RUN: xent-opt %s --xent-recognize=report-failures --split-input-file 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=WHY

// TOSA's projection: tosa.matmul is rank 3, so the rows become a batch of
// one ([1, N, H] by tosa.reshape) and the weight [1, H, V] (tosa.transpose
// of the [V, H] weight, before or after the reshape); the bias is added by
// tosa.add with implicit broadcasting of a [1, 1, V] reshape, and the
// [1, N, V] product is reshaped to the logits.

// CHECK-LABEL: func @tosa_matmul
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy mean %[[H]], %[[W]], %[[T]] {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK:        tosa.transpose
// CHECK:        tosa.matmul
// CHECK:        xent.cross_entropy mean
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]]
// INLINE-LABEL: func @tosa_matmul
// INLINE:       tosa.matmul
// INLINE-NOT:   xent.linear
func.func @tosa_matmul(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %wt = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %s2 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %wt, %s2 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %h1, %w1, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[8, 32]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %logits = tosa.reshape %p, %s3 : (tensor<1x8x32xf32>, !tosa.shape<2>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t {ignore_index = -100 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// [B, T, H] rows flattened to [1, B·T, H], the weight reshaped to
// [1, V, H] and transposed there, the bias added, the logits [B, T, V].
// CHECK-LABEL: func @tosa_matmul_bias_rank3
// CHECK-SAME: (%[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy sum %[[H]], %[[W]] bias %[[B]], %[[T]] {ignore_index = -100 : i64, z_loss_scale = 0.00999999977 : f32} : (tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<2x4xi64>) -> tensor<f32> decomposition {
// CHECK:        tosa.transpose
// CHECK:        tosa.matmul
// CHECK:        tosa.add
// CHECK:        xent.cross_entropy sum
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]]
func.func @tosa_matmul_bias_rank3(%h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<2x4x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %s2 = tosa.const_shape {values = dense<[1, 32, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %w, %s2 : (tensor<32x16xf32>, !tosa.shape<3>) -> tensor<1x32x16xf32>
  %wt = tosa.transpose %w1 {perms = array<i32: 0, 2, 1>} : (tensor<1x32x16xf32>) -> tensor<1x16x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %h1, %wt, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[1, 1, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %b1 = tosa.reshape %b, %s3 : (tensor<32xf32>, !tosa.shape<3>) -> tensor<1x1x32xf32>
  %pb = tosa.add %p, %b1 : (tensor<1x8x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %s4 = tosa.const_shape {values = dense<[2, 4, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %logits = tosa.reshape %pb, %s4 : (tensor<1x8x32xf32>, !tosa.shape<3>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy sum %logits, %t {axis = 2 : i64, ignore_index = -100 : i64, z_loss_scale = 0.01 : f32} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Near misses stay as they are.

// The [H, V] weight is reshaped without a transpose: the op takes [V, H].
// WHY: remark: not raised to a linear cross-entropy: the product reads a [H, V] weight that is not the transpose of a [V, H] one
// CHECK-LABEL: func @nm_tosa_weight_not_transposed
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       tosa.matmul
// CHECK:       xent.cross_entropy mean
func.func @nm_tosa_weight_not_transposed(%h: tensor<8x16xf32>, %w: tensor<16x32xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %s2 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %w, %s2 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %h1, %w1, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[8, 32]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %logits = tosa.reshape %p, %s3 : (tensor<1x8x32xf32>, !tosa.shape<2>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The added tensor is [1, N, 1], broadcast along the classes: not a bias.
// WHY: remark: not raised to a linear cross-entropy: the logits add a tensor that is not a [V] bias broadcast over the rows
// CHECK-LABEL: func @nm_tosa_bias_shape
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       tosa.add
// CHECK:       xent.cross_entropy mean
func.func @nm_tosa_bias_shape(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<8xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %wt = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %s2 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %wt, %s2 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %h1, %w1, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %sb = tosa.const_shape {values = dense<[1, 8, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %b1 = tosa.reshape %b, %sb : (tensor<8xf32>, !tosa.shape<3>) -> tensor<1x8x1xf32>
  %pb = tosa.add %p, %b1 : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[8, 32]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %logits = tosa.reshape %pb, %s3 : (tensor<1x8x32xf32>, !tosa.shape<2>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// A batch of two whose [2, H, V] right operand is an argument: one weight
// per batch.
// WHY: remark: not raised to a linear cross-entropy: the logits are not a projection: the batched product's right operand differs per batch (not broadcast)
// CHECK-LABEL: func @nm_tosa_weight_per_batch
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_tosa_weight_per_batch(%h: tensor<2x4x16xf32>, %w: tensor<2x16x32xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %logits = tosa.matmul %h, %w, %zp, %zp : (tensor<2x4x16xf32>, tensor<2x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The [1, N, V] product is also returned: the logits have another user.
// WHY: remark: not raised to a linear cross-entropy: the logits have other users
// CHECK-LABEL: func @nm_tosa_logits_used_elsewhere
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_tosa_logits_used_elsewhere(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x32xf32>) {
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %wt = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %s2 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %wt, %s2 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %h1, %w1, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[8, 32]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %logits = tosa.reshape %p, %s3 : (tensor<1x8x32xf32>, !tosa.shape<2>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %logits : tensor<f32>, tensor<8x32xf32>
}
