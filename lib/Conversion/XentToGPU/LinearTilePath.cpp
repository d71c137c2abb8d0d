//===- LinearTilePath.cpp - The linear loss from tile kernels -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The host side of the linear family's tile path (the kernels are
// LinearTiles.cpp's): when it is taken, the TMA maps of hidden and weight,
// and the launches
//
//   prologue         (reduced losses: the divisors and accumulators)
//   tile kernel      stats[G, N, 4] = per (group of class tiles, row): m,
//                    Σ exp(x - m), x_t of hidden · weightᵀ, no logits stored
//   merge kernel     the row's loss (per row, or into the accumulators)
//   conversions      the reduced loss and z-loss into their results
//
// and otherwise the row chunks (LinearChunks.cpp), decided per call.
//
//===----------------------------------------------------------------------===//

#include "LinearEmitter.h"
#include "LinearTiles.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xent;

bool LinearEmitter::mayUseTiles(const BodyBuffers &io) {
  if (!options.linearTiles || options.chip != "sm_90a" ||
      op.computesGradient() || !op.computesLoss() || io.bias ||
      !(hiddenType.isBF16() || hiddenType.isF16()))
    return false;
  // The tile kernel soft-caps and sums the classes for label smoothing, but
  // not weighted by class: weighted label smoothing only as a run-time
  // value, which may be 0 in a call.
  CrossEntropyConfig config = getChunkSpec(io.runtimeScalars).config;
  bool staticSmoothing =
      !config.scalars.labelSmoothing && config.labelSmoothing != 0.0f;
  return !(staticSmoothing && io.classWeight);
}

Value LinearEmitter::emitTileCondition(const BodyBuffers &io) {
  Value zero = index(0);
  auto ult = [&](Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  };
  auto eq = [&](Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  };
  auto both = [&](Value x, Value y) -> Value {
    return arith::AndIOp::create(b, loc, x, y);
  };
  // Rows, classes and a depth (a TMA map has no empty dimension).
  Value ok = both(ult(zero, getNumRows(io)), ult(zero, dim(io.weight, 0)));
  ok = both(ok, ult(zero, dim(io.weight, 1)));
  // Weighted label smoothing takes the chunks; a run-time 0 is the op
  // without it.
  if (io.classWeight && io.runtimeScalars.labelSmoothing)
    ok = both(ok, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        io.runtimeScalars.labelSmoothing,
                                        f32Constant(0.0)));
  // TMA reads rows of contiguous elements, rows and base 16-byte aligned.
  Value sixteen = index(16), bytes = index(hiddenType.getIntOrFloatBitWidth() / 8);
  for (Value buffer : {io.hidden, io.weight}) {
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    Value start = arith::AddIOp::create(
        b, loc, base,
        arith::MulIOp::create(b, loc, meta.getOffset(), bytes));
    Value rowBytes = arith::MulIOp::create(b, loc, meta.getStrides()[0], bytes);
    ok = both(ok, eq(meta.getStrides()[1], index(1)));
    ok = both(ok, eq(arith::RemUIOp::create(b, loc, rowBytes, sixteen), zero));
    ok = both(ok, eq(arith::RemUIOp::create(b, loc, start, sixteen), zero));
  }
  return ok;
}

