//===- View.cpp - Semantic view of tensor values --------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;

/// How deep the analysis follows use-def chains before it gives up and
/// treats a value as a leaf.
static constexpr unsigned kMaxDepth = 256;
/// A loop dimension whose axis is not known yet.
static constexpr Axis kNoAxis = ~0u - 1;
/// Largest non-splat constant inspected for an iota.
static constexpr int64_t kMaxIotaElements = 1 << 16;

//===----------------------------------------------------------------------===//
// Classification of scalar operations
//===----------------------------------------------------------------------===//

namespace {
/// What an elementwise op computes, independent of its dialect.
struct ElementwiseSpec {
  ElementwiseKind kind;
  int64_t predicate = 0;
  std::optional<CastKind> cast;
};
} // namespace

/// The elementwise meaning of an arith or math op (on scalars or tensors).
static std::optional<ElementwiseSpec> classifyArithMath(Operation *op) {
  using K = ElementwiseKind;
  auto spec = [](K k) { return std::optional<ElementwiseSpec>({k}); };
  auto castSpec = [](CastKind c) {
    return std::optional<ElementwiseSpec>({K::Cast, 0, c});
  };
  return TypeSwitch<Operation *, std::optional<ElementwiseSpec>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([&](auto) { return spec(K::Add); })
      .Case<arith::SubFOp, arith::SubIOp>([&](auto) { return spec(K::Sub); })
      .Case<arith::MulFOp, arith::MulIOp>([&](auto) { return spec(K::Mul); })
      .Case<arith::DivFOp>([&](auto) { return spec(K::Div); })
      .Case<arith::NegFOp>([&](auto) { return spec(K::Neg); })
      .Case<math::ExpOp>([&](auto) { return spec(K::Exp); })
      .Case<math::LogOp>([&](auto) { return spec(K::Log); })
      .Case<math::AbsFOp>([&](auto) { return spec(K::Abs); })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(
          [&](auto) { return spec(K::Max); })
      .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
          [&](auto) { return spec(K::Min); })
      .Case<arith::SelectOp>([&](auto) { return spec(K::Select); })
      .Case<arith::AndIOp>([&](auto) { return spec(K::And); })
      .Case<arith::OrIOp>([&](auto) { return spec(K::Or); })
      .Case<arith::XOrIOp>([&](auto) { return spec(K::Xor); })
      .Case<arith::CmpFOp>([&](arith::CmpFOp c) {
        return std::optional<ElementwiseSpec>(
            {K::CmpF, static_cast<int64_t>(c.getPredicate())});
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp c) {
        return std::optional<ElementwiseSpec>(
            {K::CmpI, static_cast<int64_t>(c.getPredicate())});
      })
      .Case<arith::ExtFOp>([&](auto) { return castSpec(CastKind::ExtF); })
      .Case<arith::TruncFOp>([&](auto) { return castSpec(CastKind::TruncF); })
      .Case<arith::SIToFPOp>([&](auto) { return castSpec(CastKind::SIToFP); })
      .Case<arith::UIToFPOp>([&](auto) { return castSpec(CastKind::UIToFP); })
      .Case<arith::FPToSIOp>([&](auto) { return castSpec(CastKind::FPToSI); })
      .Case<arith::FPToUIOp>([&](auto) { return castSpec(CastKind::FPToUI); })
      .Case<arith::ExtSIOp>([&](auto) { return castSpec(CastKind::ExtSI); })
      .Case<arith::ExtUIOp>([&](auto) { return castSpec(CastKind::ExtUI); })
      .Case<arith::TruncIOp>([&](auto) { return castSpec(CastKind::TruncI); })
      .Case<arith::IndexCastOp>(
          [&](auto) { return castSpec(CastKind::IndexCast); })
      .Case<arith::IndexCastUIOp>(
          [&](auto) { return castSpec(CastKind::IndexCastUI); })
      .Default([](Operation *) { return std::nullopt; });
}

