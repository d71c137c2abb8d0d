//===- Matchers.h - Cross-entropy matchers on the view ----------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Small composable matchers over the semantic view (View.h), each
// returning what it found or the reason it did not match:
//
//   matchRowMax             m   = max_c x                      (per row)
//   matchLogSumExp          log Σ_c exp(x - m), m the row max of the same x
//   matchLogSoftmax         x - m - log Σ_c exp(x - m)  (any grouping)
//   matchLogSumExpValue     log Σ_c exp(x - m) + m      (a logsumexp)
//   matchSoftcap            c · tanh(y / c), the capped logits
//   matchTargetPick         logp[t] by gather, safe gather or one-hot sum
//   matchIgnoreMask         t != ignore_index, as compare + select/multiply
//   matchClassWeight        w[t] (or w along the class axis)
//   matchTotalWeight        Σ kept w[t] / kept count, the mean's divisor
//   matchReducedLoss        per element / summed / divided, up to a constant
//   decideReduction         none / sum over every element / mean
//   matchNllBackward        d nll / d logp: one-hot · (-grad · w / total)
//   matchLogSoftmaxBackward g - exp(logp) · Σ_c g
//   matchZLossBackward      2 · z · lse · softmax beside it (z-loss gradient)
//
// and the two entry points that combine them, matchCrossEntropy and
// matchCrossEntropyGrad, whose results say which xent op computes a value.
// The first eight are declared here; the others work on the matchers'
// intermediate structures: matchTotalWeight and the terms of a loss
// (matchLossTerm, matchReducedLoss, decideReduction), which more than one
// file uses, are declared in `detail` below, the others are local to their
// chain's file.
//
// Normalization happens on the view: linear combinations are flattened
// (x - (a + b) = x - a - b, log(a / b) = log a - log b, log(exp(e)) = e),
// products are flattened into monomials (selects against zero become masks,
// a gather distributes over a product), commutative operands are compared
// both ways and widening casts are looked through.
//
// One file per concern:
//
//   Normalization.cpp  node helpers, structural equality, linear forms,
//                      monomials, sums
//   LogSoftmax.cpp     row max, log-sum-exp, log-softmax
//   Forward.cpp        ignore mask, one-hot, target pick, class weight,
//                      the terms of a loss and their reduction
//   Gather.cpp         JAX's guarded gather (in-bounds test, clamp, NaN
//                      fill) and its negative-index wrap
//   Composite.cpp      matchCrossEntropy: the nll term with the label
//                      smoothing term and the z-loss beside it
//   Operands.cpp       the raised op's operands and the mean's divisor,
//                      shared by both chains
//   Backward.cpp       log-softmax, nll and smoothing backward, saved
//                      log-probabilities, matchCrossEntropyGrad
//   ZLossBackward.cpp  the z-loss term's gradient beside them
//
// What more than one of these files needs is declared in `detail`.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H

#include "View.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace mlir::xent::recognize {

/// What a matcher found, or why it found nothing.
template <typename T> class Match {
public:
  Match(T value) : value(std::move(value)) {}
  static Match failure(const Twine &reason) {
    Match m;
    m.reason = reason.str();
    return m;
  }
  /// A failure carrying the reason of another failed match.
  template <typename U> static Match failure(const Match<U> &other) {
    return failure(other.getReason());
  }
  /// A failure on a value that does contain the chain (a log-softmax and a
  /// pick), but not in a form the op can compute: the pass then leaves the
  /// whole chain alone rather than raising a piece of it.
  static Match nearMiss(const Twine &reason) {
    Match m = failure(reason);
    m.near = true;
    return m;
  }
  /// A near miss the pass reports even without `report-failures`: the
  /// chain is complete but raising it needs an assumption the IR does not
  /// prove, and the reason says which option states it.
  static Match notice(const Twine &reason) {
    Match m = nearMiss(reason);
    m.noticed = true;
    return m;
  }
  /// Keeps the kind of another failed match (plain, near miss, notice).
  template <typename U> static Match failureLike(const Match<U> &other) {
    Match m = failure(other.getReason());
    m.near = other.isNearMiss();
    m.noticed = other.isNotice();
    return m;
  }
  explicit operator bool() const { return value.has_value(); }
  bool isNearMiss() const { return near; }
  bool isNotice() const { return noticed; }
  T &operator*() { return *value; }
  T *operator->() { return &*value; }
  const std::string &getReason() const { return reason; }

private:
  Match() = default;
  std::optional<T> value;
  std::string reason;
  bool near = false;
  bool noticed = false;
};

