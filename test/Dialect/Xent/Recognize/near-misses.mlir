// RUN: xent-opt %S/Inputs/near_misses.mlir --xent-recognize | FileCheck %s --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/near_misses.mlir --xent-recognize --mlir-print-ir-after-all \
// RUN:   --mlir-print-ir-after-change -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNCHANGED --allow-empty
// RUN: xent-opt %S/Inputs/near_misses.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY

// Near misses (Inputs/near_misses.mlir): chains that share most of their
// ops with a cross-entropy but compute something else. No xent op appears
// and the IR is exactly the input; report-failures says why each returned
// value was left alone (reported in reverse program order).

// --mlir-print-ir-after-change dumps the IR after xent-recognize only if the
// pass changed it: nothing is dumped.
// UNCHANGED-NOT: IR Dump After

// CHECK-LABEL: func.func @nm_softmax
// CHECK-LABEL: func.func @nm_log_softmax
// CHECK-LABEL: func.func @nm_axes_mismatch
// CHECK-LABEL: func.func @nm_unshifted_exp
// CHECK-LABEL: func.func @nm_gather_raw_logits
// CHECK-LABEL: func.func @nm_pick_other_tensor
// CHECK-LABEL: func.func @nm_mean_wrong_count

// nm_mean_wrong_count: sum / t.numel() while ignored targets are masked.
// WHY: remark: not raised: not a cross-entropy (the mean divides by a value that is not a sum over the elements)
// nm_pick_other_tensor: F.nll_loss(other, t) beside F.log_softmax(x, 1).
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: no log-sum-exp term)
// WHY: remark: not raised: not a cross-entropy (no target pick: not a gather or a one-hot sum)
// nm_gather_raw_logits: F.nll_loss(x, t).
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: no log-sum-exp term)
// nm_unshifted_exp: x - max - log(sum(exp(x))).
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: exp of the unshifted input (no max subtracted))
// nm_axes_mismatch: the max over the batch axis, the sum over the classes.
// WHY: remark: not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: the max and the sum reduce different axes)
// nm_log_softmax, nm_softmax: no pick at all.
// WHY: remark: not raised: not a cross-entropy (no target pick: not a gather or a one-hot sum)
// WHY: remark: not raised: not a cross-entropy (no target pick: not a gather or a one-hot sum)
