//===- Projection.cpp - Raise a projection feeding a cross entropy --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// After the chains are raised, an `xent.cross_entropy` whose logits are
// nothing but the output projection `hidden · weightᵀ (+ bias)` of a
// language model, and have no other user, becomes one
// `xent.linear_cross_entropy`: the projection and the loss op become its
// decomposition region, so xent-inline-decomposition gives back the
// original ops. The projection is a matrix product (Projection.h: linalg
// matmuls and contractions, batched ones with a broadcast weight,
// `tosa.matmul`) of the hidden rows with the transposed `[V, H]` weight,
// its accumulator zero or the bias broadcast over the rows, or the bias
// added after it; reshapes that keep the last dimension may stand anywhere
// between the `[N, H]` or `[B, T, H]` hidden and the logits. A gradient op
// on such logits becomes the gradient form (ProjectionGrad.cpp).
//
//===----------------------------------------------------------------------===//

#include "Projection.h"
#include "Matchers.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize::projection;

FailureOr<Projection>
recognize::projection::matchProjection(Value logits, std::string &reason,
                                       bool &nearMiss) {
  nearMiss = false;
  Value x = peelRowReshapes(logits);
  Value bias;
  bool isAdd = false;
  if (std::optional<BiasAdd> add = matchBiasAdd(x, isAdd)) {
    bias = add->bias;
    x = peelRowReshapes(add->other);
  } else if (isAdd) {
    nearMiss =
        succeeded(matchProduct(
            peelRowReshapes(x.getDefiningOp()->getOperand(0)), reason)) ||
        succeeded(matchProduct(
            peelRowReshapes(x.getDefiningOp()->getOperand(1)), reason));
    reason = "the logits add a tensor that is not a [V] bias broadcast over "
             "the rows";
    return failure();
  }
  FailureOr<Product> product = matchProduct(x, reason);
  if (failed(product)) {
    nearMiss = bias || reason != kNotAProduct;
    reason = "the logits are not a projection: " + reason;
    return failure();
  }
  nearMiss = true;
  if (product->init && !isZeroFill(product->init)) {
    Value initBias = matchRowBroadcast(product->init);
    if (!initBias) {
      reason = "the product accumulates into neither zero nor a bias";
      return failure();
    }
    if (bias) {
      reason = "the projection adds two biases";
      return failure();
    }
    bias = initBias;
  }
  // The rows: the hidden states, with the logits' leading shape.
  auto logitsType = cast<RankedTensorType>(logits.getType());
  SmallVector<MatrixRef> rows = peelMatrix(product->lhs);
  if (rows.back().transposed) {
    reason = "the product contracts the rows, not the hidden features of "
             "each row";
    return failure();
  }
  Projection p;
  p.rows = rows.back().value;
  for (const MatrixRef &m : rows) {
    auto type = cast<RankedTensorType>(m.value.getType());
    if (!m.transposed && type.getRank() == logitsType.getRank() &&
        type.getShape().drop_back() == logitsType.getShape().drop_back()) {
      p.hidden = m.value;
      break;
    }
  }
  if (!p.hidden) {
    reason = "no hidden tensor shaped like the logits' rows";
    return failure();
  }
  // The weight: read as [H, V], the transpose of a [V, H] tensor.
  MatrixRef weight = peelMatrix(product->rhs).back();
  if (!weight.transposed) {
    reason = "the product reads a [H, V] weight that is not the transpose "
             "of a [V, H] one";
    return failure();
  }
  if (cast<RankedTensorType>(weight.value.getType()).getRank() != 2) {
    reason = "the weight is not a matrix";
    return failure();
  }
  p.weight = weight.value;
  p.bias = bias;
  return p;
}

