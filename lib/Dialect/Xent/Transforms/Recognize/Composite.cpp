//===- Composite.cpp - The loss: nll, label smoothing, z-loss -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// matchCrossEntropy: a loss is the nll term (a target pick, Forward.cpp),
// optionally plus the terms PyTorch and Liger add to it:
//
//   (1 - ε) · nll + ε / C · smooth,   smooth = reduce(mask(-Σ_c w_c logp_c))
//   loss + z · reduce(mask(lse²)),    lse from a separate logsumexp
//
// each term reduced like the nll (a z-loss mean divides by the kept count).
// The terms are found in the value's linear form; a sum over elements of a
// linear combination (optax: mean(lse - x[t] + z · lse²)) is split first.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

//===----------------------------------------------------------------------===//
// Splitting a value into terms
//===----------------------------------------------------------------------===//

/// Σ coeff · node as a node.
static Node *linearNode(ViewAnalysis &va, ArrayRef<LinearTerm> terms,
                        Type type) {
  Node *sum = nullptr;
  for (const LinearTerm &t : terms) {
    Node *term = t.node;
    if (t.coeff != 1)
      term = va.makeElementwise(K::Mul, type,
                                {va.makeConstant(t.coeff, type), t.node});
    sum = sum ? va.makeElementwise(K::Add, type, {sum, term}) : term;
  }
  return sum ? sum : va.makeConstant(0, type);
}

/// A monomial as a node: coeff · Π num / Π den, masked.
static Node *productNode(ViewAnalysis &va, const Monomial &m, Type type) {
  Node *n = va.makeConstant(m.coeff, type);
  for (Node *f : m.num)
    n = va.makeElementwise(K::Mul, type, {n, f});
  for (Node *f : m.den)
    n = va.makeElementwise(K::Div, type, {n, f});
  Node *zero = va.makeConstant(0, type);
  for (const Mask &mask : m.masks) {
    SmallVector<Node *, 3> operands = {mask.predicate, n, zero};
    if (!mask.keptWhen)
      std::swap(operands[1], operands[2]);
    n = va.makeElementwise(K::Select, type, operands);
  }
  return n;
}

/// True when `coeff · node` is a term the nll may be accompanied by: the
/// label smoothing term or the z-loss.
static bool isCompanion(ViewAnalysis &va, Node *node, double coeff,
                        bool reduced) {
  Match<LossTerm> m = matchLossTerm(va, node, coeff, reduced);
  return m && m->pieces.term != Pieces::Term::Pick;
}

