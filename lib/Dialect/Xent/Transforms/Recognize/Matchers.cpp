//===- Matchers.cpp - Cross-entropy matchers on the view ------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;

using K = ElementwiseKind;

/// How deep the normalization helpers look into an expression.
static constexpr unsigned kMaxDepth = 64;
/// How many node pairs one structural comparison may visit.
static constexpr unsigned kCompareBudget = 4096;

//===----------------------------------------------------------------------===//
// Node helpers
//===----------------------------------------------------------------------===//

static bool isOp(Node *n, K kind) {
  return n->kind == NodeKind::Elementwise && n->op == kind;
}
static bool isCast(Node *n, CastKind cast) {
  return isOp(n, K::Cast) && n->cast == cast;
}
static bool isReduce(Node *n, ReduceKind kind) {
  return n->kind == NodeKind::Reduce && n->reduce == kind;
}

/// Looks through float widening casts, which are exact.
static Node *stripWidening(Node *n) {
  while (isCast(n, CastKind::ExtF))
    n = n->operands[0];
  return n;
}

/// Looks through every float-to-float cast: the final rounding of a loss or
/// gradient is part of its result type, not of its algebra.
static Node *stripFloatCasts(Node *n) {
  while (isCast(n, CastKind::ExtF) || isCast(n, CastKind::TruncF))
    n = n->operands[0];
  return n;
}

/// Looks through integer casts that preserve a signed class index (and its
/// exact conversion to float, used by float compares).
static Node *stripIndexCasts(Node *n) {
  // trunci: a gather index narrowed to i32 (TOSA) keeps every class index.
  while (isCast(n, CastKind::ExtSI) || isCast(n, CastKind::IndexCast) ||
         isCast(n, CastKind::SIToFP) || isCast(n, CastKind::TruncI))
    n = n->operands[0];
  return n;
}

/// The value of a constant node, looking through casts.
static std::optional<double> getConstant(Node *n) {
  while (isOp(n, K::Cast))
    n = n->operands[0];
  if (n->kind == NodeKind::Constant)
    return n->number;
  return std::nullopt;
}
static bool isConstant(Node *n, double value) {
  std::optional<double> v = getConstant(n);
  return v && *v == value;
}

static bool isI1(Node *n) { return n->type && n->type.isInteger(1); }

static bool approxEqual(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
}

static bool isSupportedFloat(Type t) {
  return t.isF32() || t.isF16() || t.isBF16();
}

static std::string formatNumber(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%g", v);
  return s;
}

/// The canonical sorted set of `axes`, unit axes dropped.
static SmallVector<Axis, 4> canonicalAxes(ViewAnalysis &va,
                                          ArrayRef<Axis> axes) {
  SmallVector<Axis, 4> result;
  for (Axis a : axes)
    if (a != kUnitAxis)
      result.push_back(va.find(a));
  llvm::sort(result);
  result.erase(llvm::unique(result), result.end());
  return result;
}

static bool dependsOnAny(ViewAnalysis &va, Node *n, ArrayRef<Axis> axes) {
  return llvm::any_of(axes, [&](Axis a) { return va.dependsOn(n, a); });
}

//===----------------------------------------------------------------------===//
// Structural equality
//===----------------------------------------------------------------------===//

namespace {
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
} // namespace

static bool isCommutative(Node *n) {
  switch (n->op) {
  case K::Add:
  case K::Mul:
  case K::Max:
  case K::Min:
  case K::And:
  case K::Or:
  case K::Xor:
    return true;
  case K::CmpI:
    return n->predicate == static_cast<int64_t>(arith::CmpIPredicate::eq) ||
           n->predicate == static_cast<int64_t>(arith::CmpIPredicate::ne);
  case K::CmpF:
    return n->predicate == static_cast<int64_t>(arith::CmpFPredicate::OEQ) ||
           n->predicate == static_cast<int64_t>(arith::CmpFPredicate::UEQ) ||
           n->predicate == static_cast<int64_t>(arith::CmpFPredicate::ONE) ||
           n->predicate == static_cast<int64_t>(arith::CmpFPredicate::UNE);
  default:
    return false;
  }
}

