//===- XentAttrs.td - Xent attribute definitions -----------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTATTRS_TD
#define XENT_DIALECT_XENT_IR_XENTATTRS_TD

include "xent/Dialect/Xent/IR/XentDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Xent_ReductionNone : I32EnumAttrCase<"none", 0>;
def Xent_ReductionMean : I32EnumAttrCase<"mean", 1>;
def Xent_ReductionSum : I32EnumAttrCase<"sum", 2>;

def Xent_Reduction : I32EnumAttr<"Reduction",
    "how the per-element losses are reduced",
    [Xent_ReductionNone, Xent_ReductionMean, Xent_ReductionSum]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::xent";
}

def Xent_ReductionAttr : EnumAttr<Xent_Dialect, Xent_Reduction, "reduction"> {
  let summary = "reduction of a cross-entropy loss: `mean`, `sum` or `none`";
  let description = [{
    Selects how the per-element losses of `xent.cross_entropy` are combined,
    with PyTorch's meaning:

    * `mean`: the sum of the losses divided by the total weight of the kept
      (non-ignored) targets, `Σ weight[target]` (their count without class
      weights); with probability targets, divided by the number of elements.
      All targets ignored gives NaN, as in PyTorch.
    * `sum`: the sum of the per-element losses; the result is a scalar.
    * `none`: one loss per element (logits' shape without the class axis);
      ignored elements get 0.

    In the op's custom syntax the reduction is written as a bare keyword;
    on its own (for example in the generic op form) it prints as
    `#xent.reduction<mean>`.

    Example:

    ```mlir
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %m = "xent.cross_entropy"(%x, %t) ({}) {reduction = #xent.reduction<mean>}
        : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // XENT_DIALECT_XENT_IR_XENTATTRS_TD
