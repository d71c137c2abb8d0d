//===- XentOps.td - Xent op definitions --------------------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTOPS_TD
#define XENT_DIALECT_XENT_IR_XENTOPS_TD

include "xent/Dialect/Xent/IR/XentDialect.td"
include "xent/Dialect/Xent/IR/XentAttrs.td"
include "xent/Dialect/Xent/IR/XentInterfaces.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Xent_FloatTensor : RankedTensorOf<[F16, BF16, F32]>;
def Xent_TargetTensor : RankedTensorOf<[I32, I64, F16, BF16, F32]>;

// The loss's attributes, shared by every op of the dialect.
defvar xentLossAttrs = (ins
    Xent_ReductionAttr:$reduction,
    OptionalAttr<I64Attr>:$ignore_index,
    DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
    DefaultValuedAttr<F32Attr, "0.0f">:$z_loss_scale,
    OptionalAttr<F32Attr>:$softcap);

// The loss's scalar attributes given at run time instead: an op gives each
// feature's value either by its attribute or by one of these SSA scalars,
// never both. Their presence specializes the code as the attribute's does;
// their value is read when the op runs. Printed after the tensor operands as
// `ignore_index %i`, `label_smoothing %eps`, ..., their types in the
// functional type.
defvar xentScalarOperands = (ins
    Optional<I64>:$dynamic_ignore_index,
    Optional<F32>:$dynamic_label_smoothing,
    Optional<F32>:$dynamic_z_loss_scale,
    Optional<F32>:$dynamic_softcap);
defvar xentScalarsFormat = [{
    (`ignore_index` $dynamic_ignore_index^)?
    (`label_smoothing` $dynamic_label_smoothing^)?
    (`z_loss_scale` $dynamic_z_loss_scale^)?
    (`softcap` $dynamic_softcap^)?
}];

// Attributes shared by the three cross-entropy ops: the loss's and the class
// axis of their logits.
defvar xentCommonAttrs = !con(xentLossAttrs, (ins OptionalAttr<I64Attr>:$axis));

// The per-row outputs a loss-computing op may return after `loss` and the
// optional `z_loss`, each selected by its unit attribute (in this order).
defvar xentRowOutputAttrs = (ins
    UnitAttr:$return_lse,
    UnitAttr:$return_argmax,
    UnitAttr:$return_accuracy);

// A loss op on a slice of the classes (docs/scale-out.md): the logits hold
// classes [class_offset, class_offset + C) of `num_classes`, the targets are
// global class indices. Given together or not at all; `num_classes` by its
// attribute or, at run time, by the i64 operand `num_classes %n`.
defvar xentSliceFormat = [{
    (`class_offset` $class_offset^)?
    (`num_classes` $dynamic_num_classes^)?
}];

// Accessors of the results after `loss` (`extra_results`: z_loss when
// present, then the selected per-row outputs); null when absent.
defvar xentLossExtrasAccessors = [{
    ::mlir::xent::detail::LossExtras getLossExtras() {
      return ::mlir::xent::detail::getLossExtras(
          getExtraResults(), getReturnLse(), getReturnArgmax(),
          getReturnAccuracy());
    }
    ::mlir::Value getZLoss() { return getLossExtras().zLoss; }
    ::mlir::Value getLse() { return getLossExtras().lse; }
    ::mlir::Value getArgmax() { return getLossExtras().argmax; }
    ::mlir::Value getAccuracy() { return getLossExtras().accuracy; }
}];

// A member of the cross-entropy family: its accessors come from
// LossOpInterface (those of every loss op) and CrossEntropyOpInterface, its
// configuration, verifier and decomposition builder from the latter; its
// decomposition is reachable as upstream's are, through
// linalg::AggregatedOpInterface.
class Xent_CrossEntropyOpBase<string mnemonic>
    : Xent_Op<mnemonic, [Pure, IsolatedFromAbove, AttrSizedOperandSegments,
                         Xent_LossOpInterface, Xent_CrossEntropyOpInterface,
                         DeclareOpInterfaceMethods<OpAsmOpInterface,
                             ["getAsmResultNames"]>,
                         DeclareOpInterfaceMethods<AggregatedOpInterface,
                             ["decomposeOperation"]>]> {
  let regions = (region MaxSizedRegion<1>:$decomposition);
  let hasRegionVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verifyRegions() {
      return ::mlir::xent::detail::verifyDecompositionRegion(*this);
    }
    void $cppClass::getAsmResultNames(
        ::mlir::OpAsmSetValueNameFn setNameFn) {
      ::mlir::xent::detail::getResultNames(
          ::mlir::cast<::mlir::xent::CrossEntropyOpInterface>(getOperation()),
          setNameFn);
    }
    ::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>
    $cppClass::decomposeOperation(::mlir::OpBuilder &b) {
      return ::mlir::xent::decompose(
          b, ::mlir::cast<::mlir::xent::CrossEntropyOpInterface>(
                 getOperation()));
    }
  }];
}

