//===- Recognize.cpp - Raise cross-entropy chains to xent ops -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// `xent-recognize` finds values computed as a softmax cross-entropy (or its
// gradient with respect to the logits) by ordinary upstream ops and computes
// them with `xent.cross_entropy` / `xent.cross_entropy_grad` instead. The
// matching happens on the semantic view (View.h) with the matchers
// of Matchers.h; this file turns a match into the op:
//
//   * operands: the logits before any widening cast, the targets, the class
//     weights and the gradient's grad_output, as the chain reads them;
//   * attributes: reduction, ignore_index (when the chain masks), axis,
//     softcap (when the chain caps the logits);
//   * decomposition region: a clone of every op between those operands and
//     the matched value, so that xent-inline-decomposition gives back exactly
//     the original computation.
//
// The matched value's uses are replaced; the original ops stay for their
// other users and the ones left dead are erased.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"
#include "xent/Dialect/Xent/IR/LossBuilder.h"

#include "Matchers.h"
#include "View.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::xent {
#define GEN_PASS_DEF_XENTRECOGNIZE
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;

/// The ignore_index of a chain that does not mask: no in-range class index
/// (and no i32 target, sign-extended) equals it, so the op ignores nothing
/// the chain would have kept.
static constexpr int64_t kNoIgnoreIndex = std::numeric_limits<int64_t>::min();

//===----------------------------------------------------------------------===//
// Building the raised op
//===----------------------------------------------------------------------===//

/// The ops that compute `root` from `leaves`, in an order in which they can
/// be cloned. Fails when the computation reads a value it cannot carry into
/// an isolated region (a block argument that is not a leaf) or has side
/// effects.
static FailureOr<SmallVector<Operation *>>
collectSlice(Value root, ArrayRef<Value> leaves, std::string &reason) {
  DenseSet<Value> stop(leaves.begin(), leaves.end());
  DenseSet<Operation *> visited;
  SmallVector<Operation *> order;
  // Iterative post-order DFS over the values each op reads (operands and
  // values its regions capture).
  struct Frame {
    Operation *op;
    SmallVector<Value> inputs;
    size_t next = 0;
  };
  SmallVector<Frame> stack;
  auto push = [&](Value v) -> LogicalResult {
    if (stop.contains(v))
      return success();
    Operation *def = v.getDefiningOp();
    if (!def) {
      reason = "the chain reads a block argument that is not one of the "
               "raised op's operands";
      return failure();
    }
    if (!visited.insert(def).second)
      return success();
    auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
    if (!isMemoryEffectFree(def) &&
        !(linalgOp && linalgOp.hasPureTensorSemantics())) {
      reason = ("the chain contains '" + def->getName().getStringRef() +
                "', which has side effects")
                   .str();
      return failure();
    }
    Frame frame{def, llvm::to_vector(def->getOperands())};
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(def->getRegions(), captured);
    frame.inputs.append(captured.begin(), captured.end());
    stack.push_back(std::move(frame));
    return success();
  };
  if (failed(push(root)))
    return failure();
  while (!stack.empty()) {
    Frame &top = stack.back();
    if (top.next < top.inputs.size()) {
      Value input = top.inputs[top.next++];
      if (failed(push(input)))
        return failure();
      continue;
    }
    order.push_back(top.op);
    stack.pop_back();
  }
  // Keep the program order when the chain lives in one block, so that
  // inlining the region gives back the ops in their original order.
  Block *block = root.getDefiningOp()->getBlock();
  if (llvm::all_of(order,
                   [&](Operation *op) { return op->getBlock() == block; }))
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
  return order;
}

/// The groups that collapse the unit dimensions of `shape` into its other
/// ones (each non-unit dimension with the unit ones after it, leading ones
/// with the first); none when every dimension is a unit one (a collapse to
/// rank 0).
static SmallVector<ReassociationIndices>
unitDimGroups(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> starts;
  for (auto [k, size] : llvm::enumerate(shape))
    if (size != 1)
      starts.push_back(starts.empty() ? 0 : static_cast<int64_t>(k));
  SmallVector<ReassociationIndices> groups;
  for (auto [i, start] : llvm::enumerate(starts)) {
    int64_t end = i + 1 < starts.size() ? starts[i + 1]
                                        : static_cast<int64_t>(shape.size());
    groups.push_back(llvm::to_vector(llvm::seq<int64_t>(start, end)));
  }
  return groups;
}