/// The element type of a value: the element type of a shaped type, else the
/// type itself.
static Type getElementType(Value value) {
  return getElementTypeOrSelf(value.getType());
}

/// A scalar attribute as a double (integers sign-extended, i1 as 0/1).
static std::optional<double> attrToDouble(Attribute attr) {
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
  if (level > kMaxDepth) {
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
  if (depth > kMaxDepth || inProgress.contains(value)) {
    view = leaf(value);
  } else {
    inProgress.insert(value);
    ++depth;
    view = analyze(value);
    --depth;
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

  if (isa<linalg::SoftmaxOp>(op))
    return analyzeSoftmax(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return analyzeLinalg(linalgOp, result.getResultNumber());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return analyzeReshape(expand.getSrc(), value);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return analyzeReshape(collapse.getSrc(), value);
  if (auto reshape = dyn_cast<tensor::ReshapeOp>(op))
    return analyzeReshape(reshape.getSource(), value);
  if (auto cast = dyn_cast<tensor::CastOp>(op))
    return analyzeReshape(cast.getSource(), value);

  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    View source = get(extract.getTensor());
    if (llvm::all_of(source.dims, [](Axis a) { return a == kUnitAxis; }))
      return {source.node, {}};
    return leaf(value);
  }
  if (auto fromElements = dyn_cast<tensor::FromElementsOp>(op)) {
    if (fromElements.getElements().size() != 1)
      return leaf(value);
    View element = get(fromElements.getElements()[0]);
    View view{element.node, {}};
    view.dims.assign(fromElements.getType().getRank(), kUnitAxis);
    return view;
  }
  if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
    View element = get(splat.getInput());
    View view{element.node, {}};
    for (int64_t size : splat.getType().getShape())
      view.dims.push_back(size == 1 ? kUnitAxis : freshAxis());
    addDistinct(view.dims);
    return view;
  }

  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return analyzeConcat(op, concat.getInputs(), concat.getDim());
  if (op->getDialect() && isa<tosa::TosaDialect>(op->getDialect()))
    return analyzeTosa(op);

  if (auto spec = classifyArithMath(op)) {
    if (isa<ShapedType>(value.getType()))
      return analyzeTensorElementwise(op, spec->kind,
                                      llvm::to_vector(op->getOperands()),
                                      spec->predicate, spec->cast);
    return analyzeScalarOp(op);
  }
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

View ViewAnalysis::analyzeScalarOp(Operation *op) {
  std::optional<ElementwiseSpec> spec = classifyArithMath(op);
  if (!spec || op->getNumResults() != 1)
    return leaf(op->getResult(0));
  SmallVector<Node *> operands;
  for (Value operand : op->getOperands()) {
    View v = get(operand);
    if (!v.dims.empty())
      return leaf(op->getResult(0));
    operands.push_back(v.node);
  }
  Node *node =
      makeElementwise(spec->kind, getElementType(op->getResult(0)), operands);
  node->predicate = spec->predicate;
  if (spec->cast)
    node->cast = *spec->cast;
  return {node, {}};
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
  return {node, *dims};
}

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

View ViewAnalysis::analyzeReshape(Value source, Value result) {
  auto resultType = dyn_cast<RankedTensorType>(result.getType());
  auto sourceType = dyn_cast<RankedTensorType>(source.getType());
  if (!resultType || !sourceType)
    return leaf(result);
  View src = get(source);
  Operation *op = result.getDefiningOp();
  ArrayRef<int64_t> resultShape = resultType.getShape();
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  View view{src.node, SmallVector<Axis, 4>(resultShape.size(), kUnitAxis)};

  // Reshapes with a reassociation: each group holds at most one non-unit
  // dimension on either side.
  auto mapGroups = [&](ArrayRef<ReassociationIndices> groups,
                       bool collapse) -> bool {
    for (auto [outer, group] : llvm::enumerate(groups)) {
      if (collapse) {
        Axis axis = kUnitAxis;
        for (int64_t d : group) {
          if (src.dims[d] == kUnitAxis)
            continue;
          if (axis != kUnitAxis)
            return false;
          axis = src.dims[d];
        }
        if (axis == kUnitAxis && resultShape[outer] != 1)
          return false;
        view.dims[outer] = axis;
      } else {
        Axis axis = src.dims[outer];
        bool placed = false;
        for (int64_t d : group) {
          if (resultShape[d] == 1)
            continue;
          if (axis == kUnitAxis || placed)
            return false;
          view.dims[d] = axis;
          placed = true;
        }
        if (axis != kUnitAxis && !placed)
          return false;
      }
    }
    return true;
  };
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(op)) {
    if (!mapGroups(expand.getReassociationIndices(), /*collapse=*/false))
      return leaf(result);
    return view;
  }
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(op)) {
    if (!mapGroups(collapse.getReassociationIndices(), /*collapse=*/true))
      return leaf(result);
    return view;
  }
  if (isa_and_nonnull<tensor::CastOp>(op)) {
    for (auto [k, size] : llvm::enumerate(resultShape)) {
      if ((src.dims[k] == kUnitAxis) != (size == 1) &&
          !(src.dims[k] == kUnitAxis && ShapedType::isDynamic(size)))
        return leaf(result);
      view.dims[k] = size == 1 ? kUnitAxis : src.dims[k];
    }
    return view;
  }
  // A reshape without reassociation: the non-unit dimensions must pair up in
  // order with equal static sizes.
  SmallVector<int64_t> from, to;
  for (auto [k, a] : llvm::enumerate(src.dims))
    if (a != kUnitAxis)
      from.push_back(k);
  for (auto [k, size] : llvm::enumerate(resultShape))
    if (size != 1)
      to.push_back(k);
  if (from.size() != to.size())
    return leaf(result);
  for (auto [f, t] : llvm::zip(from, to)) {
    if (ShapedType::isDynamic(sourceShape[f]) ||
        sourceShape[f] != resultShape[t])
      return leaf(result);
    view.dims[t] = src.dims[f];
  }
  return view;
}

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

