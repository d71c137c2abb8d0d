// RUN: xent-opt %s --xent-recognize --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-recognize --xent-inline-decomposition --canonicalize --cse --split-input-file \
// RUN:   | FileCheck %s --check-prefix=INLINE

// An xent.cross_entropy whose logits are an output projection with no other
// user becomes one xent.linear_cross_entropy; the projection and the loss op
// are its decomposition region, and inlining gives them back.

// CHECK-LABEL: func @matmul_transpose
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK:      %[[L:.*]] = xent.linear_cross_entropy mean %[[H]], %[[W]], %[[T]] {ignore_index = 0 : i64} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK:        linalg.transpose
// CHECK:        linalg.matmul
// CHECK:        xent.cross_entropy mean
// CHECK:        xent.yield
// CHECK:      return %[[L]]
// INLINE-LABEL: func @matmul_transpose
// INLINE:       linalg.transpose
// INLINE:       linalg.matmul
// INLINE-NOT:   xent.
func.func @matmul_transpose(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul ins(%h, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t {ignore_index = 0 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Transposed indexing maps, the bias broadcast into the accumulator, bf16
// inputs with f32 logits, class weights and every loss attribute.

// CHECK-LABEL: func @transposed_maps_bias_init
// CHECK-SAME: (%[[H:.*]]: tensor<?x16xbf16>, %[[W:.*]]: tensor<32x16xbf16>, %[[B:.*]]: tensor<32xbf16>, %[[T:.*]]: tensor<?xi64>, %[[CW:.*]]: tensor<32xf32>)
// CHECK:      xent.linear_cross_entropy sum %[[H]], %[[W]] bias %[[B]], %[[T]] class_weight %[[CW]] {label_smoothing = 1.000000e-01 : f32, softcap = 3.000000e+01 : f32, z_loss_scale = 5.000000e-01 : f32} : (tensor<?x16xbf16>, tensor<32x16xbf16>, tensor<32xbf16>, tensor<?xi64>, tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
func.func @transposed_maps_bias_init(%h: tensor<?x16xbf16>, %w: tensor<32x16xbf16>, %b: tensor<32xbf16>, %t: tensor<?xi64>, %cw: tensor<32xf32>) -> (tensor<f32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?x16xbf16>
  %init = tensor.empty(%n) : tensor<?x32xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<32xbf16>) outs(%init : tensor<?x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<?x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<?x16xbf16>, tensor<32x16xbf16>) outs(%acc : tensor<?x32xf32>) -> tensor<?x32xf32>
  %l, %z = xent.cross_entropy sum %logits, %t weight %cw {label_smoothing = 0.1 : f32, z_loss_scale = 0.5 : f32, softcap = 30.0 : f32} : (tensor<?x32xf32>, tensor<?xi64>, tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
  return %l, %z : tensor<f32>, tensor<f32>
}

// -----

// A generic contraction and the bias added after it (linalg.add of a
// linalg.broadcast).

// CHECK-LABEL: func @generic_bias_add
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK:      xent.linear_cross_entropy none %[[H]], %[[W]] bias %[[B]], %[[T]] : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<8xi64>) -> tensor<8xf32>
func.func @generic_bias_add(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<8xi64>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %bb = linalg.broadcast ins(%b : tensor<32xf32>) outs(%init : tensor<8x32xf32>) dimensions = [0]
  %logits = linalg.add ins(%p, %bb : tensor<8x32xf32>, tensor<8x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy none %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// -----

// [B, T, H] hidden states collapsed to rows, projected and expanded back to
// [B, T, V] logits with the classes last.

// CHECK-LABEL: func @batched_rows
// CHECK-SAME: (%[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK:      xent.linear_cross_entropy mean %[[H]], %[[W]], %[[T]] : (tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4xi64>) -> tensor<f32>
func.func @batched_rows(%h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %rows = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%rows, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 4, 32] : tensor<8x32xf32> into tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Near misses stay as they are.

// The logits are also returned.
// CHECK-LABEL: func @nm_logits_used_elsewhere
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_logits_used_elsewhere(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %logits : tensor<f32>, tensor<8x32xf32>
}

// The product contracts the rows of a [H, N] hidden: not a projection of
// rows.
// CHECK-LABEL: func @nm_wrong_axis
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_wrong_axis(%h: tensor<16x8xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<16x8xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// A [H, V] weight read without a transpose: the op takes [V, H].
// CHECK-LABEL: func @nm_weight_not_transposed
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_weight_not_transposed(%h: tensor<8x16xf32>, %w: tensor<16x32xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.matmul ins(%h, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The accumulator starts at neither zero nor a bias.
// CHECK-LABEL: func @nm_nonzero_accumulator
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_nonzero_accumulator(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %acc: tensor<8x32xf32>) -> tensor<f32> {
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
