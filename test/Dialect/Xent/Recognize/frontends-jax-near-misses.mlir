// RUN: xent-opt %S/Inputs/frontends/jax-near-misses.mlir --xent-recognize | FileCheck %s --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/frontends/jax-near-misses.mlir --xent-recognize --mlir-print-ir-after-all \
// RUN:   --mlir-print-ir-after-change -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNCHANGED --allow-empty
// RUN: xent-opt %S/Inputs/frontends/jax-near-misses.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xent-opt %S/Inputs/frontends/jax-variants.mlir --xent-recognize | FileCheck %s --check-prefix=OTHER

// Near misses of JAX's guarded gather (Inputs/frontends/jax-near-misses.mlir,
// each one change away from the take_along_axis program JAX exported): no
// xent op appears, the IR is exactly the input, and report-failures says
// why each was left (reported in reverse program order).

// UNCHANGED-NOT: IR Dump After

// CHECK-LABEL: func.func @nm_gather_other_tensor
// CHECK-LABEL: func.func @nm_gather_other_axis
// CHECK-LABEL: func.func @nm_clip_without_nan
// CHECK-LABEL: func.func @nm_fill_zero
// CHECK-LABEL: func.func @nm_bounds_off
// CHECK-LABEL: func.func @nm_wrap_other_constant
// CHECK-LABEL: func.func @nm_log_softmax_alone
// CHECK-LABEL: func.func @nm_i64_unwrapped

// nm_i64_unwrapped: i64 labels read by the guarded gather without the wrap.
// WHY: remark: not raised: not a cross-entropy (a guarded gather at i64 targets that may equal the lowest i64, which the op, without an ignore mask, ignores where the chain gives NaN)
// nm_log_softmax_alone: log_softmax returned, no pick.
// WHY: remark: not raised: not a cross-entropy (no target pick: not a gather or a one-hot sum)
// nm_wrap_other_constant: t < 0 ? t + 9 : t is not numpy's wrap for C = 10.
// WHY: remark: not raised: not a cross-entropy (the class index is a select that is neither a safe target nor numpy's negative-index wrap)
// nm_bounds_off: 0 <= w < 9 beside a clamp into [0, 9]: the label 9 would be NaN in the chain, not in the op.
// WHY: remark: not raised: not a cross-entropy (no target pick: not a gather or a one-hot sum)
// nm_fill_zero: take_along_axis(mode="fill", fill_value=0): 0 where the op gives NaN.
// WHY: remark: not raised: not a cross-entropy (mask is not an (in)equality test)
// nm_clip_without_nan: take_along_axis(mode="clip"): the clamped label read where the op gives NaN.
// WHY: remark: not raised: not a cross-entropy (the target is computed inside the chain, not a tensor value)
// nm_gather_other_axis: the log-softmax normalizes the columns, the gather reads along the rows.
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads along another axis than the log-softmax's)
// nm_gather_other_tensor: the guarded gather reads another tensor than the log-softmax.
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: no log-sum-exp term)

// Raised variants (Inputs/frontends/jax-variants.mlir). The log-softmax
// also returned: the loss is raised, the log-softmax stays for its other
// user.
// OTHER-LABEL: func.func @log_softmax_also_returned(
// OTHER:         math.exp
// OTHER:       %[[LOGP:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x10xf32>, tensor<8xf32>)
// OTHER-NEXT:  ^bb0
// OTHER-NEXT:    math.log
// OTHER:       %[[L:.*]] = xent.cross_entropy mean %arg0, %{{.*}} {ignore_index = -9223372036854775808 : i64}
// OTHER:       return %[[L]], %[[LOGP]] : tensor<f32>, tensor<8x10xf32>

// i64 labels, wrapped: the wrapped label is never the lowest i64.
// OTHER-LABEL: func.func @i64_wrapped(
// OTHER:       %[[W:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<8xi64>)
// OTHER:       %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1, 2]] : tensor<8x1x1xi64> into tensor<8xi64>
// OTHER-NEXT:  %[[L:.*]] = xent.cross_entropy mean %arg0, %[[WC]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// OTHER:       return %[[L]] : tensor<f32>
