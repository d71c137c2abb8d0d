//===- Materialize.cpp - Nodes rebuilt as the body of a linalg.generic ----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What a chain computes around the loss without a tensor of its own (optax's
// smoothed one-hot fused into the reduction's body, a float mask multiplied
// into a fused sum) is a node of the view. The raised op needs it as a value:
// a linalg.generic iterating the logical axes of a domain computes it
// elementwise from the tensors the node reads (leaves, read through the
// indexing map their axes give), positions (linalg.index), constants and
// scalar arith/math operations. Only operations whose node says exactly what
// to build are taken: a max or min (maximumf, maxnumf and maxsi are one node
// kind) and reductions, gathers or tables inside the value are refused.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

/// The loop of `domain` that iterates `axis`, or nullopt.
static std::optional<unsigned> loopOf(ViewAnalysis &va, ArrayRef<Axis> domain,
                                      Axis axis) {
  for (auto [i, a] : llvm::enumerate(domain))
    if (a != kUnitAxis && va.same(a, axis))
      return i;
  return std::nullopt;
}

/// checkMaterializable below `depth` levels, each node of the DAG checked
/// once (`checked`): a value that reads a subexpression many times costs
/// one visit of it.
static Match<bool> checkNode(ViewAnalysis &va, Node *node,
                             ArrayRef<Axis> domain, unsigned depth,
                             DenseSet<Node *> &checked) {
  using M = Match<bool>;
  if (depth > 64)
    return M::failure("the value is too deep an expression to rebuild");
  if (!checked.insert(node).second)
    return true;
  switch (node->kind) {
  case NodeKind::Constant:
    if (!node->type.isIntOrIndexOrFloat())
      return M::failure("a constant of type " + typeToString(node->type));
    return true;
  case NodeKind::Index:
    if (!loopOf(va, domain, node->axes[0]))
      return M::failure("a position along an axis the value does not "
                        "iterate");
    if (!node->type.isIntOrIndex())
      return M::failure("a position of type " + typeToString(node->type));
    return true;
  case NodeKind::Leaf: {
    auto type =
        node->origin ? dyn_cast<RankedTensorType>(node->origin.getType())
                     : RankedTensorType();
    if (!type)
      return M::failure("it reads a value that is no tensor");
    for (Axis a : node->axes)
      if (a != kUnitAxis && !loopOf(va, domain, a))
        return M::failure("it reads a tensor along an axis the value does "
                          "not iterate");
    return true;
  }
  case NodeKind::Elementwise:
    break;
  default:
    return M::failure("it reduces, gathers or reads a table inside the "
                      "value");
  }
  switch (node->op) {
  case K::Max:
  case K::Min:
    return M::failure("it takes a max or a min, whose NaN convention the "
                      "view does not keep");
  case K::Div:
  case K::Neg:
  case K::Exp:
  case K::Log:
  case K::Abs:
  case K::Tanh:
    if (!isa<FloatType>(node->type))
      return M::failure("an integer operation without an exact rebuild");
    break;
  default:
    break;
  }
  for (Node *operand : node->operands)
    if (Match<bool> ok = checkNode(va, operand, domain, depth + 1, checked);
        !ok)
      return ok;
  return true;
}

Match<bool> recognize::detail::checkMaterializable(ViewAnalysis &va,
                                                   Node *node,
                                                   ArrayRef<Axis> domain) {
  DenseSet<Node *> checked;
  return checkNode(va, node, domain, 0, checked);
}

/// The leaves under `node` by their tensor (each the first node found for
/// it: the view gives one node per value), each node visited once.
static void collectLeaves(Node *node, llvm::MapVector<Value, Node *> &leaves,
                          DenseSet<Node *> &visited) {
  if (!visited.insert(node).second)
    return;
  if (node->kind == NodeKind::Leaf) {
    leaves.try_emplace(node->origin, node);
    return;
  }
  for (Node *operand : node->operands)
    collectLeaves(operand, leaves, visited);
}

void recognize::detail::collectLeafValues(Node *node,
                                          SetVector<Value> &leaves) {
  llvm::MapVector<Value, Node *> found;
  DenseSet<Node *> visited;
  collectLeaves(node, found, visited);
  for (auto &entry : found)
    leaves.insert(entry.first);
}

namespace {
/// Emits the scalar value of nodes inside a generic's body.
struct BodyEmitter {
  BodyEmitter(ViewAnalysis &va, ArrayRef<Axis> domain)
      : va(va), domain(domain) {}

  ViewAnalysis &va;
  ArrayRef<Axis> domain;
  DenseMap<Value, Value> leafArgs; // leaf tensor -> its block argument
  DenseMap<Node *, Value> done;

  Value emit(OpBuilder &b, Location loc, Node *n) {
    if (Value v = done.lookup(n))
      return v;
    Value v = build(b, loc, n);
    done[n] = v;
    return v;
  }

