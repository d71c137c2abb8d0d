//===- Backward.cpp - Matchers of the cross-entropy gradient --------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

//===----------------------------------------------------------------------===//
// The backward chain
//===----------------------------------------------------------------------===//

namespace {
/// exp(logp) · Σ_c g: the softmax part of the log-softmax backward.
struct SoftmaxTerm {
  LogSoftmax logSoftmax;
  Node *sum; // Σ_c g
  double coeff;
  /// The exp reads a tensor nothing in the IR computes (saved
  /// log-probabilities): `logSoftmax.input` is that tensor.
  bool saved = false;
};
} // namespace

/// Matches `coeff · exp(ls) · Σ_c g` (or the softmax written as
/// exp(e) / Σ exp(e)).
static Match<SoftmaxTerm> matchSoftmaxTerm(ViewAnalysis &va, Node *node,
                                           double coeff) {
  using M = Match<SoftmaxTerm>;
  Monomial m = factorize(va, node);
  if (!m.masks.empty() || m.num.size() != 2 || m.den.size() > 1)
    return M::failure("not a product of a softmax and a sum");
  Node *exp = nullptr, *sum = nullptr;
  for (Node *f : m.num) {
    Node *s = stripWidening(f);
    if (isOp(s, ElementwiseKind::Exp) && !exp)
      exp = s;
    else if (isReduce(s, ReduceKind::Sum) && !sum)
      sum = s;
  }
  if (!exp || !sum)
    return M::failure("not a product of a softmax and a sum");
  Node *logits = exp->operands[0];
  if (!m.den.empty())
    logits = va.makeElementwise(
        ElementwiseKind::Sub, logits->type,
        {logits,
         va.makeElementwise(ElementwiseKind::Log, m.den[0]->type, {m.den[0]})});
  SmallVector<Axis, 4> axes = canonicalAxes(va, sum->axes);
  Match<LogSoftmax> ls = matchLogSoftmax(va, logits);
  if (!ls) {
    // exp(logp) of a tensor the IR does not compute: the saved
    // log-probabilities of aot_autograd's backward graph.
    Node *saved = stripFloatCasts(logits);
    if (m.den.empty() && saved->kind == NodeKind::Leaf && saved->origin &&
        isa<RankedTensorType>(saved->origin.getType()) && axes.size() == 1 &&
        va.dependsOn(saved, axes[0])) {
      LogSoftmax probs{saved, axes[0], LogSumExp{saved, axes[0], nullptr}};
      return SoftmaxTerm{probs, sum, coeff * m.coeff, /*saved=*/true};
    }
    return M::failure("the exp is not of a log-softmax: " + ls.getReason());
  }
  if (axes.size() != 1 || !va.same(axes[0], ls->axis))
    return M::failure("the sum does not run along the class axis");
  return SoftmaxTerm{*ls, sum, coeff * m.coeff};
}

/// True when two monomials are the same product.
static bool sameMonomial(ViewAnalysis &va, const Monomial &a,
                         const Monomial &b) {
  if (!approxEqual(a.coeff, b.coeff) || a.num.size() != b.num.size() ||
      a.den.size() != b.den.size() || a.masks.size() != b.masks.size())
    return false;
  Equivalence eq(va);
  auto sameSet = [&](ArrayRef<Node *> x, ArrayRef<Node *> y) {
    SmallVector<bool, 4> used(y.size(), false);
    for (Node *f : x) {
      bool found = false;
      for (auto [j, g] : llvm::enumerate(y)) {
        if (!used[j] && eq.equal(f, g)) {
          used[j] = found = true;
          break;
        }
      }
      if (!found)
        return false;
    }
    return true;
  };
  SmallVector<Node *, 2> am, bm;
  for (const Mask &m : a.masks)
    am.push_back(m.keptWhen
                     ? m.predicate
                     : va.makeElementwise(ElementwiseKind::Not,
                                          m.predicate->type, {m.predicate}));
  for (const Mask &m : b.masks)
    bm.push_back(m.keptWhen
                     ? m.predicate
                     : va.makeElementwise(ElementwiseKind::Not,
                                          m.predicate->type, {m.predicate}));
  return sameSet(a.num, b.num) && sameSet(a.den, b.den) && sameSet(am, bm);
}

