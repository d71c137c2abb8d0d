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
// original ops. The projection is a contraction (`linalg.matmul`, with
// transposed indexing maps or reading a `linalg.transpose` of the weight, or
// a `linalg.generic` of the same maps), its accumulator zero or the bias
// broadcast over the rows, or the bias added after it; logits of `[B, T, V]`
// may be the expanded projection of the collapsed `[B, T, H]` rows.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::xent;

namespace {
/// What a projection reads.
struct Projection {
  Value hidden, weight, bias;
};
} // namespace

/// The map over (m, n, k) that reads dimensions `i` and `j`.
static AffineMap getMap(MLIRContext *ctx, unsigned i, unsigned j) {
  return AffineMap::get(
      3, 0, {getAffineDimExpr(i, ctx), getAffineDimExpr(j, ctx)}, ctx);
}

/// The `[V]` bias that `v` broadcasts over the rows of a `[M, V]` tensor
/// (`linalg.broadcast` along dimension 0, or a generic that yields its
/// input, maybe widened, read along the classes), or null.
static Value matchRowBroadcast(Value v) {
  if (auto broadcast = v.getDefiningOp<linalg::BroadcastOp>()) {
    if (broadcast.getDimensions() == ArrayRef<int64_t>{0})
      return broadcast.getInput();
    return {};
  }
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumParallelLoops() != 2 || generic.getNumLoops() != 2)
    return {};
  MLIRContext *ctx = v.getContext();
  AffineMap classes = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  if (generic.getIndexingMapsArray()[0] != classes)
    return {};
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value yielded = yield.getValues()[0];
  if (auto ext = yielded.getDefiningOp<arith::ExtFOp>())
    yielded = ext.getIn();
  if (yielded != body.getArgument(0) || body.getOperations().size() > 2)
    return {};
  return generic.getDpsInputOperand(0)->get();
}

/// True when `v` is a zero-filled tensor.
static bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// Matches `hidden · weightᵀ`, accumulated into zero or into the broadcast
/// bias.
static FailureOr<Projection> matchContraction(Value v, std::string &reason) {
  auto linalgOp = v.getDefiningOp<linalg::LinalgOp>();
  if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp) ||
      linalgOp.getNumLoops() != 3 || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumParallelLoops() != 2) {
    reason = "the logits are not a matrix product";
    return failure();
  }
  MLIRContext *ctx = v.getContext();
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  if (maps[2] != getMap(ctx, 0, 1) || maps[0] != getMap(ctx, 0, 2)) {
    reason = "the product does not contract the hidden features of each row";
    return failure();
  }
  Projection p;
  p.hidden = linalgOp.getDpsInputOperand(0)->get();
  Value rhs = linalgOp.getDpsInputOperand(1)->get();
  if (maps[1] == getMap(ctx, 1, 2)) {
    p.weight = rhs;
  } else if (auto transpose = rhs.getDefiningOp<linalg::TransposeOp>();
             maps[1] == getMap(ctx, 2, 1) && transpose &&
             transpose.getPermutation() == ArrayRef<int64_t>{1, 0}) {
    p.weight = transpose.getInput();
  } else {
    reason = "the product does not read the weight as [V, H]";
    return failure();
  }
  Value init = linalgOp.getDpsInitOperand(0)->get();
  if (!isZeroFill(init)) {
    p.bias = matchRowBroadcast(init);
    if (!p.bias) {
      reason = "the product accumulates into neither zero nor a bias";
      return failure();
    }
  }
  return p;
}

/// Matches the projection, with a bias added after the product when there
/// is none in its accumulator.
static FailureOr<Projection> matchProjection(Value v, std::string &reason) {
  auto add = v.getDefiningOp<linalg::LinalgOp>();
  if (add && add.getNumDpsInputs() == 2 && !isa<linalg::MatmulOp>(add) &&
      !linalg::isaContractionOpInterface(add)) {
    bool isAdd = isa<linalg::AddOp>(add);
    if (auto generic = dyn_cast<linalg::GenericOp>(add.getOperation())) {
      Block &body = generic.getRegion().front();
      auto sum = dyn_cast<arith::AddFOp>(body.front());
      isAdd = body.getOperations().size() == 2 && sum &&
              cast<linalg::YieldOp>(body.getTerminator()).getValues()[0] ==
                  sum.getResult() &&
              llvm::is_contained(ArrayRef<Value>{sum.getLhs(), sum.getRhs()},
                                 body.getArgument(0)) &&
              llvm::is_contained(ArrayRef<Value>{sum.getLhs(), sum.getRhs()},
                                 body.getArgument(1));
    }
    if (isAdd) {
      for (unsigned i = 0; i < 2; ++i) {
        Value bias = matchRowBroadcast(add.getDpsInputOperand(1 - i)->get());
        if (!bias)
          continue;
        FailureOr<Projection> p =
            matchContraction(add.getDpsInputOperand(i)->get(), reason);
        if (failed(p))
          return failure();
        if (p->bias) {
          reason = "the projection adds two biases";
          return failure();
        }
        p->bias = bias;
        return p;
      }
    }
  }
  return matchContraction(v, reason);
}

