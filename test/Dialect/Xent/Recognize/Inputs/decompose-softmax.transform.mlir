// Transform library: decompose every linalg.softmax with the stock
// AggregatedOpInterface (transform.structured.decompose_interface).  Used by
// utils/recognizer_forms.py to generate the decomposed forms and, through
// transform-preload-library + transform-interpreter, to lower
// linalg_softmax.mlir before the CPU pipeline (convert-linalg-to-loops cannot
// lower linalg.softmax).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %sm = transform.structured.match ops{["linalg.softmax"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %sm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
