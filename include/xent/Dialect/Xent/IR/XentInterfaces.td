//===- XentInterfaces.td - Xent op interfaces --------------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTINTERFACES_TD
#define XENT_DIALECT_XENT_IR_XENTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Xent_LossOpInterface : OpInterface<"LossOpInterface"> {
  let cppNamespace = "::mlir::xent";
  let description = [{
    What every loss op of xent shares, whether it reads the logits
    (`CrossEntropyOpInterface`: `xent.cross_entropy`,
    `xent.cross_entropy_grad`, `xent.cross_entropy_and_grad`) or computes
    them from a projection (`LinearCrossEntropyOpInterface`:
    `xent.linear_cross_entropy` and its `_grad` / `_and_grad`): the targets,
    `grad_output` when the op computes a gradient, the loss and z-loss
    results, the loss's attributes and the run-time scalars that may stand
    for them, and a decomposition region. Accessors of the values an op does
    not have return null.

    Both family interfaces derive from this one, so each of their ops
    implements it, and code that needs only the loss's configuration works on
    either family through it.
  }];

  let methods = [
    InterfaceMethod<"The targets: class indices (shaped like the logits "
                    "without the class axis), or, for ops that read logits, "
                    "class probabilities shaped like the logits.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getTarget", (ins), [{
        return $_op.getTarget();
      }]>,
    InterfaceMethod<"The gradient of the loss, or null when the op computes "
                    "no gradient.",
      "::mlir::Value", "getGradOutput", (ins), [{
        return $_op.getGradOutput();
      }]>,
    InterfaceMethod<"The loss result, or null when the op computes no loss.",
      "::mlir::Value", "getLoss", (ins), [{ return $_op.getLoss(); }]>,
    InterfaceMethod<"The z-loss result, or null.",
      "::mlir::Value", "getZLoss", (ins), [{ return $_op.getZLoss(); }]>,

    InterfaceMethod<"How the per-element (per-row) loss is reduced.",
      "::mlir::xent::Reduction", "getReduction", (ins), [{
        return $_op.getReduction();
      }]>,
    InterfaceMethod<"The `ignore_index` attribute, or null (PyTorch's -100).",
      "::mlir::IntegerAttr", "getIgnoreIndexAttr", (ins), [{
        return $_op.getIgnoreIndexAttr();
      }]>,
    InterfaceMethod<"The label smoothing ε.",
      "::llvm::APFloat", "getLabelSmoothing", (ins), [{
        return $_op.getLabelSmoothing();
      }]>,
    InterfaceMethod<"The z-loss scale.",
      "::llvm::APFloat", "getZLossScale", (ins), [{
        return $_op.getZLossScale();
      }]>,
    InterfaceMethod<"The softcap, when the logits are capped.",
      "::std::optional<::llvm::APFloat>", "getSoftcap", (ins), [{
        return $_op.getSoftcap();
      }]>,
    InterfaceMethod<"The `ignore_index` given at run time (an i64 operand), "
                    "or null.",
      "::mlir::Value", "getDynamicIgnoreIndex", (ins), [{
        return $_op.getDynamicIgnoreIndex();
      }]>,
    InterfaceMethod<"The label smoothing given at run time (an f32 "
                    "operand), or null.",
      "::mlir::Value", "getDynamicLabelSmoothing", (ins), [{
        return $_op.getDynamicLabelSmoothing();
      }]>,
    InterfaceMethod<"The z-loss scale given at run time (an f32 operand), or "
                    "null.",
      "::mlir::Value", "getDynamicZLossScale", (ins), [{
        return $_op.getDynamicZLossScale();
      }]>,
    InterfaceMethod<"The softcap given at run time (an f32 operand), or null.",
      "::mlir::Value", "getDynamicSoftcap", (ins), [{
        return $_op.getDynamicSoftcap();
      }]>,
    InterfaceMethod<"The decomposition region (may be empty).",
      "::mlir::Region &", "getDecomposition", (ins), [{
        return $_op.getDecomposition();
      }]>,
  ];

  let extraSharedClassDeclaration = [{
    /// The target value that marks an ignored element (PyTorch's -100 when
    /// the attribute is absent).
    int64_t getIgnoreIndexValue() {
      if (auto a = $_op.getIgnoreIndexAttr())
        return a.getInt();
      return -100;
    }
    /// The features given at run time by SSA scalars.
    ::mlir::xent::LossScalars getLossScalars() {
      return {$_op.getDynamicIgnoreIndex(), $_op.getDynamicLabelSmoothing(),
              $_op.getDynamicZLossScale(), $_op.getDynamicSoftcap()};
    }
    /// True when the op computes the loss (and maybe the z-loss).
    bool computesLoss() { return static_cast<bool>($_op.getLoss()); }
  }];
}