/// Fills the decomposition region of `op` with clones of `slice`, its block
/// arguments standing for `leaves` (the values `op`'s operands stand for in
/// the chain, in operand order; a leaf with unit dimensions the operand
/// lacks is the argument expanded), and yields the clone of `root`
/// (collapsed to the op's 0-d result when `root` keeps unit dimensions).
static void buildRegion(OpBuilder &b, Operation *op,
                        ArrayRef<Operation *> slice, ValueRange leaves,
                        Value root) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> types(op->getOperandTypes());
  SmallVector<Location> locs(op->getNumOperands(), op->getLoc());
  Block *block = b.createBlock(&op->getRegion(0), {}, types, locs);
  IRMapping mapping;
  for (auto [leaf, arg] : llvm::zip(leaves, block->getArguments())) {
    Value value = arg;
    if (leaf.getType() != arg.getType())
      value = tensor::ExpandShapeOp::create(
          b, op->getLoc(), leaf.getType(), arg,
          unitDimGroups(cast<RankedTensorType>(leaf.getType()).getShape()));
    mapping.map(leaf, value);
  }
  for (Operation *inner : slice)
    b.clone(*inner, mapping);
  Value yielded = mapping.lookupOrDefault(root);
  Type resultType = op->getResult(0).getType();
  if (yielded.getType() != resultType)
    yielded = tensor::CollapseShapeOp::create(
        b, op->getLoc(), resultType, yielded, ArrayRef<ReassociationIndices>{});
  YieldOp::create(b, op->getLoc(), yielded);
}

/// Verifies `op`, capturing the diagnostics instead of reporting them.
static LogicalResult verifyQuietly(Operation *op, std::string &message) {
  ScopedDiagnosticHandler handler(op->getContext(), [&](Diagnostic &diag) {
    if (message.empty())
      message = diag.str();
    return success();
  });
  return verify(op);
}

namespace {
/// What the patterns share: the view of the IR and the liveness of ops
/// (rebuilt after each rewrite, and at each visit unless `keepView`), the
/// ops visited and those left whole, and what the patterns tried on the op
/// being visited found.
struct RecognizeState {
  RecognizeState(bool reportFailures, bool assumeNormalizedLogProbs,
                 bool keepView)
      : reportFailures(reportFailures), keepView(keepView) {
    options.assumeNormalizedLogProbs = assumeNormalizedLogProbs;
  }

  ViewAnalysis &view() {
    if (!analysis)
      analysis = std::make_unique<ViewAnalysis>();
    return *analysis;
  }
  void invalidate() {
    analysis.reset();
    liveness.clear();
  }
  bool isLive(Operation *op);

  /// Starts the visit of `op` (the first pattern tried on it): false when
  /// `op` was visited already, belongs to a value left whole, is (or is in
  /// the region of) an op of the family, or nothing live needs it.
  bool beginVisit(Operation *op) {
    if (visited.contains(op) || blocked.contains(op) ||
        isa<CrossEntropyOpInterface>(op) ||
        op->getParentOfType<CrossEntropyOpInterface>())
      return false;
    if (!keepView)
      invalidate();
    if (!isLive(op))
      return false;
    current = op;
    lastNearMiss = false;
    notice.reset();
    forwardReason.clear();
    backwardReason.clear();
    return true;
  }
  /// True while the patterns after the first are tried on `op`.
  bool isVisiting(Operation *op) const { return current == op; }
  /// Ends the visit of `op`: no pattern is tried on it again.
  void endVisit(Operation *op) {
    visited.insert(op);
    current = nullptr;
  }

  std::unique_ptr<ViewAnalysis> analysis;
  DenseMap<Operation *, bool> liveness;
  MatchOptions options;
  bool reportFailures;
  /// Whether the view and the liveness are kept from one visit to the next
  /// (recognizeCrossEntropy, where only the patterns change the IR).
  bool keepView;
  /// True while a pattern rewrites (it keeps the state valid itself).
  bool rewriting = false;
  DenseSet<Operation *> visited;
  /// The ops of the values left whole (a near miss depends on them).
  DenseSet<Operation *> blocked;

  /// The visit in progress: its op, whether a failed match was a near miss,
  /// the reason of a failed match that is reported in any case, why the
  /// patterns did not match.
  Operation *current = nullptr;
  bool lastNearMiss = false;
  std::optional<std::string> notice;
  std::string forwardReason, backwardReason;
};
} // namespace

