//===- Gather.cpp - Guarded gathers and index wraps -----------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// JAX's `take_along_axis` (and so optax's integer-label loss) does not read
// `x[t]` directly: stablehlo's gather is lowered behind guards that give it
// numpy's conventions,
//
//   w    = t < 0 ? t + C : t                       (the negative-index wrap)
//   pick = 0 <= w && w <= C - 1 ? x[clamp(w, 0, C - 1)] : NaN
//
// The pick is what the op computes for a class index w: x[w] in [0, C), NaN
// outside (its contract for a target that is neither in range nor the
// ignore index). So a guarded gather is the plain gather at w, and the wrap
// stays what it is, a computation of the targets before the op.
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

/// The static size of logical axis `axis` in the value `n` stands for.
static std::optional<int64_t> axisSize(ViewAnalysis &va, Node *n, Axis axis) {
  if (!n->origin)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(n->origin.getType());
  if (!type)
    return std::nullopt;
  View view = va.get(n->origin);
  for (auto [k, a] : llvm::enumerate(view.dims))
    if (a != kUnitAxis && va.same(a, axis) && !type.isDynamicDim(k))
      return type.getDimSize(k);
  return std::nullopt;
}

/// `min(max(a, 0), hi)` or `max(min(a, hi), 0)`, operands in either order:
/// returns `a`.
static Node *matchClamp(Node *n, int64_t hi) {
  auto bound = [](Node *op, ElementwiseKind kind, double value) -> Node * {
    if (!isOp(op, kind))
      return nullptr;
    if (isConstant(op->operands[1], value))
      return op->operands[0];
    if (isConstant(op->operands[0], value))
      return op->operands[1];
    return nullptr;
  };
  if (Node *inner = bound(n, K::Min, hi))
    return bound(inner, K::Max, 0);
  if (Node *inner = bound(n, K::Max, 0))
    return bound(inner, K::Min, hi);
  return nullptr;
}

namespace {
/// What the conjuncts of an in-bounds test establish about one value.
struct Bounds {
  Node *value = nullptr;
  bool lower = false; // value >= 0
  bool upper = false; // value <= C - 1
};
} // namespace

/// The predicate `b pred' a` equivalent to `a pred b`.
static arith::CmpIPredicate swapOperands(arith::CmpIPredicate pred) {
  using P = arith::CmpIPredicate;
  switch (pred) {
  case P::slt:
    return P::sgt;
  case P::sgt:
    return P::slt;
  case P::sle:
    return P::sge;
  case P::sge:
    return P::sle;
  case P::ult:
    return P::ugt;
  case P::ugt:
    return P::ult;
  case P::ule:
    return P::uge;
  case P::uge:
    return P::ule;
  default:
    return pred; // eq, ne
  }
}

/// Adds the bound the comparison `p` states about a value to `bounds`;
/// false when `p` is no such bound or bounds another value.
static bool addBound(ViewAnalysis &va, Node *p, int64_t numClasses,
                     Bounds &bounds) {
  if (!isOp(p, K::CmpI))
    return false;
  using P = arith::CmpIPredicate;
  auto pred = static_cast<P>(p->predicate);
  Node *lhs = p->operands[0], *rhs = p->operands[1];
  // Written as `value pred constant`.
  if (getConstant(lhs) && !getConstant(rhs)) {
    std::swap(lhs, rhs);
    pred = swapOperands(pred);
  }
  std::optional<double> k = getConstant(rhs);
  if (!k)
    return false;
  bool lower = false, upper = false;
  switch (pred) {
  case P::sge:
    lower = *k == 0;
    break;
  case P::sgt:
    lower = *k == -1;
    break;
  case P::sle:
    upper = *k == numClasses - 1;
    break;
  case P::slt:
    upper = *k == numClasses;
    break;
  case P::ult:
    lower = upper = *k == numClasses;
    break;
  case P::ule:
    lower = upper = *k == numClasses - 1;
    break;
  default:
    break;
  }
  if (!lower && !upper)
    return false;
  Node *value = stripIndexCasts(lhs);
  if (bounds.value && !Equivalence(va).equal(bounds.value, value))
    return false;
  bounds.value = value;
  bounds.lower |= lower;
  bounds.upper |= upper;
  return true;
}

/// True when `p` is a conjunction of bounds that keeps exactly the values
/// `v` in [0, numClasses).
static bool isInBounds(ViewAnalysis &va, Node *p, Node *v, int64_t numClasses) {
  Bounds bounds;
  SmallVector<Node *, 4> worklist = {p};
  while (!worklist.empty()) {
    Node *n = worklist.pop_back_val();
    if (isOp(n, K::And)) {
      worklist.append(n->operands.begin(), n->operands.end());
      continue;
    }
    if (!addBound(va, n, numClasses, bounds))
      return false;
  }
  return bounds.lower && bounds.upper &&
         Equivalence(va).equal(bounds.value, stripIndexCasts(v));
}

Node *recognize::detail::matchGuardedGather(ViewAnalysis &va, Node *node) {
  Node *n = stripFloatCasts(node);
  if (!isOp(n, K::Select))
    return nullptr;
  std::optional<double> fill = getConstant(n->operands[2]);
  if (!fill || !std::isnan(*fill))
    return nullptr;
  Node *gather = stripFloatCasts(n->operands[1]);
  if (gather->kind != NodeKind::Gather)
    return nullptr;
  Node *source = gather->operands[0];
  Axis axis = gather->axes[0];
  std::optional<int64_t> numClasses = axisSize(va, source, axis);
  if (!numClasses || *numClasses < 1)
    return nullptr;
  Node *index = matchClamp(gather->operands[1], *numClasses - 1);
  if (!index || !isInBounds(va, n->operands[0], index, *numClasses))
    return nullptr;
  return va.makeGather(source, axis, index);
}

bool recognize::detail::isNegativeIndexWrap(ViewAnalysis &va, Node *index,
                                            int64_t numClasses) {
  Node *n = stripIndexCasts(index);
  if (!isOp(n, K::Select) || !isOp(n->operands[0], K::CmpI))
    return false;
  Node *cmp = n->operands[0];
  auto pred = static_cast<arith::CmpIPredicate>(cmp->predicate);
  Node *t = nullptr;
  if (pred == arith::CmpIPredicate::slt && isConstant(cmp->operands[1], 0))
    t = cmp->operands[0];
  else if (pred == arith::CmpIPredicate::sgt && isConstant(cmp->operands[0], 0))
    t = cmp->operands[1];
  if (!t)
    return false;
  Equivalence eq(va);
  if (!eq.equal(n->operands[2], t))
    return false;
  LinearForm shifted = flattenLinear(va, n->operands[1]);
  return shifted.constant == static_cast<double>(numClasses) &&
         shifted.terms.size() == 1 && shifted.terms[0].coeff == 1 &&
         eq.equal(shifted.terms[0].node, t);
}
