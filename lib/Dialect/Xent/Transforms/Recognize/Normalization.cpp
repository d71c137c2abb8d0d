//===- Normalization.cpp - Normal forms of view expressions ---------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

/// How deep the normalization helpers look into an expression.
static constexpr unsigned kMaxDepth = 64;

//===----------------------------------------------------------------------===//
// Node helpers
//===----------------------------------------------------------------------===//

bool recognize::detail::isOp(Node *n, K kind) {
  return n->kind == NodeKind::Elementwise && n->op == kind;
}
bool recognize::detail::isCast(Node *n, CastKind cast) {
  return isOp(n, K::Cast) && n->cast == cast;
}
bool recognize::detail::isReduce(Node *n, ReduceKind kind) {
  return n->kind == NodeKind::Reduce && n->reduce == kind;
}

Node *recognize::detail::stripWidening(Node *n) {
  while (isCast(n, CastKind::ExtF))
    n = n->operands[0];
  return n;
}

Node *recognize::detail::stripFloatCasts(Node *n) {
  while (isCast(n, CastKind::ExtF) || isCast(n, CastKind::TruncF))
    n = n->operands[0];
  return n;
}

Match<Root> recognize::detail::matchRoot(ViewAnalysis &va, Value root) {
  auto type = dyn_cast<RankedTensorType>(root.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return Match<Root>::failure("not a float tensor");
  View view = va.get(root);
  return Root{type, view, stripFloatCasts(view.node)};
}

Node *recognize::detail::stripIndexCasts(Node *n) {
  // trunci: a gather index narrowed to i32 (TOSA) keeps every class index.
  while (isCast(n, CastKind::ExtSI) || isCast(n, CastKind::IndexCast) ||
         isCast(n, CastKind::SIToFP) || isCast(n, CastKind::TruncI))
    n = n->operands[0];
  return n;
}

std::optional<double> recognize::detail::getConstant(Node *n) {
  while (isOp(n, K::Cast))
    n = n->operands[0];
  if (n->kind == NodeKind::Constant)
    return n->number;
  return std::nullopt;
}
bool recognize::detail::isConstant(Node *n, double value) {
  std::optional<double> v = getConstant(n);
  return v && *v == value;
}

static bool isI1(Node *n) { return n->type && n->type.isInteger(1); }

bool recognize::detail::approxEqual(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
}

double recognize::detail::roundToDecimal(double v) {
  if (v == 0 || !std::isfinite(v))
    return v;
  double scale = std::pow(10.0, 5 - std::floor(std::log10(std::abs(v))));
  double rounded = std::round(v * scale) / scale;
  // Only within two f32 roundings: another value is what the chain computes.
  return std::abs(rounded - v) <= 0x1p-22 * std::abs(v) ? rounded : v;
}

bool recognize::detail::isSupportedFloat(Type t) {
  return t.isF32() || t.isF16() || t.isBF16();
}

std::string recognize::detail::formatNumber(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%g", v);
  return s;
}

std::string recognize::detail::typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

SmallVector<Axis, 4> recognize::detail::canonicalAxes(ViewAnalysis &va,
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

bool recognize::detail::Equivalence::equal(Node *a, Node *b, unsigned depth) {
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
static void flattenLinearInto(ViewAnalysis &va, Equivalence &eq, Node *n,
                              double coeff, LinearForm &form,
                              unsigned depth = 0) {
  n = stripWidening(n);
  if (n->kind == NodeKind::Constant) {
    form.constant += coeff * n->number;
    return;
  }
  if (depth < kMaxDepth && n->kind == NodeKind::Elementwise) {
    auto recurse = [&](Node *m, double c) {
      flattenLinearInto(va, eq, m, c, form, depth + 1);
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

LinearForm recognize::detail::flattenLinear(ViewAnalysis &va, Node *n) {
  Equivalence eq(va);
  LinearForm form;
  flattenLinearInto(va, eq, n, 1.0, form);
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

static void factorizeInto(ViewAnalysis &va, Node *n, bool inverse, Monomial &m,
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
    factorizeInto(va, source, inverse, m, depth + 1);
    return true;
  }
  if (!(isOp(source, K::Mul) || isOp(source, K::Div) || isOp(source, K::Neg) ||
        isOp(source, K::Select)))
    return false;
  Monomial inner;
  factorizeInto(va, source, false, inner, depth + 1);
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
static void factorizeInto(ViewAnalysis &va, Node *n, bool inverse, Monomial &m,
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
      factorizeInto(va, n->operands[1], inverse, m, depth + 1);
      return;
    }
    if (isConstant(n->operands[1], 0)) {
      factorizeInto(va, n->operands[0], inverse, m, depth + 1);
      return;
    }
    break;
  case K::Neg:
    m.coeff = -m.coeff;
    factorizeInto(va, n->operands[0], inverse, m, depth + 1);
    return;
  case K::Mul:
    factorizeInto(va, n->operands[0], inverse, m, depth + 1);
    factorizeInto(va, n->operands[1], inverse, m, depth + 1);
    return;
  case K::Div:
    factorizeInto(va, n->operands[0], inverse, m, depth + 1);
    factorizeInto(va, n->operands[1], !inverse, m, depth + 1);
    return;
  case K::Select:
    if (inverse)
      break;
    if (isConstant(n->operands[2], 0)) {
      m.masks.push_back({n->operands[0], true});
      factorizeInto(va, n->operands[1], inverse, m, depth + 1);
      return;
    }
    if (isConstant(n->operands[1], 0)) {
      m.masks.push_back({n->operands[0], false});
      factorizeInto(va, n->operands[2], inverse, m, depth + 1);
      return;
    }
    break;
  case K::Cast:
    if (Node *predicate = getPredicateOfNumber(n); predicate && !inverse) {
      m.masks.push_back({predicate, true});
      return;
    }
    if (isCountConversion(n)) {
      factorizeInto(va, n->operands[0], inverse, m, depth + 1);
      return;
    }
    break;
  default:
    break;
  }
  push(n);
}

Monomial recognize::detail::factorize(ViewAnalysis &va, Node *n) {
  Monomial m;
  factorizeInto(va, n, /*inverse=*/false, m);
  return m;
}

SmallVector<Mask, 2> recognize::detail::splitMasks(ArrayRef<Mask> masks) {
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

bool recognize::detail::isSum(Node *n) {
  return isReduce(stripWidening(n), ReduceKind::Sum);
}

SumOver recognize::detail::expandSum(ViewAnalysis &va, Node *reduce,
                                     unsigned maxMerges, unsigned *merged) {
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

Monomial recognize::detail::pullOut(ViewAnalysis &va, SumOver &s) {
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
