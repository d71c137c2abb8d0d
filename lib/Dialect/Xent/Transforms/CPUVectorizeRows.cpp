//===- CPUVectorizeRows.cpp - Rows over threads, classes over lanes -------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The tensor-level schedule of xent-cpu-pipeline (Passes.td): the row ops of
// a decomposition tiled by one row in an scf.forall with their producers
// fused, then the class loop of each op in a row tiled, peeled and
// vectorized. Everything here drives upstream transformations; where one
// refuses, the op is left as it was.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTCPUVECTORIZEROWS
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;

namespace {

/// A linalg op on tensors that upstream tiling takes: no empty loop (it
/// divides by a loop's size) and every operand read through a projected
/// permutation (not `(d0, 0)`); not a contraction (a GEMM fused into a row
/// loop would read the whole weight once per row).
bool isTileable(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.hasPureTensorSemantics() &&
         isa<TilingInterface>(op) &&
         !linalg::isaContractionOpInterface(linalgOp) &&
         !llvm::is_contained(linalgOp.getStaticLoopRanges(), 0) &&
         llvm::all_of(linalgOp.getIndexingMapsArray(), [](AffineMap map) {
           return map.isProjectedPermutation();
         });
}

/// A tileable op whose loops are all parallel but the last, which is the
/// class axis (parallel or a reduction).
bool isRowOp(Operation *op) {
  if (!isTileable(op))
    return false;
  SmallVector<utils::IteratorType> iterators =
      cast<linalg::LinalgOp>(op).getIteratorTypesArray();
  if (iterators.empty())
    return false;
  if (iterators.size() == 1)
    return iterators.front() == utils::IteratorType::parallel;
  return llvm::all_of(ArrayRef(iterators).drop_back(), [](auto it) {
    return it == utils::IteratorType::parallel;
  });
}

/// A row op of two or more loops: one whose rows are worth a thread.
bool isWideRowOp(Operation *op) {
  return isRowOp(op) && cast<linalg::LinalgOp>(op).getNumLoops() >= 2;
}

/// The row ops that `root` reads, transitively through row ops.
llvm::SetVector<Operation *> rowProducers(Operation *root) {
  llvm::SetVector<Operation *> chain;
  SmallVector<Operation *> worklist{root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (producer && producer->getBlock() == root->getBlock() &&
          isRowOp(producer) && chain.insert(producer))
        worklist.push_back(producer);
    }
  }
  return chain;
}

/// The ops of `op`'s block that `op` depends on, values its regions
/// capture included; definitions before uses.
FailureOr<llvm::SetVector<Operation *>> dependencies(Operation *op) {
  BackwardSliceOptions options;
  options.omitUsesFromAbove = false;
  Block *block = op->getBlock();
  options.filter = [&](Operation *candidate) {
    return candidate->getBlock() == block;
  };
  llvm::SetVector<Operation *> slice;
  if (failed(getBackwardSlice(op, &slice, options)))
    return failure();
  return slice;
}

/// Moves `op` before `point` (in the same block, earlier), with the ops of
/// `slice` (its dependencies) that come after `point`; fails, moving
/// nothing, if it depends on `point` or on an op with memory effects after
/// it.
LogicalResult moveBefore(RewriterBase &rewriter, Operation *op,
                         Operation *point,
                         const llvm::SetVector<Operation *> &slice) {
  SmallVector<Operation *> after;
  for (Operation *dep : slice) {
    if (dep->isBeforeInBlock(point))
      continue;
    if (dep == point || !isMemoryEffectFree(dep))
      return failure();
    after.push_back(dep);
  }
  // The slice lists definitions before their uses.
  for (Operation *dep : after)
    rewriter.moveOpBefore(dep, point);
  rewriter.moveOpBefore(op, point);
  return success();
}