void LinearEmitter::emitTileLoss(const BodyBuffers &io) {
  MLIRContext *ctx = b.getContext();
  Value numRows = getNumRows(io);
  Value classes = dim(io.weight, 0), features = dim(io.weight, 1);
  auto ceilDiv = [&](Value x, int64_t y) -> Value {
    return arith::CeilDivUIOp::create(b, loc, x, index(y));
  };
  // The divisors and accumulators of a reduced loss (the chunks' prologue).
  ChunkBuffers chunk;
  chunk.one = index(1);
  chunk.zero = index(0);
  LossKernels loss = emitLossKernels(io, chunk);

  // Whole clusters of row tiles.
  int64_t clusterBlocks = options.linearTileCluster;
  Value rowClusters = ceilDiv(ceilDiv(numRows, kTileRows), clusterBlocks);
  Value rowTiles =
      arith::MulIOp::create(b, loc, rowClusters, index(clusterBlocks));
  Value classTiles = ceilDiv(classes, kTileClasses);
  Value depthSteps = ceilDiv(features, kTileDepth);
  // Groups of class tiles: about kTileTargetBlocks blocks, at least one
  // group, at most one per class tile.
  Value groups = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, index(kTileTargetBlocks),
          arith::DivUIOp::create(b, loc, rowTiles, index(2))),
      rowTiles);
  groups = arith::MaxUIOp::create(
      b, loc, index(1), arith::MinUIOp::create(b, loc, groups, classTiles));
  Value stats = alloc(f32, {groups, numRows, index(kTileStatsWidth)});
  chunk.scratch.push_back(stats);

  // The operands' TMA maps (the runtime's mgpuTensorMapEncodeTiledMemref).
  auto tensorMap = [&](Value buffer, int64_t rows) -> Value {
    Value unranked = memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(hiddenType, 0), buffer);
    Value map = nvgpu::TmaCreateDescriptorOp::create(
        b, loc, getTileOperandMapType(ctx, hiddenType, rows), unranked,
        ValueRange{index(rows), index(kTileDepth)});
    return UnrealizedConversionCastOp::create(
               b, loc, LLVM::LLVMPointerType::get(ctx), map)
        .getResult(0);
  };
  Value mapHidden = tensorMap(io.hidden, kTileRows);
  Value mapWeight = tensorMap(io.weight, kTileClasses / clusterBlocks);
  Type targetType = cast<MemRefType>(io.target.getType()).getElementType();
  const CrossEntropyConfig &config = loss.spec.config;
  // The tile kernel of the op's features: a softcap, and the class sums of
  // unweighted label smoothing (the condition keeps weighted calls off).
  TileStatsSpec featured;
  featured.element = hiddenType;
  featured.targetType = targetType;
  featured.softcap = config.hasSoftcap();
  featured.classSums = config.hasLabelSmoothing() && !io.classWeight;
  featured.clusterBlocks = clusterBlocks;
  TileStatsArgs<Value> tileArgs;
  tileArgs.mapHidden = mapHidden;
  tileArgs.mapWeight = mapWeight;
  tileArgs.target = io.target;
  tileArgs.stats = asArg(stats);
  tileArgs.numRows = numRows;
  tileArgs.numClasses = classes;
  tileArgs.depthSteps = depthSteps;
  tileArgs.rowTiles = rowTiles;
  tileArgs.classTiles = classTiles;
  tileArgs.groups = groups;
  auto launchTiles = [&](const TileStatsSpec &tileSpec) {
    gpu::GPUFuncOp tiles =
        buildKernel("xent_linear_tiles", [&](OpBuilder &kb, StringRef name) {
          return buildTileStatsKernel(kb, loc, name, tileSpec);
        });
    TileStatsArgs<Value> launchArgs = tileArgs;
    if (tileSpec.softcap)
      launchArgs.softcap = loss.scalars.softcap;
    launch(tiles, arith::MulIOp::create(b, loc, rowClusters, groups),
           launchArgs.list(), kTileThreads,
           clusterBlocks > 1 ? index(clusterBlocks) : Value(),
           i32Constant(static_cast<int32_t>(getTileStatsSharedMemoryBytes())));
  };
  // Run-time features that are 0 in a call launch the plain kernel (no tanh,
  // no sums per logit), as the chunks' row kernels do; static ones always
  // the featured kernel. Unlike the row kernels' dispatchRuntimeFeatures
  // (a variant per combination of features), one featured kernel serves
  // every combination: each tile kernel is large to compile.
  TileStatsSpec plain = featured;
  plain.softcap = plain.classSums = false;
  Value runtimeSoftcap = featured.softcap ? io.runtimeScalars.softcap : Value();
  Value runtimeSmoothing =
      featured.classSums ? io.runtimeScalars.labelSmoothing : Value();
  bool staticFeature = (featured.softcap && !runtimeSoftcap) ||
                       (featured.classSums && !runtimeSmoothing);
  if (!featured.softcap && !featured.classSums) {
    launchTiles(plain);
  } else if (staticFeature) {
    launchTiles(featured);
  } else {
    Value plainCall;
    for (Value value : {runtimeSoftcap, runtimeSmoothing}) {
      if (!value)
        continue;
      Value zero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         value, f32Constant(0.0));
      plainCall =
          plainCall ? arith::AndIOp::create(b, loc, plainCall, zero) : zero;
    }
    auto ifPlain = scf::IfOp::create(b, loc, plainCall, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifPlain.thenBlock());
    launchTiles(plain);
    b.setInsertionPointToStart(ifPlain.elseBlock());
    launchTiles(featured);
  }

  TileLossSpec spec;
  spec.targetType = targetType;
  if (io.classWeight)
    spec.classWeightType =
        cast<MemRefType>(io.classWeight.getType()).getElementType();
  spec.reduced = loss.spec.reduced();
  spec.zLoss = loss.spec.config.hasZLoss();
  spec.lossType = loss.spec.lossType;
  spec.zLossType = loss.spec.zLossType;
  spec.smoothing = featured.classSums;
  gpu::GPUFuncOp merge =
      buildKernel("xent_linear_merge", [&](OpBuilder &kb, StringRef name) {
        return buildTileLossKernel(kb, loc, name, spec);
      });
  // The loss's scalars as the kernels take them: ignore_index always (class
  // indices), the z-loss scale with a z-loss.
  TileLossArgs<Value> args;
  args.stats = asArg(stats);
  args.target = io.target;
  args.classWeight = io.classWeight;
  if (spec.reduced) {
    args.scratch = loss.scratch;
  } else {
    args.loss = io.loss;
    args.zLoss = io.zLoss;
  }
  args.ignoreIndex = loss.scalars.ignoreIndex;
  args.zLossScale = loss.scalars.zLossScale;
  if (spec.smoothing)
    args.smoothing = loss.scalars.labelSmoothing;
  args.numClasses = classes;
  args.groups = groups;
  launch(merge, ceilDiv(numRows, kTileMergeThreads), args.list(),
         kTileMergeThreads);
  emitReducedResults(io, loss);
  for (Value buffer : chunk.scratch)
    gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, buffer);
}
