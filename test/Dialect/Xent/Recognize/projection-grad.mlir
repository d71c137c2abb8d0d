// RUN: xent-opt %s --xent-recognize --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-recognize --xent-inline-decomposition --split-input-file \
// RUN:   | FileCheck %s --check-prefix=INLINE
// RUN: xent-opt %s --xent-recognize=report-failures --split-input-file 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=WHY

// The backward of a projection feeding a cross entropy: the gradient op's
// dlogits feed d_hidden = dlogits · weight, d_weight = dlogitsᵀ · hidden (or
// the transpose of hiddenᵀ · dlogits) and, with a bias, d_bias = Σ_rows
// dlogits, and nothing else. The projection, the gradient op (with the
// loss on the same logits) and the backward products become one
// xent.linear_cross_entropy_grad or _and_grad.

// Autograd's mm backward: d_hidden by the transposed transpose of the
// weight, d_weight as the transpose of hiddenᵀ · dlogits.
// CHECK-LABEL: func @grad_autograd_form
// CHECK-SAME: (%[[G:.*]]: tensor<f32>, %[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK-NEXT: %[[DH:.*]], %[[DW:.*]] = xent.linear_cross_entropy_grad mean %[[G]], %[[H]], %[[W]], %[[T]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>) decomposition {
// CHECK:        linalg.matmul
// CHECK:        xent.cross_entropy_grad mean
// CHECK:        linalg.matmul
// CHECK:        linalg.matmul
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[DH]], %[[DW]] :
// INLINE-LABEL: func @grad_autograd_form
// INLINE-NOT:   xent.
// INLINE:       linalg.matmul
// INLINE-NOT:   xent.
// INLINE:       return
func.func @grad_autograd_form(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e0 : tensor<16x32xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul ins(%h, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %wtt = linalg.transpose ins(%wt : tensor<16x32xf32>) outs(%e2 : tensor<32x16xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %wtt : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<16x8xf32>
  %ht = linalg.transpose ins(%h : tensor<8x16xf32>) outs(%e4 : tensor<16x8xf32>) permutation = [1, 0]
  %acc5 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dwt = linalg.matmul ins(%ht, %d : tensor<16x8xf32>, tensor<8x32xf32>) outs(%acc5 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dw = linalg.transpose ins(%dwt : tensor<16x32xf32>) outs(%e2 : tensor<32x16xf32>) permutation = [1, 0]
  return %dh, %dw : tensor<8x16xf32>, tensor<32x16xf32>
}

// -----

// A training step on [B, T, H]: the loss and its gradient on the same
// logits become the joint op; d_weight by a matmul that reads the dlogits
// transposed through its indexing map, d_bias by linalg.reduce.
// CHECK-LABEL: func @joint_rank3_bias
// CHECK-SAME: (%[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK:      %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[L:.*]], %[[DH:.*]], %[[DW:.*]], %[[DB:.*]] = xent.linear_cross_entropy_and_grad mean %[[ONE]], %[[H]], %[[W]] bias %[[B]], %[[T]] {label_smoothing = 1.000000e-01 : f32} : (tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>) decomposition {
// CHECK:        xent.cross_entropy mean
// CHECK:        xent.cross_entropy_grad mean
// CHECK:        linalg.reduce
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]], %[[DH]], %[[DW]], %[[DB]] :
func.func @joint_rank3_bias(%h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e1 : tensor<8x32xf32>) dimensions = [0]
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%rows, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 4, 32] : tensor<8x32xf32> into tensor<2x4x32xf32>
  %loss = xent.cross_entropy mean %logits, %t {axis = 2 : i64, label_smoothing = 0.1 : f32} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %d = xent.cross_entropy_grad mean %one, %logits, %t {axis = 2 : i64, label_smoothing = 0.1 : f32} : (tensor<f32>, tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<2x4x32xf32>
  %d2 = tensor.collapse_shape %d [[0, 1], [2]] : tensor<2x4x32xf32> into tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh2 = linalg.matmul ins(%d2, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = tensor.expand_shape %dh2 [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e4 = tensor.empty() : tensor<32x16xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d2, %rows : tensor<8x32xf32>, tensor<8x16xf32>) outs(%acc4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32xf32>
  %acc5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<32xf32>) -> tensor<32xf32>
  %db = linalg.reduce ins(%d2 : tensor<8x32xf32>) outs(%acc5 : tensor<32xf32>) dimensions = [0]
    (%in: f32, %acc_in: f32) {
      %s = arith.addf %in, %acc_in : f32
      linalg.yield %s : f32
    }
  return %loss, %dh, %dw, %db : tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>
}

// -----

// The batched forward (batch_matmul with the broadcast transposed weight)
// and its batched d_hidden (batch_matmul with the broadcast weight); the
// joint op computes the z-loss too.
// CHECK-LABEL: func @joint_batched
// CHECK-SAME: (%[[G:.*]]: tensor<f32>, %[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK-NEXT: %[[L:.*]], %[[Z:.*]], %[[DH:.*]], %[[DW:.*]] = xent.linear_cross_entropy_and_grad sum %[[G]], %[[H]], %[[W]], %[[T]] {z_loss_scale = 0.00999999977 : f32} : (tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4xi64>) -> (tensor<f32>, tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>) decomposition {
// CHECK:        xent.cross_entropy_and_grad sum
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]], %[[Z]], %[[DH]], %[[DW]] :
func.func @joint_batched(%g: tensor<f32>, %h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %t: tensor<2x4xi64>) -> (tensor<f32>, tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e0 : tensor<16x32xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%h, %wt : tensor<2x4x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %loss, %z, %d = xent.cross_entropy_and_grad sum %g, %logits, %t {axis = 2 : i64, z_loss_scale = 0.01 : f32} : (tensor<f32>, tensor<2x4x32xf32>, tensor<2x4xi64>) -> (tensor<f32>, tensor<f32>, tensor<2x4x32xf32>)
  %e2 = tensor.empty() : tensor<2x32x16xf32>
  %wb = linalg.broadcast ins(%w : tensor<32x16xf32>) outs(%e2 : tensor<2x32x16xf32>) dimensions = [0]
  %e3 = tensor.empty() : tensor<2x4x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %dh = linalg.batch_matmul ins(%d, %wb : tensor<2x4x32xf32>, tensor<2x32x16xf32>) outs(%acc3 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %d2 = tensor.collapse_shape %d [[0, 1], [2]] : tensor<2x4x32xf32> into tensor<8x32xf32>
  %rows = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<32x8xf32>
  %dt = linalg.transpose ins(%d2 : tensor<8x32xf32>) outs(%e4 : tensor<32x8xf32>) permutation = [1, 0]
  %e5 = tensor.empty() : tensor<32x16xf32>
  %acc5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul ins(%dt, %rows : tensor<32x8xf32>, tensor<8x16xf32>) outs(%acc5 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %loss, %z, %dh, %dw : tensor<f32>, tensor<f32>, tensor<2x4x16xf32>, tensor<32x16xf32>
}

// -----

// TOSA: the products on batches of one, d_weight from the transposed
// [1, V, N] dlogits, d_bias by reduce_sum along the rows.
// CHECK-LABEL: func @tosa_grad_bias
// CHECK-SAME: (%[[G:.*]]: tensor<8xf32>, %[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK-NEXT: %[[DH:.*]], %[[DW:.*]], %[[DB:.*]] = xent.linear_cross_entropy_grad none %[[G]], %[[H]], %[[W]] bias %[[B]], %[[T]] {ignore_index = -100 : i64} : (tensor<8xf32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) decomposition {
// CHECK:        tosa.reduce_sum
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[DH]], %[[DW]], %[[DB]] :
func.func @tosa_grad_bias(%g: tensor<8xf32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s1 = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %h1 = tosa.reshape %h, %s1 : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %wt = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %s2 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w1 = tosa.reshape %wt, %s2 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %p = tosa.matmul %h1, %w1, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %s3 = tosa.const_shape {values = dense<[1, 1, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %b1 = tosa.reshape %b, %s3 : (tensor<32xf32>, !tosa.shape<3>) -> tensor<1x1x32xf32>
  %pb = tosa.add %p, %b1 : (tensor<1x8x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %s4 = tosa.const_shape {values = dense<[8, 32]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %logits = tosa.reshape %pb, %s4 : (tensor<1x8x32xf32>, !tosa.shape<2>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad none %g, %logits, %t {ignore_index = -100 : i64} : (tensor<8xf32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %s5 = tosa.const_shape {values = dense<[1, 8, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %d1 = tosa.reshape %d, %s5 : (tensor<8x32xf32>, !tosa.shape<3>) -> tensor<1x8x32xf32>
  %s6 = tosa.const_shape {values = dense<[1, 32, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %wr = tosa.reshape %w, %s6 : (tensor<32x16xf32>, !tosa.shape<3>) -> tensor<1x32x16xf32>
  %dh1 = tosa.matmul %d1, %wr, %zp, %zp : (tensor<1x8x32xf32>, tensor<1x32x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %s7 = tosa.const_shape {values = dense<[8, 16]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %dh = tosa.reshape %dh1, %s7 : (tensor<1x8x16xf32>, !tosa.shape<2>) -> tensor<8x16xf32>
  %dt = tosa.transpose %d1 {perms = array<i32: 0, 2, 1>} : (tensor<1x8x32xf32>) -> tensor<1x32x8xf32>
  %dw1 = tosa.matmul %dt, %h1, %zp, %zp : (tensor<1x32x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x32x16xf32>
  %s8 = tosa.const_shape {values = dense<[32, 16]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %dw = tosa.reshape %dw1, %s8 : (tensor<1x32x16xf32>, !tosa.shape<2>) -> tensor<32x16xf32>
  %db1 = tosa.reduce_sum %d {axis = 0 : i32} : (tensor<8x32xf32>) -> tensor<1x32xf32>
  %s9 = tosa.const_shape {values = dense<[32]> : tensor<1xindex>} : () -> !tosa.shape<1>
  %db = tosa.reshape %db1, %s9 : (tensor<1x32xf32>, !tosa.shape<1>) -> tensor<32xf32>
  return %dh, %dw, %db : tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
}

// -----

// Run-time scalars: the loss and gradient read ignore_index and
// label_smoothing as SSA operands; the joint linear op takes the same ones.
// CHECK-LABEL: func @runtime_scalars
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<8xi64>, %[[I:.*]]: i64, %[[E:.*]]: f32, %[[G:.*]]: tensor<f32>)
// CHECK-NEXT: %[[L:.*]], %[[DH:.*]], %[[DW:.*]] = xent.linear_cross_entropy_and_grad mean %[[G]], %[[H]], %[[W]], %[[T]] ignore_index %[[I]] label_smoothing %[[E]] : (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, i64, f32) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>) decomposition {
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]], %[[DH]], %[[DW]] :
func.func @runtime_scalars(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %i: i64, %eps: f32, %g: tensor<f32>) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t ignore_index %i label_smoothing %eps : (tensor<8x32xf32>, tensor<8xi64>, i64, f32) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t ignore_index %i label_smoothing %eps : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>, i64, f32) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<32x16xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d, %h : tensor<8x32xf32>, tensor<8x16xf32>) outs(%acc4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %l, %dh, %dw : tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>
}

// -----

// Near misses stay as they are.

// The dlogits are also returned.
// WHY: remark: not raised to a linear cross-entropy: the dlogits have another user ('func.return')
// CHECK-LABEL: func @nm_dlogits_used_elsewhere
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy_grad mean
func.func @nm_dlogits_used_elsewhere(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<32x16xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d, %h : tensor<8x32xf32>, tensor<8x16xf32>) outs(%acc4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %dh, %dw, %d : tensor<8x16xf32>, tensor<32x16xf32>, tensor<8x32xf32>
}

// Only d_hidden: the weight's gradient is not computed.
// WHY: remark: not raised to a linear cross-entropy: the backward does not compute every gradient of the projection
// CHECK-LABEL: func @nm_no_weight_gradient
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy_grad mean
func.func @nm_no_weight_gradient(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %dh : tensor<8x16xf32>
}

// d_hidden through another [V, H] matrix than the forward's weight.
// WHY: remark: not raised to a linear cross-entropy: the dlogits feed a product that is neither dlogits · weight nor dlogitsᵀ · hidden
// CHECK-LABEL: func @nm_other_weight
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy_grad mean
func.func @nm_other_weight(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %w2: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<8x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w2 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<32x16xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d, %h : tensor<8x32xf32>, tensor<8x16xf32>) outs(%acc4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %dh, %dw : tensor<8x16xf32>, tensor<32x16xf32>
}

// Gradient accumulation: d_weight is added to the previous gradient inside
// the product's accumulator.
// WHY: remark: not raised to a linear cross-entropy: a product of the dlogits accumulates into a non-zero value
// CHECK-LABEL: func @nm_accumulated_weight_gradient
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy_grad mean
func.func @nm_accumulated_weight_gradient(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %prev: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d, %h : tensor<8x32xf32>, tensor<8x16xf32>) outs(%prev : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %dh, %dw : tensor<8x16xf32>, tensor<32x16xf32>
}

// The loss and the gradient on the same logits ignore different targets:
// they are not one loss, and the logits have two users.
// WHY: remark: not raised to a linear cross-entropy: the loss and the gradient differ
// CHECK-LABEL: func @nm_pair_differs
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
// CHECK:       xent.cross_entropy_grad mean
func.func @nm_pair_differs(%g: tensor<f32>, %h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %loss = xent.cross_entropy mean %logits, %t {ignore_index = 0 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  %d = xent.cross_entropy_grad mean %g, %logits, %t : (tensor<f32>, tensor<8x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dh = linalg.matmul ins(%d, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<32x16xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%d, %h : tensor<8x32xf32>, tensor<8x16xf32>) outs(%acc4 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %loss, %dh, %dw : tensor<f32>, tensor<8x16xf32>, tensor<32x16xf32>
}
