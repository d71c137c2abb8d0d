//===- Passes.td - Xent transformation passes --------------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMS_PASSES_TD
#define XENT_DIALECT_XENT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def XentMaterializeDecomposition : Pass<"xent-materialize-decomposition"> {
  let summary = "Fill empty decomposition regions with the canonical one";
  let description = [{
    Gives every `xent.cross_entropy` and `xent.cross_entropy_grad` whose
    `decomposition` region is empty the canonical decomposition: the
    numerically stable max-shifted log-sum-exp written with `linalg.generic`,
    `tensor`, `arith` and `math` ops on tensors, accumulating in f32 whatever
    the logits' type. Regions that already have a body (for example the
    matched ops that `xent-recognize` moved there) are left as they are.

    Example:

    ```mlir
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    ```

    becomes

    ```mlir
    %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
      decomposition {
      ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
        // row max, Σ exp(x - max), target pick, masked sum ...
        xent.yield %sum : tensor<f32>
      }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def XentInlineDecomposition : Pass<"xent-inline-decomposition"> {
  let summary = "Replace each xent op by the body of its decomposition region";
  let description = [{
    The portable fallback lowering: every `xent.cross_entropy` and
    `xent.cross_entropy_grad` is replaced by the ops of its `decomposition`
    region, with the region's arguments replaced by the op's operands and the
    op's results by the values of `xent.yield`. An op whose region is empty
    gets the canonical decomposition first, so the pass always removes every
    xent op. After `xent-recognize`, this gives back exactly the matched
    computation.

    Example: `xent-opt --xent-inline-decomposition` on

    ```mlir
    %l = xent.cross_entropy mean %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
    ```

    leaves only `linalg.generic`, `tensor` and `arith` ops computing `%l`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def XentLowerMultiDynamicExpandShape
    : Pass<"xent-lower-multi-dynamic-expand-shape"> {
  let summary = "Lower memref.expand_shape groups of several dynamic sizes "
                "to memref.reinterpret_cast";
  let description = [{
    A `memref.expand_shape` whose reassociation group holds more than one
    dynamic size (the `[N]` per-row losses of a linear op on `[B, T, H]`
    hidden states, expanded back to `[B, T]`) becomes a
    `memref.reinterpret_cast` of the source's base buffer: its sizes are the
    op's `output_shape` and each group's strides are formed from the
    innermost out (`stride[i] = stride[i + 1] * size[i + 1]`, the innermost
    one the source dim's stride). Other `expand_shape` ops are left alone.

    LLVM 22's `expand-strided-metadata` assumes at most one dynamic size per
    group and crashes on the others (llvm/llvm-project#186830, fixed after
    the 22 release); `xent-cpu-pipeline` and `xent-gpu-pipeline` run this
    pass before it, so no valid op crashes them.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def XentCPUVectorizeRows : Pass<"xent-cpu-vectorize-rows", "::mlir::func::FuncOp"> {
  let summary = "Tile the rows of a loss's linalg over threads and its "
                "class axis over vector lanes (CPU)";
  let description = [{
    The CPU half of `xent-cpu-pipeline`, on the tensor-level linalg that
    `xent-inline-decomposition` leaves. Only upstream transformations are
    applied; what they refuse is left as it was, so the result is never
    wrong, only slower.

    1. **Rows over threads.** A *row op* is a linalg op on tensors whose
       loops are all parallel but the last (the class axis, parallel or a
       reduction), and that is not a contraction. Each row op that feeds no
       other row op of two or more loops is tiled by one row with
       `scf.forall`, and the row ops it reads are fused into that loop
       (`tileConsumerAndFuseProducersUsingSCF`). A fused op that something
       outside reads (the per-row max and sum of exponentials that the loss
       over rows reads) is computed once: the loop yields it.
    2. **Classes over vector lanes.** Inside each row, the class loop of
       every op is tiled by `vector-width` with `scf.for`: elementwise ops
       as they are, reductions into `vector-width` partial results merged
       after the loop (`tileReductionUsingScf`). The loop is peeled so that
       its body has full tiles, and each op is vectorized (the last,
       partial tile with masks). The partial results are carried in vector
       registers (`hoistLoopInvariantSubsets`), and a division by a value
       the loop does not change becomes a multiplication by its reciprocal.
       What is the same in every lane is computed on scalars: a 0-d tensor
       read into every lane (the row's target) is a broadcast of its
       element, broadcasts sink through elementwise ops, a select on a
       uniform condition takes the scalar `i1`, and the one-hot compare
       `broadcast(j) + step == broadcast(t)` becomes `[0, N) == t - j` on
       32-bit lanes.
    3. **Sums over rows in f64.** A linalg.generic outside the row loops
       whose loops are all reductions and whose f32 results each yield
       `out + v` (the reduced loss, its weight or count) accumulates in f64
       and is rounded to f32 once.

    A class axis that is not the innermost loop of the ops (rank ≥ 3
    logits with `axis` before the last) is left to scalar loops.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "unsigned", /*default=*/"0",
           "Lanes of a vector (0: as many f32 as the host's widest vector "
           "register holds: 16 with AVX-512, 8 with AVX, else 4; 1: no "
           "vectorization)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def XentCPUApproximateMath : Pass<"xent-cpu-approximate-math"> {
  let summary = "f32 exp, log and tanh as upstream's polynomial "
                "approximations (CPU)";
  let description = [{
    Rewrites `math.exp`, `math.log` and `math.tanh` on f32 scalars and
    vectors with upstream's `populateMathPolynomialApproximationPatterns`:
    range reduction and a polynomial in `arith` ops, which vectorize, where
    the libm calls they would otherwise become do not. `xent-cpu-pipeline`
    runs it after narrower floats are extended to f32. docs/user-guide.md
    states their error, measured against float64.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def XentFuseForwardBackward : Pass<"xent-fuse-forward-backward"> {
  let summary = "Merge a loss and its gradient into one xent.cross_entropy_and_grad";
  let description = [{
    In a joint forward + backward graph, finds each `xent.cross_entropy_grad`
    whose logits, target, weight and attributes equal those of an
    `xent.cross_entropy` in the same block, and replaces both by one
    `xent.cross_entropy_and_grad` placed at the earlier of the two. It fires
    only when `grad_output` is available there (it dominates that op), so
    every use of either result stays dominated. A gradient op nothing uses
    is left alone. The GPU lowering then computes the loss and dlogits in
    one kernel.

    Example:

    ```mlir
    %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    %d = xent.cross_entropy_grad mean %one, %x, %t
        : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?x?xbf16>
    ```

    becomes

    ```mlir
    %l, %d = xent.cross_entropy_and_grad mean %one, %x, %t
        : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
    ```
  }];
}

def XentChunkLinearCrossEntropy : Pass<"xent-chunk-linear-cross-entropy"> {
  let summary = "Compute linear cross-entropy ops chunk by chunk of rows";
  let description = [{
    Replaces each op of the linear family (`xent.linear_cross_entropy`,
    `xent.linear_cross_entropy_grad`, `xent.linear_cross_entropy_and_grad`)
    by an `scf.for` over chunks of `rows` rows of `hidden` (the last chunk
    may be shorter), so that only one chunk's logits exist at a time:
    `rows × V` f32 values instead of `N × V`. The body of each iteration is
    the projection of the chunk (`linalg.matmul` against the transposed
    weight, left to the host compiler's GEMM path), the op of the
    cross-entropy family on the chunk's logits
    (`xent.cross_entropy_and_grad` for the joint op), and for the gradient
    forms the matmuls `dlogits · weight` (the chunk's rows of `d_hidden`)
    and `dlogitsᵀ · hidden` and the reduction `Σ dlogits`, which accumulate
    `d_weight` and `d_bias` in f32 across chunks; they are rounded to the
    weight's type once, after the loop.

    Each chunk's loss is a `sum` (or per-row `none`) loss. A `mean` divides
    by a global quantity computed from `target` and `class_weight` before
    the loop: the kept weight sum W (the count K of kept rows without class
    weights) for the loss and the gradient scale, and K for the z-loss. With
    both class weights and a z-loss, whose mean divides the cross-entropy
    part by W but the z-loss part by K, the chunks see the class weights
    scaled by K / W and everything divides by K. `grad_output` is scaled
    before the loop, so the chunks' gradients need no further scaling.

    The pass is target-independent: its output is ops of the cross-entropy
    family, linalg, tensor, arith and scf on tensors, and
    `xent-cpu-pipeline` runs it.

    Example: `--xent-chunk-linear-cross-entropy=rows=1024` on

    ```mlir
    %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %one, %h, %w, %t
        : (tensor<f32>, tensor<8192x2048xbf16>, tensor<128256x2048xbf16>,
           tensor<8192xi64>)
        -> (tensor<f32>, tensor<8192x2048xbf16>, tensor<128256x2048xbf16>)
    ```

    gives a loop of 8 iterations, each with `1024 × 128256` f32 logits.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"4096",
           "Rows of hidden per chunk (positive)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::xent::XentDialect",
  ];
}

def XentRecognize : Pass<"xent-recognize"> {
  let summary = "Raise cross-entropy chains written with upstream ops to xent ops";
  let description = [{
    Finds tensor values that a frontend computed as a softmax cross-entropy
    loss (log-softmax, the target's log-probability, the ignore mask and a
    sum or mean) or as its gradient with respect to the logits (nll backward,
    then log-softmax backward), and computes them with
    `xent.cross_entropy` / `xent.cross_entropy_grad` instead. The ops that
    computed the value become the op's `decomposition` region, so
    `xent-inline-decomposition` gives back exactly the original computation.

    Matching works on a semantic view of the IR, so the same chain is found
    whether it is written with `linalg.generic` (torch-mlir's TorchToLinalg),
    linalg named ops (`linalg.softmax`, `linalg.reduce`, ...), `tosa` ops or
    `arith`/`math` on tensors, with broadcasts, unit dimensions, casts and
    operand order as the frontend left them. The operands are the values the
    chain reads: the logits before any widening cast, the class-index
    targets (i32 or i64), the class weights and, for the gradient,
    `grad_output`. `ignore_index` is the value the chain masks; a chain that
    masks nothing gets the lowest i64, which no class index equals. Logits
    capped as `c * tanh(x / c)` (Gemma's softcap) give the uncapped x and
    `softcap = c`; PyTorch's label smoothing `(1 - ε) · nll + ε / C ·
    smooth` gives `label_smoothing = ε`, a z-loss `z · lse²` added per kept
    element (lse from a separate logsumexp) `z_loss_scale = z`; a total that
    keeps unit dimensions (TOSA's `1xf32`) is computed as the 0-d op result
    and expanded back. A log-softmax backward on log-probabilities the IR
    does not compute (a saved tensor) is left with a remark, unless
    `assume-normalized-log-probs` states that they are normalized. Values
    the chain computes on the way (the log-probabilities...) keep their other
    users. Chains that only look similar (a softmax, a log-softmax without a
    pick, an unshifted exp, a pick from the raw logits, a mean by the wrong
    count...) are left untouched. See docs/recognition.md.

    Example: the torch-mlir lowering of `F.cross_entropy(x, t, reduction="sum")`

    ```mlir
    %max = linalg.generic ... arith.maximumf ...   // row max
    %lse = linalg.generic ... math.exp, arith.addf ...
    %logp = linalg.generic ... arith.subf, math.log ...
    %loss = linalg.generic ... tensor.extract %logp[%i, %t] ... arith.addf ...
    ```

    becomes

    ```mlir
    %loss = xent.cross_entropy sum %x, %t {ignore_index = -100 : i64}
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
      ^bb0(%a: tensor<8x10xf32>, %b: tensor<8xi64>):
        // the original ops, reading %a and %b
        xent.yield %l : tensor<f32>
      }
    ```
  }];
  let options = [
    Option<"reportFailures", "report-failures", "bool", /*default=*/"false",
           "Emit a remark on each returned value that is not raised, with "
           "the reason">,
    Option<"assumeNormalizedLogProbs", "assume-normalized-log-probs", "bool",
           /*default=*/"false",
           "Raise a log-softmax backward whose log-probabilities nothing in "
           "the IR computes (a saved tensor, a function argument) as "
           "cross_entropy_grad of them, assuming they are normalized (their "
           "log-sum-exp over the class axis is 0)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::xent::XentDialect",
  ];
}

#endif // XENT_DIALECT_XENT_TRANSFORMS_PASSES_TD
