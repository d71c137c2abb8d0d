//===- View.cpp - Semantic view of tensor values --------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

/// Largest non-splat constant inspected for an iota.
static constexpr int64_t kMaxIotaElements = 1 << 16;

//===----------------------------------------------------------------------===//
// Values and attributes
//===----------------------------------------------------------------------===//

Type recognize::detail::getElementType(Value value) {
  return getElementTypeOrSelf(value.getType());
}

std::optional<double> recognize::detail::attrToDouble(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValue().convertToDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    const APInt &v = i.getValue();
    if (v.getBitWidth() == 1)
      return static_cast<double>(v.getZExtValue());
    return static_cast<double>(v.getSExtValue());
  }
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue() ? 1.0 : 0.0;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Axes
//===----------------------------------------------------------------------===//

Axis ViewAnalysis::freshAxis() {
  parents.push_back(parents.size());
  return parents.size() - 1;
}

Axis ViewAnalysis::find(Axis axis) {
  if (axis >= parents.size())
    return axis;
  while (parents[axis] != axis) {
    parents[axis] = parents[parents[axis]];
    axis = parents[axis];
  }
  return axis;
}

void ViewAnalysis::addDistinct(ArrayRef<Axis> axes) {
  SmallVector<Axis, 4> group;
  for (Axis a : axes)
    if (a < parents.size())
      group.push_back(a);
  if (group.size() > 1)
    distinctGroups.push_back(std::move(group));
}

bool ViewAnalysis::areDistinct(Axis a, Axis b) {
  for (const auto &group : distinctGroups) {
    bool hasA = false, hasB = false;
    for (Axis x : group) {
      Axis r = find(x);
      hasA |= r == a;
      hasB |= r == b;
    }
    if (hasA && hasB)
      return true;
  }
  return false;
}

bool ViewAnalysis::unify(Axis a, Axis b) {
  if (a == kUnitAxis || b == kUnitAxis)
    return a == b;
  a = find(a);
  b = find(b);
  if (a == b)
    return true;
  if (areDistinct(a, b))
    return false;
  parents[b] = a;
  return true;
}

void ViewAnalysis::collectFreeAxes(Node *node, SmallVectorImpl<Axis> &out,
                                   unsigned level) {
  auto it = freeAxesCache.find(node);
  if (it != freeAxesCache.end()) {
    out.append(it->second.begin(), it->second.end());
    return;
  }
  SmallVector<Axis, 4> result;
  if (level > kMaxAnalysisDepth) {
    // Too deep to look further: the node's own axes are the best guess;
    // matchers never accept nodes this deep anyway.
    result.append(node->axes.begin(), node->axes.end());
  } else {
    switch (node->kind) {
    case NodeKind::Leaf:
    case NodeKind::Index:
      result.append(node->axes.begin(), node->axes.end());
      break;
    case NodeKind::Constant:
      break;
    case NodeKind::Elementwise:
      for (Node *operand : node->operands)
        collectFreeAxes(operand, result, level + 1);
      break;
    case NodeKind::Reduce: {
      SmallVector<Axis, 4> body;
      collectFreeAxes(node->operands[0], body, level + 1);
      for (Axis a : body)
        if (!llvm::any_of(node->axes, [&](Axis r) { return same(a, r); }))
          result.push_back(a);
      break;
    }
    case NodeKind::Table:
      result.append(node->axes.begin(), node->axes.end());
      break;
    case NodeKind::Concat:
      result.append(node->axes.begin(), node->axes.end());
      for (Node *operand : node->operands)
        collectFreeAxes(operand, result, level + 1);
      break;
    case NodeKind::Gather: {
      SmallVector<Axis, 4> source;
      collectFreeAxes(node->operands[0], source, level + 1);
      for (Axis a : source)
        if (!same(a, node->axes[0]))
          result.push_back(a);
      collectFreeAxes(node->operands[1], result, level + 1);
      break;
    }
    }
  }
  llvm::erase_if(result, [](Axis a) { return a == kUnitAxis; });
  freeAxesCache[node] = result;
  out.append(result.begin(), result.end());
}

SmallVector<Axis, 4> ViewAnalysis::freeAxes(Node *node) {
  SmallVector<Axis, 4> raw;
  collectFreeAxes(node, raw, 0);
  SmallVector<Axis, 4> result;
  for (Axis a : raw)
    result.push_back(find(a));
  llvm::sort(result);
  result.erase(llvm::unique(result), result.end());
  return result;
}

