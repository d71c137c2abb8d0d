//===- ShardingInterfaceImpl.cpp - xent ops through the shard dialect -----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// shard::ShardingInterface for the cross-entropy family, one external model
// over CrossEntropyOpInterface. The op's loops are the logits' dimensions:
// the class axis is a reduction, every other axis (a "row" axis) is
// parallel. Logits, dlogits and probability targets are indexed by all
// loops, class-index targets, `none` losses and their grad_output by the
// row loops, the weight by the class loop, reduced losses by none.
//
// Partitioning (docs/scale-out.md):
//   * nothing split: the op is cloned;
//   * rows split, `none` or `sum`: each device runs the op on its rows;
//     `sum` totals are all-reduced (one tensor<2xf32> at most);
//   * classes split, or `mean` (whose divisor is global): ShardedLoss.cpp
//     emits the partitioned computation with O(rows) communication; with
//     class-index targets and split classes, the slices' work stays in xent
//     ops with per-row statistics (ShardedSlices.cpp).
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/ShardingInterfaceImpl.h"

#include "ShardedLoss.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::xent;
using shard::GridAxis;
using shard::Sharding;
using shard::ShardingArray;
using shard::ShardingOption;

//===----------------------------------------------------------------------===//
// Loops and maps
//===----------------------------------------------------------------------===//

static SmallVector<utils::IteratorType>
getLossLoopIteratorTypes(CrossEntropyOpInterface op) {
  SmallVector<utils::IteratorType> types(op.getLogits().getType().getRank(),
                                         utils::IteratorType::parallel);
  types[op.getClassAxis()] = utils::IteratorType::reduction;
  return types;
}

static SmallVector<AffineMap> getLossIndexingMaps(CrossEntropyOpInterface op) {
  MLIRContext *ctx = op.getContext();
  int64_t rank = op.getLogits().getType().getRank();
  int64_t axis = op.getClassAxis();
  AffineMap full = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<AffineExpr> rowExprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      rowExprs.push_back(getAffineDimExpr(d, ctx));
  AffineMap rows = AffineMap::get(rank, 0, rowExprs, ctx);
  AffineMap none = AffineMap::get(rank, 0, ctx);
  AffineMap perElement = op.getReduction() == Reduction::none ? rows : none;

  SmallVector<AffineMap> maps;
  if (op.computesGradient())
    maps.push_back(perElement);
  maps.push_back(full);
  maps.push_back(op.hasProbabilityTargets() ? full : rows);
  if (op.getWeight())
    maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx), ctx));
  // Per-row statistics: the rows, then K values that no loop indexes.
  SmallVector<AffineExpr> statsExprs(rowExprs);
  statsExprs.push_back(getAffineConstantExpr(0, ctx));
  AffineMap stats = AffineMap::get(rank, 0, statsExprs, ctx);
  if (op.takesRowStats())
    maps.push_back(stats);
  // The class offset, a run-time num_classes and the run-time scalars are
  // replicated.
  if (op.isClassSlice())
    maps.push_back(none);
  if (op.getDynamicNumClasses())
    maps.push_back(none);
  maps.append(op.getLossScalars().getValues().size(), none);
  if (op.computesLoss()) {
    maps.push_back(perElement);
    if (op.getZLoss())
      maps.push_back(perElement);
    if (op.getLse())
      maps.push_back(rows);
    if (op.getArgmax())
      maps.push_back(rows);
    if (op.getAccuracy())
      maps.push_back(perElement);
    if (op.returnsRowStats())
      maps.push_back(stats);
  }
  if (op.computesGradient())
    maps.push_back(full);
  return maps;
}

//===----------------------------------------------------------------------===//
// What a sharding of the loops means for the op
//===----------------------------------------------------------------------===//

static std::string formatSplitAxes(ArrayRef<shard::GridAxesAttr> splitAxes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(splitAxes, os, [&](shard::GridAxesAttr axes) {
    os << "[";
    llvm::interleaveComma(axes.asArrayRef(), os);
    os << "]";
  });
  if (splitAxes.empty())
    os << "[]";
  os << "]";
  return s;
}