FailureOr<SmallVector<Operation *>>
recognize::projection::collectSlice(ArrayRef<Value> roots,
                                    ArrayRef<Value> leaves) {
  DenseSet<Value> stop(leaves.begin(), leaves.end());
  SetVector<Operation *> ops;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (stop.contains(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def)
      return failure();
    auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
    if (!isMemoryEffectFree(def) &&
        !(linalgOp && linalgOp.hasPureTensorSemantics()))
      return failure();
    if (!ops.insert(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(def->getRegions(), captured);
    llvm::append_range(worklist, captured);
  }
  SmallVector<Operation *> order = ops.takeVector();
  Block *block = roots.front().getDefiningOp()->getBlock();
  if (!llvm::all_of(order,
                    [&](Operation *op) { return op->getBlock() == block; }))
    return failure();
  llvm::sort(order,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return order;
}

/// Where `op` can stand: before the first user of a root, after every
/// operand; null when there is no such place.
static Operation *findInsertionPoint(Operation *op, ArrayRef<Operation *> slice,
                                     ArrayRef<Value> roots) {
  Block *block = slice.front()->getBlock();
  DenseSet<Operation *> inSlice(slice.begin(), slice.end());
  Operation *first = nullptr;
  for (Value root : roots) {
    for (Operation *user : root.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || inSlice.contains(ancestor))
        return nullptr;
      if (!first || ancestor->isBeforeInBlock(first))
        first = ancestor;
    }
  }
  if (!first)
    first = slice.back()->getNextNode();
  // Every operand is read by an op of the slice, so one defined elsewhere
  // dominates the block.
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && def->getBlock() == block && !def->isBeforeInBlock(first))
      return nullptr;
  }
  return first;
}

LogicalResult recognize::projection::finishRaise(RewriterBase &rewriter,
                                                 Operation *op,
                                                 ArrayRef<Operation *> slice,
                                                 ArrayRef<Value> roots) {
  Operation *point = findInsertionPoint(op, slice, roots);
  if (!point) {
    rewriter.eraseOp(op);
    return failure();
  }
  rewriter.moveOpBefore(op, point);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    SmallVector<Type> types(op->getOperandTypes());
    SmallVector<Location> locs(types.size(), op->getLoc());
    Block *block = rewriter.createBlock(&op->getRegion(0), {}, types, locs);
    IRMapping mapping;
    mapping.map(op->getOperands(), block->getArguments());
    for (Operation *inner : slice)
      rewriter.clone(*inner, mapping);
    SmallVector<Value> yielded;
    for (Value root : roots)
      yielded.push_back(mapping.lookup(root));
    YieldOp::create(rewriter, op->getLoc(), yielded);
  }
  // The matchers check the shapes; an op that would not verify (a bias of
  // another element type...) is not raised.
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  if (failed(verify(op))) {
    rewriter.eraseOp(op);
    return failure();
  }
  for (auto [root, result] : llvm::zip_equal(roots, op->getResults()))
    rewriter.replaceAllUsesWith(root, result);
  for (Operation *dead : llvm::reverse(slice))
    if (dead->use_empty())
      rewriter.eraseOp(dead);
  return success();
}

bool recognize::projection::isLinearizable(CrossEntropyOpInterface op,
                                           std::string &reason) {
  CrossEntropyConfig config = CrossEntropyConfig::get(op);
  int64_t rank = config.logitsType.getRank();
  if (op.getLse() || op.getArgmax() || op.getAccuracy()) {
    reason = "the loss op returns per-row outputs";
    return false;
  }
  if (config.probabilityTargets || rank < 2 || config.axis != rank - 1) {
    reason = "not class-index targets with the classes last";
    return false;
  }
  return true;
}

