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
//   matchTargetPick         logp[t] by gather, safe gather or one-hot sum
//   matchIgnoreMask         t != ignore_index, as compare + select/multiply
//   matchClassWeight        w[t] (or w along the class axis)
//   matchTotalWeight        Σ kept w[t] / kept count, the mean's divisor
//   matchReduction          none / sum over every element / mean
//   matchNllBackward        d nll / d logp: one-hot · (-grad · w / total)
//   matchLogSoftmaxBackward g - exp(logp) · Σ_c g
//
// and the two entry points that combine them, matchCrossEntropy and
// matchCrossEntropyGrad, whose results say which xent op computes a value.
// The first six are declared here; the others work on the matchers'
// intermediate structures and are local to Matchers.cpp.
//
// Normalization happens here, on the view: linear combinations are
// flattened (x - (a + b) = x - a - b, log(a / b) = log a - log b,
// log(exp(e)) = e), products are flattened into monomials (selects against
// zero become masks, a gather distributes over a product), commutative
// operands are compared both ways and widening casts are looked through.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H

#include "View.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

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
  explicit operator bool() const { return value.has_value(); }
  bool isNearMiss() const { return near; }
  T &operator*() { return *value; }
  T *operator->() { return &*value; }
  const std::string &getReason() const { return reason; }

private:
  Match() = default;
  std::optional<T> value;
  std::string reason;
  bool near = false;
};

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
};

/// Matches `root` as the forward loss: reduce(mask(-w[t] · logp[t])).
Match<RaisedOp> matchCrossEntropy(ViewAnalysis &va, Value root);
/// Matches `root` as the gradient with respect to the logits:
/// G - exp(logp) · Σ_c G with G the nll backward.
Match<RaisedOp> matchCrossEntropyGrad(ViewAnalysis &va, Value root);

} // namespace mlir::xent::recognize

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_MATCHERS_H