struct ViewAnalysis::LinalgInfo {
  bool ok = false;
  SmallVector<Axis, 4> loopAxes;
  DenseMap<Value, Node *> body;
  linalg::LinalgOp op;
};

ViewAnalysis::ViewAnalysis() = default;
ViewAnalysis::~ViewAnalysis() = default;

ViewAnalysis::LinalgInfo &ViewAnalysis::getLinalgInfo(linalg::LinalgOp op) {
  auto &slot = linalgInfos[op];
  if (slot)
    return *slot;
  slot = std::make_unique<LinalgInfo>();
  LinalgInfo &info = *slot;
  info.op = op;
  if (!op.hasPureTensorSemantics() || op->getNumRegions() != 1 ||
      op->getRegion(0).empty())
    return info;
  unsigned numLoops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.size() != numLoops)
    return info;
  info.loopAxes.assign(numLoops, kNoAxis);
  for (unsigned d = 0; d < numLoops; ++d)
    if (ranges[d] == 1)
      info.loopAxes[d] = kUnitAxis;

  // Binds the loop dimensions that index `view` through `map`.
  auto bind = [&](const View &view, AffineMap map) -> bool {
    if (view.dims.size() != map.getNumResults())
      return false;
    for (auto [k, expr] : llvm::enumerate(map.getResults())) {
      Axis a = view.dims[k];
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        unsigned d = dim.getPosition();
        if (a == kUnitAxis)
          continue;
        Axis &loop = info.loopAxes[d];
        if (loop == kUnitAxis)
          return false;
        if (loop == kNoAxis)
          loop = a;
        else if (!unify(loop, a))
          return false;
        continue;
      }
      auto cst = dyn_cast<AffineConstantExpr>(expr);
      if (!cst || cst.getValue() != 0 || a != kUnitAxis)
        return false;
    }
    return true;
  };
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!isa<ShapedType>(input->get().getType()))
      continue;
    if (!bind(get(input->get()), op.getMatchingIndexingMap(input)))
      return info;
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    // Only inits the body reads say anything about the iteration.
    if (op.getMatchingBlockArgument(&init).use_empty())
      continue;
    View view = get(init.get());
    if (freeAxes(view.node).empty())
      continue;
    if (!bind(view, op.getMatchingIndexingMap(&init)))
      return info;
  }
  for (Axis &loop : info.loopAxes)
    if (loop == kNoAxis)
      loop = freshAxis();
  for (unsigned i = 0; i < numLoops; ++i)
    for (unsigned j = i + 1; j < numLoops; ++j)
      if (info.loopAxes[i] != kUnitAxis &&
          same(info.loopAxes[i], info.loopAxes[j]))
        return info;
  addDistinct(info.loopAxes);
  info.ok = true;
  return info;
}