bool ViewAnalysis::dependsOn(Node *node, Axis axis) {
  if (axis == kUnitAxis)
    return false;
  Axis a = find(axis);
  return llvm::is_contained(freeAxes(node), a);
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

Node *ViewAnalysis::newNode(NodeKind kind, Type type) {
  Node *node = new (allocator.Allocate()) Node();
  node->kind = kind;
  node->type = type;
  return node;
}

Node *ViewAnalysis::makeConstant(double value, Type type) {
  Node *node = newNode(NodeKind::Constant, type);
  node->number = value;
  return node;
}

Node *ViewAnalysis::makeElementwise(ElementwiseKind op, Type type,
                                    ArrayRef<Node *> operands) {
  Node *node = newNode(NodeKind::Elementwise, type);
  node->op = op;
  node->operands.assign(operands.begin(), operands.end());
  return node;
}

Node *ViewAnalysis::makeGather(Node *source, Axis axis, Node *index) {
  Node *node = newNode(NodeKind::Gather, source->type);
  node->operands = {source, index};
  node->axes = {axis};
  return node;
}

Node *ViewAnalysis::makeReduce(ReduceKind kind, Node *body,
                               ArrayRef<Axis> axes) {
  Node *node = newNode(NodeKind::Reduce, body->type);
  node->reduce = kind;
  node->operands = {body};
  node->axes.assign(axes.begin(), axes.end());
  return node;
}

View ViewAnalysis::leaf(Value value) {
  View view;
  Node *node = newNode(NodeKind::Leaf, getElementType(value));
  node->origin = value;
  if (auto shaped = dyn_cast<ShapedType>(value.getType());
      shaped && shaped.hasRank()) {
    for (int64_t size : shaped.getShape())
      view.dims.push_back(size == 1 ? kUnitAxis : freshAxis());
    addDistinct(view.dims);
  }
  node->axes = view.dims;
  view.node = node;
  return view;
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

View ViewAnalysis::get(Value value) {
  auto it = views.find(value);
  if (it != views.end())
    return it->second;
  View view;
  if (analysisDepth > kMaxAnalysisDepth || inProgress.contains(value)) {
    view = leaf(value);
  } else {
    inProgress.insert(value);
    ++analysisDepth;
    view = analyze(value);
    --analysisDepth;
    inProgress.erase(value);
  }
  // A view must describe every dimension of the value.
  auto shaped = dyn_cast<ShapedType>(value.getType());
  size_t rank = shaped && shaped.hasRank() ? shaped.getRank() : 0;
  if (!view.node || view.dims.size() != rank)
    view = leaf(value);
  if (!view.node->origin)
    view.node->origin = value;
  views[value] = view;
  return view;
}

View ViewAnalysis::analyze(Value value) {
  if (auto result = dyn_cast<OpResult>(value))
    return analyzeResult(result);
  return leaf(value);
}

View ViewAnalysis::analyzeResult(OpResult result) {
  Operation *op = result.getOwner();
  Value value = result;

  Attribute constant;
  if (op->getNumResults() == 1 && matchPattern(value, m_Constant(&constant)))
    return analyzeConstant(value, constant);

  // The output projection of a model is an atom of every chain: its value
  // (after any reshape) is the raised op's logits operand, and
  // Projection.cpp raises the projection and the op together afterwards.
  if (auto type = dyn_cast<RankedTensorType>(value.getType());
      type && type.getRank() >= 2 && isa<FloatType>(type.getElementType())) {
    std::string reason;
    bool nearMiss = false;
    if (succeeded(projection::matchProjection(value, reason, nearMiss)))
      return leaf(value);
  }

  if (std::optional<View> view = visitLinalg(result))
    return *view;
  if (std::optional<View> view = visitTensor(result))
    return *view;
  if (std::optional<View> view = visitTosa(result))
    return *view;
  if (std::optional<View> view = visitArithMath(result))
    return *view;
  return leaf(value);
}

//===----------------------------------------------------------------------===//
// Constants and elementwise ops
//===----------------------------------------------------------------------===//

View ViewAnalysis::analyzeConstant(Value value, Attribute attr) {
  Type elementType = getElementType(value);
  if (auto number = attrToDouble(attr))
    return {makeConstant(*number, elementType), {}};
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!dense || !type)
    return leaf(value);
  View view;
  for (int64_t size : type.getShape())
    view.dims.push_back(size == 1 ? kUnitAxis : freshAxis());
  addDistinct(view.dims);
  if (dense.isSplat()) {
    auto number = attrToDouble(dense.getSplatValue<Attribute>());
    if (!number)
      return leaf(value);
    view.node = makeConstant(*number, elementType);
    return view;
  }
  if (type.getNumElements() > kMaxIotaElements)
    return leaf(value);
  if (isa<FloatType>(elementType)) {
    // A vector along its one non-unit dimension.
    SmallVector<int64_t> nonUnit;
    for (auto [dim, size] : llvm::enumerate(type.getShape()))
      if (size != 1)
        nonUnit.push_back(dim);
    if (nonUnit.size() != 1)
      return leaf(value);
    Node *node = newNode(NodeKind::Table, elementType);
    node->axes = {view.dims[nonUnit[0]]};
    for (const APFloat &v : dense.getValues<APFloat>())
      node->table.push_back(v.convertToDouble());
    view.node = node;
    return view;
  }
  // An iota along one dimension is the position along that axis.
  if (!isa<IntegerType, IndexType>(elementType))
    return leaf(value);
  SmallVector<APInt> values(dense.getValues<APInt>());
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (size == 1)
      continue;
    bool iota = true;
    for (int64_t i = 0, e = values.size(); i < e && iota; ++i)
      iota = values[i].getSExtValue() == (i / strides[dim]) % size;
    if (iota) {
      Node *node = newNode(NodeKind::Index, elementType);
      node->axes = {view.dims[dim]};
      view.node = node;
      return view;
    }
  }
  // A vector along its one non-unit dimension.
  SmallVector<int64_t> nonUnit;
  for (auto [dim, size] : llvm::enumerate(shape))
    if (size != 1)
      nonUnit.push_back(dim);
  if (nonUnit.size() == 1) {
    Node *node = newNode(NodeKind::Table, elementType);
    node->axes = {view.dims[nonUnit[0]]};
    for (const APInt &v : values)
      node->table.push_back(static_cast<double>(v.getSExtValue()));
    view.node = node;
    return view;
  }
  return leaf(value);
}