/// The grid axes of each tensor dimension of `sharding`, `rank` of them.
static SmallVector<SmallVector<GridAxis>> getDimAxes(const Sharding &sharding,
                                                     int64_t rank) {
  SmallVector<SmallVector<GridAxis>> axes(rank);
  for (auto [d, split] : llvm::enumerate(sharding.getSplitAxes()))
    if (static_cast<int64_t>(d) < rank)
      axes[d] = llvm::to_vector(split.asArrayRef());
  return axes;
}

/// Checks that the op can be split as `loops` says on `grid` and returns
/// what that means for its rows and classes; emits a diagnostic otherwise.
static FailureOr<LossSharding>
getLossSharding(CrossEntropyOpInterface op, FlatSymbolRefAttr gridName,
                shard::ShardingArrayRef loops,
                SymbolTableCollection &symbolTable) {
  LossSharding result;
  bool anySplit = llvm::any_of(
      loops, [](const SmallVector<GridAxis> &axes) { return !axes.empty(); });
  if (!anySplit)
    return result;
  if (op.computesRowOutputs())
    return op.emitOpError("cannot be partitioned: the per-row outputs (lse, "
                          "argmax, accuracy) are not supported on split "
                          "logits");
  if (op.getRowStats() || op.isClassSlice())
    return op.emitOpError("cannot be partitioned: it already computes on "
                          "per-row statistics or a class slice");
  shard::GridOp grid = shard::getGridOrNull(op, gridName, symbolTable);
  if (!grid)
    return op.emitOpError("cannot be partitioned: no shard.grid named ")
           << gridName;
  result.grid = grid.getSymName();
  RankedTensorType logitsType = op.getLogits().getType();
  int64_t axis = op.getClassAxis();
  for (auto [d, axes] : llvm::enumerate(loops)) {
    if (axes.empty())
      continue;
    int64_t devices = shard::collectiveProcessGroupSize(axes, grid);
    int64_t size = logitsType.getDimSize(d);
    bool isClass = static_cast<int64_t>(d) == axis;
    if (isClass && ShapedType::isDynamic(devices))
      return op.emitOpError("cannot be partitioned: the class axis is split "
                            "over a grid axis of dynamic size");
    if (isClass && ShapedType::isDynamic(size))
      return op.emitOpError("cannot be partitioned: the class axis is split "
                            "but its size is dynamic");
    if (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(devices) &&
        size % devices != 0)
      return op.emitOpError("cannot be partitioned: logits dimension ")
             << d << " of size " << size << " does not split evenly over "
             << devices << " devices";
    if (isClass) {
      result.classAxes = llvm::to_vector(axes);
      result.classGroupSize = devices;
    } else {
      llvm::append_range(result.rowAxes, axes);
    }
  }
  llvm::sort(result.rowAxes);
  return result;
}

/// The sharding of every operand and result that follows from splitting the
/// op's loops as `option` says.
static FailureOr<std::vector<Sharding>>
getExpectedShardings(Operation *op, const ShardingOption &option) {
  return shard::detail::defaultGetShardingAnnotations(op, option);
}

static StringRef getOperandName(CrossEntropyOpInterface op, unsigned index) {
  unsigned first = op.computesGradient() ? 1 : 0;
  if (index < first)
    return "grad_output";
  SmallVector<StringRef> names = {"logits", "target"};
  if (op.getWeight())
    names.push_back("weight");
  if (op.takesRowStats())
    names.push_back("row_stats");
  if (op.isClassSlice())
    names.push_back("class_offset");
  if (op.getDynamicNumClasses())
    names.push_back("num_classes");
  LossScalars scalars = op.getLossScalars();
  for (auto [value, name] :
       {std::pair<Value, StringRef>{scalars.ignoreIndex, "ignore_index"},
        {scalars.labelSmoothing, "label_smoothing"},
        {scalars.zLossScale, "z_loss_scale"},
        {scalars.softcap, "softcap"}})
    if (value)
      names.push_back(name);
  return names[index - first];
}