def Xent_CrossEntropyOp : Xent_CrossEntropyOpBase<"cross_entropy"> {
  let summary = "softmax cross-entropy loss with PyTorch's semantics";
  let description = [{
    Computes `torch.nn.functional.cross_entropy(logits, target, weight,
    ignore_index, reduction, label_smoothing)` with two extensions: an
    optional `softcap` (`softcap * tanh(x / softcap)` applied to the logits
    before everything) and a z-loss (`z_loss_scale * lse²` added per kept
    element, where `lse` is the log-sum-exp over the classes).

    Operands:
    * `logits`: f16, bf16 or f32 tensor of shape `(C)`, `(N, C)` or
      `(N, C, d1, ..., dk)`; the class axis is `axis` (default 1, or 0 for
      rank 1) and may be any dimension.
    * `target`: either i32/i64 class indices shaped like `logits` without
      the class axis, or float class probabilities shaped like `logits`.
    * `weight` (optional): a rank-1 tensor of C class weights.

    Results: `loss` (rank 0 for `mean` and `sum`, per element for `none`)
    and optionally `z_loss`, the z-loss part of `loss` on its own, reduced
    the same way (`mean` divides it by the number of kept elements). Results
    may be f32 or the logits' element type; everything is accumulated in f32.

    Per-row outputs follow, each present exactly when its unit attribute is
    set, in this order:
    * `return_lse` → `lse`, per element (shaped like the target of class
      indices): the log-sum-exp over the classes of the logits after the
      softcap, `m + log Σ_c exp(x_c - m)`, f32 or the logits' element type.
    * `return_argmax` → `argmax`, per element, i32 or i64: the class of the
      largest (soft-capped) logit, the first one on ties and the first NaN
      if any, as `torch.argmax`.
    * `return_accuracy` → `accuracy`, reduced like the loss (f32 or the
      logits' element type): with `correct` = 1 for a kept element whose
      target equals its `argmax`, else 0, it is `correct` per element for
      `none`, `Σ correct` for `sum`, and `Σ correct / number of kept
      elements` for `mean` (unweighted, Liger's token accuracy; NaN when
      every target is ignored). Class-index targets only.
    `lse` and `argmax` do not depend on the target: they are computed for
    ignored elements too. The results after `loss` are thus `z_loss` when
    there is one more result than selected outputs, then the selected ones;
    without any of the three attributes the op is as before.

    Per-row statistics for a loss over a vocabulary split into slices
    (docs/scale-out.md): `return_row_stats` adds a last result `row_stats`,
    f32, shaped like the per-element loss with a trailing dimension of K
    values per row, in this order:
    * `m`, the largest (soft-capped) logit of the row;
    * `s = Σ_c exp(x_c - m)`;
    * `x_t`, the target's (soft-capped) logit, or -inf where the target is
      ignored or not one of the op's classes;
    * with `weight`: `w_t`, the target's weight, or 0 where `x_t` is -inf;
    * with label smoothing: `Σ_c w_c (m - x_c)` and `Σ_c w_c` (`w_c` = 1
      without weights);
    so K = 3 + [weight] + 2·[label smoothing]. Class-index targets only.
    `class_offset %o` (i64) with `num_classes = C` (or `num_classes %n`, an
    i64 operand, where C is a run-time value: one compiled op then serves
    every vocabulary and split; never both) says that the logits hold
    the classes `[o, o + c)` of C (c the class axis's size): targets are
    global class indices in `[0, C)`, a target outside the slice is one
    whose statistics are elsewhere (its `x_t` is -inf, its `w_t` 0), and
    label smoothing's ε/C uses the global C. The op's `loss` (and `z_loss`)
    is then the loss of the slice alone, a target outside it counting as
    ignored. Slices' statistics merge exactly: with `M = max m_i`,
    `S = Σ s_i exp(m_i - M)`, `x_t = max x_t_i`, `w_t = Σ w_t_i`,
    `Σ w (M - x) = Σ (G_i + F_i (M - m_i))` and `Σ w = Σ F_i`, the merged
    values are those of the whole row, the operand the gradient op takes.

    `ignore_index` (i64) and `label_smoothing`, `z_loss_scale`, `softcap`
    (f32) may be given at run time instead, as SSA scalar operands written
    after the tensor operands (`ignore_index %i label_smoothing %eps
    z_loss_scale %z softcap %c`, their types last in the functional type;
    the decomposition region's block arguments include them). A feature is
    given by its attribute or its operand, never both; an operand's
    presence specializes the code as the attribute does, its value is read
    when the op runs and is not checked: out-of-range values are computed
    as the formulas are written (ε outside [0, 1], a negative z-loss scale).
    A run-time value of 0 is the op without the feature, exactly: ε = 0 is
    no smoothing (also where a logit is -inf, whose smoothing term would be
    0 · inf), a z-loss scale of 0 no z-loss, and a softcap of 0 no softcap
    (the logits as they are, as `softcap = None` in PyTorch code), so one
    op serves calls with and without the feature (`convert-xent-to-gpu`'s
    `runtime-dispatch` then runs the kernel without it).

    Elements whose target equals `ignore_index` (default -100) contribute
    nothing, not even through non-finite logits; `mean` divides by the total
    weight of kept targets and is NaN when every target is ignored.
    `ignore_index` must not be given with probability targets.

    The `decomposition` region, when present, holds one block whose
    arguments mirror the operands and computes exactly the op's results with
    upstream ops, ending in `xent.yield`. It may be omitted when writing the
    op by hand; `xent-materialize-decomposition` fills it.

    Example:

    ```mlir
    %loss, %z = xent.cross_entropy mean %logits, %target weight %w
        {ignore_index = 0 : i64, label_smoothing = 1.0e-01 : f32,
         z_loss_scale = 1.0e-04 : f32, softcap = 3.0e+01 : f32}
        : (tensor<?x32000xbf16>, tensor<?xi64>, tensor<32000xf32>)
        -> (tensor<f32>, tensor<f32>)
    %loss, %lse, %pred, %acc = xent.cross_entropy mean %logits, %target
        {return_lse, return_argmax, return_accuracy}
        : (tensor<8x32000xbf16>, tensor<8xi64>)
        -> (tensor<f32>, tensor<8xf32>, tensor<8xi64>, tensor<f32>)
    // The statistics of the classes [%o, %o + 16000) of 32000.
    %loss, %stats = xent.cross_entropy sum %logits, %target class_offset %o
        {num_classes = 32000 : i64, return_row_stats}
        : (tensor<8x16000xbf16>, tensor<8xi64>, i64)
        -> (tensor<f32>, tensor<8x3xf32>)
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$logits,
    Xent_TargetTensor:$target,
    Optional<Xent_FloatTensor>:$weight,
    Optional<I64>:$class_offset,
    Optional<I64>:$dynamic_num_classes), xentScalarOperands, xentCommonAttrs,
    xentRowOutputAttrs,
    (ins UnitAttr:$return_row_stats, OptionalAttr<I64Attr>:$num_classes));
  let results = (outs Xent_FloatTensor:$loss,
                      Variadic<AnyRankedTensor>:$extra_results);
  let builders = [
    // A loss and, unless `zLoss` is null, its z-loss; no per-row outputs;
    // `scalars` the features given at run time.
    OpBuilder<(ins "::mlir::Type":$loss, "::mlir::Type":$zLoss,
      "::mlir::Value":$logits, "::mlir::Value":$target,
      "::mlir::Value":$weight, "::mlir::xent::ReductionAttr":$reduction,
      "::mlir::IntegerAttr":$ignore_index,
      "::mlir::FloatAttr":$label_smoothing, "::mlir::FloatAttr":$z_loss_scale,
      "::mlir::FloatAttr":$softcap, "::mlir::IntegerAttr":$axis,
      CArg<"::mlir::xent::LossScalars", "{}">:$scalars), [{
      ::llvm::SmallVector<::mlir::Type> extras;
      if (zLoss)
        extras.push_back(zLoss);
      build($_builder, $_state, loss, extras, logits, target, weight,
            /*class_offset=*/nullptr, /*dynamic_num_classes=*/nullptr,
            scalars.ignoreIndex,
            scalars.labelSmoothing, scalars.zLossScale, scalars.softcap,
            reduction, ignore_index, label_smoothing, z_loss_scale, softcap,
            axis, /*return_lse=*/nullptr, /*return_argmax=*/nullptr,
            /*return_accuracy=*/nullptr, /*return_row_stats=*/nullptr,
            /*num_classes=*/nullptr);
    }]>];
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $logits `,` $target (`weight` $weight^)?
  }], xentSliceFormat, xentScalarsFormat, [{
    attr-dict `:` functional-type(operands, results)
    (`decomposition` $decomposition^)?
  }]);

  let extraClassDeclaration = [{
    // The results after `loss` but the row statistics, which come last.
    ::mlir::xent::detail::LossExtras getLossExtras() {
      ::mlir::ValueRange extras = getExtraResults();
      if (getReturnRowStats() && !extras.empty())
        extras = extras.drop_back();
      return ::mlir::xent::detail::getLossExtras(
          extras, getReturnLse(), getReturnArgmax(), getReturnAccuracy());
    }
    ::mlir::Value getZLoss() { return getLossExtras().zLoss; }
    ::mlir::Value getLse() { return getLossExtras().lse; }
    ::mlir::Value getArgmax() { return getLossExtras().argmax; }
    ::mlir::Value getAccuracy() { return getLossExtras().accuracy; }
    /// The `row_stats` result (`return_row_stats`), or null.
    ::mlir::Value getRowStats() {
      if (!getReturnRowStats() || getExtraResults().empty())
        return {};
      return getExtraResults().back();
    }
    // Absent on the forward op; CrossEntropyOpInterface returns them null.
    ::mlir::Value getGradOutput() { return {}; }
    ::mlir::Value getDlogits() { return {}; }
  }];
}

def Xent_CrossEntropyGradOp : Xent_CrossEntropyOpBase<"cross_entropy_grad"> {
  let summary = "gradient of `xent.cross_entropy` with respect to the logits";
  let description = [{
    Computes `d(sum(loss * grad_output)) / d(logits)` for the
    `xent.cross_entropy` with the same operands and attributes, where
    `loss` includes the z-loss term. `grad_output` is rank 0 for `mean` and
    `sum` and shaped like the per-element loss for `none`. The result
    `dlogits` has the type of `logits`; it is computed in f32 and rounded
    once. Ignored elements get exactly zero gradient (also when their logits
    are not finite), and so does every element when all targets are ignored
    under `mean`.

    `row_stats` (optional) gives the statistics of each row that the op
    would otherwise compute, in the layout of `xent.cross_entropy`'s
    `row_stats` result, merged over the whole row: the gradient is then
    computed from them (the softmax from `m + log s`, `w_t` and `Σ w` from
    the operand) without a pass over the row for its statistics, and a
    `mean` divides by the kept weight `Σ w_t` of the op's rows. With
    `class_offset %o` and `num_classes = C` (or `num_classes %n` at run
    time) the logits hold the classes
    `[o, o + c)` of C, as on `xent.cross_entropy`: `dlogits` is the
    gradient of the whole row's loss on those classes, the one-hot term
    applying only where the target is one of them; `class_offset` needs
    `row_stats`. Class-index targets only.

    Example:

    ```mlir
    %dlogits = xent.cross_entropy_grad mean %grad, %logits, %target
        {label_smoothing = 1.0e-01 : f32}
        : (tensor<f32>, tensor<8x32000xbf16>, tensor<8xi64>)
        -> tensor<8x32000xbf16>
    // The slice [%o, %o + 16000) of 32000 classes, from merged statistics.
    %d = xent.cross_entropy_grad mean %grad, %logits, %target
        row_stats %stats class_offset %o {num_classes = 32000 : i64}
        : (tensor<f32>, tensor<8x16000xbf16>, tensor<8xi64>, tensor<8x3xf32>,
           i64) -> tensor<8x16000xbf16>
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$grad_output,
    Xent_FloatTensor:$logits,
    Xent_TargetTensor:$target,
    Optional<Xent_FloatTensor>:$weight,
    Optional<Xent_FloatTensor>:$row_stats,
    Optional<I64>:$class_offset,
    Optional<I64>:$dynamic_num_classes), xentScalarOperands, xentCommonAttrs,
    (ins OptionalAttr<I64Attr>:$num_classes));
  let results = (outs Xent_FloatTensor:$dlogits);
  let builders = [
    // The attributes as ODS takes them; `scalars` the features given at run
    // time.
    OpBuilder<(ins "::mlir::Type":$dlogits, "::mlir::Value":$grad_output,
      "::mlir::Value":$logits, "::mlir::Value":$target,
      "::mlir::Value":$weight, "::mlir::xent::ReductionAttr":$reduction,
      "::mlir::IntegerAttr":$ignore_index,
      "::mlir::FloatAttr":$label_smoothing, "::mlir::FloatAttr":$z_loss_scale,
      "::mlir::FloatAttr":$softcap, "::mlir::IntegerAttr":$axis,
      CArg<"::mlir::xent::LossScalars", "{}">:$scalars), [{
      build($_builder, $_state, dlogits, grad_output, logits, target, weight,
            /*row_stats=*/nullptr, /*class_offset=*/nullptr,
            /*dynamic_num_classes=*/nullptr,
            scalars.ignoreIndex, scalars.labelSmoothing, scalars.zLossScale,
            scalars.softcap, reduction, ignore_index, label_smoothing,
            z_loss_scale, softcap, axis, /*num_classes=*/nullptr);
    }]>];
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $grad_output `,` $logits `,` $target
    (`weight` $weight^)? (`row_stats` $row_stats^)?
  }], xentSliceFormat, xentScalarsFormat, [{
    attr-dict `:` functional-type(operands, results)
    (`decomposition` $decomposition^)?
  }]);

  let extraClassDeclaration = [{
    // Absent on the gradient op; CrossEntropyOpInterface returns them null.
    ::mlir::Value getLoss() { return {}; }
    ::mlir::Value getZLoss() { return {}; }
    ::mlir::Value getLse() { return {}; }
    ::mlir::Value getArgmax() { return {}; }
    ::mlir::Value getAccuracy() { return {}; }
  }];
}

