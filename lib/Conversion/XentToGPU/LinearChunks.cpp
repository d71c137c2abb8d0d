//===- LinearChunks.cpp - The row chunks of a linear op on the GPU --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The body of a linear op's launch after its buffers are bound: the chunk
// size and scratch, the loss kernels' spec and prologue, the loop over row
// chunks (logits GEMM, the row kernel in place, gradient GEMMs) and the
// results converted from their accumulators (LinearLowering.cpp gives the
// overview).
//
//===----------------------------------------------------------------------===//

#include "LinearEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xent;

/// The rows per chunk: the option, or the most multiples of kRowQuantum
/// whose f32 logits (rows padded to kRowAlignBytes) fit in linear-chunk-mib,
/// at least kRowQuantum.
Value LinearEmitter::emitChunkRows(Value numRows, Value paddedClasses) {
  if (options.linearChunkRows > 0)
    return index(options.linearChunkRows);
  Value rowBytes = arith::MulIOp::create(b, loc, paddedClasses, index(4));
  rowBytes = arith::MaxUIOp::create(b, loc, rowBytes, index(1));
  Value fit = arith::DivUIOp::create(
      b, loc, index(options.linearChunkMiB << 20), rowBytes);
  fit = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, fit, index(kRowQuantum)),
      index(kRowQuantum));
  return arith::MaxUIOp::create(b, loc, fit, index(kRowQuantum));
}

KernelSpec LinearEmitter::getChunkSpec(const LossScalars &runtimeScalars) {
  CrossEntropyConfig config;
  config.scalars = runtimeScalars;
  config.reduction = op.getReduction();
  config.ignoreIndex = op.getIgnoreIndexValue();
  config.labelSmoothing = op.getLabelSmoothing().convertToFloat();
  config.zLossScale = op.getZLossScale().convertToFloat();
  if (auto cap = op.getSoftcap())
    config.softcap = cap->convertToFloat();
  config.axis = 1;
  config.weighted = static_cast<bool>(op.getClassWeight());
  config.probabilityTargets = false;
  int64_t classes = op.getWeight().getType().getDimSize(0);
  config.logitsType =
      RankedTensorType::get({ShapedType::kDynamic, classes}, f32);
  Type targetElt = op.getTarget().getType().getElementType();
  config.targetType = RankedTensorType::get({ShapedType::kDynamic}, targetElt);

  KernelSpec spec;
  spec.config = config;
  spec.logitsType = f32;
  // bf16 / f16: the row kernel writes dlogits rounded to the hidden's type,
  // the backward GEMMs' operand, into a buffer of their own; f32: over the
  // logits.
  if (op.computesGradient() && !hiddenType.isF32())
    spec.dlogitsType = hiddenType;
  spec.targetType = targetElt;
  if (Value w = op.getClassWeight())
    spec.weightType = cast<ShapedType>(w.getType()).getElementType();
  if (Value g = op.getGradOutput())
    spec.gradOutputType = cast<ShapedType>(g.getType()).getElementType();
  spec.withGrad = op.computesGradient();
  spec.contiguousRows = true;
  // The chunks' launches add to one set of accumulators: the results are
  // converted from them after the last chunk.
  spec.finalizes = false;
  auto typeOf = [&](Value result) -> Type {
    return result ? getElementTypeOrSelf(result.getType()) : Type();
  };
  spec.lossType = typeOf(op.getLoss());
  spec.zLossType = typeOf(op.getZLoss());
  return spec;
}

LinearEmitter::ChunkBuffers
LinearEmitter::emitChunkBuffers(const BodyBuffers &io) {
  bool grad = op.computesGradient();
  bool narrow = !hiddenType.isF32();
  // Sizes the op's types state are constants (a static V gives a constant
  // chunk size).
  auto size = [&](Value buffer, RankedTensorType type, int64_t d) -> Value {
    return type.isDynamicDim(d) ? dim(buffer, d) : index(type.getDimSize(d));
  };
  RankedTensorType weightType = op.getWeight().getType();
  ChunkBuffers chunk;
  chunk.numRows = getNumRows(io);
  chunk.features = size(io.weight, weightType, 1);
  chunk.classes = size(io.weight, weightType, 0);
  Value classes = chunk.classes;
  auto roundUp = [&](Value v, int64_t multiple) -> Value {
    Value m = index(multiple);
    return arith::MulIOp::create(
        b, loc,
        arith::DivUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, v, index(multiple - 1)), m),
        m);
  };
  Value ldLogits = roundUp(classes, kRowAlignBytes / 4);
  chunk.chunkRows = emitChunkRows(chunk.numRows, ldLogits);
  chunk.one = index(1);
  chunk.zero = index(0);
  Value one = chunk.one;
  Value allocRows = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, chunk.chunkRows, chunk.numRows),
      one);
  chunk.logits = alloc(f32, {allocRows, ldLogits});
  chunk.scratch = {chunk.logits};
  chunk.dWeightAcc = io.dWeight;
  chunk.dBiasAcc = io.dBias;
  if (grad && narrow) {
    chunk.low =
        alloc(hiddenType, {allocRows, roundUp(classes, kRowAlignBytes / 2)});
    chunk.scratch.push_back(chunk.low);
    if (io.dWeight) {
      chunk.dWeightAcc = alloc(f32, {classes, chunk.features});
      chunk.scratch.push_back(chunk.dWeightAcc);
    }
    if (io.dBias) {
      chunk.dBiasAcc = alloc(f32, {classes});
      chunk.scratch.push_back(chunk.dBiasAcc);
    }
  }
  if (io.dBias) {
    chunk.onesStride = roundUp(allocRows, kRowAlignBytes / 2);
    chunk.ones = alloc(hiddenType, {chunk.onesStride});
    chunk.scratch.push_back(chunk.ones);
    gpu::MemsetOp::create(
        b, loc, Type(), ValueRange{}, chunk.ones,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(hiddenType, 1.0)));
  }
  if (io.bias) {
    // The epilogue's bias: f32 and contiguous.
    Value bias32 = alloc(f32, {classes});
    chunk.scratch.push_back(bias32);
    Value biasRow = asMatrix(io.bias, one, classes, classes, one);
    Value bias32Row = asMatrix(asArg(bias32), one, classes, classes, one);
    convert(biasRow, bias32Row);
    chunk.bias32 = asArg(bias32);
  }
  return chunk;
}

LinearEmitter::LossKernels LinearEmitter::emitLossKernels(const BodyBuffers &io,
                                                          ChunkBuffers &chunk) {
  // The loss kernels of the chunks, with the statistics of all rows.
  LossKernels loss;
  loss.spec = getChunkSpec(io.runtimeScalars);
  const KernelSpec &spec = loss.spec;
  // The chunk's f32 logits; with `resident-rows` a row of them may be held
  // on chip across a cluster where the gradient has a buffer of its own
  // (bf16 / f16 dlogits): one read of the logits instead of two. In place
  // (f32) and for the loss alone the two-pass kernel (one read for the
  // loss alone; in place the resident walk would reread the target's logit
  // after other blocks wrote).
  ConvertXentToGPUOptions rowOptions = options;
  if (hiddenType.isF32() || !op.computesGradient())
    rowOptions.residentRows = false;
  loss.geometry = getLaunchGeometry(rowOptions, f32);
  if (spec.needsScratch()) {
    loss.scratch =
        gpu::AllocOp::create(b, loc, getScratchType(b.getContext()), Type(),
                             ValueRange{}, ValueRange{}, ValueRange{})
            .getMemref();
    chunk.scratch.push_back(loss.scratch);
  }
  // The loss's scalars as the kernels take them: the op's run-time operands
  // or constants of its attributes. A run-time value of 0 is the op without
  // the feature (the kernels' contract): a label smoothing or softcap of 0
  // launches the row kernel without it (launchRowKernel).
  loss.scalars = getKernelScalars(b, loc, spec.config, spec.config.scalars);
  if (spec.needsScratch()) {
    gpu::GPUFuncOp prologue =
        buildKernel("xent_prologue", [&](OpBuilder &kb, StringRef name) {
          return buildPrologueKernel(kb, loc, name, spec, loss.geometry);
        });
    PrologueKernelArgs<Value> pro;
    pro.target = io.target;
    pro.weight = io.classWeight;
    pro.scratch = loss.scratch;
    if (spec.needsStats())
      pro.ignoreIndex = loss.scalars.ignoreIndex;
    launch(prologue, chunk.one, pro.list(), loss.geometry.threads);
  }
  return loss;
}

void LinearEmitter::emitChunkLoop(const BodyBuffers &io,
                                  const ChunkBuffers &chunk,
                                  const LossKernels &loss) {
  bool grad = op.computesGradient();
  bool narrow = !hiddenType.isF32();
  bool perRow = op.getReduction() == Reduction::none;
  // The gradient GEMMs run when any gradient is computed.
  bool gemms = grad && (io.dHidden || io.dWeight || io.dBias);
  const KernelSpec &spec = loss.spec;
  StringRef rowKernelName =
      grad ? (op.computesLoss() ? "xent_loss_grad" : "xent_grad") : "xent_loss";
  Value classes = chunk.classes, features = chunk.features;

  // The chunk loop; one iteration even for N = 0, whose empty products
  // still write the zero gradients of the weight and the bias.
  Value one = chunk.one, zero = chunk.zero;
  Value upper = arith::MaxUIOp::create(b, loc, chunk.numRows, one);
  auto loop = scf::ForOp::create(b, loc, zero, upper, chunk.chunkRows);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Value r = arith::MinUIOp::create(
      b, loc, chunk.chunkRows, arith::SubIOp::create(b, loc, chunk.numRows, i));
  OpFoldResult c0 = b.getIndexAttr(0);
  Value h = slice(io.hidden, {i, c0}, {r, features});
  Value t = slice(io.target, {i}, {r});
  Value logits = slice(chunk.logits, {c0, c0}, {r, classes});
  // logits = h · weightᵀ (+ bias)
  callGemm(h, io.weight, chunk.bias32, logits, /*transA=*/false,
           /*transB=*/true, f32Constant(0.0));

  RowKernelArgs<Value> row;
  row.x = logits;
  row.target = t;
  row.weight = io.classWeight;
  row.scratch = loss.scratch;
  row.gradOutput =
      perRow && io.gradOutput ? slice(io.gradOutput, {i}, {r}) : io.gradOutput;
  row.loss = perRow && io.loss ? slice(io.loss, {i}, {r}) : Value();
  row.zLoss = perRow && io.zLoss ? slice(io.zLoss, {i}, {r}) : Value();
  Value dl = logits;
  if (grad && narrow)
    dl = slice(chunk.low, {c0, c0}, {r, classes});
  row.dlogits = grad ? dl : Value();
  row.ignoreIndex = loss.scalars.ignoreIndex;
  row.labelSmoothing = loss.scalars.labelSmoothing;
  row.zLossScale = loss.scalars.zLossScale;
  row.softcap = loss.scalars.softcap;
  // A label smoothing or softcap of 0 launches the kernel without it (one
  // comparison on the host per launch, as the cross-entropy ops' runtime
  // dispatch): a plain loss computes no tanh and no smoothing sums.
  dispatchRuntimeFeatures(
      b, loc, spec, loss.scalars.labelSmoothing, loss.scalars.softcap,
      [&](const KernelSpec &variant) {
        gpu::GPUFuncOp kernel =
            buildKernel(rowKernelName, [&](OpBuilder &kb, StringRef name) {
              return buildRowKernel(kb, loc, name, variant, loss.geometry);
            });
        RowKernelArgs<Type> types =
            getRowKernelArgTypes(b.getContext(), variant);
        RowKernelArgs<Value> args = row;
        if (!types.labelSmoothing)
          args.labelSmoothing = Value();
        if (!types.softcap)
          args.softcap = Value();
        if (!grad || !hasResidentPath(variant, loss.geometry)) {
          launch(kernel, r, args.list(), loss.geometry.threads);
          return;
        }
        // A cluster of blocks per row with the staging memory where the
        // row takes the resident walk, else one block without it (the
        // kernel decides the same way).
        Value size = emitResidentClusterSize(b, loc, classes, variant,
                                             loss.geometry, logits, dl);
        Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           size, zero);
        Value cluster = arith::SelectOp::create(b, loc, fits, size, one);
        Value sharedBytes = arith::SelectOp::create(
            b, loc, fits,
            i32Constant(static_cast<int32_t>(
                getResidentSharedMemoryBytes(loss.geometry))),
            i32Constant(0));
        launch(kernel, r, args.list(), loss.geometry.threads, cluster,
               sharedBytes);
      });

  if (!gemms)
    return;
  // The first chunk writes the weight's and the bias's gradients, the
  // others add to them.
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, i, zero);
  Value beta = arith::SelectOp::create(b, loc, first, f32Constant(0.0),
                                       f32Constant(1.0));
  // d_hidden rows = dl · weight, d_weight += dlᵀ · h, d_bias += dlᵀ · 1
  if (io.dHidden)
    callGemm(dl, io.weight, Value(), slice(io.dHidden, {i, c0}, {r, features}),
             false, false, f32Constant(0.0));
  if (io.dWeight)
    callGemm(dl, h, Value(), asArg(chunk.dWeightAcc), true, false, beta);
  // d_bias (1 x V) += ones (1 x r) · dl: a GEMV, the ones' row stride
  // (cuBLASLt's leading dimension) a multiple of 16 bytes.
  if (io.dBias) {
    Value onesRow = asMatrix(asArg(chunk.ones), one, r, chunk.onesStride, one);
    Value dBiasRow =
        asMatrix(asArg(chunk.dBiasAcc), one, classes, classes, one);
    callGemm(onesRow, dl, Value(), dBiasRow, false, false, beta);
  }
}

void LinearEmitter::emitEpilogue(const BodyBuffers &io,
                                 const ChunkBuffers &chunk,
                                 const LossKernels &loss) {
  Value one = chunk.one, classes = chunk.classes;
  if (chunk.dWeightAcc != io.dWeight)
    convert(asArg(chunk.dWeightAcc), io.dWeight);
  if (chunk.dBiasAcc != io.dBias) {
    Value accRow = asMatrix(asArg(chunk.dBiasAcc), one, classes, classes, one);
    Value dBiasRow = asMatrix(io.dBias, one, classes, classes, one);
    convert(accRow, dBiasRow);
  }
  emitReducedResults(io, loss);
  for (Value buffer : chunk.scratch)
    gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, buffer);
}

Value LinearEmitter::getNumRows(const BodyBuffers &io) {
  ArrayRef<int64_t> rowShape = op.getHidden().getType().getShape().drop_back();
  return llvm::any_of(rowShape, ShapedType::isDynamic)
             ? dim(io.hidden, 0)
             : index(llvm::product_of(rowShape));
}

void LinearEmitter::emitReducedResults(const BodyBuffers &io,
                                       const LossKernels &loss) {
  if (!loss.spec.reduced())
    return;
  for (auto [slot, out] :
       {std::pair{kLossSlot, io.loss}, {kZLossSlot, io.zLoss}}) {
    if (!out)
      continue;
    Type dstType = cast<MemRefType>(out.getType()).getElementType();
    gpu::GPUFuncOp kernel =
        buildKernel("xent_convert", [&](OpBuilder &kb, StringRef name) {
          return buildConvertKernel(kb, loc, name, dstType, slot);
        });
    launch(kernel, index(1), ValueRange{loss.scratch, out}, kLanes);
  }
}
