//===- ViewTensor.cpp - The view of tensor ops ----------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

//===----------------------------------------------------------------------===//
// tensor
//===----------------------------------------------------------------------===//

std::optional<View> ViewAnalysis::visitTensor(OpResult result) {
  Operation *op = result.getOwner();
  Value value = result;

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
      return View{source.node, {}};
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
  return std::nullopt;
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
// Concatenation
//===----------------------------------------------------------------------===//

View ViewAnalysis::analyzeConcat(Operation *op, ValueRange inputs,
                                 int64_t dim) {
  Value result = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || dim < 0 || dim >= type.getRank() || inputs.empty())
    return leaf(result);
  // Only pieces of size 1 along `dim`: position i is piece i.
  SmallVector<View> pieces;
  for (Value input : inputs) {
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    if (!inputType || inputType.getDimSize(dim) != 1)
      return leaf(result);
    pieces.push_back(get(input));
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = 1;
  SmallVector<const View *> pointers =
      llvm::map_to_vector(pieces, [](const View &v) { return &v; });
  auto dims = broadcastDims(pointers, shape);
  if (!dims)
    return leaf(result);
  Axis concatAxis = freshAxis();
  (*dims)[dim] = concatAxis;
  addDistinct(*dims);
  Node *node = newNode(NodeKind::Concat, type.getElementType());
  node->axes = {concatAxis};
  for (const View &piece : pieces)
    node->operands.push_back(piece.node);
  return {node, *dims};
}