/// Step 1: each row op that feeds no wide row op, tiled by one row in an
/// scf.forall with the row ops it reads fused in.
void tileRows(RewriterBase &rewriter, func::FuncOp func) {
  // The last root first: fusing into it never moves an op another root
  // still needs (that one is yielded). Roots are found afresh each time, for
  // tiling one erases the ops it fused, which may include another root.
  DenseSet<Operation *> done;
  while (true) {
    Operation *root = nullptr;
    func.walk([&](Operation *op) {
      if (!isWideRowOp(op) || done.contains(op) ||
          op->getParentOfType<scf::ForallOp>())
        return;
      bool feedsWide = llvm::any_of(op->getUsers(), [&](Operation *user) {
        return isWideRowOp(user) && user->getBlock() == op->getBlock();
      });
      if (!feedsWide)
        root = op;
    });
    if (!root)
      return;
    // An op in `done` is alive: an erased one leaves the set.
    done.insert(root);
    llvm::SetVector<Operation *> chain = rowProducers(root);
    // A producer result read outside the chain is yielded by the loop, so
    // that it is computed once.
    DenseMap<Value, bool> readOutside;
    for (Operation *op : chain)
      for (Value result : op->getResults())
        readOutside[result] = llvm::any_of(result.getUsers(), [&](auto *u) {
          return u != root && !chain.contains(u);
        });

    // The loop must come before the first outside reader of what it yields:
    // the root moves up, with what it depends on. Where that cannot be done,
    // nothing is yielded (the readers keep the untiled producers). A reader
    // the root itself depends on always keeps them.
    FailureOr<llvm::SetVector<Operation *>> rootSlice = dependencies(root);
    Operation *firstReader = nullptr;
    for (auto [value, outside] : readOutside) {
      if (!outside)
        continue;
      for (Operation *user : value.getUsers()) {
        if (user == root || chain.contains(user))
          continue;
        Operation *inBlock = root->getBlock()->findAncestorOpInBlock(*user);
        if (inBlock &&
            !(succeeded(rootSlice) && rootSlice->contains(inBlock)) &&
            (!firstReader || inBlock->isBeforeInBlock(firstReader)))
          firstReader = inBlock;
      }
    }
    if (firstReader && firstReader->isBeforeInBlock(root) &&
        (failed(rootSlice) ||
         failed(moveBefore(rewriter, root, firstReader, *rootSlice))))
      readOutside.clear();

    auto linalgOp = cast<linalg::LinalgOp>(root);
    SmallVector<OpFoldResult> tileSizes(linalgOp.getNumLoops(),
                                        rewriter.getIndexAttr(1));
    tileSizes.back() = rewriter.getIndexAttr(0);

    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    tiling.setTileSizes(tileSizes);
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (!chain.contains(producer.getOwner()))
            return std::nullopt;
          scf::SCFTileAndFuseOptions::ControlFnResult result;
          result.yieldProducerReplacement =
              !isDestination && readOutside.lookup(producer);
          return result;
        });

    rewriter.setInsertionPoint(root);
    FailureOr<scf::SCFTileAndFuseResult> fused =
        scf::tileConsumerAndFuseProducersUsingSCF(
            rewriter, cast<TilingInterface>(root), options);
    if (failed(fused) || fused->loops.empty())
      continue;
    Operation *loop = fused->loops.front().getOperation();
    for (auto [original, replacement] : fused->replacements)
      rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
        Operation *inBlock =
            loop->getBlock()->findAncestorOpInBlock(*use.getOwner());
        return inBlock && loop->isBeforeInBlock(inBlock);
      });
    // The untiled ops that nothing reads any more go now: the next root
    // must not count them as readers.
    llvm::SetVector<Operation *> untiled = chain;
    untiled.insert(root);
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *op : untiled) {
        if (!op->use_empty())
          continue;
        untiled.remove(op);
        done.erase(op);
        rewriter.eraseOp(op);
        erased = true;
        break;
      }
    }
  }
}

/// The single row of a tiled op is a unit dimension: fold it away, so that
/// the class loop is a 1-D op (and vectors are 1-D).
LogicalResult foldRowDims(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  linalg::ControlDropUnitDims control;
  control.rankReductionStrategy =
      linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
  control.controlFn = [](Operation *op) -> SmallVector<unsigned> {
    if (!op->getParentOfType<scf::ForallOp>())
      return {};
    auto linalgOp = cast<linalg::LinalgOp>(op);
    SmallVector<unsigned> dims;
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    for (auto [i, size] : llvm::enumerate(ranges))
      if (size == 1)
        dims.push_back(i);
    return dims;
  };
  linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
  linalg::populateMoveInitOperandsToInputPattern(patterns);
  tensor::populateFoldTensorEmptyPatterns(patterns);
  scf::ForallOp::getCanonicalizationPatterns(patterns, func.getContext());
  tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns,
                                                      func.getContext());
  return applyPatternsGreedily(func, std::move(patterns));
}

/// Whether every value `op`'s body yields reads one of its inputs (or an
/// index). LLVM 22's vectorizer adds a reduction's term once instead of once
/// per element when it reads neither (the `Σ 1` that counts classes).
bool yieldsReadInputs(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  unsigned inputs = op.getNumDpsInputs();
  for (Value yielded : body->getTerminator()->getOperands()) {
    bool reads = false;
    SmallVector<Value> worklist{yielded};
    DenseSet<Value> seen;
    while (!worklist.empty() && !reads) {
      Value value = worklist.pop_back_val();
      if (!seen.insert(value).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        reads = arg.getOwner() == body && arg.getArgNumber() < inputs;
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (!def || def->getBlock() != body)
        continue;
      if (isa<linalg::IndexOp>(def)) {
        reads = true;
        continue;
      }
      llvm::append_range(worklist, def->getOperands());
    }
    if (!reads)
      return false;
  }
  return true;
}

/// Vectorizes `op` if its shape is static and 2 to `width` elements (the
/// full tiles of a peeled loop, a merge of partial results, a short row).
/// The last, partial tile of a loop stays scalar: LLVM 22's masked
/// vectorization of it fails to verify, and it is less than one vector's
/// worth of each row.
void vectorize(RewriterBase &rewriter, linalg::LinalgOp op, int64_t width) {
  if (op.hasDynamicShape())
    return;
  int64_t elements = 1;
  for (int64_t size : op.getStaticLoopRanges())
    elements *= size;
  // A single element is no vector (and LLVM 22 vectorizes a gather in a
  // 0-d op into an invalid vector.gather).
  // A vector of i1 loaded from memory reads packed bits, where a memref of
  // i1 holds one byte per element.
  auto subByte = [](Type type) {
    return getElementTypeOrSelf(type).getIntOrFloatBitWidth() % 8 != 0;
  };
  if (llvm::any_of(op->getOperandTypes(), [&](Type type) {
        return isa<ShapedType>(type) &&
               getElementTypeOrSelf(type).isIntOrFloat() && subByte(type);
      }))
    return;
  if (elements < 2 || elements > width ||
      (op.getNumReductionLoops() > 0 && !yieldsReadInputs(op)) ||
      failed(linalg::vectorizeOpPrecondition(op)))
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::VectorizationResult> result =
      linalg::vectorize(rewriter, op);
  if (failed(result))
    return;
  if (op->getNumResults() == 0)
    rewriter.eraseOp(op);
  else
    rewriter.replaceOp(op, result->replacements);
}

/// Step 2 for one op inside a row: its class loop tiled by `width` with
/// scf.for (partial results for a reduction) and peeled, so that the body
/// of the first loop has full tiles (vectorized once canonicalization has
/// made their shapes static).
void tileClassLoop(RewriterBase &rewriter, linalg::LinalgOp op, int64_t width) {
  unsigned numLoops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (numLoops == 0 || !isTileable(op) ||
      (!ShapedType::isDynamic(ranges.back()) && ranges.back() <= width))
    return;
  SmallVector<OpFoldResult> tileSizes(numLoops, rewriter.getIndexAttr(0));
  tileSizes.back() = rewriter.getIndexAttr(width);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();

  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = failure();
  if (iterators.back() == utils::IteratorType::parallel) {
    scf::SCFTilingOptions options;
    options.setTileSizes(tileSizes);
    tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(*op), options);
  } else if (llvm::count(iterators, utils::IteratorType::reduction) == 1 &&
             isa<PartialReductionOpInterface>(*op) &&
             // LLVM 22's partial-reduction tiling leaves a linalg.index
             // relative to the tile (a gather by row reads the wrong row).
             op.getBlock()->getOps<linalg::IndexOp>().empty()) {
    tiled = scf::tileReductionUsingScf(
        rewriter, cast<PartialReductionOpInterface>(*op), tileSizes);
  }
  if (failed(tiled) || tiled->loops.size() != 1)
    return;
  rewriter.replaceOp(op, tiled->replacements);

  auto loop = cast<scf::ForOp>(tiled->loops.front().getOperation());
  scf::ForOp partial;
  (void)scf::peelForLoopAndSimplifyBounds(rewriter, loop, partial);
}

/// `x / d` in a loop, `d` defined outside: `x * (1 / d)`, the reciprocal
/// computed once before the loop. Within one rounding of the division.
struct ReciprocalOfInvariantDivisor : public OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::DivFOp op,
                                PatternRewriter &rewriter) const override {
    auto loop = op->getParentOfType<scf::ForOp>();
    if (!loop || !loop.isDefinedOutsideOfLoop(op.getRhs()))
      return failure();
    if (matchPattern(op.getLhs(), m_OneFloat()))
      return failure(); // Already a reciprocal.
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(loop);
    Type type = op.getType();
    Value one = arith::ConstantOp::create(rewriter, op.getLoc(), type,
                                          rewriter.getOneAttr(type));
    Value reciprocal = arith::DivFOp::create(rewriter, op.getLoc(), one,
                                             op.getRhs(), op.getFastmathAttr());
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, op.getLhs(), reciprocal,
                                               op.getFastmathAttr());
    return success();
  }
};

/// A 0-d tensor read into every lane (a row's target, one of its
/// statistics): a broadcast of its element, so that what is computed from
/// it alone is computed once, on the scalar (the broadcasts sink through
/// elementwise ops: vector::populateSinkVectorOpsPatterns).
struct BroadcastScalarRead : public OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    auto source = dyn_cast<RankedTensorType>(op.getBase().getType());
    if (!source || source.getRank() != 0 || op.getMask())
      return failure();
    Value element =
        tensor::ExtractOp::create(rewriter, op.getLoc(), op.getBase());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, op.getVectorType(),
                                                     element);
    return success();
  }
};

/// Whether every lane of `value` holds one scalar: a broadcast of a
/// scalar, a splat constant.
bool isUniform(Value value) {
  if (auto broadcast = value.getDefiningOp<vector::BroadcastOp>())
    return !isa<VectorType>(broadcast.getSourceType());
  SplatElementsAttr splat;
  return matchPattern(value, m_Constant(&splat));
}

/// The scalar of a uniform `value` (isUniform), created before `user` for a
/// constant.
Value uniformScalar(Value value, Operation *user, PatternRewriter &rewriter) {
  if (auto broadcast = value.getDefiningOp<vector::BroadcastOp>())
    return broadcast.getSource();
  SplatElementsAttr splat;
  (void)matchPattern(value, m_Constant(&splat));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(user);
  return arith::ConstantOp::create(
      rewriter, value.getLoc(),
      cast<TypedAttr>(splat.getSplatValue<Attribute>()));
}

/// `select` of vectors on a condition that is the same in every lane (the
/// row's target ignored or not, in range or not): on the scalar condition,
/// so that no per-lane mask is computed and blended; of two uniform values
/// too, a broadcast of the scalar select (upstream's sinking of broadcasts
/// takes operands of one source type only).
struct SelectOnUniformCondition : public OpRewritePattern<arith::SelectOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::SelectOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(op.getType());
    if (!type)
      return failure();
    bool vectorCondition = isa<VectorType>(op.getCondition().getType());
    if (vectorCondition && !isUniform(op.getCondition()))
      return failure();
    bool uniformValues =
        isUniform(op.getTrueValue()) && isUniform(op.getFalseValue());
    if (!vectorCondition && !uniformValues)
      return failure();
    Value condition =
        vectorCondition ? uniformScalar(op.getCondition(), op, rewriter)
                        : op.getCondition();
    if (!uniformValues) {
      rewriter.modifyOpInPlace(
          op, [&] { op.getConditionMutable().assign(condition); });
      return success();
    }
    Value scalar = arith::SelectOp::create(
        rewriter, op.getLoc(), condition,
        uniformScalar(op.getTrueValue(), op, rewriter),
        uniformScalar(op.getFalseValue(), op, rewriter));
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, scalar);
    return success();
  }
};

/// The one-hot compare of a class loop, `(broadcast(i) + step) == broadcast(t)`
/// on N lanes of 64-bit indices, as `[0, N) == broadcast(t - i)` on 32-bit
/// lanes (`-1`, which no lane holds, where `t - i` is outside [0, N)): a
/// quarter of the vector registers of the 64-bit sum and compare per step.
struct LaneIndexCompare : public OpRewritePattern<arith::CmpIOp> {
  using OpRewritePattern::OpRewritePattern;

  /// `broadcast(s) + step` (either order): s, else null.
  static Value laneBase(Value value) {
    auto add = value.getDefiningOp<arith::AddIOp>();
    if (!add)
      return {};
    for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      auto broadcast = a.getDefiningOp<vector::BroadcastOp>();
      if (broadcast && b.getDefiningOp<vector::StepOp>() &&
          broadcast.getSource().getType().isIndex())
        return broadcast.getSource();
    }
    return {};
  }

  LogicalResult matchAndRewrite(arith::CmpIOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(op.getLhs().getType());
    if (!type || type.getRank() != 1 || type.isScalable() ||
        !type.getElementType().isIndex() ||
        (op.getPredicate() != arith::CmpIPredicate::eq &&
         op.getPredicate() != arith::CmpIPredicate::ne))
      return failure();
    Value base = laneBase(op.getLhs());
    auto other = op.getRhs().getDefiningOp<vector::BroadcastOp>();
    if (!base) {
      base = laneBase(op.getRhs());
      other = op.getLhs().getDefiningOp<vector::BroadcastOp>();
    }
    int64_t lanes = type.getDimSize(0);
    if (!base || !other || !other.getSource().getType().isIndex() ||
        lanes >= (int64_t(1) << 31))
      return failure();
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    Value offset =
        arith::SubIOp::create(rewriter, loc, other.getSource(), base);
    Value inRange = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, offset,
        arith::ConstantIndexOp::create(rewriter, loc, lanes));
    Value lane = arith::SelectOp::create(
        rewriter, loc, inRange,
        arith::IndexCastOp::create(rewriter, loc, i32, offset),
        arith::ConstantIntOp::create(rewriter, loc, i32, -1));
    Value steps = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getI32VectorAttr(
            llvm::to_vector(llvm::seq<int32_t>(0, int32_t(lanes)))));
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(
        op, op.getPredicate(), steps,
        vector::BroadcastOp::create(rewriter, loc, steps.getType(), lane));
    return success();
  }
};

/// A sum over rows (the loss of a reduced cross-entropy: a linalg.generic
/// whose loops are all reductions, outside any row loop, each f32 result
/// yielding `out + v`) accumulated in f64 and rounded once at the end: a
/// running f32 sum over N rows drifts by up to N/2 ulps (the loss 5e-7 off
/// float64 at N = 1024), where the f64 one is within half an ulp of its f32
/// result. The rows' values `v` stay f32; the op runs once per call, over N
/// elements.
LogicalResult widenRowSum(RewriterBase &rewriter, linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumReductionLoops() != op.getNumLoops() || op.getNumDpsInits() == 0)
    return failure();
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Type f32 = rewriter.getF32Type(), f64 = rewriter.getF64Type();
  SmallVector<arith::AddFOp> sums;
  SmallVector<Value> values;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    if (acc.getType() != f32 || !acc.hasOneUse())
      return failure();
    auto add = yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
                   .getDefiningOp<arith::AddFOp>();
    if (!add || add->getBlock() != body || !add->hasOneUse() ||
        (add.getLhs() != acc && add.getRhs() != acc))
      return failure();
    sums.push_back(add);
    values.push_back(add.getLhs() == acc ? add.getRhs() : add.getLhs());
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto convert = [&](Value tensor, Type to) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, tensor);
    Value empty = tensor::EmptyOp::create(rewriter, loc, sizes, to);
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> parallel(type.getRank(),
                                              utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               rewriter, loc, empty.getType(), tensor, empty,
               ArrayRef<AffineMap>{identity, identity}, parallel,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value v =
                     to == f64 ? Value(arith::ExtFOp::create(b, l, f64, args[0]))
                               : Value(arith::TruncFOp::create(b, l, f32,
                                                               args[0]));
                 linalg::YieldOp::create(b, l, v);
               })
        .getResult(0);
  };
  SmallVector<Value> inits;
  for (Value init : op.getDpsInits())
    inits.push_back(convert(init, f64));
  SmallVector<Type> types = llvm::map_to_vector(
      inits, [](Value v) { return v.getType(); });
  auto wide = linalg::GenericOp::create(
      rewriter, loc, types, op.getDpsInputs(), inits,
      op.getIndexingMapsArray(), op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping map;
        for (unsigned i = 0, e = op.getNumDpsInputs(); i < e; ++i)
          map.map(body->getArgument(i), args[i]);
        for (Operation &inner : body->without_terminator())
          if (!llvm::is_contained(sums, &inner))
            b.clone(inner, map);
        SmallVector<Value> results;
        for (auto [k, value] : llvm::enumerate(values))
          results.push_back(arith::AddFOp::create(
              b, l, args[op.getNumDpsInputs() + k],
              arith::ExtFOp::create(b, l, f64, map.lookupOrDefault(value))));
        linalg::YieldOp::create(b, l, results);
      });
  SmallVector<Value> narrow = llvm::map_to_vector(
      wide.getResults(), [&](Value v) { return convert(v, f32); });
  rewriter.replaceOp(op, narrow);
  return success();
}

/// Vectors per step of a class loop (Passes.td).
constexpr int64_t kIndependentVectors = 4;

/// f32 lanes of the host's widest vector register.
int64_t hostVectorWidth() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return 16;
  if (features.lookup("avx"))
    return 8;
  return 4;
}

struct XentCPUVectorizeRowsPass
    : public xent::impl::XentCPUVectorizeRowsBase<XentCPUVectorizeRowsPass> {
  using Base::Base;

  /// The pattern sets and the vector width, once per run of the pass (not
  /// once per function).
  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet patterns(context);
    for (Dialect *dialect : context->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : context->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, context);
    canonical = FrozenRewritePatternSet(std::move(patterns));
    RewritePatternSet scalars(context);
    scalars.add<BroadcastScalarRead, SelectOnUniformCondition,
                LaneIndexCompare>(context);
    vector::populateSinkVectorOpsPatterns(scalars);
    uniform = FrozenRewritePatternSet(std::move(scalars));
    width = vectorWidth > 0 ? int64_t(vectorWidth) : hostVectorWidth();
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(func.getContext());

    tileRows(rewriter, func);
    if (failed(foldRowDims(func)))
      return signalPassFailure();

    // Sums over rows, outside the row loops: accumulated in f64.
    SmallVector<linalg::GenericOp> rowSums;
    func.walk([&](linalg::GenericOp op) {
      if (!op->getParentOfType<scf::ForallOp>())
        rowSums.push_back(op);
    });
    for (linalg::GenericOp op : rowSums)
      (void)widenRowSum(rewriter, op);

    if (width == 1)
      return;

    SmallVector<linalg::LinalgOp> rowOps;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumLoops() >= 1 &&
          op->getParentOfType<scf::ForallOp>())
        rowOps.push_back(op);
    });
    // Each class loop step covers kIndependentVectors vectors: a reduction
    // then carries that many independent partial results, so that the
    // latency of one (a NaN-propagating max, an add) does not bound the
    // loop.
    int64_t step = width * kIndependentVectors;
    for (linalg::LinalgOp op : rowOps)
      tileClassLoop(rewriter, op, step);

    // Canonicalized, the full tiles have static shapes; vectorized, and
    // canonicalized again, the reads and writes of the partial results are
    // at a fixed place of the loops' iter_args: carried in registers, with
    // what the loops do not change hoisted.
    if (failed(applyPatternsGreedily(func, canonical)))
      return signalPassFailure();
    SmallVector<linalg::LinalgOp> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op->getParentOfType<scf::ForallOp>())
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles)
      vectorize(rewriter, op, step);
    if (failed(applyPatternsGreedily(func, canonical)))
      return signalPassFailure();
    // What is the same in every lane computed once, on scalars.
    if (failed(applyPatternsGreedily(func, uniform)) ||
        failed(applyPatternsGreedily(func, canonical)))
      return signalPassFailure();
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<scf::ForallOp>())
        loops.push_back(loop);
    });
    SmallVector<Operation *> divisions;
    for (scf::ForOp loop : loops) {
      moveLoopInvariantCode(loop);
      LoopLikeOpInterface hoisted = hoistLoopInvariantSubsets(rewriter, loop);
      // Only in the class loops: the user's own divisions keep their
      // rounding.
      hoisted->walk([&](arith::DivFOp op) { divisions.push_back(op); });
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<ReciprocalOfInvariantDivisor>(&getContext());
    (void)applyOpPatternsGreedily(divisions, std::move(patterns));
  }

  FrozenRewritePatternSet canonical;
  /// BroadcastScalarRead, SelectOnUniformCondition, LaneIndexCompare and
  /// upstream's sinking of broadcasts.
  FrozenRewritePatternSet uniform;
  int64_t width = 0;
};

} // namespace
