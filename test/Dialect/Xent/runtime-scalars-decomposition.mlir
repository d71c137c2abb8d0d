// RUN: xent-opt %s --xent-materialize-decomposition --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-inline-decomposition --split-input-file | FileCheck %s --check-prefix=INLINE
// RUN: xent-opt %s --xent-chunk-linear-cross-entropy=rows=4 --split-input-file | FileCheck %s --check-prefix=CHUNK

// Run-time scalars are the decomposition block's last arguments; the
// canonical decomposition reads them where it would build a constant of the
// attribute's value.

// CHECK-LABEL: func @smoothing_and_ignore_index
// CHECK: xent.cross_entropy sum %{{.*}}, %{{.*}} ignore_index %{{.*}} label_smoothing %{{.*}} : {{.*}} decomposition {
// CHECK: ^bb0(%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4xi64>, %[[I:.*]]: i64, %[[E:.*]]: f32):
// CHECK:   linalg.generic
// CHECK:     arith.cmpi ne, %{{.*}}, %[[I]] : i64
// (1 - ε)
// CHECK:     arith.mulf %{{.*}}, %[[E]] : f32
// CHECK:     arith.addf
// ε / C
// CHECK:     arith.divf %[[E]], %{{.*}} : f32
// CHECK:   xent.yield
// INLINE-LABEL: func @smoothing_and_ignore_index
// INLINE-SAME: (%{{.*}}: tensor<4x10xf32>, %{{.*}}: tensor<4xi64>, %[[I:.*]]: i64, %[[E:.*]]: f32)
// INLINE-NOT: xent.
// INLINE: arith.cmpi ne, %{{.*}}, %[[I]] : i64
// INLINE: arith.divf %[[E]], %{{.*}} : f32
func.func @smoothing_and_ignore_index(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %i: i64, %e: f32) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t ignore_index %i label_smoothing %e : (tensor<4x10xf32>, tensor<4xi64>, i64, f32) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func @softcap_and_z_loss
// CHECK: ^bb0(%{{.*}}: tensor<f32>, %{{.*}}: tensor<4x10xf32>, %{{.*}}: tensor<4xi32>, %[[Z:.*]]: f32, %[[C:.*]]: f32):
// The capped logit where the logits are read: c·tanh(x / c).
// CHECK:   linalg.generic
// CHECK:     %[[S:.*]] = arith.divf %{{.*}}, %[[C]] : f32
// CHECK:     %[[TH:.*]] = math.tanh %[[S]] : f32
// CHECK:     arith.mulf %[[C]], %[[TH]] : f32
// The default ignore_index stays a constant.
// CHECK:   linalg.generic
// CHECK:     arith.cmpi ne, %{{.*}}, %c-100_i64 : i64
// d(z·lse²)/dx = 2·z·lse·p
// CHECK:     %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:     arith.mulf %[[TWO]], %[[Z]] : f32
// CHECK:   xent.yield
func.func @softcap_and_z_loss(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi32>, %z: f32, %c: f32) -> tensor<4x10xf32> {
  %d = xent.cross_entropy_grad sum %g, %x, %t z_loss_scale %z softcap %c : (tensor<f32>, tensor<4x10xf32>, tensor<4xi32>, f32, f32) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}

// -----

// The linear family forwards its scalars to the loss op of its
// decomposition, whose own decomposition reads them; the chunk pass passes
// them to each chunk's loss op.
// CHECK-LABEL: func @linear
// INLINE-LABEL: func @linear
// INLINE-SAME: %[[E:[^:]*]]: f32)
// INLINE-NOT: xent.
// INLINE: linalg.matmul
// INLINE: arith.divf %[[E]], %{{.*}} : f32
// CHUNK-LABEL: func @linear
// CHUNK-SAME: %[[E:[^:]*]]: f32)
// CHUNK: scf.for
// CHUNK:   linalg.matmul
// CHUNK:   xent.cross_entropy_and_grad sum %{{.*}}, %{{.*}}, %{{.*}} label_smoothing %[[E]] :
func.func @linear(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %e: f32) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t label_smoothing %e : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>)
  return %l, %dh, %dw : tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>
}
