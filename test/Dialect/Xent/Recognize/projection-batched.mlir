// RUN: xent-opt %s --xent-recognize --split-input-file | FileCheck %s
// RUN: xent-opt %s --xent-recognize --xent-inline-decomposition --split-input-file \
// RUN:   | FileCheck %s --check-prefix=INLINE
// RUN: xent-opt %s --xent-recognize=report-failures --split-input-file 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=WHY

// F.linear on [B, T, H] hidden states as batched products: the weight
// broadcast over the batch (linalg.broadcast, a broadcasting generic, or
// the batch_matmul's own indexing map), or reshapes to a batch of one
// around the product. Each becomes one xent.linear_cross_entropy on the
// [B, T, H] (or [N, H]) hidden and the [V, H] weight.

// torch-mlir's aten.matmul of [B, T, H] by the transposed weight: the
// [H, V] transpose broadcast to [B, H, V], then linalg.batch_matmul.
// CHECK-LABEL: func @batch_matmul_broadcast
// CHECK-SAME: (%[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy mean %[[H]], %[[W]], %[[T]] : (tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4xi64>) -> tensor<f32> decomposition {
// CHECK:        linalg.transpose
// CHECK:        linalg.broadcast
// CHECK:        linalg.batch_matmul
// CHECK:        xent.cross_entropy mean
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]]
// INLINE-LABEL: func @batch_matmul_broadcast
// INLINE:       linalg.batch_matmul
// INLINE-NOT:   xent.linear
func.func @batch_matmul_broadcast(%h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<2x16x32xf32>
  %wb = linalg.broadcast ins(%wt : tensor<16x32xf32>) outs(%eb : tensor<2x16x32xf32>) dimensions = [0]
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.batch_matmul ins(%h, %wb : tensor<2x4x16xf32>, tensor<2x16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The transposed weight broadcast by the batch_matmul's indexing map, the
// bias added by torch-mlir's broadcasting generic (read along the
// classes), a sum.
// CHECK-LABEL: func @batch_matmul_map_broadcast_bias
// CHECK-SAME: (%[[H:.*]]: tensor<2x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<2x4xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy sum %[[H]], %[[W]] bias %[[B]], %[[T]] {ignore_index = -100 : i64} : (tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<2x4xi64>) -> tensor<f32> decomposition {
// CHECK:        linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}]
// CHECK:        linalg.generic
// CHECK:        xent.cross_entropy sum
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]]
func.func @batch_matmul_map_broadcast_bias(%h: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%h, %wt : tensor<2x4x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %b : tensor<2x4x32xf32>, tensor<32xf32>) outs(%init : tensor<2x4x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x4x32xf32>
  %l = xent.cross_entropy sum %logits, %t {axis = 2 : i64, ignore_index = -100 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// [N, H] rows expanded to a batch of one, the transposed weight expanded to
// [1, H, V] by a broadcasting generic's input, the [1, N, V] product
// collapsed back to [N, V]; the bias broadcast into the accumulator along
// both leading dimensions.
// CHECK-LABEL: func @batch_of_one
// CHECK-SAME: (%[[H:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.*]] = xent.linear_cross_entropy none %[[H]], %[[W]] bias %[[B]], %[[T]] : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<8xi64>) -> tensor<8xf32> decomposition {
// CHECK:        tensor.expand_shape
// CHECK:        linalg.broadcast
// CHECK:        linalg.batch_matmul
// CHECK:        tensor.collapse_shape
// CHECK:        xent.cross_entropy none
// CHECK:        xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]]
func.func @batch_of_one(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %t: tensor<8xi64>) -> tensor<8xf32> {
  %h1 = tensor.expand_shape %h [[0, 1], [2]] output_shape [1, 8, 16] : tensor<8x16xf32> into tensor<1x8x16xf32>
  %e = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<1x16x32xf32>
  %wb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wt : tensor<16x32xf32>) outs(%eb : tensor<1x16x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<1x16x32xf32>
  %init = tensor.empty() : tensor<1x8x32xf32>
  %acc = linalg.broadcast ins(%b : tensor<32xf32>) outs(%init : tensor<1x8x32xf32>) dimensions = [0, 1]
  %p = linalg.batch_matmul ins(%h1, %wb : tensor<1x8x16xf32>, tensor<1x16x32xf32>) outs(%acc : tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %logits = tensor.collapse_shape %p [[0, 1], [2]] : tensor<1x8x32xf32> into tensor<8x32xf32>
  %l = xent.cross_entropy none %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// -----

// A batch_matmul whose right operand is an argument of [B, H, V]: the
// weight differs per batch, so this is no projection.
// WHY: remark: not raised to a linear cross-entropy: the logits are not a projection: the batched product's right operand differs per batch (not broadcast)
// CHECK-LABEL: func @nm_weight_per_batch
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       linalg.batch_matmul
// CHECK:       xent.cross_entropy mean
func.func @nm_weight_per_batch(%h: tensor<2x4x16xf32>, %w: tensor<2x16x32xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.batch_matmul ins(%h, %w : tensor<2x4x16xf32>, tensor<2x16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The broadcast [H, V] weight is not a transpose: the op takes [V, H].
// WHY: remark: not raised to a linear cross-entropy: the product reads a [H, V] weight that is not the transpose of a [V, H] one
// CHECK-LABEL: func @nm_batched_weight_not_transposed
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_batched_weight_not_transposed(%h: tensor<2x4x16xf32>, %w: tensor<16x32xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %eb = tensor.empty() : tensor<2x16x32xf32>
  %wb = linalg.broadcast ins(%w : tensor<16x32xf32>) outs(%eb : tensor<2x16x32xf32>) dimensions = [0]
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.batch_matmul ins(%h, %wb : tensor<2x4x16xf32>, tensor<2x16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The batch_matmul reads its left operand transposed per batch ([B, H, T]):
// the product contracts the rows of each batch.
// WHY: remark: not raised to a linear cross-entropy: the logits are not a projection: the batched product does not read its rows from the left operand of each batch
// CHECK-LABEL: func @nm_batched_wrong_axis
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_batched_wrong_axis(%h: tensor<2x16x4xf32>, %w: tensor<32x16xf32>, %t: tensor<2x4xi64>) -> tensor<f32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x4x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %logits = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, k, m)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%h, %wt : tensor<2x16x4xf32>, tensor<16x32xf32>) outs(%acc : tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %l = xent.cross_entropy mean %logits, %t {axis = 2 : i64} : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The added tensor is a per-row [N] vector broadcast along the classes, not
// a [V] bias.
// WHY: remark: not raised to a linear cross-entropy: the logits add a tensor that is not a [V] bias broadcast over the rows
// CHECK-LABEL: func @nm_bias_per_row
// CHECK-NOT:   xent.linear_cross_entropy
// CHECK:       xent.cross_entropy mean
func.func @nm_bias_per_row(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<8xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%h, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<8x32xf32>, tensor<8xf32>) outs(%init : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %l = xent.cross_entropy mean %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
