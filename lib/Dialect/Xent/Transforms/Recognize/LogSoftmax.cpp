//===- LogSoftmax.cpp - Row max, log-sum-exp, log-softmax -----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

//===----------------------------------------------------------------------===//
// Log-softmax
//===----------------------------------------------------------------------===//

/// True when a max reduction may start from `init` without changing the
/// log-sum-exp: the shift of a log-sum-exp is arbitrary, so every init at or
/// below the logits' range (-inf, the lowest finite value of a type) or
/// negligible next to it (±tiny, 0) is tolerated, and NaN for maxnumf, whose
/// identity it is.
static bool isToleratedMaxInit(double init, bool nanIgnoring) {
  if (std::isnan(init))
    return nanIgnoring;
  if (std::isinf(init))
    return init < 0;
  return init <= -65504.0 || std::abs(init) <= 1e-30;
}

Match<RowMax> recognize::matchRowMax(ViewAnalysis &va, Node *node) {
  Node *n = stripWidening(node);
  // max(init, max_c x), the init applied after the reduction
  // (`jnp.max(x, initial=-inf)`): tolerated as a start of the reduction.
  if (isOp(n, K::Max)) {
    for (unsigned k = 0; k < 2; ++k) {
      std::optional<double> init = getConstant(n->operands[k]);
      Node *inner = stripWidening(n->operands[1 - k]);
      if (init && isReduce(inner, ReduceKind::Max)) {
        if (!isToleratedMaxInit(*init, /*nanIgnoring=*/false))
          return Match<RowMax>::failure("the max starts from " +
                                        formatNumber(*init) +
                                        ", not from the lowest value");
        n = inner;
        break;
      }
    }
  }
  if (!isReduce(n, ReduceKind::Max))
    return Match<RowMax>::failure("not a max reduction");
  SmallVector<Axis, 4> axes = canonicalAxes(va, n->axes);
  if (axes.size() != 1)
    return Match<RowMax>::failure("the max reduces several axes");
  if (n->init && !isToleratedMaxInit(*n->init, n->nanIgnoring))
    return Match<RowMax>::failure("the max starts from " +
                                  formatNumber(*n->init) +
                                  ", not from the lowest value");
  return RowMax{n->operands[0], axes[0]};
}

/// The shift of a log-sum-exp: the row max, possibly guarded against
/// non-finite maxima as `select(isfinite(m), m, 0)` (JAX's logsumexp).
static Match<RowMax> matchShift(ViewAnalysis &va, Node *node) {
  Node *n = stripWidening(node);
  if (isOp(n, K::Select)) {
    Node *guarded = nullptr;
    if (getConstant(n->operands[2]))
      guarded = n->operands[1];
    else if (getConstant(n->operands[1]))
      guarded = n->operands[2];
    if (guarded) {
      Match<RowMax> max = matchRowMax(va, guarded);
      if (max && !va.dependsOn(n->operands[0], max->axis))
        return max;
    }
  }
  return matchRowMax(va, n);
}

/// The value of a linear term: its node, scaled when the coefficient is not
/// 1 (the linear form pulls the constant out of `c · tanh(y / c)`, the
/// softcapped logits).
static Node *termValue(ViewAnalysis &va, const LinearTerm &t) {
  if (t.coeff == 1)
    return t.node;
  return va.makeElementwise(K::Mul, t.node->type,
                            {va.makeConstant(t.coeff, t.node->type), t.node});
}

Match<LogSumExp> recognize::matchLogSumExp(ViewAnalysis &va,
                                           Node *logArgument) {
  using M = Match<LogSumExp>;
  Node *s = stripWidening(logArgument);
  if (isOp(s, K::Abs))
    s = stripWidening(s->operands[0]);
  if (!isReduce(s, ReduceKind::Sum))
    return M::failure("the log is not of a sum");
  SmallVector<Axis, 4> axes = canonicalAxes(va, s->axes);
  if (axes.size() != 1)
    return M::failure("the sum of exps reduces several axes");
  Axis c = axes[0];
  Node *body = stripWidening(s->operands[0]);
  if (!isOp(body, K::Exp))
    return M::failure("the log is not of a sum of exps");
  LinearForm form = flattenLinear(va, body->operands[0]);
  if (form.constant != 0)
    return M::failure("the exp argument has a constant offset");
  Node *x = nullptr, *shift = nullptr;
  for (const LinearTerm &t : form.terms) {
    Match<RowMax> max = matchShift(va, t.node);
    if (max) {
      if (t.coeff != -1 || shift)
        return M::failure("the exp argument is not x - max");
      shift = t.node;
      continue;
    }
    if (isReduce(stripWidening(t.node), ReduceKind::Max))
      return M::failure(max);
    if (!va.dependsOn(t.node, c))
      return M::failure("the exp argument has a term that is not a row max");
    if (t.coeff == 0 || x)
      return M::failure("the exp argument is not x - max");
    x = termValue(va, t);
  }
  if (!x)
    return M::failure("the exp argument does not depend on the summed axis");
  if (!shift)
    return M::failure("exp of the unshifted input (no max subtracted)");
  RowMax max = *matchShift(va, shift);
  if (!va.same(max.axis, c))
    return M::failure("the max and the sum reduce different axes");
  if (!Equivalence(va).equal(max.input, x))
    return M::failure("the max is taken over a different value than the exp");
  return LogSumExp{x, c, shift};
}