namespace {
struct LogSoftmaxBackward {
  LogSoftmax logSoftmax;
  /// The incoming gradient g of `g - exp(logp) · Σ_c g`, as a sum of
  /// monomials (the nll backward, and the smoothing term's backward).
  SmallVector<Monomial, 2> g;
  bool saved = false;
};

struct NllBackward {
  Pieces pieces;
  /// The grad_output factor, or null when the chain scales by a constant.
  Node *gradOutput = nullptr;
};
} // namespace

/// Matches the log-softmax backward `g - exp(logp) · Σ_c g` (the softmax may
/// also be written exp(e) / Σ exp(e)), given as a linear form; returns the
/// log-softmax and g.
static Match<LogSoftmaxBackward>
matchLogSoftmaxBackward(ViewAnalysis &va, const LinearForm &form) {
  using M = Match<LogSoftmaxBackward>;
  if (form.constant != 0 || form.terms.size() < 2 || form.terms.size() > 3)
    return M::failure("not of the form g - softmax · Σ g");
  SmallVector<LinearTerm, 2> gTerms;
  Match<SoftmaxTerm> softmax = matchExactlyOne(
      form.terms, gTerms,
      [&](const LinearTerm &t) {
        return matchSoftmaxTerm(va, t.node, t.coeff);
      },
      "two softmax terms", "");
  if (!softmax)
    return M::failure(softmax);
  auto mismatch = [] {
    return M::nearMiss("the softmax is not scaled by the sum of the same "
                       "gradient (g - softmax · Σ_c g)");
  };
  LogSoftmaxBackward backward{softmax->logSoftmax, {}, softmax->saved};
  if (gTerms.size() == 1) {
    Monomial g = factorize(va, gTerms[0].node);
    g.coeff *= gTerms[0].coeff;
    Monomial summed = factorize(va, softmax->sum->operands[0]);
    summed.coeff *= -softmax->coeff;
    if (!sameMonomial(va, g, summed))
      return mismatch();
    backward.g.push_back(g);
    return backward;
  }
  // g = g1 + g2 (the nll's and the smoothing term's backward): Σ_c g is the
  // sum of the same terms.
  LinearForm summed = flattenLinear(va, softmax->sum->operands[0]);
  if (summed.constant != 0 || summed.terms.size() != gTerms.size())
    return mismatch();
  Equivalence eq(va);
  SmallVector<bool, 2> used(summed.terms.size(), false);
  for (const LinearTerm &t : gTerms) {
    bool found = false;
    for (auto [j, u] : llvm::enumerate(summed.terms)) {
      if (used[j] || !approxEqual(t.coeff, -softmax->coeff * u.coeff) ||
          !eq.equal(t.node, u.node))
        continue;
      used[j] = found = true;
      break;
    }
    if (!found)
      return mismatch();
    Monomial g = factorize(va, t.node);
    g.coeff *= t.coeff;
    backward.g.push_back(g);
  }
  return backward;
}