/// True when `op` would not be trivially dead without users (side effects,
/// also nested ones such as a cf.assert in a linalg body; a terminator), or
/// when one of its results reaches such an op (through uses in nested
/// regions too).
bool RecognizeState::isLive(Operation *op) {
  auto it = liveness.find(op);
  if (it != liveness.end())
    return it->second;
  liveness[op] = true; // cycles (graph regions): assume live
  bool live = !wouldOpBeTriviallyDead(op);
  for (Value result : op->getResults()) {
    for (Operation *user : result.getUsers()) {
      if (live)
        break;
      Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
      live = !ancestor || isLive(ancestor);
    }
  }
  liveness[op] = live;
  return live;
}

/// Erases `op` and every op using its results (they are all dead when `op`
/// is), recording each erased op in `gone`.
static void eraseDeadTree(RewriterBase &rewriter, Operation *op,
                          DenseSet<Operation *> &gone) {
  for (Value result : op->getResults()) {
    while (!result.use_empty()) {
      Operation *user = *result.getUsers().begin();
      Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
      eraseDeadTree(rewriter, ancestor ? ancestor : user, gone);
    }
  }
  op->walk([&](Operation *nested) { gone.insert(nested); });
  rewriter.eraseOp(op);
}

/// The number of classes of `logits` (along `axis`) as a scalar of the
/// integer type `elt`.
static Value classCount(OpBuilder &b, Location loc, Value logits, int64_t axis,
                        Type elt) {
  int64_t numClasses = cast<RankedTensorType>(logits.getType()).getDimSize(axis);
  return ShapedType::isDynamic(numClasses)
             ? Value(arith::IndexCastOp::create(
                   b, loc, elt, tensor::DimOp::create(b, loc, logits, axis)))
             : Value(arith::ConstantOp::create(
                   b, loc, b.getIntegerAttr(elt, numClasses)));
}

/// The labels `target` with those outside [0, C) (C the size of `logits`'
/// class axis `axis`) replaced by `ignoreIndex`: what the op takes for a
/// one-hot pick (RaisedOp::oneHotPick).
static Value remapOutOfRange(OpBuilder &b, Location loc, Value target,
                             Value logits, int64_t axis, int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(target.getType());
  Type elt = type.getElementType();
  Value classes = classCount(b, loc, logits, axis, elt);
  Value ignored = arith::ConstantOp::create(b, loc, b.getIntegerAttr(elt, ignoreIndex));
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(elt, 0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, target);
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{target}, ValueRange{init},
             ArrayRef<AffineMap>{id, id}, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value t = args[0];
               Value nonNegative = arith::CmpIOp::create(
                   nb, nloc, arith::CmpIPredicate::sge, t, zero);
               Value below = arith::CmpIOp::create(
                   nb, nloc, arith::CmpIPredicate::slt, t, classes);
               Value inRange =
                   arith::AndIOp::create(nb, nloc, nonNegative, below);
               linalg::YieldOp::create(
                   nb, nloc,
                   ValueRange{arith::SelectOp::create(nb, nloc, inRange, t,
                                                      ignored)});
             })
      .getResult(0);
}

/// A one-hot chain's z-loss for the labels outside [0, C) that the op,
/// taking them as ignored, leaves out: `z · lse²` of each such element (but
/// one the chain masks as `chainIgnore`), added to the op's per-element
/// `loss` (`none`), or summed into its 0-d `loss`, from the op's `lse`.
static Value addOutOfRangeZLoss(OpBuilder &b, Location loc, Value loss,
                                Value lse, Value labels, Value logits,
                                int64_t axis, double z,
                                std::optional<int64_t> chainIgnore) {
  auto lossType = cast<RankedTensorType>(loss.getType());
  auto labelsType = cast<RankedTensorType>(labels.getType());
  Type elt = lossType.getElementType(), index = labelsType.getElementType();
  bool perElement = lossType.getRank() != 0;
  Value classes = classCount(b, loc, logits, axis, index);
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(index, 0));
  Value ignored;
  if (chainIgnore)
    ignored = arith::ConstantOp::create(b, loc,
                                        b.getIntegerAttr(index, *chainIgnore));
  Value scale = loss::constF32(b, loc, z);
  Value none = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, 0));
  unsigned rank = labelsType.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<Value> inputs = {lse, labels};
  SmallVector<AffineMap> maps = {id, id};
  Value init = loss;
  if (perElement) {
    inputs.push_back(loss);
    maps.push_back(id);
    init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, loss),
                                   elt);
  }
  maps.push_back(perElement ? id : AffineMap::get(rank, 0, b.getContext()));
  SmallVector<utils::IteratorType> iterators(
      rank, perElement ? utils::IteratorType::parallel
                       : utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{lossType}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value t = args[1];
               Value outside = arith::OrIOp::create(
                   nb, nloc,
                   arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::slt,
                                         t, zero),
                   arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::sge,
                                         t, classes));
               if (ignored)
                 outside = arith::AndIOp::create(
                     nb, nloc, outside,
                     arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ne,
                                           t, ignored));
               Value l = args[0];
               Value term = loss::fromF32(
                   nb, nloc,
                   arith::MulFOp::create(
                       nb, nloc, arith::MulFOp::create(nb, nloc, l, l), scale),
                   elt);
               term = arith::SelectOp::create(nb, nloc, outside, term, none);
               // The element's loss, or the sum so far.
               Value base = perElement ? args[2] : args.back();
               linalg::YieldOp::create(
                   nb, nloc,
                   ValueRange{arith::AddFOp::create(nb, nloc, base, term)});
             })
      .getResult(0);
}

