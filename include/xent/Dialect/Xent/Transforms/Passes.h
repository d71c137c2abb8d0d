//===- Passes.h - Xent transformation passes --------------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMS_PASSES_H
#define XENT_DIALECT_XENT_TRANSFORMS_PASSES_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::xent {

#define GEN_PASS_DECL
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"

/// What xent-recognize does, on the ops nested in `root`: raises the
/// log_softmax + nll_loss chains (and their backward) to xent ops, the
/// outermost value of a chain first (the patterns of
/// populateXentRecognizePatterns, run by the greedy driver over the ops in
/// reverse program order), then the projections feeding the raised ops; with
/// `reportFailures`, a returned value that is not raised gets a remark saying
/// why; with `assumeNormalizedLogProbs`, a backward on log-probabilities that
/// nothing in the IR computes is raised assuming they are normalized. Every
/// change is notified to the listener of `rewriter` (a transform op's
/// rewriter keeps its handles up to date).
void recognizeCrossEntropy(RewriterBase &rewriter, Operation *root,
                           bool reportFailures = false,
                           bool assumeNormalizedLogProbs = false);
/// The same with a rewriter of its own.
void recognizeCrossEntropy(Operation *root, bool reportFailures = false,
                           bool assumeNormalizedLogProbs = false);

/// The patterns of xent-recognize's chains, tried on an op in this order: a
/// value the op computes as a softmax cross-entropy becomes
/// xent.cross_entropy; else its gradient with respect to the logits becomes
/// xent.cross_entropy_grad; else the op is recorded as seen, rewriting
/// nothing: a near miss is left whole (no piece of it is raised afterwards)
/// and the remarks are emitted (`reportFailures`). The patterns share that
/// record, so they visit each op once and serve one driver run (populate a
/// new set for each). They raise the outermost value of a chain (the mean,
/// not the sum it divides) when the driver visits a chain's ops from the
/// last one back, as the greedy driver's bottom-up order does. Each visit
/// analyzes the IR afresh, so other patterns may change it between visits;
/// recognizeCrossEntropy, where only these patterns change it, keeps one
/// analysis from visit to visit.
void populateXentRecognizePatterns(RewritePatternSet &patterns,
                                   bool reportFailures = false,
                                   bool assumeNormalizedLogProbs = false);

/// What xent-fuse-forward-backward does, on the ops nested in `root`: the
/// pattern of populateXentFuseForwardBackwardPatterns on each used
/// xent.cross_entropy_grad once, in program order, through the greedy driver
/// (changes are notified to the listener of `rewriter`).
void fuseForwardBackward(RewriterBase &rewriter, Operation *root);
/// The same with a rewriter of its own.
void fuseForwardBackward(Operation *root);

/// The pattern of xent-fuse-forward-backward: an xent.cross_entropy_grad and
/// the xent.cross_entropy of its block computing the same loss become one
/// xent.cross_entropy_and_grad at the earlier of the two, when grad_output
/// is available there.
void populateXentFuseForwardBackwardPatterns(RewritePatternSet &patterns);

/// What xent-chunk-linear-cross-entropy does to one op: replaces it by a loop
/// over chunks of `rows` rows (positive).
void chunkLinearCrossEntropy(RewriterBase &rewriter,
                             LinearCrossEntropyOpInterface op, int64_t rows);

/// The pattern of xent-inline-decomposition: an op of the family becomes its
/// decomposition region's body, or the canonical decomposition.
void populateXentInlineDecompositionPatterns(RewritePatternSet &patterns);

} // namespace mlir::xent

#endif // XENT_DIALECT_XENT_TRANSFORMS_PASSES_H