/// The projection that computes `ce`'s logits, with `hidden` of `[B, T, H]`
/// when the logits are the expanded product of the collapsed rows.
static FailureOr<Projection> matchLogits(CrossEntropyOp ce,
                                         std::string &reason) {
  Value logits = ce.getLogits();
  if (!logits.hasOneUse()) {
    reason = "the logits have other users";
    return failure();
  }
  int64_t rank = ce.getLogits().getType().getRank();
  if (ce.hasProbabilityTargets() || ce.getClassAxis() != rank - 1 ||
      (rank != 2 && rank != 3)) {
    reason = "not class-index targets with the classes last";
    return failure();
  }
  if (rank == 2)
    return matchProjection(logits, reason);
  auto expand = logits.getDefiningOp<tensor::ExpandShapeOp>();
  SmallVector<ReassociationIndices> rowsOf3d = {{0, 1}, {2}};
  if (!expand || expand.getReassociationIndices() != rowsOf3d) {
    reason = "the [B, T, V] logits are not expanded rows";
    return failure();
  }
  FailureOr<Projection> p = matchProjection(expand.getSrc(), reason);
  if (failed(p))
    return failure();
  auto collapse = p->hidden.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getReassociationIndices() != rowsOf3d) {
    reason = "the [B, T, V] logits project rows that are not collapsed";
    return failure();
  }
  p->hidden = collapse.getSrc();
  return p;
}

/// The ops between `leaves` and `root`, in program order, or failure when
/// the computation reads another block argument or has side effects.
static FailureOr<SmallVector<Operation *>>
collectProjectionSlice(Value root, ArrayRef<Value> leaves) {
  DenseSet<Value> stop(leaves.begin(), leaves.end());
  SetVector<Operation *> ops;
  SmallVector<Value> worklist = {root};
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
  Block *block = root.getDefiningOp()->getBlock();
  if (!llvm::all_of(order,
                    [&](Operation *op) { return op->getBlock() == block; }))
    return failure();
  llvm::sort(order,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return order;
}

/// Replaces `ce` and its projection by one xent.linear_cross_entropy.
static LogicalResult raiseProjection(RewriterBase &rewriter, CrossEntropyOp ce,
                                     const Projection &p) {
  SmallVector<Value> operands = {p.hidden, p.weight};
  if (p.bias)
    operands.push_back(p.bias);
  operands.push_back(ce.getTarget());
  if (ce.getWeight())
    operands.push_back(ce.getWeight());
  FailureOr<SmallVector<Operation *>> slice =
      collectProjectionSlice(ce.getLogits(), operands);
  if (failed(slice))
    return failure();

  rewriter.setInsertionPoint(ce);
  Location loc = ce.getLoc();
  auto linear = LinearCrossEntropyOp::create(
      rewriter, loc, ce.getLoss().getType(),
      ce.getZLoss() ? ce.getZLoss().getType() : Type(), p.hidden, p.weight,
      p.bias, ce.getTarget(), ce.getWeight(), ce.getReductionAttr(),
      ce.getIgnoreIndexAttr(), ce.getLabelSmoothingAttr(),
      ce.getZLossScaleAttr(), ce.getSoftcapAttr(), ce.getLossScalars());
  // The region: the projection's ops and the loss op, on the block's
  // arguments.
  {
    OpBuilder::InsertionGuard guard(rewriter);
    SmallVector<Type> types(linear->getOperandTypes());
    SmallVector<Location> locs(types.size(), loc);
    Block *block =
        rewriter.createBlock(&linear.getDecomposition(), {}, types, locs);
    IRMapping mapping;
    mapping.map(linear->getOperands(), block->getArguments());
    for (Operation *op : *slice)
      rewriter.clone(*op, mapping);
    Operation *loss = rewriter.clone(*ce, mapping);
    YieldOp::create(rewriter, loc, loss->getResults());
  }
  // The matchers check the types; an op that would not verify (a bias of
  // another element type...) is not raised.
  ScopedDiagnosticHandler quiet(ce.getContext(),
                                [](Diagnostic &) { return success(); });
  if (failed(verify(linear))) {
    rewriter.eraseOp(linear);
    return failure();
  }
  rewriter.replaceOp(ce, linear->getResults());
  for (Operation *op : llvm::reverse(*slice))
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}

void mlir::xent::recognize::raiseProjections(Operation *root) {
  SmallVector<CrossEntropyOp> losses;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<LinearCrossEntropyOpInterface>(op))
      return WalkResult::skip();
    if (auto ce = dyn_cast<CrossEntropyOp>(op))
      losses.push_back(ce);
    return WalkResult::advance();
  });
  IRRewriter rewriter(root->getContext());
  for (CrossEntropyOp ce : losses) {
    std::string reason;
    FailureOr<Projection> p = matchLogits(ce, reason);
    if (succeeded(p))
      (void)raiseProjection(rewriter, ce, *p);
  }
}