/// The f32 count (0-d) of the elements of `target` other than
/// `ignoreIndex`.
static Value countLabels(OpBuilder &b, Location loc, Value target,
                         int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(target.getType());
  Type f32 = b.getF32Type();
  Value ignored = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type.getElementType(), ignoreIndex));
  auto scalar = RankedTensorType::get({}, f32);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32);
  Value init =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
          .getResult(0);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  AffineMap toScalar = AffineMap::get(type.getRank(), 0, b.getContext());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{scalar}, ValueRange{target}, ValueRange{init},
             ArrayRef<AffineMap>{id, toScalar}, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value kept = arith::CmpIOp::create(
                   nb, nloc, arith::CmpIPredicate::ne, args[0], ignored);
               Value one = arith::UIToFPOp::create(nb, nloc, f32, kept);
               linalg::YieldOp::create(
                   nb, nloc,
                   ValueRange{arith::AddFOp::create(nb, nloc, args[1], one)});
             })
      .getResult(0);
}

/// The f32 number of elements of `target` (a constant for static sizes).
static Value countElements(OpBuilder &b, Location loc, Value target) {
  auto type = cast<RankedTensorType>(target.getType());
  int64_t known = 1;
  Value n;
  for (int64_t k = 0; k < type.getRank(); ++k) {
    if (!type.isDynamicDim(k)) {
      known *= type.getDimSize(k);
      continue;
    }
    Value size = tensor::DimOp::create(b, loc, target, k);
    n = n ? arith::MulIOp::create(b, loc, n, size) : size;
  }
  if (!n)
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(known)));
  if (known != 1)
    n = arith::MulIOp::create(b, loc, n,
                              arith::ConstantIndexOp::create(b, loc, known));
  n = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), n);
  return arith::UIToFPOp::create(b, loc, b.getF32Type(), n);
}

/// Rewrites the value `root` into the op described by `raised`; `isGrad`
/// selects xent.cross_entropy_grad. On failure, the IR is unchanged and
/// `reason` says why.
static LogicalResult raise(PatternRewriter &rewriter, RecognizeState &state,
                           Value root, const RaisedOp &raised, bool isGrad,
                           std::string &reason) {
  Operation *rootOp = root.getDefiningOp();
  ViewAnalysis &va = state.view();
  SmallVector<Value> operands;
  if (isGrad && raised.gradOutput)
    operands.push_back(raised.gradOutput);
  operands.push_back(raised.logits);
  if (raised.target)
    operands.push_back(raised.target);
  if (raised.weight)
    operands.push_back(raised.weight);
  // What the values built beside the op read (materialized probabilities,
  // the factors of a loss scaled per element) bounds the chain too.
  SetVector<Value> built;
  if (raised.probabilityExpr)
    recognize::detail::collectLeafValues(raised.probabilityExpr, built);
  for (Node *f : raised.elementScale)
    recognize::detail::collectLeafValues(f, built);
  SmallVector<Value> bounds(operands);
  bounds.append(built.begin(), built.end());
  FailureOr<SmallVector<Operation *>> slice =
      collectSlice(root, bounds, reason);
  if (failed(slice))
    return failure();

  MLIRContext *ctx = rewriter.getContext();
  Location loc = rootOp->getLoc();
  auto logitsType = cast<RankedTensorType>(raised.logits.getType());
  int64_t defaultAxis = logitsType.getRank() == 1 ? 0 : 1;
  IntegerAttr axis = raised.axis == defaultAxis
                         ? IntegerAttr()
                         : rewriter.getI64IntegerAttr(raised.axis);
  IntegerAttr ignoreIndex =
      raised.probabilityTargets
          ? IntegerAttr()
          : rewriter.getI64IntegerAttr(
                raised.ignoreIndex.value_or(kNoIgnoreIndex));
  auto reduction = ReductionAttr::get(ctx, raised.reduction);
  FloatAttr labelSmoothing =
      rewriter.getF32FloatAttr(static_cast<float>(raised.labelSmoothing));
  FloatAttr zLossScale =
      rewriter.getF32FloatAttr(static_cast<float>(raised.zLossScale));
  FloatAttr softcap =
      raised.softcap
          ? rewriter.getF32FloatAttr(static_cast<float>(*raised.softcap))
          : FloatAttr();
  // A total that keeps unit dimensions (TOSA's rank-keeping reductions) is
  // the op's 0-d result, expanded back to the type the chain computes.
  auto rootType = cast<RankedTensorType>(root.getType());
  Type resultType = root.getType();
  if (!isGrad && raised.reduction != Reduction::none && rootType.getRank() != 0)
    resultType = RankedTensorType::get({}, rootType.getElementType());
  bool scaled = !raised.elementScale.empty();
  if (scaled && raised.elementSummed && rootType.getRank() != 0)
    resultType = RankedTensorType::get({}, rootType.getElementType());

  // The op and what it reads that the chain does not are built in a block
  // of their own and moved before the chain once the op verifies, so that a
  // refused op leaves the IR as it was.
  Block scratch;
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(&scratch);
  // A one-hot pick's labels outside [0, C) as ignored; an unweighted mean
  // of them the op's f32 sum divided as the chain divides (the chain's ops
  // compute a mean, not the op's sum, so they are no decomposition of it).
  Value target = raised.target;
  if (raised.probabilityExpr) {
    // The probabilities as a tensor shaped like the logits.
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, loc, raised.logits);
    Value init = tensor::EmptyOp::create(b, loc, sizes,
                                         raised.probabilityExpr->type);
    target = recognize::detail::buildMaterialized(
        b, loc, va, raised.logitsDims, {}, {}, {raised.probabilityExpr}, init,
        /*reduce=*/false,
        [](OpBuilder &, Location, ValueRange, ArrayRef<Value> values, Value) {
          return values[0];
        });
  }
  // Targets the chain computes with extra unit dimensions (t[:, None]) are
  // read collapsed; the region expands them back.
  auto targetType = cast<RankedTensorType>(target.getType());
  if (!raised.probabilityTargets &&
      targetType.getRank() != logitsType.getRank() - 1)
    target = tensor::CollapseShapeOp::create(
        b, loc, target, unitDimGroups(targetType.getShape()));
  Value labels = target;
  if (raised.oneHotPick)
    target = remapOutOfRange(b, loc, target, raised.logits, raised.axis,
                             *raised.ignoreIndex);
  bool divides = raised.meanDivisor != RaisedOp::MeanDivisor::None;
  Type lossType = resultType;
  if (divides)
    lossType = RankedTensorType::get({}, rewriter.getF32Type());
  if (scaled) {
    // The loss per element, shaped like the logits without the class axis.
    SmallVector<int64_t> shape(logitsType.getShape());
    shape.erase(shape.begin() + raised.axis);
    lossType = RankedTensorType::get(shape, rootType.getElementType());
  }
  Value gradOutput = raised.gradOutput;
  if (isGrad && !gradOutput) {
    // The chain is the gradient of the loss seeded with a constant.
    auto type = RankedTensorType::get({}, b.getF32Type());
    gradOutput = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, static_cast<float>(raised.constantGradOutput.value_or(1))));
  }
  Operation *op;
  if (isGrad)
    op = CrossEntropyGradOp::create(b, loc, root.getType(), gradOutput,
                                    raised.logits, target, raised.weight,
                                    reduction, ignoreIndex, labelSmoothing,
                                    zLossScale, softcap, axis);
  else if (raised.zLossOutOfRange)
    // With its lse, for the z-loss of the labels it ignores.
    op = CrossEntropyOp::create(
        b, loc, lossType,
        TypeRange{RankedTensorType::get(
            cast<RankedTensorType>(target.getType()).getShape(),
            b.getF32Type())},
        raised.logits, target, raised.weight, /*class_offset=*/Value(),
        /*dynamic_num_classes=*/Value(), Value(), Value(), Value(), Value(),
        reduction, ignoreIndex, labelSmoothing, zLossScale, softcap, axis,
        /*return_lse=*/b.getUnitAttr(), UnitAttr(), UnitAttr(), UnitAttr(),
        IntegerAttr());
  else
    op = CrossEntropyOp::create(b, loc, lossType, Type(), raised.logits, target,
                                raised.weight, reduction, ignoreIndex,
                                labelSmoothing, zLossScale, softcap, axis);
  // The chain on the remapped labels computes what it does on the labels
  // (a label outside [0, C) and the ignore index both give 0). A chain that
  // computes more than the op (a mean the op's sum is divided to, factors
  // per element) or reads what the op does not (probabilities it builds)
  // is no region of the op: its own decomposition stands for it.
  if (!divides && !scaled && !raised.probabilityExpr &&
      !raised.zLossOutOfRange) {
    SmallVector<Value> leaves(op->getOperands());
    llvm::replace(leaves, op->getOperand(isGrad ? 2 : 1), raised.target);
    buildRegion(b, op, *slice, leaves, root);
  }

  // Never leave an op that does not verify: the matchers check every type,
  // this is the last line of defense.
  std::string message;
  if (failed(verifyQuietly(op, message))) {
    reason = "the raised op would not verify: " + message;
    return failure(); // the scratch block and its ops go
  }

  state.rewriting = true;
  rewriter.setInsertionPoint(rootOp);
  while (!scratch.empty())
    rewriter.moveOpBefore(&scratch.front(), rootOp);

  Value result = op->getResult(0);
  if (raised.zLossOutOfRange)
    result = addOutOfRangeZLoss(rewriter, loc, result, op->getResult(1), labels,
                                raised.logits, raised.axis, raised.zLossScale,
                                raised.chainIgnoreIndex);
  if (divides) {
    // result / divisor (0-d f32), rounded to the chain's type: a 0-d
    // linalg.generic, which bufferizes (elementwise arith on tensors does
    // not).
    Value divisor, elements;
    if (raised.meanDivisor == RaisedOp::MeanDivisor::Labels)
      divisor = countLabels(rewriter, loc, raised.target, *raised.ignoreIndex);
    else
      elements = countElements(rewriter, loc, raised.target);
    auto type = cast<RankedTensorType>(resultType);
    Type elt = type.getElementType();
    Value init = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{}, elt);
    AffineMap scalar = AffineMap::get(0, 0, rewriter.getContext());
    SmallVector<Value> inputs = {result};
    if (divisor)
      inputs.push_back(divisor);
    SmallVector<AffineMap> maps(inputs.size() + 1, scalar);
    result = linalg::GenericOp::create(
                 rewriter, loc, TypeRange{type}, inputs, ValueRange{init},
                 maps, ArrayRef<utils::IteratorType>{},
                 [&](OpBuilder &nb, Location nloc, ValueRange args) {
                   Value by = divisor ? args[1] : elements;
                   Value mean = arith::DivFOp::create(nb, nloc, args[0], by);
                   if (elt != mean.getType())
                     mean = arith::TruncFOp::create(nb, nloc, elt, mean);
                   linalg::YieldOp::create(nb, nloc, ValueRange{mean});
                 })
                 .getResult(0);
  }
  if (scaled) {
    // Σ (or each of) coeff · loss · Π factors, in the chain's type.
    Type elt = rootType.getElementType();
    auto lossTensor = cast<RankedTensorType>(lossType);
    SmallVector<Axis, 4> domain =
        recognize::detail::elementDims(raised.logitsDims, raised.axis);
    Value init;
    if (raised.elementSummed) {
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{}, elt);
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getFloatAttr(elt, 0));
      init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    } else {
      init = tensor::EmptyOp::create(
          rewriter, loc, tensor::getMixedSizes(rewriter, loc, result), elt);
    }
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(lossTensor.getRank(), rewriter.getContext());
    double coeff = raised.elementCoeff;
    bool summed = raised.elementSummed;
    result = recognize::detail::buildMaterialized(
        rewriter, loc, va, domain, {result}, {identity}, raised.elementScale,
        init, summed,
        [&](OpBuilder &nb, Location nloc, ValueRange in,
            ArrayRef<Value> factors, Value acc) -> Value {
          Value v = in[0];
          for (Value f : factors) {
            if (f.getType() != elt)
              f = cast<FloatType>(f.getType()).getWidth() <
                          cast<FloatType>(elt).getWidth()
                      ? arith::ExtFOp::create(nb, nloc, elt, f).getResult()
                      : arith::TruncFOp::create(nb, nloc, elt, f).getResult();
            v = arith::MulFOp::create(nb, nloc, v, f);
          }
          if (coeff != 1)
            v = arith::MulFOp::create(
                nb, nloc, v,
                arith::ConstantOp::create(nb, nloc,
                                          nb.getFloatAttr(elt, coeff)));
          return summed ? arith::AddFOp::create(nb, nloc, acc, v).getResult()
                        : v;
        });
  }
  if (result.getType() != root.getType())
    result =
        tensor::ExpandShapeOp::create(rewriter, loc, root.getType(), result,
                                      ArrayRef<ReassociationIndices>{});
  rewriter.replaceAllUsesWith(root, result);
  state.invalidate();
  // The ops of the chain that nothing else needs go, with the dead ops
  // hanging off them (shape queries of intermediate tensors...).
  DenseSet<Operation *> gone;
  for (Operation *dead : llvm::reverse(*slice))
    if (!gone.contains(dead) && !state.isLive(dead))
      eraseDeadTree(rewriter, dead, gone);
  state.invalidate();
  state.rewriting = false;
  return success();
}