Node *ViewAnalysis::bodyNode(LinalgInfo &info, Value value, unsigned level) {
  auto it = info.body.find(value);
  if (it != info.body.end())
    return it->second;
  if (level > kMaxDepth)
    return nullptr;
  Operation *owner = info.op;
  Block *body = &owner->getRegion(0).front();
  Node *node = nullptr;

  auto finish = [&](Node *n) {
    info.body[value] = n;
    return n;
  };

  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != body) {
      if (owner->isAncestor(arg.getOwner()->getParentOp()))
        return finish(nullptr);
      View captured = get(value);
      return finish(captured.dims.empty() ? captured.node : nullptr);
    }
    unsigned numInputs = info.op.getNumDpsInputs();
    if (arg.getArgNumber() >= numInputs)
      return finish(nullptr); // an accumulator
    View input = get(info.op.getDpsInputOperand(arg.getArgNumber())->get());
    return finish(input.node);
  }

  Operation *def = value.getDefiningOp();
  if (!owner->isAncestor(def)) {
    View captured = get(value);
    return finish(captured.dims.empty() ? captured.node : nullptr);
  }
  if (def->getBlock() != body)
    return finish(nullptr);

  Attribute constant;
  if (matchPattern(value, m_Constant(&constant))) {
    if (auto number = attrToDouble(constant))
      return finish(makeConstant(*number, value.getType()));
    return finish(nullptr);
  }
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    Axis axis = info.loopAxes[index.getDim()];
    if (axis == kUnitAxis)
      return finish(makeConstant(0, value.getType()));
    node = newNode(NodeKind::Index, value.getType());
    node->axes = {axis};
    return finish(node);
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(def)) {
    Value tensor = extract.getTensor();
    if (tensor.getParentRegion() &&
        owner->isAncestor(tensor.getParentRegion()->getParentOp()))
      return finish(nullptr);
    View source = get(tensor);
    if (source.dims.size() != extract.getIndices().size())
      return finish(nullptr);
    std::optional<unsigned> gatherDim;
    Node *indexNode = nullptr;
    for (auto [k, idx] : llvm::enumerate(extract.getIndices())) {
      Axis a = source.dims[k];
      if (auto loopIndex = idx.getDefiningOp<linalg::IndexOp>();
          loopIndex && loopIndex->getParentOp() == owner) {
        Axis loop = info.loopAxes[loopIndex.getDim()];
        if (a == kUnitAxis)
          continue;
        if (loop == kUnitAxis || !unify(loop, a))
          return finish(nullptr);
        continue;
      }
      if (a == kUnitAxis && matchPattern(idx, m_Zero()))
        continue;
      if (a == kUnitAxis || gatherDim)
        return finish(nullptr);
      gatherDim = k;
      indexNode = bodyNode(info, idx, level + 1);
      if (!indexNode)
        return finish(nullptr);
    }
    if (!gatherDim)
      return finish(source.node);
    return finish(makeGather(source.node, source.dims[*gatherDim], indexNode));
  }
  std::optional<ElementwiseSpec> spec = classifyArithMath(def);
  if (!spec || def->getNumResults() != 1)
    return finish(nullptr);
  SmallVector<Node *> operands;
  for (Value operand : def->getOperands()) {
    Node *n = bodyNode(info, operand, level + 1);
    if (!n)
      return finish(nullptr);
    operands.push_back(n);
  }
  node = makeElementwise(spec->kind, value.getType(), operands);
  node->predicate = spec->predicate;
  if (spec->cast)
    node->cast = *spec->cast;
  return finish(node);
}