/// Matches the nll backward
/// `g = -grad_output · w[t] / total · onehot(t) · kept` along the class axis
/// of `ls`: the one-hot of the target, ignore masks, an optional class
/// weight (read at the target or along the class axis), an optional
/// grad_output factor; the divisor stays in `g.den`.
static Match<NllBackward> matchNllBackward(ViewAnalysis &va, const Monomial &g,
                                           const LogSoftmax &ls) {
  using M = Match<NllBackward>;
  Axis c = ls.axis;
  NllBackward nll;
  Pieces &p = nll.pieces;
  p.logSoftmax = ls;
  for (const Mask &mask : splitMasks(g.masks)) {
    if (Node *index = matchOneHot(va, mask, c)) {
      if (p.index)
        return M::failure("two one-hot masks in the nll backward");
      p.index = index;
      continue;
    }
    Match<IgnoreMask> ignore = matchIgnoreMask(va, mask);
    if (!ignore)
      return M::failure("the nll backward has a mask that is neither the "
                        "one-hot of the target nor an ignore mask: " +
                        ignore.getReason());
    p.masks.push_back(*ignore);
  }
  if (!p.index)
    return M::failure("the nll backward has no one-hot of the target");
  for (Node *f : g.num) {
    Match<ClassWeight> w = matchClassWeight(va, f);
    if (w && !p.weight && (w->index || va.dependsOn(f, c))) {
      p.weight = *w;
      continue;
    }
    Node *s = stripWidening(f);
    if (!nll.gradOutput && s->origin && !va.dependsOn(s, c) &&
        isa<RankedTensorType>(s->origin.getType())) {
      nll.gradOutput = s;
      continue;
    }
    return M::failure("unexpected factor in the nll backward");
  }
  return nll;
}

namespace {
/// The chain rule through a softcap: `grad · (1 - t²)` with `t` a tanh.
struct SoftcapBackward {
  Node *grad; // the gradient with respect to the capped logits
  Node *tanh; // t
};
} // namespace

/// Matches `k · grad · (1 - t · t)` with `t` a tanh: the gradient through
/// `c · tanh(x / c)`, whose derivative is 1 - tanh² (PyTorch's
/// tanh_backward; the c of the scale and the 1 / c of the divisor multiply
/// to k = 1). The constant k stays with `grad`.
static Match<SoftcapBackward> matchSoftcapBackward(ViewAnalysis &va,
                                                   Node *node) {
  using M = Match<SoftcapBackward>;
  Monomial m = factorize(va, node);
  if (m.num.size() != 2 || !m.den.empty() || !m.masks.empty())
    return M::failure("not a product of a gradient and a tanh slope");
  for (unsigned i = 0; i < 2; ++i) {
    LinearForm slope = flattenLinear(va, m.num[i]);
    if (slope.constant != 1 || slope.terms.size() != 1)
      continue;
    Monomial square = factorize(va, slope.terms[0].node);
    if (square.num.size() != 2 || !square.den.empty() ||
        !square.masks.empty() ||
        !approxEqual(slope.terms[0].coeff * square.coeff, -1))
      continue;
    Node *t = stripWidening(square.num[0]);
    if (!isOp(t, ElementwiseKind::Tanh) ||
        !Equivalence(va).equal(t, square.num[1]))
      continue;
    Node *grad = m.num[1 - i];
    if (m.coeff != 1)
      grad = va.makeElementwise(ElementwiseKind::Mul, grad->type,
                                {va.makeConstant(m.coeff, grad->type), grad});
    return SoftcapBackward{grad, t};
  }
  return M::failure("not a product of a gradient and a tanh slope");
}

/// Matches the backward of the label smoothing term beside the nll
/// backward `g`: `-grad_output · (ε / C) / total · kept` broadcast along the
/// class axis (times w_c with class weights), masked, scaled and divided
/// like `g`.
static Match<bool> matchSmoothingBackward(ViewAnalysis &va, const Monomial &s,
                                          const NllBackward &nll,
                                          const Monomial &g,
                                          const Operands &ops) {
  using M = Match<bool>;
  Equivalence eq(va);
  Axis c = nll.pieces.logSoftmax.axis;
  SmallVector<Mask, 2> masks = splitMasks(s.masks);
  if (Match<bool> same =
          matchSameIgnoreMasks(va, masks, ops, "the smoothing term's backward");
      !same)
    return same;
  bool sawWeight = false, sawGrad = false;
  for (Node *f : s.num) {
    Match<ClassWeight> w = matchClassWeight(va, f);
    if (w && !w->index && ops.weight && w->weight->origin == ops.weight &&
        !sawWeight && va.dependsOn(f, c)) {
      sawWeight = true;
      continue;
    }
    if (nll.gradOutput && !sawGrad &&
        eq.equal(stripWidening(f), nll.gradOutput)) {
      sawGrad = true;
      continue;
    }
    return M::failure("unexpected factor in the smoothing term's backward");
  }
  if (ops.weight && !sawWeight)
    return M::failure("the smoothing term's backward is not weighted by the "
                      "class weights");
  if (nll.gradOutput && !sawGrad)
    return M::failure("the smoothing term's backward is not scaled by "
                      "grad_output");
  if (g.den.empty() != s.den.empty() || s.den.size() > 1)
    return M::failure("the smoothing term's backward is divided otherwise "
                      "than the nll's");
  if (!s.den.empty()) {
    Match<bool> total = matchTotalWeight(va, s.den[0], nll.pieces, ops);
    if (!total)
      return M::failure("the smoothing term's backward: " + total.getReason());
  }
  return true;
}