/// True when `value` may be a loss or a gradient: a ranked float tensor
/// (the matchers reject the types the ops do not support, saying so).
static bool isCandidate(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Adds every op `op` depends on to `blocked`.
static void blockSlice(Operation *op, DenseSet<Operation *> &blocked) {
  SmallVector<Operation *> worklist = {op};
  while (!worklist.empty()) {
    Operation *current = worklist.pop_back_val();
    auto visit = [&](Value v) {
      if (Operation *def = v.getDefiningOp())
        if (blocked.insert(def).second)
          worklist.push_back(def);
    };
    for (Value operand : current->getOperands())
      visit(operand);
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(current->getRegions(), captured);
    for (Value v : captured)
      visit(v);
  }
}

/// True when a result of `op` is returned by its block's terminator.
static bool isReturned(Operation *op) {
  for (Operation *user : op->getUsers())
    if (user->hasTrait<OpTrait::ReturnLike>())
      return true;
  return false;
}

namespace {

/// The benefits order the patterns on an op: the loss, then its gradient,
/// then the record of an op neither matched.
constexpr unsigned kForwardBenefit = 3;
constexpr unsigned kBackwardBenefit = 2;
constexpr unsigned kUnraisedBenefit = 1;

/// Raises a value that `match` recognizes: a softmax cross-entropy loss
/// (forward chain: log-softmax, target pick, ignore mask, reduction) to
/// xent.cross_entropy, or its gradient with respect to the logits (nll
/// backward, then log-softmax backward) to xent.cross_entropy_grad. The
/// forward pattern, tried first, starts the visit of the op.
struct RaiseChain : public RewritePattern {
  using Matcher = Match<RaisedOp> (*)(ViewAnalysis &, Value,
                                      const MatchOptions &);
  RaiseChain(MLIRContext *ctx, std::shared_ptr<RecognizeState> state,
             Matcher match, bool isGrad)
      : RewritePattern(MatchAnyOpTypeTag(),
                       isGrad ? kBackwardBenefit : kForwardBenefit, ctx),
        state(std::move(state)), match(match), isGrad(isGrad) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isGrad ? !state->isVisiting(op) : !state->beginVisit(op))
      return rewriter.notifyMatchFailure(
          op, "visited, left whole, in an xent op or dead");
    std::string reason = "no float tensor result";
    LogicalResult result = tryRaise(op, rewriter, reason);
    if (succeeded(result)) {
      state->endVisit(op);
      return success();
    }
    (isGrad ? state->backwardReason : state->forwardReason) = reason;
    return rewriter.notifyMatchFailure(op, reason);
  }

  LogicalResult tryRaise(Operation *op, PatternRewriter &rewriter,
                         std::string &reason) const {
    for (Value result : op->getResults()) {
      if (!isCandidate(result))
        continue;
      Match<RaisedOp> m = match(state->view(), result, state->options);
      if (!m) {
        reason = m.getReason();
        state->lastNearMiss |= m.isNearMiss();
        if (m.isNotice())
          state->notice = m.getReason();
        continue;
      }
      return raise(rewriter, *state, result, *m, isGrad, reason);
    }
    return failure();
  }

  std::shared_ptr<RecognizeState> state;
  Matcher match;
  bool isGrad;
};

