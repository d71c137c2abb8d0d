//===- XentDialect.td - Xent dialect definition ------------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_XENTDIALECT_TD
#define XENT_DIALECT_XENT_IR_XENTDIALECT_TD

include "mlir/IR/OpBase.td"

def Xent_Dialect : Dialect {
  let name = "xent";
  let summary = "Softmax cross-entropy as a first-class, fusable composite op";
  let description = [{
    The `xent` dialect carries a softmax cross-entropy loss (and its gradient)
    through a compiler as a single composite operation instead of a chain of
    `log_softmax`, gather and reduction ops that would materialize an N×V
    floating-point tensor.

    Each op has PyTorch's `torch.nn.functional.cross_entropy` semantics
    exactly (class weights, `ignore_index`, label smoothing, `mean`/`sum`/
    `none` reductions, N-D inputs and probability targets) plus two
    extensions used in large-vocabulary training: a z-loss term and a
    softcap on the logits.

    Every op owns a `decomposition` region computing the same value with
    upstream ops (the numerically stable max-shifted log-sum-exp). The region
    may be left empty when the op is written by hand;
    `xent-materialize-decomposition` fills it, `xent-inline-decomposition`
    replaces the op by its region (the portable fallback), and
    `convert-xent-to-gpu` replaces it by one fused kernel.

    ```mlir
    %loss = xent.cross_entropy mean %logits, %target
        : (tensor<8x32000xbf16>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let cppNamespace = "::mlir::xent";
  let useDefaultAttributePrinterParser = 1;
}

class Xent_Op<string mnemonic, list<Trait> traits = []>
    : Op<Xent_Dialect, mnemonic, traits>;

#endif // XENT_DIALECT_XENT_IR_XENTDIALECT_TD
