// RUN: xent-opt %S/Recognize/Inputs/saved_logp.mlir --transform-preload-library="transform-library-paths=%s" --transform-interpreter | FileCheck %s
// RUN: xent-opt %S/Recognize/Inputs/saved_logp.mlir --transform-preload-library="transform-library-paths=%s" --transform-interpreter="entry-point=default" | FileCheck %s --check-prefix=DEFAULT

// transform.xent.recognize takes the pass's options as unit attributes:
// `assume_normalized_log_probs` raises aot_autograd's backward on saved
// log-probabilities (here with logp as the logits operand) as
// `xent-recognize=assume-normalized-log-probs` does; without it they stay.

// CHECK-LABEL: func.func @saved_logp_sum_dynamic(
// CHECK-SAME:  %[[G:[a-z0-9_]+]]: tensor<f32>, %[[LP:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK:       xent.cross_entropy_grad sum %[[G]], %[[LP]], %[[T]]
// CHECK-LABEL: func.func @saved_logp_none(
// CHECK:       xent.cross_entropy_grad none

// DEFAULT-LABEL: func.func @saved_logp_sum_dynamic(
// DEFAULT-NOT:   xent.
// DEFAULT:       return

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %f1 = transform.xent.recognize %f {assume_normalized_log_probs} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
  transform.named_sequence @default(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %f1 = transform.xent.recognize %f : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
