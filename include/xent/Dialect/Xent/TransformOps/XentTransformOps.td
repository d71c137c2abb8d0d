//===- XentTransformOps.td - Transform dialect extension ---*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD
#define XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD

include "xent/Dialect/Xent/TransformOps/XentTransformOpsBase.td"

def ApplyXentInlineDecompositionPatternsOp : Op<Transform_Dialect,
    "apply_patterns.xent.inline_decomposition",
    [DeclareOpInterfaceMethods<PatternDescriptorOpInterface>]> {
  let summary = "replace xent ops by their decomposition";
  let description = [{
    Indicates that each op of the xent cross-entropy family should be
    replaced by what it computes: its decomposition region's body, or the
    canonical max-shifted log-sum-exp when the region is empty (the pattern
    of `xent-inline-decomposition`).

    ```mlir
    transform.apply_patterns to %func {
      transform.apply_patterns.xent.inline_decomposition
    } : !transform.any_op
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def XentRecognizeOp : Xent_PayloadRewriteOp<"recognize"> {
  let summary = "raise cross-entropy chains to xent ops";
  let description = [{
    Runs the recognizer of `xent-recognize` on the ops nested in each target:
    log_softmax + nll_loss chains and their backward become xent ops, the
    outermost value of a chain first. The recognizer's patterns visit the
    target's candidate ops once each, from the last one back, and share what
    they saw (a greedy driver over the whole target could raise the sum
    inside a mean before the mean), hence an op rather than a pattern
    descriptor; its rewrites go through the transform rewriter. With
    `report_failures`, each returned value that is not raised gets a remark
    saying why; `assume_normalized_log_probs` is the pass's
    `assume-normalized-log-probs` (a backward on log-probabilities that
    nothing in the IR computes is raised assuming they are normalized).

    ```mlir
    %f2 = transform.xent.recognize %f : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                       UnitAttr:$report_failures,
                       UnitAttr:$assume_normalized_log_probs);
}

def XentFuseForwardBackwardOp : Xent_PayloadRewriteOp<"fuse_forward_backward"> {
  let summary = "merge a loss and its gradient into the joint op";
  let description = [{
    What `xent-fuse-forward-backward` does, on the ops nested in each target,
    through the transform rewriter.
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
}

#endif // XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD
