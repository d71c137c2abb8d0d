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

/// Fills the decomposition region of `op` with clones of `slice`, its block
/// arguments standing for `leaves` (the values `op`'s operands stand for in
/// the chain, in operand order), and yields the clone of `root` (collapsed
/// to the op's 0-d result when `root` keeps unit dimensions).
static void buildRegion(RewriterBase &rewriter, Operation *op,
                        ArrayRef<Operation *> slice, ValueRange leaves,
                        Value root) {
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<Type> types(op->getOperandTypes());
  SmallVector<Location> locs(op->getNumOperands(), op->getLoc());
  Block *block = rewriter.createBlock(&op->getRegion(0), {}, types, locs);
  IRMapping mapping;
  mapping.map(leaves, block->getArguments());
  for (Operation *inner : slice)
    rewriter.clone(*inner, mapping);
  Value yielded = mapping.lookupOrDefault(root);
  Type resultType = op->getResult(0).getType();
  if (yielded.getType() != resultType)
    yielded = tensor::CollapseShapeOp::create(rewriter, op->getLoc(),
                                              resultType, yielded,
                                              ArrayRef<ReassociationIndices>{});
  YieldOp::create(rewriter, op->getLoc(), yielded);
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
/// What the patterns and the driver share: the view of the IR and the
/// liveness of ops, both rebuilt after each rewrite, and whether the last
/// failed match was a near miss.
struct RecognizeState {
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

  std::unique_ptr<ViewAnalysis> analysis;
  DenseMap<Operation *, bool> liveness;
  MatchOptions options;
  bool lastNearMiss = false;
  /// The reason of the last failed match that is reported in any case.
  std::optional<std::string> notice;
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

/// The labels `target` with those outside [0, C) (C the size of `logits`'
/// class axis `axis`) replaced by `ignoreIndex`: what the op takes for a
/// one-hot pick (RaisedOp::oneHotPick).
static Value remapOutOfRange(OpBuilder &b, Location loc, Value target,
                             Value logits, int64_t axis, int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(target.getType());
  Type elt = type.getElementType();
  int64_t numClasses = cast<RankedTensorType>(logits.getType()).getDimSize(axis);
  Value classes =
      ShapedType::isDynamic(numClasses)
          ? Value(arith::IndexCastOp::create(
                b, loc, elt, tensor::DimOp::create(b, loc, logits, axis)))
          : Value(arith::ConstantOp::create(
                b, loc, b.getIntegerAttr(elt, numClasses)));
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

/// Erases `op` and, recursively, the ops defining its operands that nothing
/// else uses (what remapOutOfRange built, when the op is refused).
static void eraseUnusedTree(RewriterBase &rewriter, Operation *op) {
  SmallVector<Value> operands(op->getOperands());
  rewriter.eraseOp(op);
  for (Value v : operands)
    if (Operation *def = v.getDefiningOp();
        def && wouldOpBeTriviallyDead(def))
      eraseUnusedTree(rewriter, def);
}

/// Rewrites the value `root` into the op described by `raised`; `isGrad`
/// selects xent.cross_entropy_grad.
static LogicalResult raise(PatternRewriter &rewriter, RecognizeState &state,
                           Value root, const RaisedOp &raised, bool isGrad) {
  Operation *rootOp = root.getDefiningOp();
  SmallVector<Value> operands;
  if (isGrad && raised.gradOutput)
    operands.push_back(raised.gradOutput);
  operands.push_back(raised.logits);
  operands.push_back(raised.target);
  if (raised.weight)
    operands.push_back(raised.weight);
  std::string reason;
  FailureOr<SmallVector<Operation *>> slice =
      collectSlice(root, operands, reason);
  if (failed(slice))
    return rewriter.notifyMatchFailure(rootOp, reason);

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

  rewriter.setInsertionPoint(rootOp);
  // A one-hot pick's labels outside [0, C) as ignored; an unweighted mean
  // of them the op's f32 sum divided as the chain divides (the chain's ops
  // compute a mean, not the op's sum, so they are no decomposition of it).
  Value target = raised.target;
  if (raised.oneHotPick)
    target = remapOutOfRange(rewriter, loc, target, raised.logits,
                             raised.axis, *raised.ignoreIndex);
  bool divides = raised.meanDivisor != RaisedOp::MeanDivisor::None;
  Type lossType = resultType;
  if (divides)
    lossType = RankedTensorType::get({}, rewriter.getF32Type());
  Value gradOutput = raised.gradOutput;
  Operation *seed = nullptr;
  if (isGrad && !gradOutput) {
    // The chain is the gradient of the loss seeded with a constant.
    auto type = RankedTensorType::get({}, rewriter.getF32Type());
    seed = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(
            type, static_cast<float>(raised.constantGradOutput.value_or(1))));
    gradOutput = seed->getResult(0);
  }
  Operation *op;
  if (isGrad)
    op = CrossEntropyGradOp::create(rewriter, loc, root.getType(), gradOutput,
                                    raised.logits, target, raised.weight,
                                    reduction, ignoreIndex, labelSmoothing,
                                    zLossScale, softcap, axis);
  else
    op = CrossEntropyOp::create(rewriter, loc, lossType, Type(),
                                raised.logits, target, raised.weight,
                                reduction, ignoreIndex, labelSmoothing,
                                zLossScale, softcap, axis);
  // The chain on the remapped labels computes what it does on the labels
  // (a label outside [0, C) and the ignore index both give 0).
  if (!divides) {
    SmallVector<Value> leaves(op->getOperands());
    llvm::replace(leaves, target, raised.target);
    buildRegion(rewriter, op, *slice, leaves, root);
  }

  // Never leave an op that does not verify: the matchers check every type,
  // this is the last line of defense.
  std::string message;
  if (failed(verifyQuietly(op, message))) {
    rewriter.eraseOp(op);
    if (seed)
      rewriter.eraseOp(seed);
    if (target != raised.target)
      eraseUnusedTree(rewriter, target.getDefiningOp());
    return rewriter.notifyMatchFailure(
        rootOp, "the raised op would not verify: " + message);
  }

  Value result = op->getResult(0);
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
  return success();
}

/// True when `value` may be a loss or a gradient: a ranked float tensor
/// (the matchers reject the types the ops do not support, saying so).
static bool isCandidate(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

namespace {

/// Raises a value that `match` recognizes: a softmax cross-entropy loss
/// (forward chain: log-softmax, target pick, ignore mask, reduction) to
/// xent.cross_entropy, or its gradient with respect to the logits (nll
/// backward, then log-softmax backward) to xent.cross_entropy_grad.
struct RaiseChain : public RewritePattern {
  using Matcher = Match<RaisedOp> (*)(ViewAnalysis &, Value,
                                      const MatchOptions &);
  RaiseChain(MLIRContext *ctx, RecognizeState &state, Matcher match,
             bool isGrad, PatternBenefit benefit)
      : RewritePattern(MatchAnyOpTypeTag(), benefit, ctx), state(state),
        match(match), isGrad(isGrad) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::string reason = "no float tensor result";
    for (Value result : op->getResults()) {
      if (!isCandidate(result))
        continue;
      Match<RaisedOp> m = match(state.view(), result, state.options);
      if (!m) {
        reason = m.getReason();
        state.lastNearMiss |= m.isNearMiss();
        if (m.isNotice())
          state.notice = m.getReason();
        continue;
      }
      return raise(rewriter, state, result, *m, isGrad);
    }
    return rewriter.notifyMatchFailure(op, reason);
  }

  RecognizeState &state;
  Matcher match;
  bool isGrad;
};

/// Records erased ops (so that the driver never touches them again) and the
/// last reason a pattern gave for not matching.
struct RecognizeListener : public RewriterBase::Listener {
  void notifyOperationErased(Operation *op) override { erased.insert(op); }
  void notifyMatchFailure(Location,
                          function_ref<void(Diagnostic &)> fn) override {
    Diagnostic diag(UnknownLoc(), DiagnosticSeverity::Remark);
    fn(diag);
    lastReason = diag.str();
  }

  DenseSet<Operation *> erased;
  std::string lastReason;
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

void mlir::xent::recognizeCrossEntropy(Operation *root, bool reportFailures,
                                       bool assumeNormalizedLogProbs) {
  MLIRContext *ctx = root->getContext();
  // Candidates in reverse program order, so that the outermost value of a
  // chain (the mean, not the sum it divides) is matched first. Regions of
  // existing xent ops are left alone.
  SmallVector<Operation *> candidates;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<CrossEntropyOpInterface>(op))
      return WalkResult::skip();
    if (llvm::any_of(op->getResults(), isCandidate))
      candidates.push_back(op);
    return WalkResult::advance();
  });

  RecognizeState state;
  state.options.assumeNormalizedLogProbs = assumeNormalizedLogProbs;
  RaiseChain forward(ctx, state, matchCrossEntropy,
                     /*isGrad=*/false, /*benefit=*/2);
  RaiseChain backward(ctx, state, matchCrossEntropyGrad,
                      /*isGrad=*/true, /*benefit=*/1);
  RecognizeListener listener;
  PatternRewriter rewriter(ctx);
  rewriter.setListener(&listener);
  DenseSet<Operation *> blocked;
  for (Operation *op : llvm::reverse(candidates)) {
    if (listener.erased.contains(op) || blocked.contains(op) ||
        !state.isLive(op))
      continue;
    rewriter.setInsertionPoint(op);
    state.lastNearMiss = false;
    state.notice.reset();
    if (succeeded(forward.matchAndRewrite(op, rewriter)))
      continue;
    std::string forwardReason = listener.lastReason;
    if (succeeded(backward.matchAndRewrite(op, rewriter)))
      continue;
    // A value that contains the chain in a form the ops cannot compute is
    // left whole: no piece of it is raised on its own.
    if (state.lastNearMiss)
      blockSlice(op, blocked);
    if (state.notice) {
      op->emitRemark() << "not raised: " << *state.notice;
      continue;
    }
    if (reportFailures && isReturned(op)) {
      InFlightDiagnostic diag = op->emitRemark()
                                << "not raised: not a cross-entropy ("
                                << forwardReason << "), nor its gradient ("
                                << listener.lastReason << ")";
      std::string expr;
      llvm::raw_string_ostream os(expr);
      ViewAnalysis &view = state.view();
      for (Value result : op->getResults())
        if (isCandidate(result))
          view.print(view.get(result).node, os);
      diag.attachNote() << "seen as " << expr;
    }
  }
  raiseProjections(root, reportFailures);
}