static StringRef getResultName(CrossEntropyOpInterface op, unsigned index) {
  if (op.computesLoss()) {
    if (index == 0)
      return "loss";
    for (auto [value, name] :
         {std::pair<Value, StringRef>{op.getZLoss(), "z_loss"},
          {op.getLse(), "lse"},
          {op.getArgmax(), "argmax"},
          {op.getAccuracy(), "accuracy"},
          {op.returnsRowStats() ? op.getRowStats() : Value(), "row_stats"}})
      if (value && value == op->getResult(index))
        return name;
  }
  return "dlogits";
}

/// Checks that every annotated operand and result is split as the logits
/// need it; emits a diagnostic naming the first one that is not.
static LogicalResult
checkConsistentShardings(CrossEntropyOpInterface op,
                         ArrayRef<Sharding> operandShardings,
                         ArrayRef<Sharding> resultShardings,
                         ArrayRef<Sharding> expected,
                         const Sharding &logitsSharding) {
  auto check = [&](Value value, const Sharding &actual,
                   const Sharding &wanted, StringRef name) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!actual || !type || type.getRank() == 0)
      return success();
    if (!actual.getStaticHaloSizes().empty() ||
        !actual.getDynamicHaloSizes().empty() ||
        !actual.getStaticShardedDimsOffsets().empty() ||
        !actual.getDynamicShardedDimsOffsets().empty())
      return op.emitOpError("cannot be partitioned: the ")
             << name << " has halos or explicit shard offsets";
    if (actual.getGridAttr() != wanted.getGridAttr() ||
        getDimAxes(actual, type.getRank()) !=
            getDimAxes(wanted, type.getRank()))
      return op.emitOpError("cannot be partitioned: the ")
             << name << " is split as " << formatSplitAxes(actual.getSplitAxes())
             << " but logits split as "
             << formatSplitAxes(logitsSharding.getSplitAxes())
             << " need it split as " << formatSplitAxes(wanted.getSplitAxes());
    return success();
  };
  unsigned numOperands = op->getNumOperands();
  for (auto [i, value] : llvm::enumerate(op->getOperands()))
    if (failed(check(value, operandShardings[i], expected[i],
                     getOperandName(op, i))))
      return failure();
  for (auto [i, value] : llvm::enumerate(op->getResults()))
    if (failed(check(value, resultShardings[i], expected[numOperands + i],
                     getResultName(op, i))))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Rows split, `none` and `sum`: the op itself on each device
//===----------------------------------------------------------------------===//

/// The op with `operands` and `resultTypes` and an empty decomposition
/// region (the canonical one is rebuilt on the local types when needed).
static Operation *createLocalOp(OpBuilder &b, Operation *op,
                                ValueRange operands, TypeRange resultTypes) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(resultTypes);
  state.addAttributes(op->getAttrs());
  state.addRegion();
  return b.create(state);
}

/// Each device runs the op on its rows; reduced results (`sum`) are
/// computed in f32 and summed over `rowAxes` in one all-reduce.
static SmallVector<Value> partitionRowsLocally(OpBuilder &builder,
                                               CrossEntropyOpInterface op,
                                               const LossSharding &sharding,
                                               ValueRange operands,
                                               TypeRange resultTypes) {
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  bool reduce = op.getReduction() != Reduction::none;
  unsigned numReduced = reduce && op.computesLoss() ? (op.getZLoss() ? 2 : 1)
                                                    : 0;
  SmallVector<Type> localTypes(resultTypes);
  Type f32 = b.getF32Type();
  for (unsigned i = 0; i < numReduced; ++i)
    localTypes[i] = RankedTensorType::get({}, f32);
  Operation *local = createLocalOp(b, op, operands, localTypes);
  SmallVector<Value> results(local->getResults());
  if (numReduced == 0)
    return results;

  SmallVector<Value> totals;
  for (unsigned i = 0; i < numReduced; ++i)
    totals.push_back(tensor::ExtractOp::create(b, results[i], ValueRange{}));
  auto packedType = RankedTensorType::get({(int64_t)numReduced}, f32);
  Value packed = tensor::FromElementsOp::create(b, packedType, totals);
  Value sums = shard::AllReduceOp::create(b, packed, sharding.grid,
                                          sharding.rowAxes,
                                          shard::ReductionKind::Sum);
  for (unsigned i = 0; i < numReduced; ++i) {
    Value total = tensor::ExtractOp::create(
        b, sums, ValueRange{arith::ConstantIndexOp::create(b, i)});
    Type elt = cast<RankedTensorType>(resultTypes[i]).getElementType();
    if (elt != f32)
      total = arith::TruncFOp::create(b, elt, total);
    results[i] = tensor::FromElementsOp::create(b, resultTypes[i],
                                                ValueRange{total});
  }
  return results;
}