/// Tried on an op that neither RaiseChain raised; rewrites nothing. A value
/// that contains the chain in a form the ops cannot compute is left whole:
/// no piece of it is raised on its own. Emits the remark of a reason that
/// is reported in any case, or, with `reportFailures`, the one of a
/// returned value that is not raised.
struct RecordUnraised : public RewritePattern {
  RecordUnraised(MLIRContext *ctx, std::shared_ptr<RecognizeState> state)
      : RewritePattern(MatchAnyOpTypeTag(), kUnraisedBenefit, ctx),
        state(std::move(state)) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!state->isVisiting(op))
      return failure();
    RecognizeState &s = *state;
    s.endVisit(op);
    if (s.lastNearMiss)
      blockSlice(op, s.blocked);
    if (s.notice) {
      op->emitRemark() << "not raised: " << *s.notice;
      return failure();
    }
    if (s.reportFailures && isReturned(op)) {
      InFlightDiagnostic diag = op->emitRemark()
                                << "not raised: not a cross-entropy ("
                                << s.forwardReason << "), nor its gradient ("
                                << s.backwardReason << ")";
      std::string expr;
      llvm::raw_string_ostream os(expr);
      ViewAnalysis &view = s.view();
      for (Value result : op->getResults())
        if (isCandidate(result))
          view.print(view.get(result).node, os);
      diag.attachNote() << "seen as " << expr;
    }
    return failure();
  }

  std::shared_ptr<RecognizeState> state;
};