/// The one of `items` that `match` (returning a Match) accepts, the others
/// appended to `rest`; a failure saying `twice` when two are accepted, and
/// `none` followed by the last rejection's reason when none is.
template <typename Range, typename Item, typename MatchFn>
auto matchExactlyOne(const Range &items, SmallVectorImpl<Item> &rest,
                     MatchFn match, StringRef twice, StringRef none)
    -> decltype(match(*std::begin(items))) {
  using Result = decltype(match(*std::begin(items)));
  std::optional<Result> found;
  std::string reason;
  for (const auto &item : items) {
    Result m = match(item);
    if (!m) {
      reason = m.getReason();
      rest.push_back(item);
      continue;
    }
    if (found)
      return Result::failure(twice);
    found = std::move(m);
  }
  if (!found)
    return Result::failure(none + reason);
  return std::move(*found);
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

struct RowMax {
  Node *input;
  Axis axis;
};

struct LogSumExp {
  Node *input; // x
  Axis axis;   // the class axis c
  Node *shift; // the row max m
};

struct LogSoftmax {
  Node *input;
  Axis axis;
  LogSumExp lse;
};

/// Logits capped as `cap · tanh(input / cap)` (Gemma's logit softcap).
struct Softcap {
  Node *input;
  double cap;
  Node *tanh; // tanh(input / cap)
};

struct ClassWeight;

struct TargetPick {
  LogSoftmax logSoftmax;
  /// The class index the log-probability is read at (integer casts
  /// stripped); may be a safe index `select(t != ignore, t, 0)`. Null for
  /// probability targets.
  Node *index = nullptr;
  /// Probability targets: Σ_c q_c · logp_c (optionally · w_c).
  Node *probabilities = nullptr;
  Node *classWeight = nullptr;
  /// The pick is `coeff · logp[t]` (-1 for `lse - x[t]`).
  double coeff = 1.0;
  /// No pick: Σ_c logp_c (optionally · w_c), the label smoothing term.
  bool everyClass = false;
  /// The pick is a one-hot sum (0 for a label outside [0, C)).
  bool oneHot = false;
  /// The pick is a guarded gather (NaN for an index outside [0, C)).
  bool guarded = false;
};

struct IgnoreMask {
  Node *target;
  int64_t ignoreIndex;
};

struct ClassWeight {
  /// The rank-1 weight tensor's node.
  Node *weight;
  /// The class index it is read at, or null when it is read along the class
  /// axis (only meaningful under a one-hot mask).
  Node *index;
};

/// A select against zero or a 0/1 multiplier: kept where `predicate` equals
/// `keptWhen`.
struct Mask {
  Node *predicate;
  bool keptWhen;
};

/// A product c · Π num / Π den · Π masks.
struct Monomial {
  double coeff = 1.0;
  SmallVector<Node *, 4> num, den;
  SmallVector<Mask, 2> masks;
};

Match<RowMax> matchRowMax(ViewAnalysis &va, Node *node);
Match<LogSumExp> matchLogSumExp(ViewAnalysis &va, Node *logArgument);
Match<LogSoftmax> matchLogSoftmax(ViewAnalysis &va, Node *node);
/// Matches `log Σ_c exp(x - m) + m`, the log-sum-exp as a value (a
/// frontend's logsumexp).
Match<LogSumExp> matchLogSumExpValue(ViewAnalysis &va, Node *node);
/// Fails plainly when `node` has no tanh factor, and as a near miss when it
/// is a tanh scaled otherwise than a softcap.
Match<Softcap> matchSoftcap(ViewAnalysis &va, Node *node);
Match<TargetPick> matchTargetPick(ViewAnalysis &va, Node *node);
Match<IgnoreMask> matchIgnoreMask(ViewAnalysis &va, const Mask &mask);
Match<ClassWeight> matchClassWeight(ViewAnalysis &va, Node *node);

//===----------------------------------------------------------------------===//
// Whole chains
//===----------------------------------------------------------------------===//

/// The xent op that computes a value, as found by the matchers.
struct RaisedOp {
  Reduction reduction = Reduction::mean;
  /// Only for the gradient: grad_output, or the constant the chain scales by
  /// when it reads none (the seed of loss.backward()).
  Value gradOutput;
  std::optional<double> constantGradOutput;
  Value logits, target, weight;
  /// Set when the chain masks ignored targets.
  std::optional<int64_t> ignoreIndex;
  /// The targets are class probabilities shaped like the logits.
  bool probabilityTargets = false;
  /// The class axis as a dimension of `logits`.
  int64_t axis = 1;
  /// Set when the chain caps the logits as `softcap · tanh(x / softcap)`
  /// (`logits` is then the uncapped x).
  std::optional<double> softcap;
  /// ε of `(1 - ε) · nll + ε / C · Σ_c -w_c · logp_c`.
  double labelSmoothing = 0;
  /// z of the z-loss `z · lse²` added per kept element.
  double zLossScale = 0;
  /// The pick is a one-hot sum, which reads nothing for a label outside
  /// [0, C): that element's loss is 0. The op then takes the labels with
  /// those mapped to the ignore index (-1 for a chain without an ignore
  /// mask), which it ignores likewise.
  bool oneHotPick = false;
  /// What an unweighted one-hot mean divides by, which counts the labels
  /// outside [0, C) the op ignores: the op then sums, and its total is
  /// divided by the element count or by the count of labels other than the
  /// ignore index, as the chain divides.
  enum class MeanDivisor { None, Elements, Labels };
  MeanDivisor meanDivisor = MeanDivisor::None;
  /// Probabilities the chain computes inside its reduction (optax's smoothed
  /// one-hot after elementwise fusion), no tensor of their own: built as one
  /// over the logits' dimensions (`logitsDims`), the op's targets.
  Node *probabilityExpr = nullptr;
  SmallVector<Axis, 4> logitsDims;
  /// Float factors the chain multiplies each element's loss by (a float
  /// mask, a weight per element): the op computes the loss per element
  /// (`none`), and a linalg.generic after it multiplies each by the factors
  /// and `elementCoeff`, summing over every element when `elementSummed`.
  SmallVector<Node *, 2> elementScale;
  double elementCoeff = 1;
  bool elementSummed = false;
  /// A one-hot pick with a z-loss: for a label outside [0, C) (other than
  /// the chain's own ignore index, `chainIgnoreIndex`) the chain keeps that
  /// element's `z · lse²`, which the op, ignoring it, leaves out; it is
  /// added after the op from the op's lse.
  bool zLossOutOfRange = false;
  std::optional<int64_t> chainIgnoreIndex;
};

/// What the matchers may assume beyond what the IR proves.
struct MatchOptions {
  /// A tensor the log-softmax backward exponentiates, which nothing in the
  /// function computes, holds normalized log-probabilities.
  bool assumeNormalizedLogProbs = false;
};

/// Matches `root` as the forward loss: reduce(mask(-w[t] · logp[t])), with
/// the label smoothing term and the z-loss added when the chain has them
/// (Composite.cpp).
Match<RaisedOp> matchCrossEntropy(ViewAnalysis &va, Value root,
                                  const MatchOptions &options);
/// Matches `root` as the gradient with respect to the logits:
/// G - exp(logp) · Σ_c G with G the nll backward (plus the smoothing
/// term's backward).
Match<RaisedOp> matchCrossEntropyGrad(ViewAnalysis &va, Value root,
                                      const MatchOptions &options);

namespace detail {

//===----------------------------------------------------------------------===//
// Node helpers (Normalization.cpp)
//===----------------------------------------------------------------------===//

bool isOp(Node *n, ElementwiseKind kind);
bool isCast(Node *n, CastKind cast);
bool isReduce(Node *n, ReduceKind kind);
/// Looks through float widening casts, which are exact.
Node *stripWidening(Node *n);
/// Looks through every float-to-float cast: the final rounding of a loss or
/// gradient is part of its result type, not of its algebra.
Node *stripFloatCasts(Node *n);

/// The value a whole-chain matcher starts from: a float tensor, its view,
/// and its node without float casts.
struct Root {
  RankedTensorType type;
  View view;
  Node *node;
};
Match<Root> matchRoot(ViewAnalysis &va, Value root);
/// Looks through integer casts that preserve a signed class index (and its
/// exact conversion to float, used by float compares).
Node *stripIndexCasts(Node *n);
/// The value of a constant node, looking through casts.
std::optional<double> getConstant(Node *n);
bool isConstant(Node *n, double value);
bool approxEqual(double a, double b);
/// `v` rounded to 6 significant digits when that moves it by less than two
/// f32 roundings: a constant a frontend wrote as a decimal (ε, z) and the
/// chain rounded to f32 and combined (1 - ε, ε / C) comes back as the
/// decimal; any other value stays.
double roundToDecimal(double v);
bool isSupportedFloat(Type t);
std::string formatNumber(double v);
std::string typeToString(Type type);
/// The canonical sorted set of `axes`, unit axes dropped.
SmallVector<Axis, 4> canonicalAxes(ViewAnalysis &va, ArrayRef<Axis> axes);

//===----------------------------------------------------------------------===//
// Normal forms (Normalization.cpp)
//===----------------------------------------------------------------------===//

/// How many node pairs one structural comparison may visit.
constexpr unsigned kCompareBudget = 4096;

/// Structural equality of nodes modulo widening casts and the operand order
/// of commutative operations.
class Equivalence {
public:
  explicit Equivalence(ViewAnalysis &va) : va(va) {}
  bool equal(Node *a, Node *b, unsigned depth = 0);

private:
  ViewAnalysis &va;
  unsigned budget = kCompareBudget;
};

struct LinearTerm {
  double coeff;
  Node *node;
};
/// constant + Σ coeff · node, equal nodes merged.
struct LinearForm {
  double constant = 0;
  SmallVector<LinearTerm, 4> terms;
};

/// `n` as a linear form: sums, differences, negations and constant scalings
/// flattened, log(a / b) = log a - log b and log(exp(e)) = e expanded; terms
/// whose coefficients cancel are dropped.
LinearForm flattenLinear(ViewAnalysis &va, Node *n);

/// `n` as a monomial: products, quotients, negations and constant factors
/// flattened, `select(p, e, 0)` and `e · uitofp(p)` as masks.
Monomial factorize(ViewAnalysis &va, Node *n);

/// Splits conjunctions: a mask kept where `a and b` holds is two masks.
SmallVector<Mask, 2> splitMasks(ArrayRef<Mask> masks);

/// Σ over `axes` of `body`, nested sums merged.
struct SumOver {
  SmallVector<Axis, 4> axes;
  Monomial body;
};

/// True when `n` is a sum reduction (looking through widening casts).
bool isSum(Node *n);
/// Expands a sum reduction into Σ_axes monomial, merging at most
/// `maxMerges` nested sums whose axes nothing else in the product depends on
/// (Σ_a Σ_b e = Σ_{a,b} e). `merged` receives how many were merged.
SumOver expandSum(ViewAnalysis &va, Node *reduce, unsigned maxMerges = ~0u,
                  unsigned *merged = nullptr);
/// Moves the factors of a sum's body that do not depend on the summed axes
/// (and its constant) out of the sum.
Monomial pullOut(ViewAnalysis &va, SumOver &s);

//===----------------------------------------------------------------------===//
// Masks (Forward.cpp)
//===----------------------------------------------------------------------===//

/// A one-hot mask along `axis`: kept where index(axis) == idx. Returns idx.
Node *matchOneHot(ViewAnalysis &va, const Mask &mask, Axis axis);

//===----------------------------------------------------------------------===//
// Guarded gathers (Gather.cpp)
//===----------------------------------------------------------------------===//

/// `select(0 <= i && i < C, src[clamp(i, 0, C - 1)], NaN)` along an axis of
/// static size C (the bounds and the clamp in any of their spellings): the
/// plain gather `src[i]` (synthesized), whose out-of-range value the op
/// defines as NaN. Null when `node` is not such a select.
Node *matchGuardedGather(ViewAnalysis &va, Node *node);

/// True when `index` is numpy's negative-index wrap `t < 0 ? t + C : t`.
bool isNegativeIndexWrap(ViewAnalysis &va, Node *index, int64_t numClasses);

//===----------------------------------------------------------------------===//
// Values rebuilt from nodes (Materialize.cpp)
//===----------------------------------------------------------------------===//

/// Whether `node` can be computed by a linalg.generic whose loops iterate
/// `domain` (one logical axis per loop, kUnitAxis for a unit one): from
/// tensors read along those axes, positions, constants and the arith/math
/// operations a node names exactly (no max or min, no reduction, gather or
/// table inside).
Match<bool> checkMaterializable(ViewAnalysis &va, Node *node,
                                ArrayRef<Axis> domain);
/// The tensors `node` reads (the origins of its leaves).
void collectLeafValues(Node *node, SetVector<Value> &leaves);
/// A linalg.generic whose loops iterate `domain` (the shape of `init`; every
/// loop a reduction into the 0-d `init` when `reduce`), reading `inputs`
/// through `inputMaps` and the leaves of `nodes`; its body yields
/// `combine(the inputs' elements, the nodes' values, the accumulator)`.
/// Every node must pass checkMaterializable.
Value buildMaterialized(
    OpBuilder &b, Location loc, ViewAnalysis &va, ArrayRef<Axis> domain,
    ArrayRef<Value> inputs, ArrayRef<AffineMap> inputMaps,
    ArrayRef<Node *> nodes, Value init, bool reduce,
    function_ref<Value(OpBuilder &, Location, ValueRange, ArrayRef<Value>,
                       Value)>
        combine);

//===----------------------------------------------------------------------===//
// Operands of the raised op (Operands.cpp)
//===----------------------------------------------------------------------===//

/// What the forward and backward matchers collect before the operands and
/// attributes are resolved.
struct Pieces {
  /// What the per-element factor is: the target pick (the nll), the sum of
  /// the log-probabilities over every class (the label smoothing term), or
  /// the square of a log-sum-exp (the z-loss).
  enum class Term { Pick, Smoothing, ZLoss };
  Term term = Term::Pick;
  /// The log-softmax the pick reads; for the z-loss, the log-sum-exp
  /// (`logSoftmax.lse`, with its input and axis).
  LogSoftmax logSoftmax;
  Node *index = nullptr;            // the class index used by the pick
  Node *probabilities = nullptr;    // or the probability targets
  SmallVector<IgnoreMask, 2> masks; // all masks of ignored targets
  std::optional<ClassWeight> weight;
  double coeff = 1.0;   // the pick's own coefficient
  bool oneHot = false;  // the pick is a one-hot sum (TargetPick::oneHot)
  bool guarded = false; // a guarded gather (TargetPick::guarded)
  /// Float factors of the element multiplying its loss (RaisedOp's).
  SmallVector<Node *, 2> elementScale;
};

/// Resolved operands and the logits' layout.
struct Operands {
  Value logits, target, weight;
  Node *targetNode = nullptr;
  std::optional<int64_t> ignoreIndex;
  std::optional<double> softcap;
  int64_t classDim = 0;
  SmallVector<Axis, 4> logitsDims;
  /// The non-unit element (batch) axes, canonical.
  SmallVector<Axis, 4> batchAxes;
  /// The static number of elements, if known.
  std::optional<int64_t> numElements;
  /// Probabilities computed inside the reduction (RaisedOp's); `target` is
  /// then null.
  Node *probabilityExpr = nullptr;

  /// The raised op's operands, ignore index and class axis.
  RaisedOp toRaisedOp() const {
    RaisedOp raised{Reduction::mean,
                    /*gradOutput=*/Value(),
                    /*constantGradOutput=*/std::nullopt,
                    logits,
                    target,
                    weight,
                    ignoreIndex,
                    /*probabilityTargets=*/false,
                    /*axis=*/classDim};
    raised.softcap = softcap;
    raised.probabilityExpr = probabilityExpr;
    raised.logitsDims = logitsDims;
    return raised;
  }
};

/// Checks that `masks` ignore exactly the elements `ops` ignores (the same
/// ignore mask on the same target, and some mask when `ops` has an ignore
/// index); the failures say what `what` masks ("the mean's divisor", ...).
Match<bool> matchSameIgnoreMasks(ViewAnalysis &va, ArrayRef<Mask> masks,
                                 const Operands &ops, StringRef what);

/// Resolves the logits, targets, class weights and ignore index that
/// `p` reads, with the logits' layout.
Match<Operands> resolveOperands(ViewAnalysis &va, const Pieces &p);
/// The logits' dimensions (their axes `logitsDims`) without the class one:
/// those of the per-element loss.
SmallVector<Axis, 4> elementDims(ArrayRef<Axis> logitsDims, int64_t classDim);
/// Checks that `dims` are the logits' dimensions, without the class
/// dimension unless `withClass`.
bool alignsWithLogits(ViewAnalysis &va, const Operands &ops,
                      ArrayRef<Axis> dims, bool withClass = false);
/// Checks that `den` is the divisor of PyTorch's mean: the sum over every
/// element of the kept weights (or the kept count without weights), also
/// written as the element count minus the count of ignored elements.
Match<bool> matchTotalWeight(ViewAnalysis &va, Node *den, const Pieces &p,
                             const Operands &ops);

//===----------------------------------------------------------------------===//
// Terms of a loss (Forward.cpp)
//===----------------------------------------------------------------------===//

/// One term of a loss: a per-element factor (`pieces`), summed over
/// `summed` (empty for a per-element value), times the factors of `outer`.
struct LossTerm {
  Pieces pieces;
  Monomial outer;
  SmallVector<Axis, 4> summed;
  bool reduced = false;
};

/// Matches `coeff · node` as one term of a loss (`reduced`: a total, else a
/// per-element value). Fails as a near miss when a total is masked.
Match<LossTerm> matchLossTerm(ViewAnalysis &va, Node *node, double coeff,
                              bool reduced);

/// How a term is reduced, up to a constant: `factor · x` per element,
/// `factor · Σ x` over every element, or `factor · Σ x / divisor`.
struct ReducedLoss {
  enum class Kind { PerElement, Summed, Divided };
  Kind kind = Kind::PerElement;
  double factor = 1;
  Node *divisor = nullptr;
};

/// The shape of a term's reduction: per element shaped like the logits
/// without the class axis (`rootDims`), or a total over every element axis
/// of `ops` (a 0-d `rootType`, or one of unit dimensions), optionally
/// divided by one value. The factor is relative to the canonical sign of
/// each term (-1 for the pick, which is -logp[t]).
Match<ReducedLoss> matchReducedLoss(ViewAnalysis &va, const LossTerm &term,
                                    ArrayRef<Axis> rootDims,
                                    RankedTensorType rootType,
                                    const Operands &ops);

/// The reduction of a loss reduced as `r` and scaled by `r.factor / scale`
/// being PyTorch's: `none` and `sum` with factor 1, `mean` dividing by the
/// kept weight (`p`'s divisor) with factor 1, or by the constant element
/// count with factor 1 / N.
Match<Reduction> decideReduction(ViewAnalysis &va, const ReducedLoss &r,
                                 double scale, const Pieces &p,
                                 const Operands &ops);

//===----------------------------------------------------------------------===//
// The z-loss's backward (ZLossBackward.cpp)
//===----------------------------------------------------------------------===//

/// One term of the z-loss's gradient: `rest · softmax · lse` with `softmax`
/// the exp of a log-softmax and `lse` a log-sum-exp value; `rest` holds the
/// coefficient, masks, grad_output and divisor. An exp that is no softmax
/// leaves `softmax.input` null and says why in `notSoftmax`.
struct ZLossBackwardTerm {
  Monomial rest;
  LogSoftmax softmax;
  LogSumExp lse;
  std::string notSoftmax;
};

/// `root`'s linear form without the terms that are z-loss gradient terms
/// (each a product of a softmax and a log-sum-exp, sums inside the product
/// expanded), which go to `z`.
LinearForm splitZLossBackward(ViewAnalysis &va, Node *root,
                              SmallVector<ZLossBackwardTerm, 2> &z);

/// The z-loss scale z of the gradient terms `z` beside the nll backward `g`
/// (its pieces `p`, grad_output factor `gradOutput`, seed `seed`): the terms
/// must read the log-sum-exp of the nll's logits, be masked like the nll,
/// scaled by the same grad_output and reduced like a z-loss of that loss (a
/// mean divides by the kept count); they sum to `2 · z · seed · lse ·
/// softmax [· grad_output] [/ K]`.
Match<double> matchZLossBackward(ViewAnalysis &va,
                                 ArrayRef<ZLossBackwardTerm> z,
                                 const Monomial &g, const Pieces &p,
                                 Node *gradOutput, double seed,
                                 const Operands &ops);

} // namespace detail

/// Raises each `xent.cross_entropy` under `root` whose logits are a
/// projection `hidden · weightᵀ (+ bias)` with no other user to
/// `xent.linear_cross_entropy`, and each gradient op on such logits whose
/// dlogits feed only the projection's backward to
/// `xent.linear_cross_entropy_grad` or `_and_grad` (Projection.cpp,
/// ProjectionGrad.cpp), through `rewriter`. With `reportFailures`, a
/// projection that is not raised gets a remark saying why.
void raiseProjections(RewriterBase &rewriter, Operation *root,
                      bool reportFailures);

} // namespace mlir::xent::recognize

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H