/// The additive terms of `n`. A term that is a sum over elements of a
/// linear combination with a companion inside (Σ (nll + z · lse²)) becomes
/// one sum per companion and one sum of the rest.
static LinearForm splitTerms(ViewAnalysis &va, Node *n, bool reduced) {
  LinearForm form = flattenLinear(va, n);
  if (!reduced)
    return form;
  LinearForm out;
  out.constant = form.constant;
  for (const LinearTerm &t : form.terms) {
    Monomial m = factorize(va, t.node);
    std::optional<size_t> split;
    LinearForm body;
    for (auto [i, f] : llvm::enumerate(m.num)) {
      if (!isSum(f))
        continue;
      body = flattenLinear(va, stripWidening(f)->operands[0]);
      if (body.constant == 0 && body.terms.size() > 1 &&
          llvm::any_of(body.terms, [&](const LinearTerm &b) {
            return isCompanion(va, b.node, b.coeff, /*reduced=*/false);
          })) {
        split = i;
        break;
      }
    }
    if (!split) {
      out.terms.push_back(t);
      continue;
    }
    Node *sum = stripWidening(m.num[*split]);
    SmallVector<LinearTerm, 4> rest;
    SmallVector<Node *, 4> groups;
    for (const LinearTerm &b : body.terms) {
      if (isCompanion(va, b.node, b.coeff, /*reduced=*/false))
        groups.push_back(linearNode(va, {b}, sum->type));
      else
        rest.push_back(b);
    }
    if (!rest.empty())
      groups.push_back(linearNode(va, rest, sum->type));
    for (Node *group : groups) {
      Monomial part = m;
      part.num[*split] = va.makeReduce(ReduceKind::Sum, group, sum->axes);
      out.terms.push_back({t.coeff, productNode(va, part, t.node->type)});
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Companions of the nll
//===----------------------------------------------------------------------===//

/// Checks that a companion masks exactly the targets the nll ignores.
static Match<bool> sameMasks(ViewAnalysis &va, const Pieces &c,
                             const Operands &ops, StringRef what) {
  using M = Match<bool>;
  if (!ops.ignoreIndex) {
    if (!c.masks.empty())
      return M::failure(what + " is masked, the nll is not");
    return true;
  }
  if (c.masks.empty())
    return M::failure(what + " is not masked like the nll (ignored "
                             "targets count)");
  Equivalence eq(va);
  for (const IgnoreMask &mask : c.masks)
    if (mask.ignoreIndex != *ops.ignoreIndex ||
        !eq.equal(stripIndexCasts(mask.target), ops.targetNode))
      return M::failure(what + " ignores other elements than the nll");
  return true;
}

/// Checks that the smoothing term sums the nll's log-probabilities with the
/// nll's class weights.
static Match<bool> checkSmoothing(ViewAnalysis &va, const Pieces &s,
                                  const Pieces &nll, const Operands &ops) {
  using M = Match<bool>;
  if (nll.probabilities)
    return M::failure("label smoothing of probability targets");
  if (!va.same(s.logSoftmax.axis, nll.logSoftmax.axis) ||
      !Equivalence(va).equal(s.logSoftmax.input, nll.logSoftmax.input))
    return M::failure("the smoothing term sums the log-softmax of another "
                      "tensor than the nll picks from");
  if (Match<bool> masks = sameMasks(va, s, ops, "the smoothing term"); !masks)
    return masks;
  if (ops.weight) {
    if (!s.weight || s.weight->weight->origin != ops.weight || s.weight->index)
      return M::failure("the smoothing term is not weighted by the nll's "
                        "class weights along the class axis");
  } else if (s.weight) {
    return M::failure("the smoothing term is weighted, the nll is not");
  }
  return true;
}

/// Checks that the z-loss squares the log-sum-exp of the logits the nll's
/// log-softmax normalizes.
static Match<bool> checkZLoss(ViewAnalysis &va, const Pieces &z,
                              const Pieces &nll, const Operands &ops) {
  using M = Match<bool>;
  if (!va.same(z.logSoftmax.axis, nll.logSoftmax.axis) ||
      !Equivalence(va).equal(z.logSoftmax.input, nll.logSoftmax.input))
    return M::failure("the z-loss squares the log-sum-exp of another tensor "
                      "than the loss's logits");
  return sameMasks(va, z, ops, "the z-loss");
}

//===----------------------------------------------------------------------===//
// A loss scaled per element
//===----------------------------------------------------------------------===//

/// The loss per element times float values of the element (JAX's
/// `(nll · mask).sum()`), optionally summed: the op computes the loss per
/// element (`none`), the factors stay outside it (RaisedOp::elementScale).
/// A sum divided by something (the mask's own sum) is left to its parts:
/// the sum is raised on its own, the division stays.
static Match<RaisedOp> matchScaledElements(ViewAnalysis &va, RaisedOp raised,
                                           const LossTerm &term,
                                           const ReducedLoss &nll,
                                           const Operands &ops,
                                           ArrayRef<LossTerm> companions) {
  using M = Match<RaisedOp>;
  if (!companions.empty())
    return M::nearMiss("the per-element loss is multiplied by a float value "
                       "of the element beside label smoothing or a z-loss, "
                       "which the op would weigh otherwise");
  if (raised.probabilityTargets)
    return M::nearMiss("a probability-target loss multiplied by a float "
                       "value of the element");
  if (nll.kind == ReducedLoss::Kind::Divided)
    return M::failure("a loss scaled per element and summed, then divided: "
                      "the sum is raised on its own");
  SmallVector<Axis, 4> domain = elementDims(ops.logitsDims, ops.classDim);
  for (Node *f : term.pieces.elementScale)
    if (Match<bool> ok = checkMaterializable(va, f, domain); !ok)
      return M::nearMiss("the per-element loss is multiplied by a float "
                         "value of the element that cannot be rebuilt "
                         "after the op: " +
                         ok.getReason());
  raised.reduction = Reduction::none;
  raised.elementScale = term.pieces.elementScale;
  raised.elementCoeff = nll.factor;
  raised.elementSummed = nll.kind == ReducedLoss::Kind::Summed;
  // A one-hot pick's labels outside [0, C) read nothing (0), as the op's
  // ignored elements (see matchCrossEntropy).
  if (term.pieces.oneHot) {
    raised.oneHotPick = true;
    if (!raised.ignoreIndex)
      raised.ignoreIndex = -1;
  }
  return raised;
}

//===----------------------------------------------------------------------===//
// The loss
//===----------------------------------------------------------------------===//

Match<RaisedOp> recognize::matchCrossEntropy(ViewAnalysis &va, Value root,
                                             const MatchOptions &) {
  using M = Match<RaisedOp>;
  Match<Root> start = matchRoot(va, root);
  if (!start)
    return M::failure(start);
  auto [rootType, view, r] = *start;
  bool reduced = va.freeAxes(r).empty();

  // The companions of the nll, and the rest: the nll itself.
  SmallVector<LossTerm, 2> companions;
  Node *base = r;
  LinearForm form = splitTerms(va, r, reduced);
  if (form.constant == 0 && form.terms.size() > 1) {
    SmallVector<LinearTerm, 4> rest;
    for (const LinearTerm &t : form.terms) {
      Match<LossTerm> m = matchLossTerm(va, t.node, t.coeff, reduced);
      if (m && m->pieces.term != Pieces::Term::Pick)
        companions.push_back(*m);
      else
        rest.push_back(t);
    }
    if (!companions.empty())
      base = linearNode(va, rest, r->type);
  }

  Match<LossTerm> term = matchLossTerm(va, base, 1, reduced);
  if (!term)
    return M::failureLike(term);
  if (term->pieces.term == Pieces::Term::Smoothing)
    return M::failure("no target pick: a sum of the log-probabilities over "
                      "every class (a smoothing term without the nll)");
  if (term->pieces.term == Pieces::Term::ZLoss)
    return M::failure("no target pick: the square of a log-sum-exp (a "
                      "z-loss without the nll)");
  const Pieces &pieces = term->pieces;

  // From here on the value contains a cross-entropy: every failure is a
  // near miss.
  Match<Operands> ops = resolveOperands(va, pieces);
  if (!ops)
    return M::nearMiss(ops.getReason());
  RaisedOp raised = ops->toRaisedOp();
  raised.probabilityTargets = pieces.probabilities != nullptr;

  if (!isSupportedFloat(rootType.getElementType()))
    return M::nearMiss("a loss of element type " +
                       typeToString(rootType.getElementType()) +
                       " (the op computes f16, bf16 or f32)");
  Match<ReducedLoss> nll =
      matchReducedLoss(va, *term, view.dims, rootType, *ops);
  if (!nll)
    return M::nearMiss(nll.getReason());

  if (!pieces.elementScale.empty() ||
      llvm::any_of(companions, [](const LossTerm &c) {
        return !c.pieces.elementScale.empty();
      }))
    return matchScaledElements(va, raised, *term, *nll, *ops, companions);

  const LossTerm *smoothing = nullptr, *zLoss = nullptr;
  for (const LossTerm &c : companions) {
    const LossTerm *&slot =
        c.pieces.term == Pieces::Term::Smoothing ? smoothing : zLoss;
    if (slot)
      return M::nearMiss(slot == smoothing ? "two label smoothing terms"
                                           : "two z-loss terms");
    slot = &c;
  }

  // Each companion is reduced like the nll; `f0` is the loss factor of the
  // reduction (1, or 1 / N for a mean by the constant element count).
  auto reducedLike = [&](const LossTerm &c,
                         StringRef what) -> Match<ReducedLoss> {
    Match<ReducedLoss> red = matchReducedLoss(va, c, view.dims, rootType, *ops);
    if (!red)
      return Match<ReducedLoss>::failure(what + ": " + red.getReason());
    if (red->kind != nll->kind)
      return Match<ReducedLoss>::failure(what +
                                         " is reduced otherwise than the nll");
    return red;
  };
  double f0 = 1;
  if (nll->kind == ReducedLoss::Kind::Summed && ops->numElements &&
      *ops->numElements > 0 && !ops->ignoreIndex && !ops->weight &&
      nll->factor <= (1 + 1e-6) / *ops->numElements)
    f0 = 1.0 / *ops->numElements;

  double smoothingWeight = 0;
  if (smoothing) {
    if (Match<bool> ok = checkSmoothing(va, smoothing->pieces, pieces, *ops);
        !ok)
      return M::nearMiss(ok.getReason());
    Match<ReducedLoss> red = reducedLike(*smoothing, "the smoothing term");
    if (!red)
      return M::nearMiss(red.getReason());
    if (red->kind == ReducedLoss::Kind::Divided) {
      Match<bool> total = matchTotalWeight(va, red->divisor, pieces, *ops);
      if (!total)
        return M::nearMiss("the smoothing term's mean: " + total.getReason());
    }
    auto logitsType = cast<RankedTensorType>(ops->logits.getType());
    int64_t numClasses = logitsType.getDimSize(ops->classDim);
    if (ShapedType::isDynamic(numClasses))
      return M::nearMiss("label smoothing with a dynamic class count (ε / C "
                         "is not a constant)");
    double expected = (f0 - nll->factor) / numClasses;
    if (std::abs(red->factor - expected) > 1e-6 * f0 / numClasses)
      return M::nearMiss(
          "the smoothing term is scaled by " + formatNumber(red->factor) +
          ", not by ε / C = " + formatNumber(expected) +
          " (the nll by 1 - ε = " + formatNumber(nll->factor / f0) +
          ", C = " + std::to_string(numClasses) + ")");
    raised.labelSmoothing = roundToDecimal(red->factor * numClasses / f0);
    if (!(raised.labelSmoothing > 0) || raised.labelSmoothing > 1)
      return M::nearMiss("label smoothing of " +
                         formatNumber(raised.labelSmoothing) +
                         ", outside (0, 1]");
    smoothingWeight = red->factor * numClasses;
  }

  if (zLoss) {
    if (Match<bool> ok = checkZLoss(va, zLoss->pieces, pieces, *ops); !ok)
      return M::nearMiss(ok.getReason());
    Match<ReducedLoss> red = reducedLike(*zLoss, "the z-loss");
    if (!red)
      return M::nearMiss(red.getReason());
    if (red->kind == ReducedLoss::Kind::Divided) {
      // Liger's convention: a z-loss mean divides by the kept count.
      Pieces counted = pieces;
      counted.weight.reset();
      Match<bool> total = matchTotalWeight(va, red->divisor, counted, *ops);
      if (!total)
        return M::nearMiss("the z-loss mean: " + total.getReason());
    }
    raised.zLossScale = roundToDecimal(red->factor / f0);
    if (!(raised.zLossScale > 0) || !std::isfinite(raised.zLossScale))
      return M::nearMiss("the z-loss is scaled by " +
                         formatNumber(raised.zLossScale) +
                         ", not by a positive constant");
  }

  ReducedLoss total = *nll;
  total.factor = nll->factor + smoothingWeight;
  Match<Reduction> reduction =
      decideReduction(va, total, /*scale=*/1, pieces, *ops);
  if (!reduction)
    return M::nearMiss(reduction.getReason());
  raised.reduction = *reduction;

  // A one-hot pick reads nothing for a label outside [0, C): the chain's
  // loss is 0 there (and counts the element in an unweighted mean), where
  // the op's is NaN. The op takes those labels as ignored instead
  // (RaisedOp::oneHotPick); a smoothing term or a z-loss would still count
  // for them in the chain.
  if (pieces.oneHot) {
    if (smoothing)
      return M::nearMiss(
          "a one-hot pick with label smoothing: for a label outside [0, C) "
          "the chain keeps that term, which the op, ignoring the element, "
          "would not");
    // The z-loss of such a label is added after the op, from its lse
    // (RaisedOp::zLossOutOfRange); with class weights the op's mean would
    // divide the z-loss otherwise.
    if (zLoss && raised.weight)
      return M::nearMiss(
          "a one-hot pick with class weights and a z-loss: for a label "
          "outside [0, C) the chain keeps the z-loss, which the op, ignoring "
          "the element, would not");
    raised.oneHotPick = true;
    if (zLoss) {
      raised.zLossOutOfRange = true;
      raised.chainIgnoreIndex = ops->ignoreIndex;
    }
    if (!raised.ignoreIndex)
      raised.ignoreIndex = -1;
    if (raised.reduction == Reduction::mean && !raised.weight) {
      raised.reduction = Reduction::sum;
      raised.meanDivisor = ops->ignoreIndex ? RaisedOp::MeanDivisor::Labels
                                            : RaisedOp::MeanDivisor::Elements;
    }
  }
  return raised;
}