//===----------------------------------------------------------------------===//
// The external model
//===----------------------------------------------------------------------===//

namespace {

template <typename OpTy>
struct CrossEntropyShardingModel
    : public shard::ShardingInterface::ExternalModel<
          CrossEntropyShardingModel<OpTy>, OpTy> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return getLossLoopIteratorTypes(cast<CrossEntropyOpInterface>(op));
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return getLossIndexingMaps(cast<CrossEntropyOpInterface>(op));
  }

  FailureOr<ShardingOption>
  getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                    ArrayRef<Sharding> resultShardings) const {
    FailureOr<ShardingOption> option = shard::detail::defaultGetShardingOption(
        op, operandShardings, resultShardings);
    if (failed(option) || option->empty)
      return option;
    SymbolTableCollection symbolTable;
    if (failed(getLossSharding(cast<CrossEntropyOpInterface>(op),
                               option->grid, option->shardingArray,
                               symbolTable)))
      return failure();
    return option;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto loss = cast<CrossEntropyOpInterface>(op);
    unsigned logitsIndex = loss.computesGradient() ? 1 : 0;
    const Sharding &logitsSharding = operandShardings[logitsIndex];
    int64_t rank = loss.getLogits().getType().getRank();
    if (!logitsSharding) {
      builder.clone(*op, partitionMap);
      return success();
    }

    // The loops are split as the logits are; every other value must follow.
    ShardingArray loops = getDimAxes(logitsSharding, rank);
    ShardingOption option(loops, logitsSharding.getGridAttr());
    FailureOr<std::vector<Sharding>> expected =
        getExpectedShardings(op, option);
    if (failed(expected))
      return op->emitOpError("cannot be partitioned: no sharding of its "
                             "operands follows from the logits' ")
             << formatSplitAxes(logitsSharding.getSplitAxes());
    if (failed(checkConsistentShardings(loss, operandShardings,
                                        resultShardings, *expected,
                                        logitsSharding)))
      return failure();
    FailureOr<LossSharding> sharding = getLossSharding(
        loss, logitsSharding.getGridAttr(), loops, symbolTable);
    if (failed(sharding))
      return failure();
    if (sharding->isReplicated()) {
      builder.clone(*op, partitionMap);
      return success();
    }

    shard::GridOp grid =
        shard::getGrid(op, logitsSharding.getGridAttr(), symbolTable);
    unsigned numOperands = op->getNumOperands();
    SmallVector<Type> resultTypes;
    for (OpResult result : op->getResults())
      resultTypes.push_back(shard::shardType(
          result.getType(), grid,
          (*expected)[numOperands + result.getResultNumber()]));

    bool local = sharding->classAxes.empty() &&
                 loss.getReduction() != Reduction::mean;
    SmallVector<Value> results =
        local ? partitionRowsLocally(builder, loss, *sharding,
                                     partitionedOperands, resultTypes)
              : buildShardedCrossEntropy(builder, loss, *sharding,
                                         partitionedOperands, resultTypes);
    partitionMap.map(op->getResults(), results);
    return success();
  }
};

} // namespace

template <typename... OpTys>
static void attachModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<CrossEntropyShardingModel<OpTys>>(*ctx),
   ...);
}

void mlir::xent::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, XentDialect *) {
    ctx->loadDialect<arith::ArithDialect, linalg::LinalgDialect,
                     math::MathDialect, shard::ShardDialect,
                     tensor::TensorDialect>();
    attachModels<CrossEntropyOp, CrossEntropyGradOp, CrossEntropyAndGradOp>(
        ctx);
  });
}
