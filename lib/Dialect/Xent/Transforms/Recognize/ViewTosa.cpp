//===- ViewTosa.cpp - The view of TOSA ops --------------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

//===----------------------------------------------------------------------===//
// TOSA
//===----------------------------------------------------------------------===//

/// The cast that tosa.cast performs between two element types.
static std::optional<CastKind> classifyTosaCast(Type from, Type to) {
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (fromFloat && toFloat) {
    unsigned a = from.getIntOrFloatBitWidth(), b = to.getIntOrFloatBitWidth();
    if (a == b)
      return std::nullopt;
    return a < b ? CastKind::ExtF : CastKind::TruncF;
  }
  if (!fromFloat && toFloat)
    return from.isInteger(1) ? CastKind::UIToFP : CastKind::SIToFP;
  if (fromFloat && !toFloat)
    return CastKind::FPToSI;
  unsigned a = from.getIntOrFloatBitWidth(), b = to.getIntOrFloatBitWidth();
  if (a == b)
    return std::nullopt;
  if (a < b)
    return a == 1 ? CastKind::ExtUI : CastKind::ExtSI;
  return CastKind::TruncI;
}

/// True when `value` is a constant equal to zero (a TOSA zero point or shift).
static bool isZeroConstant(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return false;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (!dense.isSplat())
      return false;
    attr = dense.getSplatValue<Attribute>();
  }
  auto number = attrToDouble(attr);
  return number && *number == 0;
}

View ViewAnalysis::analyzeTosaReduce(Operation *op, ReduceKind kind,
                                     bool nanIgnoring) {
  Value result = op->getResult(0);
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  View input = get(op->getOperand(0));
  if (!axisAttr)
    return leaf(result);
  int64_t dim = axisAttr.getInt();
  if (dim < 0 || dim >= static_cast<int64_t>(input.dims.size()))
    return leaf(result);
  View view = input;
  Axis reduced = input.dims[dim];
  view.dims[dim] = kUnitAxis;
  if (reduced == kUnitAxis)
    return view;
  Node *reduce = newNode(NodeKind::Reduce, getElementType(result));
  reduce->reduce = kind;
  reduce->nanIgnoring = nanIgnoring;
  reduce->operands = {input.node};
  reduce->axes = {reduced};
  if (kind == ReduceKind::Max)
    reduce->init = -std::numeric_limits<double>::infinity();
  view.node = reduce;
  return view;
}

View ViewAnalysis::analyzeTosaGather(Operation *op) {
  Value result = op->getResult(0);
  View flattened = analyzeFlattenedGather(op);
  if (flattened.node)
    return flattened;
  View values = get(op->getOperand(0));
  View indices = get(op->getOperand(1));
  if (values.dims.size() != 3 || indices.dims.size() != 2)
    return leaf(result);
  Axis batch = values.dims[0];
  if (batch != kUnitAxis && indices.dims[0] != kUnitAxis &&
      !unify(batch, indices.dims[0]))
    return leaf(result);
  if (batch == kUnitAxis)
    batch = indices.dims[0];
  View view;
  view.dims = {batch, indices.dims[1], values.dims[2]};
  for (unsigned i = 0; i < 3; ++i)
    for (unsigned j = i + 1; j < 3; ++j)
      if (view.dims[i] != kUnitAxis && same(view.dims[i], view.dims[j]))
        return leaf(result);
  Axis k = values.dims[1];
  view.node =
      k == kUnitAxis ? values.node : makeGather(values.node, k, indices.node);
  return view;
}

std::optional<View> ViewAnalysis::visitTosa(OpResult result) {
  Operation *op = result.getOwner();
  if (!op->getDialect() || !isa<tosa::TosaDialect>(op->getDialect()))
    return std::nullopt;
  return analyzeTosa(op);
}