static RankedTensorType gradType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// How the remark names the tensor a saved-tensor backward exponentiates.
static std::string describeValue(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return "argument #" + std::to_string(arg.getArgNumber());
  return ("the result of '" + v.getDefiningOp()->getName().getStringRef() + "'")
      .str();
}

Match<RaisedOp>
mlir::xent::recognize::matchCrossEntropyGrad(ViewAnalysis &va, Value root,
                                             const MatchOptions &options) {
  using M = Match<RaisedOp>;
  Match<Root> start = matchRoot(va, root);
  if (!start)
    return M::failure(start);
  RankedTensorType rootType = start->type;
  Node *r = start->node;
  // Through a softcap, the log-softmax backward is scaled by its slope.
  Match<SoftcapBackward> slope = matchSoftcapBackward(va, r);
  // The z-loss term's gradient is added beside the log-softmax backward.
  SmallVector<ZLossBackwardTerm, 2> zTerms;
  LinearForm form = splitZLossBackward(va, slope ? slope->grad : r, zTerms);
  Match<LogSoftmaxBackward> backward = matchLogSoftmaxBackward(va, form);
  if (!backward)
    return backward.isNearMiss() ? M::nearMiss(backward.getReason())
                                 : M::failure(backward);
  // From here on the value contains a log-softmax backward: every failure is
  // a near miss.
  // The nll backward, and beside it the smoothing term's backward.
  std::optional<NllBackward> nll;
  const Monomial *nllTerm = nullptr, *smoothing = nullptr;
  std::string reason;
  for (const Monomial &term : backward->g) {
    Match<NllBackward> m = matchNllBackward(va, term, backward->logSoftmax);
    if (!m) {
      if (reason.empty())
        reason = m.getReason();
      smoothing = &term;
      continue;
    }
    if (nll)
      return M::nearMiss("two nll backward terms");
    nll = *m;
    nllTerm = &term;
  }
  if (!nll)
    return M::nearMiss(reason);
  if (backward->g.size() == 1)
    smoothing = nullptr;
  const Monomial &g = *nllTerm;
  const Pieces &p = nll->pieces;
  Node *gradOutput = nll->gradOutput;

  Match<Operands> ops = resolveOperands(va, p);
  if (!ops)
    return M::nearMiss(ops.getReason());
  RaisedOp raised = ops->toRaisedOp();
  // A complete chain on saved log-probabilities: raised only when the
  // option states that they are normalized.
  auto finish = [&](const RaisedOp &op) -> Match<RaisedOp> {
    if (!backward->saved || options.assumeNormalizedLogProbs)
      return op;
    return M::notice(
        "the log-softmax backward exponentiates " + describeValue(ops->logits) +
        ", which nothing in the function proves to be normalized "
        "log-probabilities (the gradient is cross_entropy_grad of them only "
        "if their log-sum-exp is 0); assume-normalized-log-probs raises it");
  };
  if (ops->softcap || slope) {
    // The op's gradient is with respect to the uncapped logits: the chain
    // must apply the chain rule through the same tanh.
    Match<Softcap> cap = matchSoftcap(va, p.logSoftmax.input);
    if (!slope)
      return M::nearMiss("the gradient with respect to the capped logits, "
                         "not through the softcap");
    if (!cap || !Equivalence(va).equal(slope->tanh, cap->tanh))
      return M::nearMiss("the gradient is scaled by the slope of another "
                         "tanh than the softcap's");
  }
  if (rootType != ops->logits.getType())
    return M::nearMiss("the gradient's type differs from the logits' type");

  // The smoothing term's backward is -(ε / C) · s, the nll's -(1 - ε) · s
  // for the seed s.
  double smoothingCoeff = 0;
  if (smoothing) {
    Match<bool> ok = matchSmoothingBackward(va, *smoothing, *nll, g, *ops);
    if (!ok)
      return M::nearMiss(ok.getReason());
    int64_t numClasses =
        cast<RankedTensorType>(ops->logits.getType()).getDimSize(ops->classDim);
    if (ShapedType::isDynamic(numClasses))
      return M::nearMiss("label smoothing with a dynamic class count (ε / C "
                         "is not a constant)");
    smoothingCoeff = smoothing->coeff * numClasses;
    raised.labelSmoothing =
        roundToDecimal(smoothingCoeff / (g.coeff + smoothingCoeff));
    if (!(raised.labelSmoothing > 0) || raised.labelSmoothing > 1)
      return M::nearMiss("the smoothing term's backward is scaled by " +
                         formatNumber(smoothing->coeff) +
                         ", which is no label smoothing in (0, 1]");
  }

  // Without a grad_output factor the chain is the gradient of the loss
  // itself (loss.backward() seeds it with a constant): the op gets that
  // constant as grad_output.
  double seed = -(g.coeff + smoothingCoeff);
  if (!zTerms.empty()) {
    Match<double> z =
        matchZLossBackward(va, zTerms, g, p, gradOutput, seed, *ops);
    if (!z)
      return M::nearMiss(z.getReason());
    raised.zLossScale = *z;
  }
  if (!gradOutput) {
    raised.constantGradOutput = seed;
  } else {
    if (!approxEqual(seed, 1))
      return M::nearMiss("the nll backward is scaled by " + formatNumber(seed) +
                         ", not by -1");
    raised.gradOutput = gradOutput->origin;
    auto gradType = cast<RankedTensorType>(raised.gradOutput.getType());
    if (!isSupportedFloat(gradType.getElementType()))
      return M::nearMiss("grad_output must be f16, bf16 or f32");
  }

  if (!gradOutput || va.freeAxes(gradOutput).empty()) {
    if (gradOutput &&
        cast<RankedTensorType>(raised.gradOutput.getType()).getRank() != 0) {
      // Unit dimensions carry no axis: with one element, a grad_output
      // shaped like the per-element loss is per element (`none`).
      auto logitsType = cast<RankedTensorType>(raised.logits.getType());
      if (g.den.empty() &&
          raised.gradOutput.getType() ==
              RankedTensorType::get(
                  dropAxis(logitsType.getShape(), ops->classDim),
                  gradType(raised.gradOutput).getElementType())) {
        raised.reduction = xent::Reduction::none;
        return finish(raised);
      }
      return M::nearMiss("a reduced grad_output that is not a 0-d tensor");
    }
    if (g.den.empty()) {
      raised.reduction = xent::Reduction::sum;
      return finish(raised);
    }
    if (g.den.size() != 1)
      return M::nearMiss("the nll backward is divided by several values");
    Match<bool> total = matchTotalWeight(va, g.den[0], p, *ops);
    if (!total)
      return M::nearMiss(total.getReason());
    raised.reduction = xent::Reduction::mean;
    return finish(raised);
  }
  if (!g.den.empty())
    return M::nearMiss("a per-element grad_output is divided by a value");
  if (!alignsWithLogits(va, *ops, va.get(raised.gradOutput).dims))
    return M::nearMiss("grad_output is not shaped like the per-element loss");
  raised.reduction = xent::Reduction::none;
  return finish(raised);
}
