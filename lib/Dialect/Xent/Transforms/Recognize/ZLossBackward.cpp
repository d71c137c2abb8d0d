//===- ZLossBackward.cpp - The gradient of the z-loss term ----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The loss `ce + z · reduce(kept · lse²)` has the gradient `d ce + 2 · z ·
// lse · softmax · kept · g [/ K]` with respect to the logits: autograd
// writes the second term as logsumexp's backward `g_lse · exp(x - lse)`
// with `g_lse = g_sq · lse + g_sq · lse` (the product's backward from each
// side). Its terms are split off the gradient before the log-softmax
// backward is matched, and checked against the nll backward once that is
// known.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

/// `m` with its first factor that is a sum (or difference) multiplied out:
/// one monomial per term of that sum, recursively; a log-sum-exp value
/// stays a factor.
static SmallVector<Monomial, 2> expandSums(ViewAnalysis &va, const Monomial &m,
                                           unsigned depth = 0) {
  for (auto [i, f] : llvm::enumerate(m.num)) {
    Node *s = stripWidening(f);
    if (depth > 4 ||
        !(isOp(s, ElementwiseKind::Add) || isOp(s, ElementwiseKind::Sub)) ||
        matchLogSumExpValue(va, s))
      continue;
    LinearForm form = flattenLinear(va, s);
    if (form.constant != 0)
      continue;
    SmallVector<Monomial, 2> out;
    for (const LinearTerm &t : form.terms) {
      Monomial part = factorize(va, t.node);
      Monomial r = m;
      r.num.erase(r.num.begin() + i);
      r.coeff *= t.coeff * part.coeff;
      r.num.append(part.num.begin(), part.num.end());
      r.den.append(part.den.begin(), part.den.end());
      r.masks.append(part.masks.begin(), part.masks.end());
      llvm::append_range(out, expandSums(va, r, depth + 1));
    }
    return out;
  }
  return {m};
}

/// `m` as a z-loss gradient term: one factor the exp of a log-softmax, one
/// a log-sum-exp value.
static std::optional<ZLossBackwardTerm> asZLossTerm(ViewAnalysis &va,
                                                    Monomial m) {
  std::optional<LogSoftmax> softmax;
  std::optional<LogSumExp> lse;
  std::string notSoftmax;
  SmallVector<Node *, 4> rest;
  for (Node *f : m.num) {
    Node *s = stripWidening(f);
    if (!softmax && isOp(s, ElementwiseKind::Exp)) {
      Match<LogSoftmax> ls = matchLogSoftmax(va, s->operands[0]);
      if (ls) {
        softmax = *ls;
        continue;
      }
      notSoftmax = ls.getReason();
    }
    if (!lse) {
      if (Match<LogSumExp> l = matchLogSumExpValue(va, s)) {
        lse = *l;
        continue;
      }
    }
    rest.push_back(f);
  }
  if (!lse || (!softmax && notSoftmax.empty()))
    return std::nullopt;
  m.num.assign(rest.begin(), rest.end());
  if (!softmax)
    return ZLossBackwardTerm{m, LogSoftmax{nullptr, lse->axis, *lse}, *lse,
                             notSoftmax};
  return ZLossBackwardTerm{m, *softmax, *lse, ""};
}

LinearForm mlir::xent::recognize::detail::splitZLossBackward(
    ViewAnalysis &va, Node *root, SmallVector<ZLossBackwardTerm, 2> &z) {
  LinearForm form = flattenLinear(va, root);
  LinearForm rest;
  rest.constant = form.constant;
  for (const LinearTerm &t : form.terms) {
    Monomial m = factorize(va, t.node);
    m.coeff *= t.coeff;
    SmallVector<ZLossBackwardTerm, 2> parts;
    for (const Monomial &part : expandSums(va, m)) {
      std::optional<ZLossBackwardTerm> term = asZLossTerm(va, part);
      if (!term)
        break;
      parts.push_back(*term);
    }
    if (!parts.empty() && parts.size() == expandSums(va, m).size())
      llvm::append_range(z, parts);
    else
      rest.terms.push_back(t);
  }
  return rest;
}

Match<double> mlir::xent::recognize::detail::matchZLossBackward(
    ViewAnalysis &va, ArrayRef<ZLossBackwardTerm> z, const Monomial &g,
    const Pieces &p, Node *gradOutput, double seed, const Operands &ops) {
  using M = Match<double>;
  Equivalence eq(va);
  const LogSoftmax &ls = p.logSoftmax;
  double total = 0;
  for (const ZLossBackwardTerm &t : z) {
    if (!va.same(t.lse.axis, ls.axis) || !eq.equal(t.lse.input, ls.input))
      return M::failure("the z-loss term's backward reads the log-sum-exp "
                        "of another tensor than the loss's logits");
    if (!t.softmax.input)
      return M::failure("the z-loss term's backward multiplies the "
                        "log-sum-exp by an exp that is not a softmax: " +
                        t.notSoftmax);
    if (!va.same(t.softmax.axis, ls.axis) ||
        !eq.equal(t.softmax.input, ls.input))
      return M::failure("the z-loss term's backward multiplies the softmax "
                        "of another tensor than the loss's logits");
    if (Match<bool> same = matchSameIgnoreMasks(
            va, splitMasks(t.rest.masks), ops, "the z-loss term's backward");
        !same)
      return M::failure(same);
    bool sawGrad = false;
    for (Node *f : t.rest.num) {
      if (gradOutput && !sawGrad && eq.equal(stripWidening(f), gradOutput)) {
        sawGrad = true;
        continue;
      }
      return M::failure("unexpected factor in the z-loss term's backward");
    }
    if (gradOutput && !sawGrad)
      return M::failure("the z-loss term's backward is not scaled by "
                        "grad_output, the nll's is");
    if (g.den.empty() != t.rest.den.empty() || t.rest.den.size() > 1)
      return M::failure("the z-loss term's backward is divided otherwise "
                        "than a z-loss reduced like the loss");
    if (!t.rest.den.empty()) {
      // Liger's convention: a z-loss mean divides by the kept count.
      Pieces counted = p;
      counted.weight.reset();
      if (Match<bool> count = matchTotalWeight(va, t.rest.den[0], counted, ops);
          !count)
        return M::failure("the z-loss term's backward mean: " +
                          count.getReason());
    }
    total += t.rest.coeff;
  }
  double scale = roundToDecimal(total / (2 * seed));
  if (!(scale > 0) || !std::isfinite(scale))
    return M::failure("the z-loss term's backward is scaled by " +
                      formatNumber(total) + ", which is no positive z-loss " +
                      "scale for the seed " + formatNumber(seed));
  return scale;
}