LogicalResult recognize::projection::raiseForward(RewriterBase &rewriter,
                                                  CrossEntropyOp ce,
                                                  const Projection &p) {
  SmallVector<Value> leaves = {p.hidden, p.weight};
  if (p.bias)
    leaves.push_back(p.bias);
  leaves.push_back(ce.getTarget());
  if (ce.getWeight())
    leaves.push_back(ce.getWeight());
  llvm::append_range(leaves, ce.getLossScalars().getValues());
  SmallVector<Value> roots = {ce.getLoss()};
  if (ce.getZLoss())
    roots.push_back(ce.getZLoss());
  FailureOr<SmallVector<Operation *>> slice = collectSlice(roots, leaves);
  if (failed(slice))
    return failure();
  rewriter.setInsertionPoint(ce);
  auto linear = LinearCrossEntropyOp::create(
      rewriter, ce.getLoc(), ce.getLoss().getType(),
      ce.getZLoss() ? ce.getZLoss().getType() : Type(), p.hidden, p.weight,
      p.bias, ce.getTarget(), ce.getWeight(), ce.getReductionAttr(),
      ce.getIgnoreIndexAttr(), ce.getLabelSmoothingAttr(),
      ce.getZLossScaleAttr(), ce.getSoftcapAttr(), ce.getLossScalars());
  return finishRaise(rewriter, linear, *slice, roots);
}

/// Raises the loss ops reading `logits`, when they are one op or a loss
/// and its gradient, with the projection computing `logits`. With
/// `reportFailures`, a projection that is not raised gets a remark.
static void raiseLossesOf(RewriterBase &rewriter, Value logits,
                          bool reportFailures) {
  CrossEntropyOp forward;
  CrossEntropyOpInterface grad;
  Operation *loss = nullptr;
  std::string reason, blocked;
  for (Operation *user : logits.getUsers()) {
    auto op = dyn_cast<CrossEntropyOpInterface>(user);
    if (!op || op.getLogits() != logits) {
      blocked = "the logits have other users";
      continue;
    }
    loss = user;
    if (!isLinearizable(op, blocked))
      continue;
    if (auto ce = dyn_cast<CrossEntropyOp>(user)) {
      if (forward)
        blocked = "the logits feed two losses";
      forward = ce;
    } else {
      if (grad)
        blocked = "the logits feed two gradients";
      grad = op;
    }
  }
  bool nearMiss = false;
  FailureOr<Projection> p = matchProjection(logits, reason, nearMiss);
  if (!blocked.empty()) {
    if (reportFailures && loss && succeeded(p))
      loss->emitRemark() << "not raised to a linear cross-entropy: " << blocked;
    return;
  }
  loss = grad ? grad.getOperation() : forward.getOperation();
  if (succeeded(p)) {
    // The pair must be one loss: the same operands and attributes.
    if (forward && grad &&
        (!isa<CrossEntropyGradOp>(grad) ||
         forward.getTarget() != grad.getTarget() ||
         forward.getWeight() != grad.getWeight() ||
         !(forward.getLossScalars() == grad.getLossScalars()) ||
         !(CrossEntropyConfig::get(forward) ==
           CrossEntropyConfig::get(grad)))) {
      if (reportFailures)
        loss->emitRemark() << "not raised to a linear cross-entropy: the "
                              "loss and the gradient differ";
      return;
    }
    if (grad && succeeded(raiseGradient(rewriter, grad, forward, *p, reason)))
      return;
    if (!grad && succeeded(raiseForward(rewriter, forward, *p)))
      return;
    nearMiss = grad;
    if (!grad)
      reason = "the projection and the loss cannot be one op";
  }
  if (reportFailures && nearMiss)
    loss->emitRemark() << "not raised to a linear cross-entropy: " << reason;
}

void mlir::xent::recognize::raiseProjections(RewriterBase &rewriter,
                                             Operation *root,
                                             bool reportFailures) {
  llvm::SetVector<Value> logits;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<LinearCrossEntropyOpInterface>(op))
      return WalkResult::skip();
    if (auto ce = dyn_cast<CrossEntropyOpInterface>(op)) {
      logits.insert(ce.getLogits());
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  for (Value v : logits)
    raiseLossesOf(rewriter, v, reportFailures);
}