bool Equivalence::equal(Node *a, Node *b, unsigned depth) {
  a = stripWidening(a);
  b = stripWidening(b);
  if (a == b)
    return true;
  if (depth > kMaxDepth || budget == 0)
    return false;
  --budget;
  if (a->kind != b->kind)
    return false;
  switch (a->kind) {
  case NodeKind::Leaf:
    return a->origin && a->origin == b->origin;
  case NodeKind::Constant:
    return a->number == b->number ||
           (std::isnan(a->number) && std::isnan(b->number));
  case NodeKind::Index:
    return va.same(a->axes[0], b->axes[0]);
  case NodeKind::Table:
    return va.same(a->axes[0], b->axes[0]) && a->table == b->table;
  case NodeKind::Concat:
    if (!va.same(a->axes[0], b->axes[0]) ||
        a->operands.size() != b->operands.size())
      return false;
    for (auto [x, y] : llvm::zip(a->operands, b->operands))
      if (!equal(x, y, depth + 1))
        return false;
    return true;
  case NodeKind::Gather:
    return va.same(a->axes[0], b->axes[0]) &&
           equal(a->operands[0], b->operands[0], depth + 1) &&
           equal(a->operands[1], b->operands[1], depth + 1);
  case NodeKind::Reduce: {
    if (a->reduce != b->reduce ||
        canonicalAxes(va, a->axes) != canonicalAxes(va, b->axes))
      return false;
    if (a->init.has_value() != b->init.has_value() ||
        (a->init && *a->init != *b->init &&
         !(std::isnan(*a->init) && std::isnan(*b->init))))
      return false;
    return equal(a->operands[0], b->operands[0], depth + 1);
  }
  case NodeKind::Elementwise: {
    if (a->op != b->op || a->operands.size() != b->operands.size())
      return false;
    if (a->op == K::Cast && (a->cast != b->cast || a->type != b->type))
      return false;
    if ((a->op == K::CmpF || a->op == K::CmpI) && a->predicate != b->predicate)
      return false;
    bool straight = true;
    for (auto [x, y] : llvm::zip(a->operands, b->operands))
      if (!(straight = equal(x, y, depth + 1)))
        break;
    if (straight)
      return true;
    return a->operands.size() == 2 && isCommutative(a) &&
           equal(a->operands[0], b->operands[1], depth + 1) &&
           equal(a->operands[1], b->operands[0], depth + 1);
  }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Linear combinations
//===----------------------------------------------------------------------===//

namespace {
struct LinearTerm {
  double coeff;
  Node *node;
};
/// constant + Σ coeff · node, equal nodes merged.
struct LinearForm {
  double constant = 0;
  SmallVector<LinearTerm, 4> terms;
};
} // namespace

static void addTerm(Equivalence &eq, LinearForm &form, double coeff,
                    Node *node) {
  for (LinearTerm &t : form.terms) {
    if (eq.equal(t.node, node)) {
      t.coeff += coeff;
      return;
    }
  }
  form.terms.push_back({coeff, node});
}

/// Flattens sums, differences, negations and constant scalings, and expands
/// log(a / b) = log a - log b and log(exp(e)) = e.
static void flattenLinear(ViewAnalysis &va, Equivalence &eq, Node *n,
                          double coeff, LinearForm &form, unsigned depth = 0) {
  n = stripWidening(n);
  if (n->kind == NodeKind::Constant) {
    form.constant += coeff * n->number;
    return;
  }
  if (depth < kMaxDepth && n->kind == NodeKind::Elementwise) {
    auto recurse = [&](Node *m, double c) {
      flattenLinear(va, eq, m, c, form, depth + 1);
    };
    switch (n->op) {
    case K::Add:
      recurse(n->operands[0], coeff);
      recurse(n->operands[1], coeff);
      return;
    case K::Sub:
      recurse(n->operands[0], coeff);
      recurse(n->operands[1], -coeff);
      return;
    case K::Neg:
      recurse(n->operands[0], -coeff);
      return;
    case K::Mul:
      if (std::optional<double> k = getConstant(n->operands[0])) {
        recurse(n->operands[1], coeff * *k);
        return;
      }
      if (std::optional<double> k = getConstant(n->operands[1])) {
        recurse(n->operands[0], coeff * *k);
        return;
      }
      break;
    case K::Div:
      if (std::optional<double> k = getConstant(n->operands[1]); k && *k != 0) {
        recurse(n->operands[0], coeff / *k);
        return;
      }
      break;
    case K::Log: {
      Node *arg = stripWidening(n->operands[0]);
      if (isOp(arg, K::Exp)) {
        recurse(arg->operands[0], coeff);
        return;
      }
      if (isOp(arg, K::Div) || isOp(arg, K::Mul)) {
        double sign = isOp(arg, K::Div) ? -1 : 1;
        recurse(va.makeElementwise(K::Log, n->type, {arg->operands[0]}), coeff);
        recurse(va.makeElementwise(K::Log, n->type, {arg->operands[1]}),
                sign * coeff);
        return;
      }
      if (std::optional<double> k = getConstant(arg); k && *k > 0) {
        form.constant += coeff * std::log(*k);
        return;
      }
      break;
    }
    default:
      break;
    }
  }
  addTerm(eq, form, coeff, n);
}

static LinearForm flattenLinear(ViewAnalysis &va, Node *n) {
  Equivalence eq(va);
  LinearForm form;
  flattenLinear(va, eq, n, 1.0, form);
  llvm::erase_if(form.terms, [](const LinearTerm &t) { return t.coeff == 0; });
  return form;
}

//===----------------------------------------------------------------------===//
// Monomials
//===----------------------------------------------------------------------===//

/// If `n` turns a predicate into 0/1 (uitofp or extui of an i1), returns it.
static Node *getPredicateOfNumber(Node *n) {
  if ((isCast(n, CastKind::UIToFP) || isCast(n, CastKind::ExtUI)) &&
      isI1(n->operands[0]))
    return n->operands[0];
  return nullptr;
}

/// A value-preserving conversion of an integer count (not of a predicate:
/// sitofp of an i1 true is -1).
static bool isCountConversion(Node *n) {
  if (!(isCast(n, CastKind::SIToFP) || isCast(n, CastKind::UIToFP) ||
        isCast(n, CastKind::ExtSI) || isCast(n, CastKind::ExtUI)))
    return false;
  return !isI1(n->operands[0]);
}

static void factorize(ViewAnalysis &va, Node *n, bool inverse, Monomial &m,
                      unsigned depth = 0);

/// gather(Π f, axis, idx) = Π gather(f, axis, idx): a gather distributes over
/// a product, and factors that do not depend on the gathered axis are read
/// unchanged.
static bool distributeGather(ViewAnalysis &va, Node *gather, bool inverse,
                             Monomial &m, unsigned depth) {
  Node *source = stripWidening(gather->operands[0]);
  Axis axis = gather->axes[0];
  Node *index = gather->operands[1];
  if (!va.dependsOn(source, axis)) {
    factorize(va, source, inverse, m, depth + 1);
    return true;
  }
  if (!(isOp(source, K::Mul) || isOp(source, K::Div) || isOp(source, K::Neg) ||
        isOp(source, K::Select)))
    return false;
  Monomial inner;
  factorize(va, source, false, inner, depth + 1);
  auto read = [&](Node *f) {
    return va.dependsOn(f, axis) ? va.makeGather(f, axis, index) : f;
  };
  if (inverse) {
    if (inner.coeff == 0 || !inner.masks.empty())
      return false;
    m.coeff /= inner.coeff;
  } else {
    m.coeff *= inner.coeff;
  }
  for (Node *f : inner.num)
    (inverse ? m.den : m.num).push_back(read(f));
  for (Node *f : inner.den)
    (inverse ? m.num : m.den).push_back(read(f));
  for (const Mask &mask : inner.masks)
    m.masks.push_back({read(mask.predicate), mask.keptWhen});
  return true;
}

/// Flattens products, quotients, negations and constant factors into `m`;
/// `select(p, e, 0)` and `e · uitofp(p)` become masks.
static void factorize(ViewAnalysis &va, Node *n, bool inverse, Monomial &m,
                      unsigned depth) {
  n = stripWidening(n);
  auto push = [&](Node *f) { (inverse ? m.den : m.num).push_back(f); };
  if (n->kind == NodeKind::Constant) {
    if (!inverse)
      m.coeff *= n->number;
    else if (n->number != 0)
      m.coeff /= n->number;
    else
      push(n);
    return;
  }
  if (depth >= kMaxDepth) {
    push(n);
    return;
  }
  if (n->kind == NodeKind::Gather) {
    if (!distributeGather(va, n, inverse, m, depth))
      push(n);
    return;
  }
  if (n->kind != NodeKind::Elementwise) {
    push(n);
    return;
  }
  switch (n->op) {
  case K::Add:
    if (isConstant(n->operands[0], 0)) {
      factorize(va, n->operands[1], inverse, m, depth + 1);
      return;
    }
    if (isConstant(n->operands[1], 0)) {
      factorize(va, n->operands[0], inverse, m, depth + 1);
      return;
    }
    break;
  case K::Neg:
    m.coeff = -m.coeff;
    factorize(va, n->operands[0], inverse, m, depth + 1);
    return;
  case K::Mul:
    factorize(va, n->operands[0], inverse, m, depth + 1);
    factorize(va, n->operands[1], inverse, m, depth + 1);
    return;
  case K::Div:
    factorize(va, n->operands[0], inverse, m, depth + 1);
    factorize(va, n->operands[1], !inverse, m, depth + 1);
    return;
  case K::Select:
    if (inverse)
      break;
    if (isConstant(n->operands[2], 0)) {
      m.masks.push_back({n->operands[0], true});
      factorize(va, n->operands[1], inverse, m, depth + 1);
      return;
    }
    if (isConstant(n->operands[1], 0)) {
      m.masks.push_back({n->operands[0], false});
      factorize(va, n->operands[2], inverse, m, depth + 1);
      return;
    }
    break;
  case K::Cast:
    if (Node *predicate = getPredicateOfNumber(n); predicate && !inverse) {
      m.masks.push_back({predicate, true});
      return;
    }
    if (isCountConversion(n)) {
      factorize(va, n->operands[0], inverse, m, depth + 1);
      return;
    }
    break;
  default:
    break;
  }
  push(n);
}

static Monomial factorize(ViewAnalysis &va, Node *n) {
  Monomial m;
  factorize(va, n, /*inverse=*/false, m);
  return m;
}

/// Splits conjunctions: a mask kept where `a and b` holds is two masks.
static SmallVector<Mask, 2> splitMasks(ArrayRef<Mask> masks) {
  SmallVector<Mask, 2> result;
  SmallVector<Mask, 4> worklist(masks.begin(), masks.end());
  while (!worklist.empty()) {
    Mask mask = worklist.pop_back_val();
    Node *p = mask.predicate;
    if (mask.keptWhen && isOp(p, K::And)) {
      worklist.push_back({p->operands[0], true});
      worklist.push_back({p->operands[1], true});
      continue;
    }
    if (!mask.keptWhen && isOp(p, K::Or)) {
      worklist.push_back({p->operands[0], false});
      worklist.push_back({p->operands[1], false});
      continue;
    }
    result.push_back(mask);
  }
  return result;
}

namespace {
/// Σ over `axes` of `body`, nested sums merged.
struct SumOver {
  SmallVector<Axis, 4> axes;
  Monomial body;
};
} // namespace

static bool isSum(Node *n) {
  return isReduce(stripWidening(n), ReduceKind::Sum);
}

/// Expands a sum reduction into Σ_axes monomial, merging at most
/// `maxMerges` nested sums whose axes nothing else in the product depends on
/// (Σ_a Σ_b e = Σ_{a,b} e). `merged` receives how many were merged.
static SumOver expandSum(ViewAnalysis &va, Node *reduce,
                         unsigned maxMerges = ~0u, unsigned *merged = nullptr) {
  reduce = stripWidening(reduce);
  SumOver s;
  s.axes = canonicalAxes(va, reduce->axes);
  s.body = factorize(va, reduce->operands[0]);
  unsigned count = 0;
  bool changed = true;
  while (changed && count < maxMerges) {
    changed = false;
    for (auto [i, f] : llvm::enumerate(s.body.num)) {
      Node *inner = stripWidening(f);
      if (!isReduce(inner, ReduceKind::Sum))
        continue;
      SmallVector<Axis, 4> innerAxes = canonicalAxes(va, inner->axes);
      bool independent = true;
      for (auto [j, g] : llvm::enumerate(s.body.num))
        if (j != i && dependsOnAny(va, g, innerAxes))
          independent = false;
      for (Node *g : s.body.den)
        independent &= !dependsOnAny(va, g, innerAxes);
      for (const Mask &mask : s.body.masks)
        independent &= !dependsOnAny(va, mask.predicate, innerAxes);
      if (!independent || llvm::any_of(innerAxes, [&](Axis a) {
            return llvm::is_contained(s.axes, a);
          }))
        continue;
      Monomial nested = factorize(va, inner->operands[0]);
      s.body.num.erase(s.body.num.begin() + i);
      s.body.coeff *= nested.coeff;
      s.body.num.append(nested.num.begin(), nested.num.end());
      s.body.den.append(nested.den.begin(), nested.den.end());
      s.body.masks.append(nested.masks.begin(), nested.masks.end());
      s.axes.append(innerAxes.begin(), innerAxes.end());
      s.axes = canonicalAxes(va, s.axes);
      changed = true;
      ++count;
      break;
    }
  }
  if (merged)
    *merged = count;
  return s;
}

/// Moves the factors of a sum's body that do not depend on the summed axes
/// (and its constant) out of the sum.
static Monomial pullOut(ViewAnalysis &va, SumOver &s) {
  Monomial outer;
  outer.coeff = s.body.coeff;
  s.body.coeff = 1;
  auto move = [&](SmallVector<Node *, 4> &from, SmallVector<Node *, 4> &to) {
    SmallVector<Node *, 4> kept;
    for (Node *f : from)
      (dependsOnAny(va, f, s.axes) ? kept : to).push_back(f);
    from = kept;
  };
  move(s.body.num, outer.num);
  move(s.body.den, outer.den);
  return outer;
}

//===----------------------------------------------------------------------===//
// Predicates
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

/// A one-hot mask along `axis`: kept where index(axis) == idx. Returns idx.
static Node *matchOneHot(ViewAnalysis &va, const Mask &mask, Axis axis) {
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
    if (t.coeff != 1 || x)
      return M::failure("the exp argument is not x - max");
    x = t.node;
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
    if (t.coeff == 1 && !sawInput && eq.equal(t.node, lse->input)) {
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

//===----------------------------------------------------------------------===//
// Target pick, class weight
//===----------------------------------------------------------------------===//

Match<TargetPick> recognize::matchTargetPick(ViewAnalysis &va, Node *node) {
  using M = Match<TargetPick>;
  Node *n = stripFloatCasts(node);
  if (n->kind == NodeKind::Gather) {
    Match<LogSoftmax> ls = matchLogSoftmax(va, n->operands[0]);
    if (!ls)
      return M::failure("the pick reads a value that is not a log-softmax: " +
                        ls.getReason());
    if (!va.same(ls->axis, n->axes[0]))
      return M::failure(
          "the pick reads along another axis than the log-softmax's");
    return TargetPick{*ls, stripIndexCasts(n->operands[1])};
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
    std::optional<LogSoftmax> ls;
    std::string reason = "no factors";
    SmallVector<Node *, 2> others;
    for (Node *f : body.num) {
      Match<LogSoftmax> m = matchLogSoftmax(va, f);
      if (!m) {
        reason = m.getReason();
        others.push_back(f);
        continue;
      }
      if (ls)
        return M::failure("the sum multiplies two log-softmaxes");
      ls = *m;
    }
    if (!ls)
      return M::failure("the sum does not multiply a log-softmax: " + reason);
    if (!va.same(ls->axis, c))
      return M::failure(
          "the pick runs along another axis than the log-softmax's");
    if (masks.size() == 1 && others.empty()) {
      Node *index = matchOneHot(va, masks[0], c);
      if (!index)
        return M::failure("the sum is not of a log-softmax times a one-hot "
                          "of the class axis");
      return TargetPick{*ls, index};
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
    if (!pick.probabilities)
      return M::failure("the sum multiplies the log-softmax by class weights "
                        "only");
    return pick;
  }
  if (isOp(n, K::Add) || isOp(n, K::Sub) || isOp(n, K::Neg)) {
    // x[t] - lse (or lse - x[t]): a gather of the raw logits combined with
    // terms constant along the gathered axis is the gather of
    // x + those terms / coefficient.
    LinearForm form = flattenLinear(va, n);
    std::optional<size_t> gathered;
    for (auto [i, t] : llvm::enumerate(form.terms)) {
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
// Operands of the raised op
//===----------------------------------------------------------------------===//

namespace {
/// What the forward and backward matchers collect before the operands and
/// attributes are resolved.
struct Pieces {
  LogSoftmax logSoftmax;
  Node *index = nullptr;            // the class index used by the pick
  Node *probabilities = nullptr;    // or the probability targets
  SmallVector<IgnoreMask, 2> masks; // all masks of ignored targets
  std::optional<ClassWeight> weight;
  double coeff = 1.0; // the pick's own coefficient
};

/// Resolved operands and the logits' layout.
struct Operands {
  Value logits, target, weight;
  Node *targetNode = nullptr;
  std::optional<int64_t> ignoreIndex;
  int64_t classDim = 0;
  SmallVector<Axis, 4> logitsDims;
  /// The non-unit element (batch) axes, canonical.
  SmallVector<Axis, 4> batchAxes;
  /// The static number of elements, if known.
  std::optional<int64_t> numElements;
};
} // namespace

static std::string typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// The narrowest f16/bf16/f32 tensor value a node stands for, looking
/// through widening casts: the logits (or probabilities) as they come
/// before the chain widens them.
static Value findFloatTensor(Node *n, std::string &reason) {
  Value found;
  reason = "the logits are computed inside the chain, not a tensor value";
  while (true) {
    if (n->origin) {
      auto type = dyn_cast<RankedTensorType>(n->origin.getType());
      if (type && isSupportedFloat(type.getElementType()))
        found = n->origin;
      else if (type && isa<FloatType>(type.getElementType()) && !found)
        reason = "logits of element type " +
                 typeToString(type.getElementType()) +
                 " are not supported (f16, bf16 or f32)";
    }
    if (!isCast(n, CastKind::ExtF))
      break;
    n = n->operands[0];
  }
  return found;
}

/// Checks that `dims` are the logits' dimensions, without the class
/// dimension unless `withClass`.
static bool alignsWithLogits(ViewAnalysis &va, const Operands &ops,
                             ArrayRef<Axis> dims, bool withClass = false) {
  SmallVector<Axis, 4> expected;
  for (auto [k, a] : llvm::enumerate(ops.logitsDims))
    if (withClass || static_cast<int64_t>(k) != ops.classDim)
      expected.push_back(a);
  if (dims.size() != expected.size())
    return false;
  for (auto [a, b] : llvm::zip(dims, expected)) {
    if ((a == kUnitAxis) != (b == kUnitAxis))
      return false;
    if (a != kUnitAxis && !va.same(a, b))
      return false;
  }
  return true;
}

/// Removes a safe-index select: `select(t != ignore, t, 0)` is `t` where the
/// element is kept. Returns the index unchanged when it is no select;
/// `ignore` receives the mask the select tests.
static Match<Node *> stripSafeIndex(ViewAnalysis &va, Node *idx,
                                    std::optional<IgnoreMask> &ignore) {
  idx = stripIndexCasts(idx);
  if (!isOp(idx, K::Select))
    return idx;
  Node *target;
  bool keptWhen;
  if (isConstant(idx->operands[2], 0)) {
    target = idx->operands[1];
    keptWhen = true;
  } else if (isConstant(idx->operands[1], 0)) {
    target = idx->operands[2];
    keptWhen = false;
  } else {
    return Match<Node *>::failure(
        "the class index is a select that is not a safe target");
  }
  Match<IgnoreMask> safe = matchIgnoreMask(va, {idx->operands[0], keptWhen});
  if (!safe)
    return Match<Node *>::failure(
        "the class index is a select that is not a safe target: " +
        safe.getReason());
  target = stripIndexCasts(target);
  if (!Equivalence(va).equal(target, stripIndexCasts(safe->target)))
    return Match<Node *>::failure("the safe target index tests another target");
  ignore = *safe;
  return target;
}

static Match<Operands> resolveOperands(ViewAnalysis &va, const Pieces &p) {
  using M = Match<Operands>;
  Operands ops;
  Equivalence eq(va);

  // Logits and the class dimension.
  std::string reason;
  ops.logits = findFloatTensor(p.logSoftmax.input, reason);
  if (!ops.logits)
    return M::failure(reason);
  ops.logitsDims = va.get(ops.logits).dims;
  std::optional<int64_t> classDim;
  for (auto [k, a] : llvm::enumerate(ops.logitsDims)) {
    if (a != kUnitAxis && va.same(a, p.logSoftmax.axis)) {
      if (classDim)
        return M::failure("the class axis appears twice in the logits");
      classDim = k;
    }
  }
  if (!classDim)
    return M::failure("the class axis is not a dimension of the logits");
  ops.classDim = *classDim;
  auto logitsType = cast<RankedTensorType>(ops.logits.getType());
  int64_t numElements = 1;
  bool staticCount = true;
  for (auto [k, a] : llvm::enumerate(ops.logitsDims)) {
    if (static_cast<int64_t>(k) == ops.classDim)
      continue;
    if (a != kUnitAxis)
      ops.batchAxes.push_back(a);
    int64_t size = logitsType.getDimSize(k);
    if (ShapedType::isDynamic(size))
      staticCount = false;
    else
      numElements *= size;
  }
  ops.batchAxes = canonicalAxes(va, ops.batchAxes);
  if (staticCount)
    ops.numElements = numElements;

  // Ignore masks: one ignore index, one target.
  for (const IgnoreMask &mask : p.masks) {
    if (ops.ignoreIndex && *ops.ignoreIndex != mask.ignoreIndex)
      return M::failure("the masks ignore different target values");
    if (!eq.equal(mask.target, p.masks.front().target))
      return M::failure("the masks test different targets");
    ops.ignoreIndex = mask.ignoreIndex;
  }

  // Class weights, before the targets: probability targets read them along
  // the class axis.
  std::optional<IgnoreMask> weightSafe;
  Node *weightIndex = nullptr;
  if (p.weight) {
    ops.weight = p.weight->weight->origin;
    if (p.weight->index) {
      Match<Node *> index = stripSafeIndex(va, p.weight->index, weightSafe);
      if (!index)
        return M::failure(index);
      weightIndex = *index;
    } else {
      View w = va.get(ops.weight);
      if (w.dims.size() != 1 || w.dims[0] == kUnitAxis ||
          !va.same(w.dims[0], p.logSoftmax.axis))
        return M::failure("the class weight is not read along the class "
                          "axis");
    }
    int64_t numClasses = logitsType.getDimSize(ops.classDim);
    int64_t numWeights =
        cast<RankedTensorType>(ops.weight.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(numClasses) &&
        !ShapedType::isDynamic(numWeights) && numClasses != numWeights)
      return M::failure("the class weights do not have one entry per class");
  }

  if (p.probabilities) {
    if (!p.masks.empty())
      return M::failure("probability targets with an ignore mask");
    ops.target = findFloatTensor(p.probabilities, reason);
    if (!ops.target)
      return M::failure("the probabilities are not an f16, bf16 or f32 "
                        "tensor value");
    ops.targetNode = p.probabilities;
    if (!alignsWithLogits(va, ops, va.get(ops.target).dims,
                          /*withClass=*/true))
      return M::failure("the probabilities are not shaped like the logits");
    return ops;
  }

  // The class index: the target, or a safe index select(t != ignore, t, 0)
  // whose ignored elements are masked.
  std::optional<IgnoreMask> safe;
  Match<Node *> target = stripSafeIndex(va, p.index, safe);
  if (!target)
    return M::failure(target);
  for (const std::optional<IgnoreMask> &s : {safe, weightSafe})
    if (s && (!ops.ignoreIndex || *ops.ignoreIndex != s->ignoreIndex))
      return M::failure("a safe target index without a matching ignore mask");
  ops.targetNode = *target;
  if (weightIndex && !eq.equal(weightIndex, ops.targetNode))
    return M::failure("the class weight is read at another index than the "
                      "target");
  if (!p.masks.empty() &&
      !eq.equal(stripIndexCasts(p.masks.front().target), ops.targetNode))
    return M::failure("the ignore mask tests another value than the target "
                      "the pick reads");
  Node *t = ops.targetNode;
  if (!t->origin || !isa<RankedTensorType>(t->origin.getType()))
    return M::failure("the target is computed inside the chain, not a "
                      "tensor value");
  ops.target = t->origin;
  Type targetElement = getElementTypeOrSelf(ops.target.getType());
  if (!targetElement.isInteger(32) && !targetElement.isInteger(64))
    return M::failure("targets must be i32 or i64 class indices");
  if (!alignsWithLogits(va, ops, va.get(ops.target).dims))
    return M::failure("the target's dimensions are not the logits' "
                      "dimensions without the class axis");
  return ops;
}

/// Checks that `den` is the divisor of PyTorch's mean: the sum over every
/// element of the kept weights (or the kept count without weights), also
/// written as the element count minus the count of ignored elements.
static Match<bool> matchTotalWeight(ViewAnalysis &va, Node *den,
                                    const Pieces &p, const Operands &ops) {
  using M = Match<bool>;
  Monomial m = factorize(va, den);
  SumOver s;
  bool complement = false;
  if (m.coeff == 1 && m.num.size() == 1 && m.den.empty() && m.masks.empty() &&
      isSum(m.num[0])) {
    s = expandSum(va, m.num[0]);
  } else if (m.coeff == 1 && m.num.size() == 1 && m.den.empty() &&
             m.masks.empty() && ops.numElements) {
    // N - Σ ignored.
    LinearForm form = flattenLinear(va, m.num[0]);
    if (form.terms.size() != 1 || form.terms[0].coeff != -1 ||
        form.constant != static_cast<double>(*ops.numElements) ||
        !isSum(form.terms[0].node))
      return M::failure("the mean divides by a value that is not a sum over "
                        "the elements");
    s = expandSum(va, form.terms[0].node);
    complement = true;
  } else if (ops.batchAxes.empty()) {
    s.body = m; // a single element: the "sum" is the term itself
  } else {
    return M::failure("the mean divides by a value that is not a sum over "
                      "the elements");
  }
  if (s.axes != ops.batchAxes)
    return M::failure("the mean's divisor does not sum over every element");
  if (s.body.coeff != 1 || !s.body.den.empty())
    return M::failure("the mean's divisor is not a count or a sum of weights");
  Equivalence eq(va);
  SmallVector<Mask, 2> masks = splitMasks(s.body.masks);
  if (complement) {
    // N - Σ [t == ignore] = Σ [t != ignore].
    if (masks.size() != 1 || !s.body.num.empty())
      return M::failure("the mean's divisor is not the element count minus "
                        "the ignored count");
    masks[0].keptWhen = !masks[0].keptWhen;
  }
  // Masks: the same ignore mask as the loss (or none when it has none).
  for (const Mask &mask : masks) {
    Match<IgnoreMask> ignore = matchIgnoreMask(va, mask);
    if (!ignore)
      return M::failure("the mean's divisor counts with a mask that is not "
                        "an ignore mask: " +
                        ignore.getReason());
    if (!ops.ignoreIndex || ignore->ignoreIndex != *ops.ignoreIndex ||
        !eq.equal(stripIndexCasts(ignore->target), ops.targetNode))
      return M::failure("the mean divides by a count of other elements than "
                        "the loss keeps");
  }
  if (masks.empty() && ops.ignoreIndex)
    return M::failure("the mean divides by the count of all elements, not of "
                      "the kept ones");
  // Weights: the same class weight as the loss.
  if (s.body.num.size() > 1)
    return M::failure("the mean's divisor is not a count or a sum of weights");
  if (s.body.num.empty()) {
    if (p.weight)
      return M::failure("a weighted loss divided by a count, not by the sum "
                        "of the kept weights");
    return true;
  }
  Match<ClassWeight> w = matchClassWeight(va, s.body.num[0]);
  if (!w)
    return M::failure("the mean's divisor sums something other than class "
                      "weights");
  if (!p.weight || w->weight->origin != ops.weight)
    return M::failure("the mean's divisor sums other weights than the loss "
                      "uses");
  if (!w->index)
    return M::failure("the mean's divisor sums the weights of every class");
  std::optional<IgnoreMask> safe;
  Match<Node *> index = stripSafeIndex(va, w->index, safe);
  if (!index || !eq.equal(*index, ops.targetNode))
    return M::failure("the mean's divisor reads the weights at another index");
  return true;
}

//===----------------------------------------------------------------------===//
// The forward chain
//===----------------------------------------------------------------------===//

/// Classifies the factors of a per-element loss: one target pick, at most
/// one class weight, ignore masks.
static Match<Pieces> classifyLossFactors(ViewAnalysis &va, const Monomial &m) {
  using M = Match<Pieces>;
  Pieces p;
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
  if (!others.empty())
    return M::failure("unexpected factor in the per-element loss");
  if (!m.den.empty())
    return M::failure("the per-element loss is divided by a value that "
                      "depends on the element");
  for (const Mask &mask : splitMasks(m.masks)) {
    Match<IgnoreMask> ignore = matchIgnoreMask(va, mask);
    if (!ignore)
      return M::failure(ignore);
    p.masks.push_back(*ignore);
  }
  p.logSoftmax = pick->logSoftmax;
  p.index = pick->index;
  p.probabilities = pick->probabilities;
  p.coeff = pick->coeff;
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
        if (merges == 0 || !StringRef(m.getReason()).starts_with("no target"))
          reason = m.getReason();
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
    return M::failure(reason);
  outer = Monomial();
  outer.coeff = top.coeff;
  outer.den = top.den;
  summed.clear();
  return m;
}

/// Decides the reduction of a loss: `none` for a per-element value shaped
/// like the logits without the class axis; `sum` for the sum over every
/// element axis; `mean` for that sum divided by the kept count, the kept
/// weight or, without a mask, the constant element count (also per element
/// before the sum). `outer` holds the factors outside the sum, `coeff` the
/// pick's own sign.
static Match<Reduction> matchReduction(ViewAnalysis &va, bool reduced,
                                       const Monomial &outer, double coeff,
                                       ArrayRef<Axis> summed,
                                       ArrayRef<Axis> rootDims,
                                       RankedTensorType rootType,
                                       const Pieces &p, const Operands &ops) {
  using M = Match<Reduction>;
  if (!outer.num.empty())
    return M::failure("the loss is multiplied by a value that is not a "
                      "constant");
  double k = outer.coeff * coeff;

  if (!reduced) {
    if (!outer.den.empty())
      return M::failure("the per-element loss is divided by a value");
    if (!alignsWithLogits(va, ops, rootDims))
      return M::failure("the per-element loss is not shaped like the "
                        "logits without the class axis");
    if (!approxEqual(k, -1))
      return M::failure("the loss is scaled by " + formatNumber(-k) +
                        ", not by 1");
    return Reduction::none;
  }

  if (rootType.getRank() != 0)
    return M::failure("a reduced loss that is not a 0-d tensor");
  if (summed != ArrayRef<Axis>(ops.batchAxes))
    return M::failure("the loss is not summed over every element axis");
  if (outer.den.empty()) {
    if (approxEqual(k, -1))
      return Reduction::sum;
    if (ops.numElements && *ops.numElements > 0 &&
        approxEqual(k, -1.0 / *ops.numElements)) {
      if (ops.ignoreIndex)
        return M::failure("the mean divides by the element count, not by "
                          "the count of kept targets");
      if (ops.weight && !p.probabilities)
        return M::failure("a weighted mean divides by the element count, "
                          "not by the sum of the kept weights");
      return Reduction::mean;
    }
    return M::failure("the loss is scaled by " + formatNumber(-k) +
                      ", which is neither 1 (sum) nor one over the element "
                      "count (mean)");
  }
  if (outer.den.size() != 1)
    return M::failure("the loss is divided by several values");
  if (!approxEqual(k, -1))
    return M::failure("the mean is scaled by " + formatNumber(-k));
  if (p.probabilities)
    return M::failure("a mean of probability-target losses divides by "
                      "something other than the element count");
  Match<bool> total = matchTotalWeight(va, outer.den[0], p, ops);
  if (!total)
    return M::failure(total);
  return Reduction::mean;
}

Match<RaisedOp> recognize::matchCrossEntropy(ViewAnalysis &va, Value root) {
  using M = Match<RaisedOp>;
  auto rootType = dyn_cast<RankedTensorType>(root.getType());
  if (!rootType || !isa<FloatType>(rootType.getElementType()))
    return M::failure("not a float tensor");
  View view = va.get(root);
  Node *r = stripFloatCasts(view.node);
  Monomial top = factorize(va, r);
  bool reduced = va.freeAxes(r).empty();

  Monomial outer;
  SmallVector<Axis, 4> summed;
  std::optional<Pieces> pieces;
  if (reduced) {
    Match<Pieces> m = findSummedLoss(va, top, outer, summed);
    if (!m)
      return M::failure(m);
    pieces = *m;
    if (!outer.masks.empty())
      return M::nearMiss("the total loss is masked");
  } else {
    Monomial body = top;
    outer.coeff = body.coeff;
    body.coeff = 1;
    Match<Pieces> m = classifyLossFactors(va, body);
    if (!m)
      return M::failure(m);
    pieces = *m;
  }

  // From here on the value contains a cross-entropy: every failure is a
  // near miss.
  Match<Operands> ops = resolveOperands(va, *pieces);
  if (!ops)
    return M::nearMiss(ops.getReason());
  RaisedOp raised;
  raised.logits = ops->logits;
  raised.target = ops->target;
  raised.weight = ops->weight;
  raised.ignoreIndex = ops->ignoreIndex;
  raised.probabilityTargets = pieces->probabilities != nullptr;
  raised.axis = ops->classDim;

  if (!isSupportedFloat(rootType.getElementType()))
    return M::nearMiss("a loss of element type " +
                       typeToString(rootType.getElementType()) +
                       " (the op computes f16, bf16 or f32)");
  Match<Reduction> reduction =
      matchReduction(va, reduced, outer, pieces->coeff, summed, view.dims,
                     rootType, *pieces, *ops);
  if (!reduction)
    return M::nearMiss(reduction.getReason());
  raised.reduction = *reduction;
  return raised;
}

//===----------------------------------------------------------------------===//
// The backward chain
//===----------------------------------------------------------------------===//

namespace {
/// exp(logp) · Σ_c g: the softmax part of the log-softmax backward.
struct SoftmaxTerm {
  LogSoftmax logSoftmax;
  Node *sum; // Σ_c g
  double coeff;
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
    if (isOp(s, K::Exp) && !exp)
      exp = s;
    else if (isReduce(s, ReduceKind::Sum) && !sum)
      sum = s;
  }
  if (!exp || !sum)
    return M::failure("not a product of a softmax and a sum");
  Node *logits = exp->operands[0];
  if (!m.den.empty())
    logits = va.makeElementwise(
        K::Sub, logits->type,
        {logits, va.makeElementwise(K::Log, m.den[0]->type, {m.den[0]})});
  Match<LogSoftmax> ls = matchLogSoftmax(va, logits);
  if (!ls)
    return M::failure("the exp is not of a log-softmax: " + ls.getReason());
  SmallVector<Axis, 4> axes = canonicalAxes(va, sum->axes);
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
    am.push_back(m.keptWhen ? m.predicate
                            : va.makeElementwise(K::Not, m.predicate->type,
                                                 {m.predicate}));
  for (const Mask &m : b.masks)
    bm.push_back(m.keptWhen ? m.predicate
                            : va.makeElementwise(K::Not, m.predicate->type,
                                                 {m.predicate}));
  return sameSet(a.num, b.num) && sameSet(a.den, b.den) && sameSet(am, bm);
}

namespace {
struct LogSoftmaxBackward {
  LogSoftmax logSoftmax;
  /// The incoming gradient g of `g - exp(logp) · Σ_c g`, as a monomial.
  Monomial g;
};

struct NllBackward {
  Pieces pieces;
  /// The grad_output factor, or null when the chain scales by a constant.
  Node *gradOutput = nullptr;
};
} // namespace

/// Matches the log-softmax backward `g - exp(logp) · Σ_c g` (the softmax may
/// also be written exp(e) / Σ exp(e)); returns the log-softmax and g.
static Match<LogSoftmaxBackward> matchLogSoftmaxBackward(ViewAnalysis &va,
                                                         Node *root) {
  using M = Match<LogSoftmaxBackward>;
  LinearForm form = flattenLinear(va, root);
  if (form.constant != 0 || form.terms.size() != 2)
    return M::failure("not of the form g - softmax · Σ g");
  std::optional<SoftmaxTerm> softmax;
  const LinearTerm *gTerm = nullptr;
  std::string reason;
  for (auto [i, t] : llvm::enumerate(form.terms)) {
    Match<SoftmaxTerm> s = matchSoftmaxTerm(va, t.node, t.coeff);
    if (!s) {
      reason = s.getReason();
      continue;
    }
    if (softmax)
      return M::failure("two softmax terms");
    softmax = *s;
    gTerm = &form.terms[1 - i];
  }
  if (!softmax)
    return M::failure(reason);
  Monomial g = factorize(va, gTerm->node);
  g.coeff *= gTerm->coeff;
  Monomial summed = factorize(va, softmax->sum->operands[0]);
  summed.coeff *= -softmax->coeff;
  if (!sameMonomial(va, g, summed))
    return M::nearMiss("the softmax is not scaled by the sum of the same "
                       "gradient (g - softmax · Σ_c g)");
  return LogSoftmaxBackward{softmax->logSoftmax, g};
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

Match<RaisedOp> recognize::matchCrossEntropyGrad(ViewAnalysis &va, Value root) {
  using M = Match<RaisedOp>;
  auto rootType = dyn_cast<RankedTensorType>(root.getType());
  if (!rootType || !isa<FloatType>(rootType.getElementType()))
    return M::failure("not a float tensor");
  View view = va.get(root);
  Match<LogSoftmaxBackward> backward =
      matchLogSoftmaxBackward(va, stripFloatCasts(view.node));
  if (!backward)
    return backward.isNearMiss() ? M::nearMiss(backward.getReason())
                                 : M::failure(backward);
  // From here on the value contains a log-softmax backward: every failure is
  // a near miss.
  const Monomial &g = backward->g;
  Match<NllBackward> nll = matchNllBackward(va, g, backward->logSoftmax);
  if (!nll)
    return M::nearMiss(nll.getReason());
  const Pieces &p = nll->pieces;
  Node *gradOutput = nll->gradOutput;

  Match<Operands> ops = resolveOperands(va, p);
  if (!ops)
    return M::nearMiss(ops.getReason());
  RaisedOp raised;
  raised.logits = ops->logits;
  raised.target = ops->target;
  raised.weight = ops->weight;
  raised.ignoreIndex = ops->ignoreIndex;
  raised.axis = ops->classDim;
  if (rootType != ops->logits.getType())
    return M::nearMiss("the gradient's type differs from the logits' type");

  // Without a grad_output factor the chain is the gradient of the loss
  // itself (loss.backward() seeds it with a constant): the op gets that
  // constant as grad_output.
  double seed = -g.coeff;
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
        cast<RankedTensorType>(raised.gradOutput.getType()).getRank() != 0)
      return M::nearMiss("a reduced grad_output that is not a 0-d tensor");
    if (g.den.empty()) {
      raised.reduction = Reduction::sum;
      return raised;
    }
    if (g.den.size() != 1)
      return M::nearMiss("the nll backward is divided by several values");
    Match<bool> total = matchTotalWeight(va, g.den[0], p, *ops);
    if (!total)
      return M::nearMiss(total.getReason());
    raised.reduction = Reduction::mean;
    return raised;
  }
  if (!g.den.empty())
    return M::nearMiss("a per-element grad_output is divided by a value");
  if (!alignsWithLogits(va, *ops, va.get(raised.gradOutput).dims))
    return M::nearMiss("grad_output is not shaped like the per-element loss");
  raised.reduction = Reduction::none;
  return raised;
}
