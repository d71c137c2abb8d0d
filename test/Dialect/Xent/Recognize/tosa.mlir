// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize | FileCheck %s
// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY

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
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32> decomposition {
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
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {axis = 2 : i64, ignore_index = -9223372036854775808 : i64} : (tensor<2x4x10xf32>, tensor<2x4xi32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: tosa.reduce_max
// CHECK: tosa.exp
// CHECK: tosa.log
// CHECK: tosa.equal
// CHECK: tosa.reciprocal
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>