def Xent_CrossEntropyAndGradOp : Xent_CrossEntropyOpBase<"cross_entropy_and_grad"> {
  let summary = "a cross-entropy loss and its gradient, computed together";
  let description = [{
    The joint form of `xent.cross_entropy` and `xent.cross_entropy_grad` on
    the same operands and attributes: `loss` (and optionally `z_loss`) as
    the forward op computes them, and `dlogits` as the gradient op computes
    it for `grad_output`. `xent-fuse-forward-backward` forms it from a pair
    of ops; the GPU lowering computes all results in one kernel that reads
    each row of logits for the loss and again for the gradient, instead of
    two kernels and three reads.

    The per-row outputs (`return_lse`, `return_argmax`,
    `return_accuracy`) are those of `xent.cross_entropy`, between `z_loss`
    and `dlogits`.

    The `decomposition` region's block arguments mirror the operands
    (`grad_output`, `logits`, `target`, optional `weight`) and it yields
    `loss`, `z_loss` when present, the selected per-row outputs, and
    `dlogits`.

    Example:

    ```mlir
    %loss, %dlogits = xent.cross_entropy_and_grad mean %one, %logits, %target
        : (tensor<f32>, tensor<8x32000xbf16>, tensor<8xi64>)
        -> (tensor<f32>, tensor<8x32000xbf16>)
    ```
  }];

  let arguments = !con((ins
    Xent_FloatTensor:$grad_output,
    Xent_FloatTensor:$logits,
    Xent_TargetTensor:$target,
    Optional<Xent_FloatTensor>:$weight), xentScalarOperands, xentCommonAttrs,
    xentRowOutputAttrs);
  let results = (outs Xent_FloatTensor:$loss,
                      Variadic<AnyRankedTensor>:$extra_results,
                      Xent_FloatTensor:$dlogits);
  let assemblyFormat = !strconcat([{
    custom<Reduction>($reduction) $grad_output `,` $logits `,` $target
    (`weight` $weight^)?
  }], xentScalarsFormat, [{
    attr-dict `:` functional-type(operands, results)
    (`decomposition` $decomposition^)?
  }]);

  let extraClassDeclaration = xentLossExtrasAccessors # [{
    // A joint op computes its statistics itself, over whole rows.
    ::mlir::Value getRowStats() { return {}; }
    ::mlir::Value getClassOffset() { return {}; }
    ::mlir::Value getDynamicNumClasses() { return {}; }
    ::mlir::IntegerAttr getNumClassesAttr() { return {}; }
  }];
}

