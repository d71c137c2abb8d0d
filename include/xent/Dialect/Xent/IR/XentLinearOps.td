//===- XentLinearOps.td - Linear + cross-entropy ops -------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Included by XentOps.td; uses its type constraints and attribute lists.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTLINEAROPS_TD
#define XENT_DIALECT_XENT_IR_XENTLINEAROPS_TD

def Xent_IndexTensor : RankedTensorOf<[I32, I64]>;

// A member of the linear cross-entropy family: its accessors come from
// LossOpInterface (those of every loss op) and LinearCrossEntropyOpInterface,
// its verifier and decomposition builder from the latter.
class Xent_LinearCrossEntropyOpBase<string mnemonic, list<Trait> traits = []>
    : Xent_Op<mnemonic, !listconcat(traits, [
          Pure, IsolatedFromAbove, AttrSizedOperandSegments,
          Xent_LossOpInterface, Xent_LinearCrossEntropyOpInterface,
          DeclareOpInterfaceMethods<AggregatedOpInterface,
                                    ["decomposeOperation"]>])> {
  let regions = (region MaxSizedRegion<1>:$decomposition);
  let hasRegionVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verifyRegions() {
      return ::mlir::xent::detail::verifyDecompositionRegion(*this);
    }
    ::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>
    $cppClass::decomposeOperation(::mlir::OpBuilder &b) {
      return ::mlir::xent::decomposeLinear(
          b, ::mlir::cast<::mlir::xent::LinearCrossEntropyOpInterface>(
                 getOperation()));
    }
  }];
}

def Xent_LinearCrossEntropyOp
    : Xent_LinearCrossEntropyOpBase<"linear_cross_entropy"> {
  let summary = "cross-entropy loss of a linear projection, without logits";
  let description = [{
    Computes `xent.cross_entropy` on the logits `hidden · weightᵀ + bias`
    (`torch.nn.functional.cross_entropy(F.linear(hidden, weight, bias),
    target, class_weight, ...)`) as one op, so that a lowering never has to
    hold the `N × V` logits at once (`xent-chunk-linear-cross-entropy`).

    Operands:
    * `hidden`: f16, bf16 or f32 tensor of shape `[N, H]` or `[B, T, H]`.
    * `weight`: the projection, `[V, H]`, of the hidden's element type.
    * `bias` (optional): `[V]`, of the hidden's element type.
    * `target`: i32/i64 class indices shaped like `hidden` without its last
      dimension (`[N]` or `[B, T]`). Probability targets are not accepted:
      they would be an `N × V` operand.
    * `class_weight` (optional): a rank-1 tensor of V class weights (the
      `weight` operand of `xent.cross_entropy`).

    The logits are computed in f32 (products accumulated in f32, not rounded
    to the hidden's type) with the classes last; the loss then follows
    `xent.cross_entropy` exactly: `reduction`, `ignore_index`,
    `label_smoothing`, `z_loss_scale` and `softcap` mean what they mean
    there, and a row is an element of `target`. Results: `loss` (rank 0 for
    `mean` and `sum`, shaped like `target` for `none`) and optionally
    `z_loss`, of f32 or the hidden's element type.

    The `decomposition` region, when present, holds one block whose
    arguments mirror the operands and computes the op's results, ending in
    `xent.yield`; when it is empty, the canonical decomposition is a
    `linalg.matmul` against the transposed weight followed by
    `xent.cross_entropy`.

    Example:

    ```mlir
    %loss = xent.linear_cross_entropy mean %hidden, %weight, %target
        {ignore_index = -100 : i64, z_loss_scale = 1.0e-04 : f32}
        : (tensor<?x2048xbf16>, tensor<128256x2048xbf16>, tensor<?xi64>)
        -> tensor<f32>
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$hidden,
    Xent_FloatTensor:$weight,
    Optional<Xent_FloatTensor>:$bias,
    Xent_IndexTensor:$target,
    Optional<Xent_FloatTensor>:$class_weight), xentScalarOperands,
    xentLossAttrs);
  let results = (outs Xent_FloatTensor:$loss,
                      Optional<Xent_FloatTensor>:$z_loss);
  let builders = [
    // The attributes as ODS takes them; `scalars` the features given at run
    // time.
    OpBuilder<(ins "::mlir::Type":$loss, "::mlir::Type":$z_loss,
      "::mlir::Value":$hidden, "::mlir::Value":$weight, "::mlir::Value":$bias,
      "::mlir::Value":$target, "::mlir::Value":$class_weight,
      "::mlir::xent::ReductionAttr":$reduction,
      "::mlir::IntegerAttr":$ignore_index,
      "::mlir::FloatAttr":$label_smoothing, "::mlir::FloatAttr":$z_loss_scale,
      "::mlir::FloatAttr":$softcap,
      CArg<"::mlir::xent::LossScalars", "{}">:$scalars), [{
      build($_builder, $_state, loss, z_loss, hidden, weight, bias, target,
            class_weight, scalars.ignoreIndex, scalars.labelSmoothing,
            scalars.zLossScale, scalars.softcap, reduction, ignore_index,
            label_smoothing, z_loss_scale, softcap);
    }]>];
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $hidden `,` $weight (`bias` $bias^)? `,`
    $target (`class_weight` $class_weight^)?
  }], xentScalarsFormat, [{
    attr-dict `:`
    functional-type(operands, results) (`decomposition` $decomposition^)?
  }]);

  let extraClassDeclaration = [{
    // Absent on the forward op; LinearCrossEntropyOpInterface returns them
    // null.
    ::mlir::Value getGradOutput() { return {}; }
    ::mlir::Value getDHidden() { return {}; }
    ::mlir::Value getDWeight() { return {}; }
    ::mlir::Value getDBias() { return {}; }
  }];
}

def Xent_LinearCrossEntropyGradOp
    : Xent_LinearCrossEntropyOpBase<"linear_cross_entropy_grad"> {
  let summary = "gradients of `xent.linear_cross_entropy`";
  let description = [{
    Computes the gradients of `sum(loss * grad_output)` for the
    `xent.linear_cross_entropy` with the same operands and attributes
    (`loss` including the z-loss term) with respect to `hidden`
    (`d_hidden`, typed like `hidden`), `weight` (`d_weight`, typed like
    `weight`) and, when the op has a bias, `bias` (`d_bias`, typed like
    `bias`). `grad_output` is rank 0 for `mean` and `sum` and shaped like
    `target` for `none`. With `dlogits` the gradient of the loss with
    respect to the f32 logits: `d_hidden = dlogits · weight`,
    `d_weight = dlogitsᵀ · hidden`, `d_bias = Σ_rows dlogits`, each
    accumulated in f32 and rounded once.

    Example:

    ```mlir
    %dh, %dw, %db = xent.linear_cross_entropy_grad sum %g, %hidden, %weight
        bias %bias, %target
        : (tensor<f32>, tensor<8x64xf32>, tensor<1000x64xf32>,
           tensor<1000xf32>, tensor<8xi64>)
        -> (tensor<8x64xf32>, tensor<1000x64xf32>, tensor<1000xf32>)
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$grad_output,
    Xent_FloatTensor:$hidden,
    Xent_FloatTensor:$weight,
    Optional<Xent_FloatTensor>:$bias,
    Xent_IndexTensor:$target,
    Optional<Xent_FloatTensor>:$class_weight), xentScalarOperands,
    xentLossAttrs);
  let results = (outs Xent_FloatTensor:$d_hidden,
                      Xent_FloatTensor:$d_weight,
                      Optional<Xent_FloatTensor>:$d_bias);
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $grad_output `,` $hidden `,` $weight
    (`bias` $bias^)? `,` $target (`class_weight` $class_weight^)?
  }], xentScalarsFormat, [{
    attr-dict
    `:` functional-type(operands, results)
    (`decomposition` $decomposition^)?
  }]);

  let extraClassDeclaration = [{
    // Absent on the gradient op; LinearCrossEntropyOpInterface returns them
    // null.
    ::mlir::Value getLoss() { return {}; }
    ::mlir::Value getZLoss() { return {}; }
  }];
}