def Xent_CrossEntropyOpInterface
    : OpInterface<"CrossEntropyOpInterface", [Xent_LossOpInterface]> {
  let cppNamespace = "::mlir::xent";
  let description = [{
    The family of softmax cross-entropy ops: `xent.cross_entropy`,
    `xent.cross_entropy_grad` and `xent.cross_entropy_and_grad`. They share
    their operands (`grad_output` when the op computes a gradient, `logits`,
    `target`, an optional `weight`), their attributes, their semantics (one
    `CrossEntropyConfig`) and a decomposition region. An op computes the
    loss (`loss`, optionally `z_loss` and the per-row outputs `lse`,
    `argmax`, `accuracy`), the gradient (`dlogits`), or both; accessors of
    the values an op does not have return null.

    Passes that do not care which of the three they hold (verification,
    materializing and inlining the decomposition, the GPU lowering, the
    recognizer's bookkeeping) work on this interface. The accessors both
    loss families share (the target, `grad_output`, `loss`, `z_loss`, the
    loss's attributes and run-time scalars, the decomposition region) come
    from `LossOpInterface`, from which it derives.
  }];

  let methods = [
    InterfaceMethod<"The logits (f16, bf16 or f32; the class axis is "
                    "`getClassAxis()`).",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getLogits", (ins), [{
        return $_op.getLogits();
      }]>,
    InterfaceMethod<"The class weights, or null when unweighted.",
      "::mlir::Value", "getWeight", (ins), [{ return $_op.getWeight(); }]>,
    InterfaceMethod<"The per-element log-sum-exp result (`return_lse`), or "
                    "null.",
      "::mlir::Value", "getLse", (ins), [{ return $_op.getLse(); }]>,
    InterfaceMethod<"The per-element predicted class result "
                    "(`return_argmax`), or null.",
      "::mlir::Value", "getArgmax", (ins), [{ return $_op.getArgmax(); }]>,
    InterfaceMethod<"The accuracy result (`return_accuracy`), reduced like "
                    "the loss, or null.",
      "::mlir::Value", "getAccuracy", (ins), [{
        return $_op.getAccuracy();
      }]>,
    InterfaceMethod<"The gradient with respect to the logits, or null when "
                    "the op computes no gradient.",
      "::mlir::Value", "getDlogits", (ins), [{ return $_op.getDlogits(); }]>,
    InterfaceMethod<"The per-row statistics: the `row_stats` result of a "
                    "forward op (`return_row_stats`), or the merged "
                    "`row_stats` operand of a gradient op; null otherwise.",
      "::mlir::Value", "getRowStats", (ins), [{
        return $_op.getRowStats();
      }]>,
    InterfaceMethod<"The index of the slice's first class (an i64 operand) "
                    "when the logits hold a slice of the classes, or null.",
      "::mlir::Value", "getClassOffset", (ins), [{
        return $_op.getClassOffset();
      }]>,
    InterfaceMethod<"The `num_classes` attribute (the classes of the whole "
                    "row, of which the logits hold a slice), or null.",
      "::mlir::IntegerAttr", "getNumClassesAttr", (ins), [{
        return $_op.getNumClassesAttr();
      }]>,
    InterfaceMethod<"The `num_classes` given at run time (an i64 operand) "
                    "instead of the attribute, or null.",
      "::mlir::Value", "getDynamicNumClasses", (ins), [{
        return $_op.getDynamicNumClasses();
      }]>,
    InterfaceMethod<"The `axis` attribute, or null (the default class axis).",
      "::mlir::IntegerAttr", "getAxisAttr", (ins), [{
        return $_op.getAxisAttr();
      }]>,

    InterfaceMethod<[{
        Emits the canonical decomposition of the op at the insertion point of
        `b`, on `operands` (one value per operand of the op, in order), and
        returns one value per result of the op.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildDecomposition",
      (ins "::mlir::OpBuilder &":$b, "::mlir::ValueRange":$operands), [{}],
      [{
        return ::mlir::xent::buildCanonicalDecomposition(
            b, ::mlir::cast<::mlir::xent::CrossEntropyOpInterface>(
                   $_op.getOperation()), operands);
      }]>,
  ];

  let extraSharedClassDeclaration = [{
    /// The class axis: the `axis` attribute, or 1 (0 for rank-1 logits).
    int64_t getClassAxis() {
      if (auto a = $_op.getAxisAttr())
        return a.getInt();
      return $_op.getLogits().getType().getRank() == 1 ? 0 : 1;
    }
    /// True when `target` holds class probabilities rather than indices.
    bool hasProbabilityTargets() {
      return ::llvm::isa<::mlir::FloatType>(
          $_op.getTarget().getType().getElementType());
    }
    /// True when the op returns any of `lse`, `argmax`, `accuracy`.
    bool computesRowOutputs() {
      return $_op.getLse() || $_op.getArgmax() || $_op.getAccuracy();
    }
    /// True when a forward op returns its per-row statistics.
    bool returnsRowStats() {
      return $_op.getRowStats() && !$_op.getDlogits();
    }
    /// True when a gradient op takes merged per-row statistics.
    bool takesRowStats() {
      return $_op.getRowStats() && $_op.getDlogits();
    }
    /// True when the logits hold a slice of the classes (`class_offset`).
    bool isClassSlice() { return static_cast<bool>($_op.getClassOffset()); }
    /// True when the op computes `dlogits` (and so takes `grad_output`).
    bool computesGradient() { return static_cast<bool>($_op.getDlogits()); }
    /// The semantic configuration of this op, shared with the builders of
    /// the decomposition and the kernels.
    ::mlir::xent::CrossEntropyConfig getConfig() {
      return ::mlir::xent::CrossEntropyConfig::get(
          ::mlir::cast<::mlir::xent::CrossEntropyOpInterface>(
              $_op.getOperation()));
    }
  }];

  let verify = [{
    return ::mlir::xent::detail::verifyCrossEntropyOp(
        ::mlir::cast<::mlir::xent::CrossEntropyOpInterface>($_op));
  }];
}

def Xent_LinearCrossEntropyOpInterface
    : OpInterface<"LinearCrossEntropyOpInterface", [Xent_LossOpInterface]> {
  let cppNamespace = "::mlir::xent";
  let description = [{
    The family of ops that compute a cross-entropy loss on the output of a
    linear projection, without a logits operand:
    `xent.linear_cross_entropy`, `xent.linear_cross_entropy_grad` and
    `xent.linear_cross_entropy_and_grad`. They share their operands
    (`grad_output` when the op computes gradients, `hidden`, the projection
    `weight`, an optional `bias`, `target`, optional `class_weight`), the
    loss's attributes, and a decomposition region. The logits are
    `hidden · weightᵀ + bias`, computed in f32 with the classes last.
    Accessors of values an op does not have return null.

    This is not a `CrossEntropyOpInterface`: code that needs logits (the GPU
    kernels, the forward-backward fusion) never sees these ops; they become
    ops of that family through their decomposition or
    `xent-chunk-linear-cross-entropy`. The accessors both loss families share
    (`target`, `grad_output`, `loss`, `z_loss`, the loss's attributes and
    run-time scalars, the decomposition region) come from `LossOpInterface`,
    from which it derives.
  }];

  let methods = [
    InterfaceMethod<"The hidden states, `[N, H]` or `[B, T, H]`.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getHidden", (ins), [{
        return $_op.getHidden();
      }]>,
    InterfaceMethod<"The projection weight, `[V, H]`.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getWeight", (ins), [{
        return $_op.getWeight();
      }]>,
    InterfaceMethod<"The projection bias `[V]`, or null.",
      "::mlir::Value", "getBias", (ins), [{ return $_op.getBias(); }]>,
    InterfaceMethod<"The class weights `[V]`, or null when unweighted.",
      "::mlir::Value", "getClassWeight", (ins), [{
        return $_op.getClassWeight();
      }]>,
    InterfaceMethod<"The gradient with respect to `hidden`, or null.",
      "::mlir::Value", "getDHidden", (ins), [{ return $_op.getDHidden(); }]>,
    InterfaceMethod<"The gradient with respect to `weight`, or null.",
      "::mlir::Value", "getDWeight", (ins), [{ return $_op.getDWeight(); }]>,
    InterfaceMethod<"The gradient with respect to `bias`, or null.",
      "::mlir::Value", "getDBias", (ins), [{ return $_op.getDBias(); }]>,

    InterfaceMethod<[{
        Emits the canonical decomposition of the op at the insertion point of
        `b`, on `operands` (one value per operand of the op, in order): the
        projection as `linalg.matmul` and the loss as an op of the
        cross-entropy family. Returns one value per result of the op.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildDecomposition",
      (ins "::mlir::OpBuilder &":$b, "::mlir::ValueRange":$operands), [{}],
      [{
        return ::mlir::xent::buildCanonicalLinearDecomposition(
            b, ::mlir::cast<::mlir::xent::LinearCrossEntropyOpInterface>(
                   $_op.getOperation()), operands);
      }]>,
  ];

  let extraSharedClassDeclaration = [{
    /// True when the op computes the gradients (and so takes `grad_output`).
    bool computesGradient() { return static_cast<bool>($_op.getDHidden()); }
  }];

  let verify = [{
    return ::mlir::xent::detail::verifyLinearCrossEntropyOp(
        ::mlir::cast<::mlir::xent::LinearCrossEntropyOpInterface>($_op));
  }];
}

#endif // XENT_DIALECT_XENT_IR_XENTINTERFACES_TD
