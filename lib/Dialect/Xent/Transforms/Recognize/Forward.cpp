//===- Forward.cpp - Matchers of the cross-entropy loss -------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

//===----------------------------------------------------------------------===//
// Ignore masks and one-hot masks
//===----------------------------------------------------------------------===//

namespace {
/// `lhs == rhs` (equal) or `lhs != rhs`.
struct Equality {
  Node *lhs, *rhs;
  bool equal;
};
} // namespace

static std::optional<Equality> parseEquality(Node *p) {
  bool negated = false;
  while (true) {
    if (isOp(p, K::Not)) {
      negated = !negated;
      p = p->operands[0];
      continue;
    }
    if (isOp(p, K::Xor) && isConstant(p->operands[1], 1)) {
      negated = !negated;
      p = p->operands[0];
      continue;
    }
    if (isOp(p, K::Xor) && isConstant(p->operands[0], 1)) {
      negated = !negated;
      p = p->operands[1];
      continue;
    }
    break;
  }
  bool equal;
  if (isOp(p, K::CmpI)) {
    auto pred = static_cast<arith::CmpIPredicate>(p->predicate);
    if (pred == arith::CmpIPredicate::eq)
      equal = true;
    else if (pred == arith::CmpIPredicate::ne)
      equal = false;
    else
      return std::nullopt;
  } else if (isOp(p, K::CmpF)) {
    auto pred = static_cast<arith::CmpFPredicate>(p->predicate);
    if (pred == arith::CmpFPredicate::OEQ || pred == arith::CmpFPredicate::UEQ)
      equal = true;
    else if (pred == arith::CmpFPredicate::ONE ||
             pred == arith::CmpFPredicate::UNE)
      equal = false;
    else
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  return Equality{p->operands[0], p->operands[1], equal != negated};
}

Match<IgnoreMask> recognize::matchIgnoreMask(ViewAnalysis &va,
                                             const Mask &mask) {
  std::optional<Equality> eq = parseEquality(mask.predicate);
  if (!eq)
    return Match<IgnoreMask>::failure("mask is not an (in)equality test");
  Node *lhs = stripIndexCasts(eq->lhs), *rhs = stripIndexCasts(eq->rhs);
  std::optional<double> k = getConstant(rhs);
  Node *target = lhs;
  if (!k) {
    k = getConstant(lhs);
    target = rhs;
  }
  if (!k || getConstant(target))
    return Match<IgnoreMask>::failure(
        "mask does not compare the target with a constant");
  // Kept where (t == k) == keepsEqual.
  bool keepsEqual = eq->equal == mask.keptWhen;
  if (keepsEqual)
    return Match<IgnoreMask>::failure(
        "mask keeps only the elements whose target equals a constant");
  if (*k != std::trunc(*k) || std::abs(*k) > 9.0e18)
    return Match<IgnoreMask>::failure("ignore index is not an integer");
  if (!isa<IntegerType, IndexType>(target->type))
    return Match<IgnoreMask>::failure("mask compares a non-integer target");
  return IgnoreMask{target, static_cast<int64_t>(*k)};
}

Node *recognize::detail::matchOneHot(ViewAnalysis &va, const Mask &mask,
                                     Axis axis) {
  std::optional<Equality> eq = parseEquality(mask.predicate);
  if (!eq || eq->equal != mask.keptWhen)
    return nullptr;
  Node *lhs = stripIndexCasts(eq->lhs), *rhs = stripIndexCasts(eq->rhs);
  auto isPosition = [&](Node *n) {
    return n->kind == NodeKind::Index && va.same(n->axes[0], axis);
  };
  if (isPosition(lhs) && !va.dependsOn(rhs, axis))
    return rhs;
  if (isPosition(rhs) && !va.dependsOn(lhs, axis))
    return lhs;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Target pick, class weight
//===----------------------------------------------------------------------===//

Match<TargetPick> recognize::matchTargetPick(ViewAnalysis &va, Node *node) {
  using M = Match<TargetPick>;
  Node *n = stripFloatCasts(node);
  bool guarded = false;
  if (Node *gather = matchGuardedGather(va, n)) {
    n = gather;
    guarded = true;
  }
  if (n->kind == NodeKind::Gather) {
    Match<LogSoftmax> ls = matchLogSoftmax(va, n->operands[0]);
    if (!ls)
      return M::failure("the pick reads a value that is not a log-softmax: " +
                        ls.getReason());
    if (!va.same(ls->axis, n->axes[0]))
      return M::failure(
          "the pick reads along another axis than the log-softmax's");
    TargetPick pick{*ls, stripIndexCasts(n->operands[1])};
    pick.guarded = guarded;
    return pick;
  }
  if (isReduce(n, ReduceKind::Sum)) {
    SmallVector<Axis, 4> axes = canonicalAxes(va, n->axes);
    if (axes.size() != 1)
      return M::failure("the one-hot sum reduces several axes");
    Axis c = axes[0];
    Monomial body = factorize(va, n->operands[0]);
    SmallVector<Mask, 2> masks = splitMasks(body.masks);
    if (body.coeff != 1 || !body.den.empty())
      return M::failure("the sum is not of a log-softmax times a one-hot or "
                        "probabilities");
    SmallVector<Node *, 2> others;
    Match<LogSoftmax> ls =
        body.num.empty()
            ? Match<LogSoftmax>::failure(
                  "the sum does not multiply a log-softmax: no factors")
            : matchExactlyOne(
                  body.num, others,
                  [&](Node *f) { return matchLogSoftmax(va, f); },
                  "the sum multiplies two log-softmaxes",
                  "the sum does not multiply a log-softmax: ");
    if (!ls)
      return M::failure(ls);
    if (!va.same(ls->axis, c))
      return M::failure(
          "the pick runs along another axis than the log-softmax's");
    if (masks.size() == 1 && others.empty()) {
      Node *index = matchOneHot(va, masks[0], c);
      if (!index)
        return M::failure("the sum is not of a log-softmax times a one-hot "
                          "of the class axis");
      TargetPick pick{*ls, index};
      pick.oneHot = true;
      return pick;
    }
    if (masks.empty() && others.empty()) {
      // Σ_c logp_c: the label smoothing term.
      TargetPick pick{*ls};
      pick.everyClass = true;
      return pick;
    }
    if (!masks.empty() || others.empty() || others.size() > 2)
      return M::failure("the sum is not of a log-softmax times a one-hot or "
                        "probabilities");
    // Probability targets, optionally with class weights along the class
    // axis: Σ_c q_c · w_c · logp_c.
    TargetPick pick{*ls};
    for (Node *f : others) {
      Match<ClassWeight> w = matchClassWeight(va, f);
      if (w && !w->index && !pick.classWeight && va.dependsOn(f, c)) {
        pick.classWeight = f;
        continue;
      }
      if (!pick.probabilities && isa<FloatType>(f->type) &&
          va.dependsOn(f, c)) {
        pick.probabilities = f;
        continue;
      }
      return M::failure("the sum multiplies the log-softmax by something "
                        "other than a one-hot or probabilities");
    }
    // Σ_c w_c · logp_c: the label smoothing term with class weights.
    if (!pick.probabilities)
      pick.everyClass = true;
    return pick;
  }
  if (isOp(n, K::Add) || isOp(n, K::Sub) || isOp(n, K::Neg)) {
    // x[t] - lse (or lse - x[t]): a gather of the raw logits combined with
    // terms constant along the gathered axis is the gather of
    // x + those terms / coefficient.
    LinearForm form = flattenLinear(va, n);
    std::optional<size_t> gathered;
    for (auto [i, t] : llvm::enumerate(form.terms)) {
      if (Node *gather = matchGuardedGather(va, t.node)) {
        t.node = gather;
        guarded = true;
      }
      if (stripFloatCasts(t.node)->kind != NodeKind::Gather)
        continue;
      if (gathered)
        return M::failure("two gathers in one pick");
      gathered = i;
    }
    if (!gathered)
      return M::failure("not a gather or a one-hot sum");
    const LinearTerm &g = form.terms[*gathered];
    Node *gather = stripFloatCasts(g.node);
    if (std::abs(g.coeff) != 1)
      return M::failure("the gather is scaled");
    Axis axis = gather->axes[0];
    Node *source = gather->operands[0];
    Type type = source->type;
    for (auto [i, t] : llvm::enumerate(form.terms)) {
      if (i == *gathered)
        continue;
      if (va.dependsOn(t.node, axis))
        return M::failure("a term of the pick depends on the class axis");
      Node *scale = va.makeConstant(t.coeff / g.coeff, type);
      source = va.makeElementwise(
          K::Add, type,
          {source, va.makeElementwise(K::Mul, type, {scale, t.node})});
    }
    if (form.constant != 0)
      source = va.makeElementwise(
          K::Add, type,
          {source, va.makeConstant(form.constant / g.coeff, type)});
    Match<LogSoftmax> ls = matchLogSoftmax(va, source);
    if (!ls)
      return M::failure("the pick reads a value that is not a log-softmax: " +
                        ls.getReason());
    if (!va.same(ls->axis, axis))
      return M::failure(
          "the pick reads along another axis than the log-softmax's");
    TargetPick pick{*ls, stripIndexCasts(gather->operands[1])};
    pick.coeff = g.coeff;
    pick.guarded = guarded;
    return pick;
  }
  return M::failure("not a gather or a one-hot sum");
}

Match<ClassWeight> recognize::matchClassWeight(ViewAnalysis &va, Node *node) {
  using M = Match<ClassWeight>;
  Node *n = stripWidening(node);
  Node *index = nullptr;
  if (n->kind == NodeKind::Gather) {
    index = stripIndexCasts(n->operands[1]);
    n = stripWidening(n->operands[0]);
  }
  if (n->kind != NodeKind::Leaf || !n->origin)
    return M::failure("not a tensor of class weights");
  auto type = dyn_cast<RankedTensorType>(n->origin.getType());
  if (!type || type.getRank() != 1 || !isSupportedFloat(type.getElementType()))
    return M::failure("the class weights are not a rank-1 f16/bf16/f32 tensor");
  return ClassWeight{n, index};
}

//===----------------------------------------------------------------------===//
// The forward chain
//===----------------------------------------------------------------------===//

/// Classifies the factors of a per-element loss: one target pick, at most
/// one class weight, ignore masks.
static Match<Pieces> classifyLossFactors(ViewAnalysis &va, const Monomial &m) {
  using M = Match<Pieces>;
  Pieces p;
  auto addMasks = [&]() -> Match<bool> {
    for (const Mask &mask : splitMasks(m.masks)) {
      Match<IgnoreMask> ignore = matchIgnoreMask(va, mask);
      if (!ignore)
        return Match<bool>::failure(ignore);
      p.masks.push_back(*ignore);
    }
    return true;
  };
  // The z-loss: lse · lse, the square of one log-sum-exp.
  if (m.num.size() == 2 && Equivalence(va).equal(m.num[0], m.num[1])) {
    if (Match<LogSumExp> lse = matchLogSumExpValue(va, m.num[0])) {
      if (!m.den.empty())
        return M::failure("the squared log-sum-exp is divided by a value "
                          "that depends on the element");
      p.term = Pieces::Term::ZLoss;
      p.logSoftmax = LogSoftmax{lse->input, lse->axis, *lse};
      if (Match<bool> masks = addMasks(); !masks)
        return M::failure(masks);
      return p;
    }
  }
  std::optional<TargetPick> pick;
  std::string pickReason;
  SmallVector<Node *, 2> others;
  for (Node *f : m.num) {
    Match<TargetPick> tp = matchTargetPick(va, f);
    if (tp) {
      if (pick)
        return M::failure("two target picks in one loss");
      pick = *tp;
      continue;
    }
    Node *s = stripFloatCasts(f);
    if (pickReason.empty() || s->kind == NodeKind::Gather ||
        isReduce(s, ReduceKind::Sum))
      pickReason = tp.getReason();
    Match<ClassWeight> w = matchClassWeight(va, f);
    if (w && w->index && !p.weight) {
      p.weight = *w;
      continue;
    }
    others.push_back(f);
  }
  if (!pick)
    return M::failure("no target pick: " + (pickReason.empty()
                                                ? std::string("no factors")
                                                : pickReason));
  if (!others.empty()) {
    // A float value of the element scaling its loss (a float mask or
    // per-element weights): the op weighs classes and ignores elements by
    // their target only (even a mask of zeros and ones differs where the
    // loss is NaN: 0 · NaN is NaN, an ignored element is not), so the
    // factors stay outside it, applied to its per-element losses
    // (matchCrossEntropy).
    if (!llvm::all_of(others, [](Node *f) { return isa<FloatType>(f->type); }))
      return M::failure("unexpected factor in the per-element loss");
    if (llvm::any_of(others, [&](Node *f) {
          return va.dependsOn(f, pick->logSoftmax.axis);
        }))
      return M::nearMiss("the per-element loss is multiplied by a value "
                         "that depends on the class axis");
    p.elementScale.assign(others.begin(), others.end());
  }
  if (!m.den.empty())
    return M::failure("the per-element loss is divided by a value that "
                      "depends on the element");
  if (Match<bool> masks = addMasks(); !masks)
    return M::failure(masks);
  p.logSoftmax = pick->logSoftmax;
  if (pick->everyClass) {
    if (p.weight)
      return M::failure("the sum over every class is multiplied by a weight "
                        "read at the target");
    p.term = Pieces::Term::Smoothing;
    p.coeff = pick->coeff;
    if (pick->classWeight)
      p.weight = *matchClassWeight(va, pick->classWeight);
    return p;
  }
  p.index = pick->index;
  p.probabilities = pick->probabilities;
  p.coeff = pick->coeff;
  p.oneHot = pick->oneHot;
  p.guarded = pick->guarded;
  if (pick->probabilities) {
    if (p.weight)
      return M::failure("probability targets with a weight read at a class "
                        "index");
    if (pick->classWeight)
      p.weight = *matchClassWeight(va, pick->classWeight);
  }
  return p;
}

/// Finds the loss inside a reduced value: Σ over elements of a per-element
/// loss, with the factors outside the sum in `outer`. Nested sums are merged
/// one at a time until the per-element loss is found.
static Match<Pieces> findSummedLoss(ViewAnalysis &va, const Monomial &top,
                                    Monomial &outer,
                                    SmallVector<Axis, 4> &summed) {
  using M = Match<Pieces>;
  std::string reason = "not a sum or mean over elements";
  bool near = false;
  std::optional<Pieces> pieces;
  for (auto [i, f] : llvm::enumerate(top.num)) {
    if (!isSum(f))
      continue;
    for (unsigned merges = 0; merges < 8; ++merges) {
      unsigned merged = 0;
      SumOver s = expandSum(va, f, merges, &merged);
      if (merged < merges)
        break;
      Monomial pulled = pullOut(va, s);
      Match<Pieces> m = classifyLossFactors(va, s.body);
      if (!m) {
        if (merges == 0 || !StringRef(m.getReason()).starts_with("no target")) {
          reason = m.getReason();
          near = m.isNearMiss();
        }
        continue;
      }
      if (pieces)
        return M::failure("two losses in one value");
      pieces = *m;
      summed = s.axes;
      outer = top;
      outer.num.erase(outer.num.begin() + i);
      outer.coeff *= pulled.coeff;
      outer.num.append(pulled.num.begin(), pulled.num.end());
      outer.den.append(pulled.den.begin(), pulled.den.end());
      break;
    }
  }
  if (pieces)
    return *pieces;
  // A single element (no element axes) has no sum: the loss is the product.
  Monomial body = top;
  body.coeff = 1;
  body.den.clear();
  Match<Pieces> m = classifyLossFactors(va, body);
  if (!m)
    return near ? M::nearMiss(reason) : M::failure(reason);
  outer = Monomial();
  outer.coeff = top.coeff;
  outer.den = top.den;
  summed.clear();
  return m;
}

Match<LossTerm> recognize::detail::matchLossTerm(ViewAnalysis &va, Node *node,
                                                 double coeff, bool reduced) {
  using M = Match<LossTerm>;
  Monomial top = factorize(va, node);
  top.coeff *= coeff;
  LossTerm term;
  term.reduced = reduced;
  if (reduced) {
    Match<Pieces> m = findSummedLoss(va, top, term.outer, term.summed);
    if (!m)
      return M::failureLike(m);
    term.pieces = *m;
    if (!term.outer.masks.empty())
      return M::nearMiss("the total loss is masked");
    return term;
  }
  Monomial body = top;
  term.outer.coeff = body.coeff;
  body.coeff = 1;
  Match<Pieces> m = classifyLossFactors(va, body);
  if (!m)
    return M::failureLike(m);
  term.pieces = *m;
  return term;
}

Match<ReducedLoss> recognize::detail::matchReducedLoss(
    ViewAnalysis &va, const LossTerm &term, ArrayRef<Axis> rootDims,
    RankedTensorType rootType, const Operands &ops) {
  using M = Match<ReducedLoss>;
  const Monomial &outer = term.outer;
  if (!outer.num.empty())
    return M::failure("the loss is multiplied by a value that is not a "
                      "constant");
  // The pick and the smoothing term are -logp; the z-loss is +lse².
  double sign = term.pieces.term == Pieces::Term::ZLoss ? 1 : -1;
  ReducedLoss r;
  r.factor = sign * outer.coeff * term.pieces.coeff;

  if (!term.reduced) {
    if (!outer.den.empty())
      return M::failure("the per-element loss is divided by a value");
    if (!alignsWithLogits(va, ops, rootDims))
      return M::failure("the per-element loss is not shaped like the "
                        "logits without the class axis");
    return r;
  }

  // TOSA keeps the rank through its reductions: a total of shape 1 or 1x1
  // is raised as the 0-d op result, reshaped back (Recognize.cpp).
  if (!llvm::all_of(rootType.getShape(), [](int64_t d) { return d == 1; }))
    return M::failure("a reduced loss that is not a 0-d tensor or a tensor "
                      "of unit dimensions");
  if (term.summed != ArrayRef<Axis>(ops.batchAxes))
    return M::failure("the loss is not summed over every element axis");
  if (outer.den.empty()) {
    r.kind = ReducedLoss::Kind::Summed;
    return r;
  }
  if (outer.den.size() != 1)
    return M::failure("the loss is divided by several values");
  r.kind = ReducedLoss::Kind::Divided;
  r.divisor = outer.den[0];
  return r;
}

Match<Reduction> recognize::detail::decideReduction(ViewAnalysis &va,
                                                    const ReducedLoss &r,
                                                    double scale,
                                                    const Pieces &p,
                                                    const Operands &ops) {
  using M = Match<Reduction>;
  double k = r.factor / scale;
  switch (r.kind) {
  case ReducedLoss::Kind::PerElement:
    if (!approxEqual(k, 1))
      return M::failure("the loss is scaled by " + formatNumber(k) +
                        ", not by 1");
    return Reduction::none;
  case ReducedLoss::Kind::Summed:
    if (approxEqual(k, 1))
      return Reduction::sum;
    if (ops.numElements && *ops.numElements > 0 &&
        approxEqual(k, 1.0 / *ops.numElements)) {
      if (ops.ignoreIndex)
        return M::failure("the mean divides by the element count, not by "
                          "the count of kept targets");
      if (ops.weight && !p.probabilities)
        return M::failure("a weighted mean divides by the element count, "
                          "not by the sum of the kept weights");
      return Reduction::mean;
    }
    return M::failure("the loss is scaled by " + formatNumber(k) +
                      ", which is neither 1 (sum) nor one over the element "
                      "count (mean)");
  case ReducedLoss::Kind::Divided: {
    if (!approxEqual(k, 1))
      return M::failure("the mean is scaled by " + formatNumber(k));
    if (p.probabilities)
      return M::failure("a mean of probability-target losses divides by "
                        "something other than the element count");
    Match<bool> total = matchTotalWeight(va, r.divisor, p, ops);
    if (!total)
      return M::failure(total);
    return Reduction::mean;
  }
  }
  return M::failure("unknown reduction");
}