def Xent_LaunchOp : Xent_Op<"launch", [
    SingleBlock, NoTerminator, IsolatedFromAbove, AttrSizedOperandSegments,
    RecursiveMemoryEffects]> {
  let summary = "buffer code run on the buffers of tensors, bufferized by "
                "one-shot bufferization";
  let description = [{
    The tensor-level form of a cross-entropy op lowered to kernels
    (`convert-xent-to-gpu` emits one per op): the body is buffer code, the
    kernels' launches, on the buffers of the op's tensors. Its block
    arguments are the buffers of the `inputs`, then those of the results, as
    memrefs of the same element types and ranks (with any layout; the buffers
    are cast to them). The body reads the inputs' buffers and writes the
    results' buffers. An input may also be a scalar (integer, index or
    float: a value the kernels take as an argument, such as a run-time
    `label_smoothing`); its block argument is the scalar itself, of the same
    type. A scalar is no buffer: it is not read from or written to memory,
    aliases nothing and no result can be tied to it.

    Where each result's buffer comes from is decided by one-shot
    bufferization, through the op's `BufferizableOpInterface`:

    * `tied_operands[i]` is -1 for a result the op allocates (device memory,
      `gpu.alloc`), or the index (among `inputs` then `inits`) of the operand
      whose buffer result `i` is written into.
    * A result tied to an `init` (a destination, such as a caller's buffer)
      is always written there; an init is only written, never read.
    * A result tied to an input reuses the input's buffer only when the
      analysis finds that in place (nothing reads the input afterwards, its
      buffer is writable) and the buffer has the identity layout (a result
      never leaves in a view); otherwise the op allocates it. The body must
      then be safe when the two block arguments are one buffer.

    `result_dims` are the dynamic sizes of every result, in order, for the
    results the op allocates.

    ```mlir
    %loss, %dlogits = xent.launch ins(%x, %t : tensor<?x?xbf16>, tensor<?xi64>)
        dims(%n, %c) tied [-1, 0] -> (tensor<f32>, tensor<?x?xbf16>) {
    ^bb0(%xb: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %tb: ...,
         %lb: memref<f32, strided<[], offset: ?>>, %db: ...):
      gpu.launch_func @xent_kernels::@xent_loss_grad_0 ...
    }
    // A run-time scalar beside the tensors: passed to the body as it is.
    %l = xent.launch ins(%x, %t, %eps : tensor<?x?xbf16>, tensor<?xi64>, f32)
        tied [-1] -> (tensor<f32>) {
    ^bb0(%xb: ..., %tb: ..., %e: f32, %lb: memref<f32, strided<[], offset: ?>>):
      gpu.launch_func @xent_kernels::@xent_loss_0 ... args(..., %e : f32)
    }
    ```
  }];
  let arguments = (ins Variadic<AnyTypeOf<[AnyRankedTensor,
                                            AnySignlessIntegerOrIndex,
                                            AnyFloat]>>:$inputs,
                       Variadic<AnyRankedTensor>:$inits,
                       Variadic<Index>:$result_dims,
                       DenseI64ArrayAttr:$tied_operands);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    (`outs` `(` $inits^ `:` type($inits) `)`)?
    (`dims` `(` $result_dims^ `)`)?
    `tied` $tied_operands (`->` `(` type($results)^ `)`)? $body attr-dict
  }];
  let extraClassDeclaration = [{
    /// The operand result `i` is written into, or null when the op
    /// allocates it.
    ::mlir::OpOperand *getTiedOperand(unsigned i);
    /// The result written into `operand`'s buffer, or null.
    ::mlir::OpResult getTiedResult(::mlir::OpOperand &operand);
    /// The dynamic sizes of result `i` among `result_dims`.
    ::mlir::ValueRange getResultDynamicSizes(unsigned i);
  }];
  let hasVerifier = 1;
}
include "xent/Dialect/Xent/IR/XentLinearOps.td"

def Xent_YieldOp : Xent_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["CrossEntropyOp", "CrossEntropyGradOp",
                 "CrossEntropyAndGradOp", "LinearCrossEntropyOp",
                 "LinearCrossEntropyGradOp",
                 "LinearCrossEntropyAndGradOp"]>]> {
  let summary = "terminates the decomposition region of a xent op";
  let description = [{
    Returns the values computed by a `decomposition` region; their types
    must be the result types of the enclosing op.

    ```mlir
    xent.yield %loss : tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // XENT_DIALECT_XENT_IR_XENTOPS_TD