Match<LogSoftmax> recognize::matchLogSoftmax(ViewAnalysis &va, Node *node) {
  using M = Match<LogSoftmax>;
  // A log-softmax computed in f32 may be rounded to the logits' type.
  LinearForm form = flattenLinear(va, stripFloatCasts(node));
  if (form.constant != 0)
    return M::failure("the log-softmax has a constant offset");
  std::optional<LogSumExp> lse;
  std::optional<size_t> lseTerm;
  std::string reason = "no log-sum-exp term";
  for (auto [i, t] : llvm::enumerate(form.terms)) {
    Node *n = stripWidening(t.node);
    if (!isOp(n, K::Log))
      continue;
    Match<LogSumExp> m = matchLogSumExp(va, n->operands[0]);
    if (!m) {
      reason = m.getReason();
      continue;
    }
    if (t.coeff != -1)
      return M::failure("the log-sum-exp is not subtracted once");
    if (lse)
      return M::failure("several log-sum-exp terms");
    lse = *m;
    lseTerm = i;
  }
  if (!lse)
    return M::failure(reason);
  Equivalence eq(va);
  bool sawInput = false, sawShift = false;
  for (auto [i, t] : llvm::enumerate(form.terms)) {
    if (i == *lseTerm)
      continue;
    if (!sawInput && t.coeff != 0 && eq.equal(termValue(va, t), lse->input)) {
      sawInput = true;
      continue;
    }
    if (t.coeff == -1 && !sawShift && eq.equal(t.node, lse->shift)) {
      sawShift = true;
      continue;
    }
    return M::failure("a term other than x, max and log-sum-exp");
  }
  if (!sawInput)
    return M::failure("the log-sum-exp is not subtracted from its input");
  if (!sawShift)
    return M::failure("the max is not added back (x - log Σ exp(x - max))");
  return LogSoftmax{lse->input, lse->axis, *lse};
}

Match<LogSumExp> recognize::matchLogSumExpValue(ViewAnalysis &va, Node *node) {
  using M = Match<LogSumExp>;
  LinearForm form = flattenLinear(va, stripFloatCasts(node));
  if (form.constant != 0 || form.terms.size() != 2)
    return M::failure("not of the form log Σ exp(x - m) + m");
  for (unsigned i = 0; i < 2; ++i) {
    Node *log = stripWidening(form.terms[i].node);
    if (!isOp(log, K::Log) || form.terms[i].coeff != 1)
      continue;
    Match<LogSumExp> lse = matchLogSumExp(va, log->operands[0]);
    if (!lse)
      return lse;
    const LinearTerm &shift = form.terms[1 - i];
    if (shift.coeff != 1 || !Equivalence(va).equal(shift.node, lse->shift))
      return M::failure("the log-sum-exp does not add back the max it "
                        "subtracts");
    return lse;
  }
  return M::failure("not of the form log Σ exp(x - m) + m");
}

//===----------------------------------------------------------------------===//
// Softcap
//===----------------------------------------------------------------------===//

Match<Softcap> recognize::matchSoftcap(ViewAnalysis &va, Node *node) {
  using M = Match<Softcap>;
  Monomial outer = factorize(va, stripWidening(node));
  auto isTanh = [](Node *f) { return isOp(stripWidening(f), K::Tanh); };
  if (!llvm::any_of(outer.num, isTanh))
    return M::failure("no tanh of the logits");
  if (outer.num.size() != 1 || !outer.den.empty() || !outer.masks.empty())
    return M::nearMiss("the tanh of the logits is scaled by a value that is "
                       "not a constant");
  Node *tanh = stripWidening(outer.num[0]);
  Monomial inner = factorize(va, tanh->operands[0]);
  if (inner.num.size() != 1 || !inner.den.empty() || !inner.masks.empty())
    return M::nearMiss("the tanh's argument is not the logits divided by a "
                       "constant");
  double cap = outer.coeff;
  if (!(cap > 0) || !std::isfinite(cap))
    return M::nearMiss("the tanh is scaled by " + formatNumber(cap) +
                       ", not by a positive cap");
  if (!approxEqual(inner.coeff * cap, 1))
    return M::nearMiss("tanh(x / " + formatNumber(1 / inner.coeff) + ") · " +
                       formatNumber(cap) +
                       " is not a softcap (the scale differs from the "
                       "divisor)");
  return Softcap{inner.num[0], cap, tanh};
}
