// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize | FileCheck %s
// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY-LAST

// Form 4: TOSA: reduce_max / sub / exp / reduce_sum / log / sub with
// implicit broadcasting of size-1 dimensions; the target pick by
// tosa.gather over the flattened log-probabilities at b * C + t (TF's
// gather_nd: concat of an iota and the safe targets, times the strides,
// reduce_sum) or by a one-hot product
// cast(cast(equal(iota, labels))) * logp, reduce_sum, negate with zero
// points, the ignore mask by equal + logical_not + select, and the mean by
// reciprocal(count) * sum. The unshifted TF LogSoftmax legalization
// (log(exp(x) / sum(exp(x)))) is not raised: an unshifted exp overflows
// where the op would not, so its numbers would change.

// CHECK-LABEL: func.func @tosa_gather_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: tosa.reduce_max
// CHECK: tosa.exp
// CHECK: tosa.log
// CHECK: tosa.equal
// CHECK: tosa.gather
// CHECK: tosa.reciprocal
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @tosa_onehot_sum(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi32>)
// A one-hot pick reads nothing for a label outside [0, 10): the op takes
// such labels as ignored (-100 here, the chain's ignore mask).
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<8xi32>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %c-100_i32 : i32
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[T]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: tosa.reduce_max
// CHECK: tosa.exp
// CHECK: tosa.log
// CHECK: tosa.equal
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// WHY: remark: not raised: not a cross-entropy (no target pick: the sum does not multiply a log-softmax: exp of the unshifted input (no max subtracted))
// CHECK-LABEL: func.func @tosa_unshifted_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi32>)
// CHECK-NOT: xent.

// CHECK-LABEL: func.func @tosa_rank3_axis2_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x4x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<2x4xi32>)
// A one-hot mean over the 8 elements: the op's sum over the labels in
// [0, 10) (the others as -1, ignored), divided by 8.
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<2x4xi32>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// CHECK: %[[S:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[T]] {axis = 2 : i64, ignore_index = -1 : i64} : (tensor<2x4x10xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NOT: decomposition
// CHECK: %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: return %[[L]] : tensor<f32>

// The target pick per row (values (N, C, 1), indices (N, 1)) and totals that
// keep their rank (tensor<1xf32>, tensor<1x1xf32>: tosa.reduce_sum without
// the final reshape to rank 0): the op computes the 0-d loss, its region
// collapses the chain's total to rank 0, and a tensor.expand_shape after it
// gives the function its result type back.

// CHECK-LABEL: func.func @tosa_gather_rows_mean_rank1(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>) -> tensor<1xf32>
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: tosa.gather %{{.*}} : (tensor<8x10x1xf32>, tensor<8x1xi32>) -> tensor<8x1x1xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} [] : tensor<1xf32> into tensor<f32>
// CHECK: xent.yield %[[C]] : tensor<f32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[L]] [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: return %[[E]] : tensor<1xf32>

// CHECK-LABEL: func.func @tosa_gather_sum_rank2(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>) -> tensor<1x1xf32>
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1x1xf32> into tensor<f32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[L]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: return %[[E]] : tensor<1x1xf32>

// The softcap as TorchToTosa writes it: tosa.mul by tosa.reciprocal(c),
// tosa.tanh, tosa.mul by c.

// CHECK-LABEL: func.func @tosa_softcap_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64, softcap = 3.000000e+01 : f32} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: tosa.reciprocal
// CHECK: tosa.tanh
// CHECK: tosa.reduce_max
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @tosa_nm_softcap_scale(
// CHECK-NOT: xent.
// CHECK: tosa.tanh
// CHECK-NOT: xent.
// CHECK: return

// The rank-keeping total reduces the unit axis instead of the batch axis:
// each element's loss divided by the count, not a mean.
// (The remarks come in reverse program order: the last function's first.)
// WHY-LAST: remark: not raised: not a cross-entropy (the per-element loss is divided by a value that depends on the element)
// WHY-LAST: remark: not raised: not a cross-entropy (tanh(x / 30) · 20 is not a softcap (the scale differs from the divisor))
// CHECK-LABEL: func.func @tosa_nm_rank2_wrong_axis(
// CHECK-NOT: xent.
// CHECK: return %{{.*}} : tensor<8x1xf32>