  Value build(OpBuilder &b, Location loc, Node *n) {
    Type type = n->type;
    switch (n->kind) {
    case NodeKind::Constant: {
      TypedAttr attr;
      if (auto ft = dyn_cast<FloatType>(type))
        attr = b.getFloatAttr(ft, n->number);
      else
        attr = b.getIntegerAttr(type, static_cast<int64_t>(n->number));
      return arith::ConstantOp::create(b, loc, attr);
    }
    case NodeKind::Index: {
      Value i = linalg::IndexOp::create(b, loc, *loopOf(va, domain, n->axes[0]));
      return type.isIndex() ? i : arith::IndexCastOp::create(b, loc, type, i);
    }
    case NodeKind::Leaf:
      return leafArgs.lookup(n->origin);
    default:
      break;
    }
    SmallVector<Value, 3> x;
    for (Node *operand : n->operands)
      x.push_back(emit(b, loc, operand));
    bool isFloat = isa<FloatType>(type);
    switch (n->op) {
    case K::Add:
      return isFloat ? arith::AddFOp::create(b, loc, x[0], x[1]).getResult()
                     : arith::AddIOp::create(b, loc, x[0], x[1]).getResult();
    case K::Sub:
      return isFloat ? arith::SubFOp::create(b, loc, x[0], x[1]).getResult()
                     : arith::SubIOp::create(b, loc, x[0], x[1]).getResult();
    case K::Mul:
      return isFloat ? arith::MulFOp::create(b, loc, x[0], x[1]).getResult()
                     : arith::MulIOp::create(b, loc, x[0], x[1]).getResult();
    case K::Div:
      return arith::DivFOp::create(b, loc, x[0], x[1]);
    case K::Neg:
      return arith::NegFOp::create(b, loc, x[0]);
    case K::Exp:
      return math::ExpOp::create(b, loc, x[0]);
    case K::Log:
      return math::LogOp::create(b, loc, x[0]);
    case K::Abs:
      return math::AbsFOp::create(b, loc, x[0]);
    case K::Tanh:
      return math::TanhOp::create(b, loc, x[0]);
    case K::Select:
      return arith::SelectOp::create(b, loc, x[0], x[1], x[2]);
    case K::CmpF:
      return arith::CmpFOp::create(
          b, loc, static_cast<arith::CmpFPredicate>(n->predicate), x[0], x[1]);
    case K::CmpI:
      return arith::CmpIOp::create(
          b, loc, static_cast<arith::CmpIPredicate>(n->predicate), x[0], x[1]);
    case K::And:
      return arith::AndIOp::create(b, loc, x[0], x[1]);
    case K::Or:
      return arith::OrIOp::create(b, loc, x[0], x[1]);
    case K::Xor:
      return arith::XOrIOp::create(b, loc, x[0], x[1]);
    case K::Not: {
      Value ones = arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(type, APInt::getAllOnes(
                                             type.getIntOrFloatBitWidth())));
      return arith::XOrIOp::create(b, loc, x[0], ones);
    }
    case K::Cast:
      return buildCast(b, loc, n->cast, type, x[0]);
    case K::Max:
    case K::Min:
      break;
    }
    llvm_unreachable("checkMaterializable admits no such node");
  }

  static Value buildCast(OpBuilder &b, Location loc, CastKind c, Type type,
                         Value x) {
    switch (c) {
    case CastKind::ExtF:
      return arith::ExtFOp::create(b, loc, type, x);
    case CastKind::TruncF:
      return arith::TruncFOp::create(b, loc, type, x);
    case CastKind::SIToFP:
      return arith::SIToFPOp::create(b, loc, type, x);
    case CastKind::UIToFP:
      return arith::UIToFPOp::create(b, loc, type, x);
    case CastKind::FPToSI:
      return arith::FPToSIOp::create(b, loc, type, x);
    case CastKind::FPToUI:
      return arith::FPToUIOp::create(b, loc, type, x);
    case CastKind::ExtSI:
      return arith::ExtSIOp::create(b, loc, type, x);
    case CastKind::ExtUI:
      return arith::ExtUIOp::create(b, loc, type, x);
    case CastKind::TruncI:
      return arith::TruncIOp::create(b, loc, type, x);
    case CastKind::IndexCast:
      return arith::IndexCastOp::create(b, loc, type, x);
    case CastKind::IndexCastUI:
      return arith::IndexCastUIOp::create(b, loc, type, x);
    }
    llvm_unreachable("unknown cast");
  }
};
} // namespace

Value recognize::detail::buildMaterialized(
    OpBuilder &b, Location loc, ViewAnalysis &va, ArrayRef<Axis> domain,
    ArrayRef<Value> inputs, ArrayRef<AffineMap> inputMaps, ArrayRef<Node *> nodes,
    Value init, bool reduce,
    function_ref<Value(OpBuilder &, Location, ValueRange, ArrayRef<Value>,
                       Value)>
        combine) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = domain.size();
  SmallVector<Value> allInputs(inputs);
  SmallVector<AffineMap> maps(inputMaps);
  // Each leaf tensor once, read through the loops of its axes (a unit
  // dimension at 0).
  llvm::MapVector<Value, Node *> leaves;
  DenseSet<Node *> visited;
  for (Node *n : nodes)
    collectLeaves(n, leaves, visited);
  for (auto [leaf, n] : leaves) {
    SmallVector<AffineExpr> exprs;
    for (Axis a : n->axes)
      exprs.push_back(a == kUnitAxis ? getAffineConstantExpr(0, ctx)
                                     : getAffineDimExpr(*loopOf(va, domain, a),
                                                        ctx));
    allInputs.push_back(leaf);
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<AffineExpr> outExprs;
  if (!reduce)
    for (unsigned i = 0; i < rank; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
  maps.push_back(AffineMap::get(rank, 0, outExprs, ctx));
  SmallVector<utils::IteratorType> iterators(
      rank, reduce ? utils::IteratorType::reduction
                   : utils::IteratorType::parallel);
  unsigned numInputs = inputs.size();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{initType}, allInputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        BodyEmitter emitter(va, domain);
        for (auto [k, leaf] : llvm::enumerate(leaves))
          emitter.leafArgs[leaf.first] = args[numInputs + k];
        SmallVector<Value> values;
        for (Node *n : nodes)
          values.push_back(emitter.emit(nb, nloc, n));
        Value result = combine(nb, nloc, args.take_front(numInputs), values,
                               args.back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}