View ViewAnalysis::analyzeTosa(Operation *op) {
  using K = ElementwiseKind;
  Value result = op->getResult(0);
  if (op->getNumResults() != 1)
    return leaf(result);
  auto elementwise = [&](K kind, ArrayRef<Value> operands,
                         int64_t predicate = 0) {
    return analyzeTensorElementwise(op, kind, operands, predicate,
                                    std::nullopt);
  };
  Type operandType =
      op->getNumOperands() ? getElementType(op->getOperand(0)) : Type();
  auto cmp = [&](arith::CmpFPredicate f, arith::CmpIPredicate i) {
    return isa<FloatType>(operandType) ? static_cast<int64_t>(f)
                                       : static_cast<int64_t>(i);
  };
  auto cmpKind = [&]() {
    return isa<FloatType>(operandType) ? K::CmpF : K::CmpI;
  };
  return TypeSwitch<Operation *, View>(op)
      .Case<tosa::AddOp>([&](auto o) {
        return elementwise(K::Add, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::SubOp>([&](auto o) {
        return elementwise(K::Sub, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::MulOp>([&](tosa::MulOp o) {
        if (!isZeroConstant(o.getShift()))
          return leaf(result);
        return elementwise(K::Mul, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::MaximumOp>([&](auto o) {
        return elementwise(K::Max, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::MinimumOp>([&](auto o) {
        return elementwise(K::Min, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::ExpOp>(
          [&](auto o) { return elementwise(K::Exp, {o.getInput1()}); })
      .Case<tosa::LogOp>(
          [&](auto o) { return elementwise(K::Log, {o.getInput1()}); })
      .Case<tosa::TanhOp>(
          [&](auto o) { return elementwise(K::Tanh, {o.getInput()}); })
      .Case<tosa::AbsOp>(
          [&](auto o) { return elementwise(K::Abs, {o.getInput1()}); })
      .Case<tosa::LogicalNotOp>(
          [&](auto o) { return elementwise(K::Not, {o.getInput1()}); })
      .Case<tosa::LogicalAndOp>([&](auto o) {
        return elementwise(K::And, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::LogicalOrOp>([&](auto o) {
        return elementwise(K::Or, {o.getInput1(), o.getInput2()});
      })
      .Case<tosa::NegateOp>([&](Operation *o) {
        if (o->getNumOperands() != 3 || !isZeroConstant(o->getOperand(1)) ||
            !isZeroConstant(o->getOperand(2)))
          return leaf(result);
        return elementwise(K::Neg, {o->getOperand(0)});
      })
      .Case<tosa::ReciprocalOp>([&](auto o) {
        View input = get(o.getInput1());
        Node *one = makeConstant(1.0, input.node->type);
        Node *node =
            makeElementwise(K::Div, getElementType(result), {one, input.node});
        return View{node, input.dims};
      })
      .Case<tosa::SelectOp>([&](Operation *o) {
        return elementwise(K::Select, llvm::to_vector(o->getOperands()));
      })
      .Case<tosa::EqualOp>([&](auto o) {
        return elementwise(
            cmpKind(), {o.getInput1(), o.getInput2()},
            cmp(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq));
      })
      .Case<tosa::GreaterOp>([&](auto o) {
        return elementwise(
            cmpKind(), {o.getInput1(), o.getInput2()},
            cmp(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt));
      })
      .Case<tosa::GreaterEqualOp>([&](auto o) {
        return elementwise(
            cmpKind(), {o.getInput1(), o.getInput2()},
            cmp(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge));
      })
      .Case<tosa::CastOp>([&](tosa::CastOp o) {
        std::optional<CastKind> kind = classifyTosaCast(
            getElementType(o.getInput()), getElementType(result));
        if (!kind)
          return leaf(result);
        return analyzeTensorElementwise(op, K::Cast, {o.getInput()}, 0, kind);
      })
      .Case<tosa::IdentityOp>(
          [&](Operation *o) { return get(o->getOperand(0)); })
      .Case<tosa::ReduceMaxOp>([&](tosa::ReduceMaxOp o) {
        return analyzeTosaReduce(op, ReduceKind::Max,
                                 o.getNanMode() ==
                                     tosa::NanPropagationMode::IGNORE);
      })
      .Case<tosa::ReduceSumOp>(
          [&](auto) { return analyzeTosaReduce(op, ReduceKind::Sum, false); })
      .Case<tosa::ReshapeOp>(
          [&](auto o) { return analyzeReshape(o.getInput1(), result); })
      .Case<tosa::TransposeOp>([&](tosa::TransposeOp o) {
        View input = get(o.getInput1());
        ArrayRef<int32_t> perms = o.getPerms();
        if (perms.size() != input.dims.size())
          return leaf(result);
        View view{input.node, {}};
        for (int32_t p : perms) {
          if (p < 0 || p >= static_cast<int32_t>(input.dims.size()))
            return leaf(result);
          view.dims.push_back(input.dims[p]);
        }
        return view;
      })
      .Case<tosa::GatherOp>([&](auto) { return analyzeTosaGather(op); })
      .Case<tosa::ConcatOp>([&](tosa::ConcatOp o) {
        return analyzeConcat(op, o.getInput1(), o.getAxis());
      })
      .Default([&](Operation *) { return leaf(result); });
}

//===----------------------------------------------------------------------===//
// Flattened gathers
//===----------------------------------------------------------------------===//

Node *ViewAnalysis::evaluateAt(Node *node, Axis axis, int64_t position,
                               unsigned level) {
  if (level > 32)
    return nullptr;
  if (!dependsOn(node, axis))
    return node;
  switch (node->kind) {
  case NodeKind::Concat:
    if (!same(node->axes[0], axis) || position < 0 ||
        position >= static_cast<int64_t>(node->operands.size()))
      return nullptr;
    return node->operands[position];
  case NodeKind::Table:
    if (!same(node->axes[0], axis) || position < 0 ||
        position >= static_cast<int64_t>(node->table.size()))
      return nullptr;
    return makeConstant(node->table[position], node->type);
  case NodeKind::Index:
    return makeConstant(static_cast<double>(position), node->type);
  case NodeKind::Elementwise: {
    SmallVector<Node *> operands;
    for (Node *operand : node->operands) {
      Node *n = evaluateAt(operand, axis, position, level + 1);
      if (!n)
        return nullptr;
      operands.push_back(n);
    }
    Node *copy = makeElementwise(node->op, node->type, operands);
    copy->predicate = node->predicate;
    copy->cast = node->cast;
    return copy;
  }
  default:
    return nullptr;
  }
}

bool ViewAnalysis::decomposeIndex(
    Node *node, int64_t coeff,
    SmallVectorImpl<std::pair<int64_t, Node *>> &terms, int64_t &constant,
    unsigned level) {
  using K = ElementwiseKind;
  if (level > 32)
    return false;
  auto intConstant = [](Node *n) -> std::optional<int64_t> {
    if (n->kind != NodeKind::Constant || n->number != std::trunc(n->number))
      return std::nullopt;
    return static_cast<int64_t>(n->number);
  };
  if (std::optional<int64_t> k = intConstant(node)) {
    constant += coeff * *k;
    return true;
  }
  if (node->kind == NodeKind::Elementwise) {
    switch (node->op) {
    case K::Add:
      return decomposeIndex(node->operands[0], coeff, terms, constant,
                            level + 1) &&
             decomposeIndex(node->operands[1], coeff, terms, constant,
                            level + 1);
    case K::Sub:
      return decomposeIndex(node->operands[0], coeff, terms, constant,
                            level + 1) &&
             decomposeIndex(node->operands[1], -coeff, terms, constant,
                            level + 1);
    case K::Mul:
      if (std::optional<int64_t> k = intConstant(node->operands[0]))
        return decomposeIndex(node->operands[1], coeff * *k, terms, constant,
                              level + 1);
      if (std::optional<int64_t> k = intConstant(node->operands[1]))
        return decomposeIndex(node->operands[0], coeff * *k, terms, constant,
                              level + 1);
      break;
    case K::Cast:
      // Integer casts of class indices and positions keep their values.
      if (node->cast == CastKind::ExtSI || node->cast == CastKind::TruncI ||
          node->cast == CastKind::IndexCast)
        return decomposeIndex(node->operands[0], coeff, terms, constant,
                              level + 1);
      break;
    default:
      break;
    }
  }
  if (node->kind == NodeKind::Reduce && node->reduce == ReduceKind::Sum &&
      node->axes.size() == 1) {
    // Σ over a concatenated (or constant) axis: expand position by position.
    Axis e = node->axes[0];
    std::optional<int64_t> extent;
    std::function<void(Node *, unsigned)> findExtent = [&](Node *n,
                                                           unsigned d) {
      if (d > 32 || extent)
        return;
      if ((n->kind == NodeKind::Concat || n->kind == NodeKind::Table) &&
          same(n->axes[0], e)) {
        extent = n->kind == NodeKind::Concat
                     ? static_cast<int64_t>(n->operands.size())
                     : static_cast<int64_t>(n->table.size());
        return;
      }
      for (Node *operand : n->operands)
        findExtent(operand, d + 1);
    };
    findExtent(node->operands[0], 0);
    if (!extent)
      return false;
    for (int64_t i = 0; i < *extent; ++i) {
      Node *at = evaluateAt(node->operands[0], e, i);
      if (!at || !decomposeIndex(at, coeff, terms, constant, level + 1))
        return false;
    }
    return true;
  }
  for (auto &term : terms) {
    if (term.second == node) {
      term.first += coeff;
      return true;
    }
  }
  terms.push_back({coeff, node});
  return true;
}

/// A gather from a tensor flattened into one dimension, at an index
/// computed as Σ position_d · stride_d (TF's gather_nd legalized to TOSA):
/// `tosa.gather(reshape(S, [1, K, 1]), idx)` with K the number of elements
/// of S reads S at the positions the strides decode.
View ViewAnalysis::analyzeFlattenedGather(Operation *op) {
  auto reshape = op->getOperand(0).getDefiningOp<tosa::ReshapeOp>();
  if (!reshape)
    return {};
  Value source = reshape.getInput1();
  auto sourceType = dyn_cast<RankedTensorType>(source.getType());
  auto valuesType = dyn_cast<RankedTensorType>(reshape.getType());
  if (!sourceType || !valuesType || !sourceType.hasStaticShape() ||
      valuesType.getShape() !=
          ArrayRef<int64_t>{1, sourceType.getNumElements(), 1})
    return {};
  View sourceView = get(source);
  View indices = get(op->getOperand(1));
  if (indices.dims.size() != 2 || indices.dims[0] != kUnitAxis)
    return {};

  // The strides of the source's non-unit dimensions, row-major.
  SmallVector<std::pair<Axis, int64_t>> components;
  int64_t stride = 1;
  for (int64_t d = sourceType.getRank() - 1; d >= 0; --d) {
    int64_t size = sourceType.getDimSize(d);
    if (size != 1)
      components.insert(components.begin(), {sourceView.dims[d], stride});
    stride *= size;
  }
  SmallVector<std::pair<int64_t, Node *>> terms;
  int64_t constant = 0;
  if (!decomposeIndex(indices.node, 1, terms, constant) || constant != 0)
    return {};
  // Each component takes the term with its stride: a position along an
  // axis (which then is that axis) or, for one component, the data index.
  // The axes are unified only once the whole index is decoded.
  std::optional<std::pair<Axis, Node *>> data;
  SmallVector<std::pair<Axis, Axis>> pairs;
  SmallVector<bool> used(terms.size(), false);
  for (auto [axis, componentStride] : components) {
    bool found = false;
    for (auto [i, term] : llvm::enumerate(terms)) {
      if (used[i] || term.first != componentStride)
        continue;
      Node *n = term.second;
      if (n->kind == NodeKind::Index) {
        if (axis == kUnitAxis || n->axes[0] == kUnitAxis ||
            (!same(axis, n->axes[0]) &&
             areDistinct(find(axis), find(n->axes[0]))))
          return {};
        pairs.push_back({axis, n->axes[0]});
      } else {
        if (data)
          return {};
        data = {axis, n};
      }
      used[i] = found = true;
      break;
    }
    if (!found)
      return {};
  }
  if (llvm::is_contained(used, false))
    return {};
  for (auto [a, b] : pairs)
    if (!unify(a, b))
      return {};
  View view;
  view.dims = {kUnitAxis, indices.dims[1], kUnitAxis};
  view.node = data ? makeGather(sourceView.node, data->first, data->second)
                   : sourceView.node;
  return view;
}