std::optional<SmallVector<Axis, 4>>
ViewAnalysis::broadcastDims(ArrayRef<const View *> operands,
                            ArrayRef<int64_t> shape) {
  SmallVector<Axis, 4> dims;
  for (auto [k, size] : llvm::enumerate(shape)) {
    Axis axis = kUnitAxis;
    for (const View *v : operands) {
      if (v->dims.empty())
        continue; // a scalar broadcasts everywhere
      if (v->dims.size() != shape.size())
        return std::nullopt;
      Axis a = v->dims[k];
      if (a == kUnitAxis)
        continue;
      if (size == 1)
        return std::nullopt;
      if (axis == kUnitAxis)
        axis = a;
      else if (!unify(axis, a))
        return std::nullopt;
    }
    if (axis == kUnitAxis && size != 1)
      axis = freshAxis();
    dims.push_back(axis);
  }
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = i + 1; j < dims.size(); ++j)
      if (dims[i] != kUnitAxis && same(dims[i], dims[j]))
        return std::nullopt;
  addDistinct(dims);
  return dims;
}

View ViewAnalysis::analyzeTensorElementwise(Operation *op, ElementwiseKind kind,
                                            ArrayRef<Value> operands,
                                            int64_t predicate,
                                            std::optional<CastKind> cast) {
  Value result = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type)
    return leaf(result);
  SmallVector<View> views;
  for (Value operand : operands)
    views.push_back(get(operand));
  SmallVector<const View *> pointers =
      llvm::map_to_vector(views, [](const View &v) { return &v; });
  auto dims = broadcastDims(pointers, type.getShape());
  if (!dims)
    return leaf(result);
  SmallVector<Node *> nodes =
      llvm::map_to_vector(views, [](const View &v) { return v.node; });
  Node *node = makeElementwise(kind, type.getElementType(), nodes);
  node->predicate = predicate;
  if (cast)
    node->cast = *cast;
  return {foldConstants(node), *dims};
}

//===----------------------------------------------------------------------===//
// Folding integer and boolean constants
//===----------------------------------------------------------------------===//

/// True when `v` is a value of the signless integer (or index) type `type`
/// read as signed.
static bool fitsSigned(double v, Type type) {
  if (v != std::trunc(v))
    return false;
  unsigned width = isa<IndexType>(type) ? 64 : type.getIntOrFloatBitWidth();
  if (width == 1)
    return v == 0 || v == 1 || v == -1;
  double bound = std::ldexp(1.0, std::min(width, 53u) - 1);
  return v >= -bound && v < bound;
}

