//===- XentTransformOps.td - Transform dialect extension ---*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD
#define XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Dialect/Transform/IR/TransformTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

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

// A transform that rewrites the payload nested in each target op as one of
// xent's passes does: the target handle is consumed (handles to the ops
// nested in it are invalidated) and `transformed` holds the same targets.
class Xent_PayloadRewriteOp<string mnemonic>
    : Op<Transform_Dialect, "xent." # mnemonic,
         [FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
          DeclareOpInterfaceMethods<TransformOpInterface>]> {
  let results = (outs TransformHandleTypeInterface:$transformed);
  let assemblyFormat =
      "$target attr-dict `:` functional-type(operands, results)";
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

def XentConvertToGPUOp : Xent_PayloadRewriteOp<"convert_to_gpu"> {
  let summary = "lower xent ops to fused GPU kernels";
  let description = [{
    What `convert-xent-to-gpu` does, on the ops nested in each target (a
    module, or an op inside one): every xent op becomes launches of kernels
    generated into the enclosing module's `@xent_kernels`, or its
    decomposition, as `mode` (`"auto"`, `"kernel"` or `"inline"`) says. The
    attributes are the pass's options; an absent one takes the pass's
    default. Options the kernels cannot take, and ops the mode rules out,
    are a definite failure with the pass's diagnostic.

    ```mlir
    %m2 = transform.xent.convert_to_gpu %m {threads = 256 : i64, mode = "auto"}
        : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                       OptionalAttr<StrAttr>:$chip,
                       OptionalAttr<I64Attr>:$threads,
                       OptionalAttr<I64Attr>:$vector_width,
                       OptionalAttr<BoolAttr>:$resident_rows,
                       OptionalAttr<StrAttr>:$mode,
                       OptionalAttr<BoolAttr>:$allow_decomposition);
  let hasVerifier = 1;
}

#endif // XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPS_TD