/// Keeps the state valid when an op goes that no pattern erased (the greedy
/// driver erases the ops it finds dead) and passes every notification on.
struct RecognizeListener : public RewriterBase::ForwardingListener {
  RecognizeListener(OpBuilder::Listener *next, RecognizeState &state)
      : ForwardingListener(next), state(state) {}

  void notifyOperationErased(Operation *op) override {
    if (!state.rewriting)
      state.invalidate();
    ForwardingListener::notifyOperationErased(op);
  }

  RecognizeState &state;
};

struct XentRecognizePass
    : public xent::impl::XentRecognizeBase<XentRecognizePass> {
  using Base::Base;

  void runOnOperation() override {
    recognizeCrossEntropy(getOperation(), reportFailures,
                          assumeNormalizedLogProbs);
  }
};
} // namespace

static void populatePatterns(RewritePatternSet &patterns,
                             const std::shared_ptr<RecognizeState> &state) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<RaiseChain>(ctx, state, matchCrossEntropy, /*isGrad=*/false);
  patterns.add<RaiseChain>(ctx, state, matchCrossEntropyGrad,
                           /*isGrad=*/true);
  patterns.add<RecordUnraised>(ctx, state);
}

void mlir::xent::populateXentRecognizePatterns(RewritePatternSet &patterns,
                                               bool reportFailures,
                                               bool assumeNormalizedLogProbs) {
  populatePatterns(patterns, std::make_shared<RecognizeState>(
                                 reportFailures, assumeNormalizedLogProbs,
                                 /*keepView=*/false));
}

void mlir::xent::recognizeCrossEntropy(RewriterBase &rewriter, Operation *root,
                                       bool reportFailures,
                                       bool assumeNormalizedLogProbs) {
  MLIRContext *ctx = root->getContext();
  auto state = std::make_shared<RecognizeState>(
      reportFailures, assumeNormalizedLogProbs, /*keepView=*/true);
  // The candidates in program order (regions of existing xent ops are left
  // alone). The greedy driver pops its worklist from the back: the last
  // candidate is visited first, so that the outermost value of a chain (the
  // mean, not the sum it divides) is matched first. Candidates nothing live
  // needs are left out (they are never raised; the driver would erase the
  // dead ones).
  SmallVector<Operation *> candidates;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<CrossEntropyOpInterface>(op))
      return WalkResult::skip();
    if (llvm::any_of(op->getResults(), isCandidate))
      candidates.push_back(op);
    return WalkResult::advance();
  });
  SmallVector<Operation *> live;
  for (Operation *op : llvm::reverse(candidates))
    if (state->isLive(op))
      live.push_back(op);
  std::reverse(live.begin(), live.end());

  RewritePatternSet patterns(ctx);
  populatePatterns(patterns, state);
  RecognizeListener listener(rewriter.getListener(), *state);
  // Each candidate once, in that order, nothing else: no op the patterns
  // create is visited, none is folded.
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setListener(&listener);
  (void)applyOpPatternsGreedily(live, std::move(patterns), config);
  raiseProjections(rewriter, root, reportFailures);
}

void mlir::xent::recognizeCrossEntropy(Operation *root, bool reportFailures,
                                       bool assumeNormalizedLogProbs) {
  IRRewriter rewriter(root->getContext());
  recognizeCrossEntropy(rewriter, root, reportFailures,
                        assumeNormalizedLogProbs);
}