Node *ViewAnalysis::foldConstants(Node *node) {
  using K = ElementwiseKind;
  if (node->kind != NodeKind::Elementwise)
    return node;
  auto constant = [](Node *n) -> std::optional<double> {
    if (n->kind == NodeKind::Constant)
      return n->number;
    return std::nullopt;
  };
  // A select on a known condition is the branch it takes, whatever the
  // branches' type.
  if (node->op == K::Select) {
    if (std::optional<double> p = constant(node->operands[0]))
      return *p != 0 ? node->operands[1] : node->operands[2];
    return node;
  }
  Type type = node->type;
  if (!isa<IntegerType, IndexType>(type))
    return node;
  bool isBool = type.isInteger(1);
  // i1 conjunctions and disjunctions with a known side.
  if (isBool && (node->op == K::And || node->op == K::Or)) {
    for (unsigned k = 0; k < 2; ++k) {
      std::optional<double> c = constant(node->operands[k]);
      if (!c)
        continue;
      bool absorbing = (*c != 0) == (node->op == K::Or);
      return absorbing ? node->operands[k] : node->operands[1 - k];
    }
    return node;
  }
  SmallVector<double, 3> values;
  for (Node *operand : node->operands) {
    std::optional<double> c = constant(operand);
    if (!c)
      return node;
    values.push_back(*c);
  }
  std::optional<double> result;
  switch (node->op) {
  case K::Add:
    result = values[0] + values[1];
    break;
  case K::Sub:
    result = values[0] - values[1];
    break;
  case K::Mul:
    result = values[0] * values[1];
    break;
  case K::Max:
    result = std::max(values[0], values[1]);
    break;
  case K::Min:
    result = std::min(values[0], values[1]);
    break;
  case K::CmpI: {
    double a = values[0], b = values[1];
    switch (static_cast<arith::CmpIPredicate>(node->predicate)) {
    case arith::CmpIPredicate::eq:
      result = a == b;
      break;
    case arith::CmpIPredicate::ne:
      result = a != b;
      break;
    case arith::CmpIPredicate::slt:
      result = a < b;
      break;
    case arith::CmpIPredicate::sle:
      result = a <= b;
      break;
    case arith::CmpIPredicate::sgt:
      result = a > b;
      break;
    case arith::CmpIPredicate::sge:
      result = a >= b;
      break;
    default:
      break; // unsigned orders: the sign of the operands would matter
    }
    break;
  }
  case K::Cast:
    if (node->cast == CastKind::IndexCast || node->cast == CastKind::ExtSI ||
        (node->cast == CastKind::ExtUI && values[0] >= 0))
      result = values[0];
    break;
  default:
    break;
  }
  if (!result || !fitsSigned(*result, type))
    return node;
  return makeConstant(*result, type);
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

void ViewAnalysis::print(Node *node, raw_ostream &os, unsigned level) {
  if (level > 12) {
    os << "...";
    return;
  }
  auto axes = [&](ArrayRef<Axis> list) {
    os << "[";
    llvm::interleaveComma(list, os, [&](Axis a) {
      if (a == kUnitAxis)
        os << "1";
      else
        os << "a" << find(a);
    });
    os << "]";
  };
  switch (node->kind) {
  case NodeKind::Leaf:
    os << "leaf";
    if (auto result = dyn_cast_or_null<OpResult>(node->origin))
      os << "<" << result.getOwner()->getName() << ">";
    else
      os << "<arg>";
    axes(node->axes);
    return;
  case NodeKind::Constant:
    os << node->number;
    return;
  case NodeKind::Index:
    os << "index";
    axes(node->axes);
    return;
  case NodeKind::Reduce:
    os << (node->reduce == ReduceKind::Sum ? "sum" : "max");
    axes(node->axes);
    if (node->init)
      os << "{init " << *node->init << "}";
    os << "(";
    print(node->operands[0], os, level + 1);
    os << ")";
    return;
  case NodeKind::Gather:
    os << "gather";
    axes(node->axes);
    os << "(";
    print(node->operands[0], os, level + 1);
    os << ", ";
    print(node->operands[1], os, level + 1);
    os << ")";
    return;
  case NodeKind::Table:
    os << "table";
    axes(node->axes);
    return;
  case NodeKind::Concat:
    os << "concat";
    axes(node->axes);
    os << "(";
    llvm::interleaveComma(node->operands, os,
                          [&](Node *n) { print(n, os, level + 1); });
    os << ")";
    return;
  case NodeKind::Elementwise:
    break;
  }
  static const char *names[] = {"add",    "sub",  "mul",  "div",  "neg",
                                "exp",    "log",  "abs",  "max",  "min",
                                "select", "cmpf", "cmpi", "cast", "and",
                                "or",     "xor",  "not",  "tanh"};
  os << names[static_cast<unsigned>(node->op)];
  if (node->op == ElementwiseKind::CmpF || node->op == ElementwiseKind::CmpI)
    os << "." << node->predicate;
  static const char *casts[] = {"extf",   "truncf",     "sitofp",      "uitofp",
                                "fptosi", "fptoui",     "extsi",       "extui",
                                "trunci", "index_cast", "index_castui"};
  if (node->op == ElementwiseKind::Cast)
    os << "." << casts[static_cast<unsigned>(node->cast)] << "<" << node->type
       << ">";
  os << "(";
  llvm::interleaveComma(node->operands, os,
                        [&](Node *n) { print(n, os, level + 1); });
  os << ")";
}