/// The reduction kind of a combining op, with whether it ignores NaN.
static std::optional<std::pair<ReduceKind, bool>>
classifyCombiner(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return std::make_pair(ReduceKind::Sum, false);
  if (isa<arith::MaximumFOp, arith::MaxSIOp>(op))
    return std::make_pair(ReduceKind::Max, false);
  if (isa<arith::MaxNumFOp>(op))
    return std::make_pair(ReduceKind::Max, true);
  return std::nullopt;
}

View ViewAnalysis::analyzeLinalg(linalg::LinalgOp op, unsigned resultIndex) {
  Value result = op->getResult(resultIndex);
  LinalgInfo &info = getLinalgInfo(op);
  if (!info.ok)
    return leaf(result);
  Block *body = &op->getRegion(0).front();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield->getNumOperands() != op->getNumResults())
    return leaf(result);
  OpOperand *init = op.getDpsInitOperand(resultIndex);
  BlockArgument acc = op.getMatchingBlockArgument(init);
  AffineMap outMap = op.getMatchingIndexingMap(init);

  View view;
  llvm::SmallBitVector used(op.getNumLoops());
  for (AffineExpr expr : outMap.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      used.set(dim.getPosition());
      view.dims.push_back(info.loopAxes[dim.getPosition()]);
      continue;
    }
    auto cst = dyn_cast<AffineConstantExpr>(expr);
    if (!cst || cst.getValue() != 0)
      return leaf(result);
    view.dims.push_back(kUnitAxis);
  }
  SmallVector<Axis, 4> reduced;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    if (!used.test(d) && info.loopAxes[d] != kUnitAxis)
      reduced.push_back(info.loopAxes[d]);

  Value yielded = yield->getOperand(resultIndex);
  if (yielded == acc)
    return leaf(result);
  // acc - e accumulates the sum of -e.
  if (auto sub = yielded.getDefiningOp<arith::SubFOp>();
      sub && sub->getBlock() == body && sub.getLhs() == acc &&
      sub.getRhs() != acc && !reduced.empty()) {
    Node *e = bodyNode(info, sub.getRhs(), 0);
    if (!e)
      return leaf(result);
    Type type = getElementType(result);
    Node *reduce = newNode(NodeKind::Reduce, type);
    reduce->reduce = ReduceKind::Sum;
    reduce->operands = {makeElementwise(ElementwiseKind::Neg, type, {e})};
    reduce->axes = reduced;
    Node *initNode = get(init->get()).node;
    view.node =
        initNode->kind == NodeKind::Constant && initNode->number == 0
            ? reduce
            : makeElementwise(ElementwiseKind::Add, type, {initNode, reduce});
    return view;
  }
  Operation *combiner = yielded.getDefiningOp();
  std::optional<std::pair<ReduceKind, bool>> kind;
  Value element;
  if (combiner && combiner->getBlock() == body &&
      combiner->getNumOperands() == 2 && (kind = classifyCombiner(combiner))) {
    if (combiner->getOperand(0) == acc)
      element = combiner->getOperand(1);
    else if (combiner->getOperand(1) == acc)
      element = combiner->getOperand(0);
  }
  if (!element) {
    if (!reduced.empty())
      return leaf(result);
    Node *node = bodyNode(info, yielded, 0);
    if (!node)
      return leaf(result);
    view.node = node;
    return view;
  }

  Node *e = bodyNode(info, element, 0);
  if (!e)
    return leaf(result);
  Type type = getElementType(result);
  Node *initNode = get(init->get()).node;
  auto [reduceKind, nanIgnoring] = *kind;
  if (reduced.empty()) {
    view.node =
        makeElementwise(reduceKind == ReduceKind::Sum ? ElementwiseKind::Add
                                                      : ElementwiseKind::Max,
                        type, {initNode, e});
    return view;
  }
  Node *reduce = newNode(NodeKind::Reduce, type);
  reduce->reduce = reduceKind;
  reduce->nanIgnoring = nanIgnoring;
  reduce->operands = {e};
  reduce->axes = reduced;
  bool constantInit = initNode->kind == NodeKind::Constant;
  if (reduceKind == ReduceKind::Sum) {
    if (constantInit && initNode->number == 0) {
      view.node = reduce;
      return view;
    }
    view.node = makeElementwise(ElementwiseKind::Add, type, {initNode, reduce});
    return view;
  }
  if (constantInit) {
    reduce->init = initNode->number;
    view.node = reduce;
    return view;
  }
  view.node = makeElementwise(ElementwiseKind::Max, type, {initNode, reduce});
  return view;
}