def Xent_LinearCrossEntropyAndGradOp
    : Xent_LinearCrossEntropyOpBase<"linear_cross_entropy_and_grad",
                                    [AttrSizedResultSegments]> {
  let summary = "a linear cross-entropy loss and its gradients, together";
  let description = [{
    The joint form of `xent.linear_cross_entropy` and
    `xent.linear_cross_entropy_grad` on the same operands and attributes:
    `loss` (and optionally `z_loss`) as the forward op computes them, then
    `d_hidden`, `d_weight` and, with a bias, `d_bias` as the gradient op
    computes them for `grad_output`. This is the form a training step needs:
    `xent-chunk-linear-cross-entropy` computes every result from one
    projection per chunk of rows.

    Example:

    ```mlir
    %loss, %dh, %dw = xent.linear_cross_entropy_and_grad mean %one, %hidden,
        %weight, %target
        : (tensor<f32>, tensor<4x512x64xbf16>, tensor<1000x64xbf16>,
           tensor<4x512xi64>)
        -> (tensor<f32>, tensor<4x512x64xbf16>, tensor<1000x64xbf16>)
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$grad_output,
    Xent_FloatTensor:$hidden,
    Xent_FloatTensor:$weight,
    Optional<Xent_FloatTensor>:$bias,
    Xent_IndexTensor:$target,
    Optional<Xent_FloatTensor>:$class_weight), xentScalarOperands,
    xentLossAttrs);
  let results = (outs Xent_FloatTensor:$loss,
                      Optional<Xent_FloatTensor>:$z_loss,
                      Xent_FloatTensor:$d_hidden,
                      Xent_FloatTensor:$d_weight,
                      Optional<Xent_FloatTensor>:$d_bias);
  // The result types read as a function type's; which of the two optional
  // results are present follows from their count and from the bias.
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $grad_output `,` $hidden `,` $weight
    (`bias` $bias^)? `,` $target (`class_weight` $class_weight^)?
  }], xentScalarsFormat, [{
    attr-dict
    `:` `(` type(operands) `)` `->` custom<JointResultTypes>(ref($bias),
    type($loss), type($z_loss), type($d_hidden), type($d_weight),
    type($d_bias)) (`decomposition` $decomposition^)?
  }]);
}

#endif // XENT_DIALECT_XENT_IR_XENTLINEAROPS_TD
