//===- ViewLinalg.cpp - The view of linalg ops ----------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

/// A loop dimension whose axis is not known yet.
static constexpr Axis kNoAxis = ~0u - 1;

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

struct ViewAnalysis::LinalgInfo {
  bool ok = false;
  SmallVector<Axis, 4> loopAxes;
  DenseMap<Value, Node *> body;
  linalg::LinalgOp op;
};

// Here, where LinalgInfo is complete: `linalgInfos` owns them.
ViewAnalysis::ViewAnalysis() = default;
ViewAnalysis::~ViewAnalysis() = default;

std::optional<View> ViewAnalysis::visitLinalg(OpResult result) {
  Operation *op = result.getOwner();
  if (isa<linalg::SoftmaxOp>(op))
    return analyzeSoftmax(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return analyzeLinalg(linalgOp, result.getResultNumber());
  return std::nullopt;
}

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
  if (level > kMaxAnalysisDepth)
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
      // A unit dimension read at an index that folds to 0 (JAX clamps even
      // the index of a unit dimension into [0, 0]).
      if (a == kUnitAxis) {
        Node *unitIndex = bodyNode(info, idx, level + 1);
        if (unitIndex && unitIndex->kind == NodeKind::Constant &&
            unitIndex->number == 0)
          continue;
        return finish(nullptr);
      }
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
  return finish(foldConstants(node));
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
    // An i1 conjunction or disjunction "reduced" over unit dimensions only
    // (JAX's all-in-bounds test of a gather index): init and/or element.
    if (auto logical = yielded.getDefiningOp();
        logical && logical->getBlock() == body &&
        isa<arith::AndIOp, arith::OrIOp>(logical) &&
        logical->getOperand(0) != logical->getOperand(1) &&
        llvm::is_contained(logical->getOperands(), acc)) {
      Value other = logical->getOperand(0) == acc ? logical->getOperand(1)
                                                  : logical->getOperand(0);
      Node *e = bodyNode(info, other, 0);
      if (!e)
        return leaf(result);
      Node *initNode = get(init->get()).node;
      view.node = foldConstants(
          makeElementwise(isa<arith::AndIOp>(logical) ? ElementwiseKind::And
                                                      : ElementwiseKind::Or,
                          getElementType(result), {initNode, e}));
      return view;
    }
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