View ViewAnalysis::analyzeSoftmax(Operation *op) {
  auto softmax = cast<linalg::SoftmaxOp>(op);
  Value result = op->getResult(0);
  View input = get(softmax.getInput());
  int64_t dim = softmax.getDimension();
  if (dim < 0 || dim >= static_cast<int64_t>(input.dims.size()) ||
      input.dims[dim] == kUnitAxis)
    return leaf(result);
  Axis c = input.dims[dim];
  Type type = getElementType(result);
  Node *max = newNode(NodeKind::Reduce, type);
  max->reduce = ReduceKind::Max;
  max->operands = {input.node};
  max->axes = {c};
  max->init = -std::numeric_limits<double>::infinity();
  Node *shifted =
      makeElementwise(ElementwiseKind::Sub, type, {input.node, max});
  Node *exp = makeElementwise(ElementwiseKind::Exp, type, {shifted});
  Node *sum = newNode(NodeKind::Reduce, type);
  sum->reduce = ReduceKind::Sum;
  sum->operands = {exp};
  sum->axes = {c};
  return {makeElementwise(ElementwiseKind::Div, type, {exp, sum}), input.dims};
}

//===----------------------------------------------------------------------===//
// TOSA
//===----------------------------------------------------------------------===//

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
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= static_cast<int64_t>(input.dims.size()))
    return leaf(result);
  View view = input;
  Axis reduced = input.dims[axis];
  view.dims[axis] = kUnitAxis;
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
// Concatenation and flattened gathers
//===----------------------------------------------------------------------===//

View ViewAnalysis::analyzeConcat(Operation *op, ValueRange inputs,
                                 int64_t axis) {
  Value result = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || axis < 0 || axis >= type.getRank() || inputs.empty())
    return leaf(result);
  // Only pieces of size 1 along the axis: position i is piece i.
  SmallVector<View> pieces;
  for (Value input : inputs) {
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    if (!inputType || inputType.getDimSize(axis) != 1)
      return leaf(result);
    pieces.push_back(get(input));
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = 1;
  SmallVector<const View *> pointers =
      llvm::map_to_vector(pieces, [](const View &v) { return &v; });
  auto dims = broadcastDims(pointers, shape);
  if (!dims)
    return leaf(result);
  Axis e = freshAxis();
  (*dims)[axis] = e;
  addDistinct(*dims);
  Node *node = newNode(NodeKind::Concat, type.getElementType());
  node->axes = {e};
  for (const View &piece : pieces)
    node->operands.push_back(piece.node);
  return {node, *dims};
}

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
  static const char *names[] = {"add",  "sub",  "mul", "div", "neg",    "exp",
                                "log",  "abs",  "max", "min", "select", "cmpf",
                                "cmpi", "cast", "and", "or",  "xor",    "not"};
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
