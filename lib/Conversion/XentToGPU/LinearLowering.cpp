//===- LinearLowering.cpp - Linear cross-entropy on the GPU by chunks -----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// A linear cross-entropy op that takes the kernels becomes one `xent.launch`
// whose body (buffer code, bufferized like every launch) is
//
//   prologue kernel over all targets   (mean: kept weight W and count K;
//                                       reduced losses: f64 accumulators)
//   scf.for %i = 0 to max(N, 1) step R          (r = min(R, N - i) rows)
//     logits[r, V] (f32)  = hidden[i:i+r] · weightᵀ (+ bias)   xentGemm[Bias]
//     row kernel: loss into the accumulators / rows, dlogits dl rounded to
//                 the hidden's bf16 / f16 into a buffer of their own (f32:
//                 over the logits; the two-pass kernel: in place is safe)
//     d_hidden[i:i+r]     = dl · weight                          beta 0
//     d_weight (f32)     += dlᵀ · hidden[i:i+r]                  beta 0, 1, …
//     d_bias (f32)       += ones[r] · dl                         beta 0, 1, …
//   reduced losses rounded from their accumulators; scratch freed
//
// A gradient result nobody uses is not computed (a frozen weight: no d_weight
// GEMM, no V x H accumulator; frozen hidden states: no d_hidden GEMM); the
// launch leaves it out.
//
// The GEMMs are calls of the runtime's xentGemm* functions (cuBLASLt,
// lib/Runtime/CUDA/CublasLt.cpp), declared in the module, on row-major
// memrefs: each call says which operand is transposed and its beta. The
// loss kernels are the cross-entropy family's own, given the chunk's rows
// and the global statistics: a mean divides every row by the W and K of all
// rows, so the chunks' sums add up to the mean. Peak scratch: the chunk's f32
// logits (R·V·4 bytes), the rounded dlogits (R·V·2, not for f32), and the
// f32 d_weight / d_bias accumulators (not for f32, whose results accumulate
// in place).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::xent;

/// The f32 logits of a chunk fill whole 16-byte vectors of each row (so the
/// kernels' vector path and cuBLASLt's aligned kernels apply); the rounded
/// dlogits likewise.
static constexpr int64_t kRowAlignBytes = 16;
/// Automatic chunks are a multiple of this many rows.
static constexpr int64_t kRowQuantum = 128;

static StringRef getTypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  return "f16";
}

/// The runtime function for op(A) · op(B) with A, B of `ab` into C of `c`
/// (with the f32 bias epilogue when `bias`), and its signature.
static std::string getGemmName(Type ab, Type c, bool bias) {
  return ((bias ? "xentGemmBias_" : "xentGemm_") + getTypeName(ab) + "_" +
          getTypeName(c))
      .str();
}

static FunctionType getGemmType(MLIRContext *ctx, Type ab, Type c, bool bias) {
  Builder b(ctx);
  SmallVector<Type> inputs = {getBufferType(ctx, 2, ab),
                              getBufferType(ctx, 2, ab)};
  if (bias)
    inputs.push_back(getBufferType(ctx, 1, b.getF32Type()));
  inputs.push_back(getBufferType(ctx, 2, c));
  inputs.append(
      {b.getI32Type(), b.getI32Type(), b.getF32Type(), b.getF32Type()});
  return b.getFunctionType(inputs, {});
}

/// Whether `result` of `op` is computed: every result but a gradient
/// nobody uses (a frozen weight's d_weight, frozen hidden states' d_hidden),
/// whose GEMM, accumulator and buffer the lowering leaves out. Asked before
/// the pattern erases any user.
static bool isComputed(LinearCrossEntropyOpInterface op, Value result) {
  bool gradient = result == op.getDHidden() || result == op.getDWeight() ||
                  result == op.getDBias();
  return !gradient || !result.use_empty();
}

/// The GEMMs `op` calls: (name, signature).
static SmallVector<std::pair<std::string, FunctionType>>
getGemmFunctions(LinearCrossEntropyOpInterface op) {
  MLIRContext *ctx = op.getContext();
  Type t = op.getHidden().getType().getElementType();
  Type f32 = Float32Type::get(ctx);
  bool bias = static_cast<bool>(op.getBias());
  SmallVector<std::pair<std::string, FunctionType>> functions;
  auto add = [&](Type c, bool withBias) {
    std::string name = getGemmName(t, c, withBias);
    if (llvm::none_of(functions, [&](auto &f) { return f.first == name; }))
      functions.push_back({name, getGemmType(ctx, t, c, withBias)});
  };
  add(f32, bias); // the logits
  if (op.computesGradient()) {
    if (isComputed(op, op.getDHidden()))
      add(t, false); // d_hidden
    if (isComputed(op, op.getDWeight()) ||
        (bias && isComputed(op, op.getDBias())))
      add(f32, false); // d_weight, d_bias
  }
  return functions;
}

std::optional<std::string>
mlir::xent::getLinearUnsupportedReason(LinearCrossEntropyOpInterface op,
                                       ModuleOp module) {
  for (auto &[name, type] : getGemmFunctions(op)) {
    Operation *symbol = module.lookupSymbol(name);
    auto func = dyn_cast_or_null<func::FuncOp>(symbol);
    if (symbol &&
        (!func || func.getFunctionType() != type || !func.isDeclaration()))
      return "the module's symbol @" + name +
             ", the runtime's GEMM it calls, is not its declaration";
  }
  return std::nullopt;
}

LogicalResult
mlir::xent::checkLinearOptions(Operation *module,
                               const ConvertXentToGPUOptions &options) {
  if (options.linearChunkRows < 0)
    return module->emitError("linear-chunk-rows must be 0 (automatic) or "
                             "positive, got ")
           << options.linearChunkRows;
  if (options.linearChunkMiB <= 0)
    return module->emitError("linear-chunk-mib must be positive, got ")
           << options.linearChunkMiB;
  return success();
}

namespace {

/// Emits the launch of one linear op at the rewriter's insertion point.
class LinearEmitter {
public:
  LinearEmitter(RewriterBase &rewriter, LinearCrossEntropyOpInterface op,
                gpu::GPUModuleOp kernels,
                const ConvertXentToGPUOptions &options)
      : b(rewriter), op(op), loc(op.getLoc()), kernels(kernels),
        options(options), f32(rewriter.getF32Type()),
        hiddenType(op.getHidden().getType().getElementType()) {}

  /// The op's results.
  SmallVector<Value> emit();
  ArrayRef<std::string> getKernelNames() const { return kernelNames; }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32Constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value i32Constant(int32_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value dim(Value buffer, int64_t d) {
    return memref::DimOp::create(b, loc, buffer, d);
  }
  Value alloc(Type element, ValueRange sizes) {
    SmallVector<int64_t> shape(sizes.size(), ShapedType::kDynamic);
    return gpu::AllocOp::create(b, loc, MemRefType::get(shape, element),
                                /*asyncToken=*/Type(), ValueRange{}, sizes,
                                ValueRange{})
        .getMemref();
  }
  /// `buffer` as the kernels and the GEMMs take it (dynamic strided).
  Value asArg(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    MemRefType arg =
        getBufferType(b.getContext(), type.getRank(), type.getElementType());
    if (type == arg)
      return buffer;
    return memref::CastOp::create(b, loc, arg, buffer);
  }
  /// `buffer`[offsets…][sizes…] with unit strides.
  Value slice(Value buffer, ArrayRef<OpFoldResult> offsets,
              ArrayRef<OpFoldResult> sizes) {
    SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
    return asArg(
        memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides));
  }
  /// A rank-1 buffer seen as a `rows` x `cols` matrix with the given strides
  /// (in units of the vector's own stride).
  Value asMatrix(Value vector, Value rows, Value cols, Value rowStride,
                 Value colStride);

  Value emitChunkRows(Value numRows, Value paddedClasses);
  Value launch(gpu::GPUFuncOp func, Value grid, ValueRange operands,
               int64_t threads);
  gpu::GPUFuncOp buildConvert(Type from, Type to);
  /// dst = src converted, both rank 2; one block per row.
  void convert(Value src, Value dst);
  void callGemm(Value a, Value bMatrix, Value bias, Value c, bool transA,
                bool transB, Value beta);
  func::FuncOp getGemm(Type ab, Type c, bool bias);
  /// (or reuses an identical one, buildOrReuseKernel).
  gpu::GPUFuncOp
  buildKernel(StringRef prefix,
              function_ref<gpu::GPUFuncOp(OpBuilder &, StringRef)> build) {
    return buildOrReuseKernel(b, kernels, prefix, build, kernelNames);
  }
  /// What the chunks' loss kernel computes; `runtimeScalars` the op's
  /// run-time scalars as the launch body has them.
  KernelSpec getChunkSpec(const LossScalars &runtimeScalars);

  RewriterBase &b;
  LinearCrossEntropyOpInterface op;
  Location loc;
  gpu::GPUModuleOp kernels;
  ConvertXentToGPUOptions options;
  Type f32, hiddenType;
  SmallVector<std::string> kernelNames;
  /// The conversion kernels built so far, by source and destination type.
  DenseMap<std::pair<Type, Type>, gpu::GPUFuncOp> convertKernels;
};

} // namespace

Value LinearEmitter::asMatrix(Value vector, Value rows, Value cols,
                              Value rowStride, Value colStride) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, vector);
  Value stride = meta.getStrides()[0];
  auto type = getBufferType(
      b.getContext(), 2, cast<MemRefType>(vector.getType()).getElementType());
  return memref::ReinterpretCastOp::create(
      b, loc, type, meta.getBaseBuffer(), meta.getOffset(),
      ArrayRef<OpFoldResult>{rows, cols},
      ArrayRef<OpFoldResult>{
          arith::MulIOp::create(b, loc, rowStride, stride).getResult(),
          arith::MulIOp::create(b, loc, colStride, stride).getResult()});
}

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

Value LinearEmitter::launch(gpu::GPUFuncOp func, Value grid,
                            ValueRange operands, int64_t threads) {
  Value one = index(1);
  grid = arith::MaxUIOp::create(b, loc, grid, one);
  gpu::LaunchFuncOp::create(b, loc, func, gpu::KernelDim3{grid, one, one},
                            gpu::KernelDim3{index(threads), one, one},
                            /*dynamicSharedMemorySize=*/Value(), operands,
                            /*asyncTokenType=*/nullptr,
                            /*asyncDependencies=*/{});
  return grid;
}

gpu::GPUFuncOp LinearEmitter::buildConvert(Type from, Type to) {
  gpu::GPUFuncOp &cached = convertKernels[{from, to}];
  if (cached)
    return cached;
  return cached = buildKernel(
             "xent_linear_convert", [&](OpBuilder &kb, StringRef name) {
               return buildConvertRowsKernel(kb, loc, name, from, to);
             });
}

void LinearEmitter::convert(Value src, Value dst) {
  Type from = cast<MemRefType>(src.getType()).getElementType();
  Type to = cast<MemRefType>(dst.getType()).getElementType();
  launch(buildConvert(from, to), dim(src, 0), ValueRange{src, dst},
         kConvertThreads);
}

func::FuncOp LinearEmitter::getGemm(Type ab, Type c, bool bias) {
  auto module = op->getParentOfType<ModuleOp>();
  std::string name = getGemmName(ab, c, bias);
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   getGemmType(b.getContext(), ab, c, bias));
  func.setPrivate();
  return func;
}

void LinearEmitter::callGemm(Value a, Value bMatrix, Value bias, Value c,
                             bool transA, bool transB, Value beta) {
  Type ab = cast<MemRefType>(a.getType()).getElementType();
  Type ct = cast<MemRefType>(c.getType()).getElementType();
  func::FuncOp func = getGemm(ab, ct, static_cast<bool>(bias));
  SmallVector<Value> args = {a, bMatrix};
  if (bias)
    args.push_back(bias);
  args.append(
      {c, i32Constant(transA), i32Constant(transB), f32Constant(1.0), beta});
  func::CallOp::create(b, loc, func, args);
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

SmallVector<Value> LinearEmitter::emit() {
  MLIRContext *ctx = b.getContext();
  int64_t rowDims = op.getHidden().getType().getRank() - 1;
  bool perRow = op.getReduction() == Reduction::none;

  // The launch takes the op's operands and results as they are; the body
  // flattens [B, T, ...] to rows (a memref.collapse_shape of each buffer:
  // tensors and destinations have contiguous rows).
  // A gradient nobody uses is left out of the launch (isComputed).
  SmallVector<Value> computed;
  for (Value result : op->getResults())
    if (isComputed(op, result))
      computed.push_back(result);
  // A result's dynamic sizes: per-row values and d_hidden have the hidden's
  // rows; the others the weight's sizes.
  auto getDynamicSizes = [&](Value result) {
    auto type = cast<RankedTensorType>(result.getType());
    Value source = result == op.getDHidden() ? op.getHidden()
                   : type.getRank() == 0     ? Value()
                   : result == op.getDWeight() || result == op.getDBias()
                       ? Value(op.getWeight())
                       : Value(op.getTarget());
    SmallVector<Value> sizes;
    for (int64_t k = 0; k < type.getRank(); ++k)
      if (type.isDynamicDim(k))
        sizes.push_back(tensor::DimOp::create(b, loc, source, k));
    return sizes;
  };
  SmallVector<Value> inputs(op->getOperands());
  SmallVector<Value> dims, inits;
  SmallVector<int64_t> tied;
  SmallVector<bufferization::MaterializeInDestinationOp> sinks;
  for (Value result : computed) {
    auto type = cast<RankedTensorType>(result.getType());
    llvm::append_range(dims, getDynamicSizes(result));
    // A result materialized into a caller's buffer is written there.
    auto sink = getDestination(result);
    if (!sink) {
      tied.push_back(-1);
      continue;
    }
    tied.push_back(inputs.size() + inits.size());
    inits.push_back(getDestinationTensor(b, loc, sink, type));
    sinks.push_back(sink);
  }
  for (auto sink : sinks)
    b.eraseOp(sink);
  TypeRange resultTypes = ValueRange(computed).getTypes();
  auto launchOp =
      LaunchOp::create(b, loc, resultTypes, inputs, inits, dims, tied);
  SmallVector<Type> argTypes;
  for (Type type : llvm::concat<Type>(TypeRange(ValueRange(inputs)),
                                      resultTypes)) {
    // Run-time scalars are passed to the body as they are.
    auto tensor = dyn_cast<RankedTensorType>(type);
    argTypes.push_back(tensor ? getBufferType(ctx, tensor.getRank(),
                                              tensor.getElementType())
                              : type);
  }
  Block *body = b.createBlock(&launchOp.getBody(), {}, argTypes,
                              SmallVector<Location>(argTypes.size(), loc));
  b.setInsertionPointToStart(body);

  // The body's buffers, by name, with [B, T, ...] flattened to rows.
  auto flatten = [&](Value buffer) -> Value {
    auto type = cast<MemRefType>(buffer.getType());
    if (rowDims == 1 || type.getRank() == 0)
      return buffer;
    SmallVector<ReassociationIndices> groups = {{0, 1}};
    for (int64_t k = 2; k < type.getRank(); ++k)
      groups.push_back({k});
    return memref::CollapseShapeOp::create(
        b, loc, getBufferType(ctx, type.getRank() - 1, type.getElementType()),
        buffer, groups);
  };
  auto args = body->getArguments();
  unsigned next = 0;
  Value gradOutput = op.getGradOutput() ? flatten(args[next++]) : Value();
  Value hidden = flatten(args[next++]), weight = args[next++];
  Value bias = op.getBias() ? args[next++] : Value();
  Value target = flatten(args[next++]);
  Value classWeight = op.getClassWeight() ? args[next++] : Value();
  // The op's run-time scalars (after the tensors), as the body has them.
  size_t numScalars = op.getLossScalars().getValues().size();
  LossScalars runtimeScalars =
      op.getLossScalars().remap(args.slice(next, numScalars));
  next += numScalars;
  // The results' buffers; null for a gradient not computed.
  Value loss, zLoss, dHidden, dWeight, dBias;
  for (Value result : computed) {
    Value arg = args[next++];
    if (result == op.getLoss())
      loss = flatten(arg);
    else if (result == op.getZLoss())
      zLoss = flatten(arg);
    else if (result == op.getDHidden())
      dHidden = flatten(arg);
    else if (result == op.getDWeight())
      dWeight = arg;
    else
      dBias = arg;
  }

  // Sizes and scratch.
  bool grad = op.computesGradient();
  bool narrow = !hiddenType.isF32();
  // Sizes the op's types state are constants (a static V gives a constant
  // chunk size).
  auto size = [&](Value buffer, RankedTensorType type, int64_t d) -> Value {
    return type.isDynamicDim(d) ? dim(buffer, d) : index(type.getDimSize(d));
  };
  RankedTensorType weightType = op.getWeight().getType();
  ArrayRef<int64_t> rowShape = op.getHidden().getType().getShape().drop_back();
  Value numRows = llvm::any_of(rowShape, ShapedType::isDynamic)
                      ? dim(hidden, 0)
                      : index(llvm::product_of(rowShape));
  Value features = size(weight, weightType, 1);
  Value classes = size(weight, weightType, 0);
  auto roundUp = [&](Value v, int64_t multiple) -> Value {
    Value m = index(multiple);
    return arith::MulIOp::create(
        b, loc,
        arith::DivUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, v, index(multiple - 1)), m),
        m);
  };
  Value ldLogits = roundUp(classes, kRowAlignBytes / 4);
  Value chunkRows = emitChunkRows(numRows, ldLogits);
  Value one = index(1), zero = index(0);
  Value allocRows = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, chunkRows, numRows), one);
  Value logitsBuf = alloc(f32, {allocRows, ldLogits});
  SmallVector<Value> scratch = {logitsBuf};
  // The gradient GEMMs run when any gradient is computed.
  bool gemms = grad && (dHidden || dWeight || dBias);
  Value lowBuf, dWeightAcc = dWeight, dBiasAcc = dBias, ones, bias32;
  if (grad && narrow) {
    lowBuf =
        alloc(hiddenType, {allocRows, roundUp(classes, kRowAlignBytes / 2)});
    scratch.push_back(lowBuf);
    if (dWeight) {
      dWeightAcc = alloc(f32, {classes, features});
      scratch.push_back(dWeightAcc);
    }
    if (dBias) {
      dBiasAcc = alloc(f32, {classes});
      scratch.push_back(dBiasAcc);
    }
  }
  Value onesStride;
  if (dBias) {
    onesStride = roundUp(allocRows, kRowAlignBytes / 2);
    ones = alloc(hiddenType, {onesStride});
    scratch.push_back(ones);
    gpu::MemsetOp::create(
        b, loc, Type(), ValueRange{}, ones,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(hiddenType, 1.0)));
  }
  if (bias) {
    // The epilogue's bias: f32 and contiguous.
    bias32 = alloc(f32, {classes});
    scratch.push_back(bias32);
    Value biasRow = asMatrix(bias, one, classes, classes, one);
    Value bias32Row = asMatrix(asArg(bias32), one, classes, classes, one);
    convert(biasRow, bias32Row);
    bias32 = asArg(bias32);
  }

  // The loss kernels of the chunks, with the statistics of all rows.
  KernelSpec spec = getChunkSpec(runtimeScalars);
  ConvertXentToGPUOptions twoPass = options;
  twoPass.residentRows = false; // in place needs the two-pass kernel
  LaunchGeometry geometry = getLaunchGeometry(twoPass, f32);
  Value kernelScratch;
  if (spec.needsScratch()) {
    kernelScratch =
        gpu::AllocOp::create(b, loc, getScratchType(b.getContext()), Type(),
                             ValueRange{}, ValueRange{}, ValueRange{})
            .getMemref();
    scratch.push_back(kernelScratch);
  }
  // The loss's scalars as the kernels take them: the op's run-time operands
  // or constants of its attributes. A run-time value of 0 is the op without
  // the feature (the kernels' contract): a label smoothing or softcap of 0
  // launches the row kernel without it (launchRowKernel).
  LossScalars kernelScalars =
      getKernelScalars(b, loc, spec.config, spec.config.scalars);
  Value ignoreIndex = kernelScalars.ignoreIndex;
  if (spec.needsScratch()) {
    gpu::GPUFuncOp prologue =
        buildKernel("xent_prologue", [&](OpBuilder &kb, StringRef name) {
          return buildPrologueKernel(kb, loc, name, spec, geometry);
        });
    PrologueKernelArgs<Value> pro;
    pro.target = target;
    pro.weight = classWeight;
    pro.scratch = kernelScratch;
    if (spec.needsStats())
      pro.ignoreIndex = ignoreIndex;
    launch(prologue, one, pro.list(), geometry.threads);
  }
  StringRef rowKernelName =
      grad ? (op.computesLoss() ? "xent_loss_grad" : "xent_grad") : "xent_loss";

  // The chunk loop; one iteration even for N = 0, whose empty products
  // still write the zero gradients of the weight and the bias.
  Value upper = arith::MaxUIOp::create(b, loc, numRows, one);
  auto loop = scf::ForOp::create(b, loc, zero, upper, chunkRows);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    Value r = arith::MinUIOp::create(b, loc, chunkRows,
                                     arith::SubIOp::create(b, loc, numRows, i));
    OpFoldResult c0 = b.getIndexAttr(0);
    Value h = slice(hidden, {i, c0}, {r, features});
    Value t = slice(target, {i}, {r});
    Value logits = slice(logitsBuf, {c0, c0}, {r, classes});
    // logits = h · weightᵀ (+ bias)
    callGemm(h, weight, bias32, logits, /*transA=*/false, /*transB=*/true,
             f32Constant(0.0));

    RowKernelArgs<Value> row;
    row.x = logits;
    row.target = t;
    row.weight = classWeight;
    row.scratch = kernelScratch;
    row.gradOutput =
        perRow && gradOutput ? slice(gradOutput, {i}, {r}) : gradOutput;
    row.loss = perRow && loss ? slice(loss, {i}, {r}) : Value();
    row.zLoss = perRow && zLoss ? slice(zLoss, {i}, {r}) : Value();
    Value dl = logits;
    if (grad && narrow)
      dl = slice(lowBuf, {c0, c0}, {r, classes});
    row.dlogits = grad ? dl : Value();
    row.ignoreIndex = ignoreIndex;
    row.labelSmoothing = kernelScalars.labelSmoothing;
    row.zLossScale = kernelScalars.zLossScale;
    row.softcap = kernelScalars.softcap;
    // A label smoothing or softcap of 0 launches the kernel without it (one
    // comparison on the host per launch, as the cross-entropy ops' runtime
    // dispatch): a plain loss computes no tanh and no smoothing sums.
    dispatchRuntimeFeatures(
        b, loc, spec, kernelScalars.labelSmoothing, kernelScalars.softcap,
        [&](const KernelSpec &variant) {
          gpu::GPUFuncOp kernel =
              buildKernel(rowKernelName, [&](OpBuilder &kb, StringRef name) {
                return buildRowKernel(kb, loc, name, variant, geometry);
              });
          RowKernelArgs<Type> types =
              getRowKernelArgTypes(b.getContext(), variant);
          RowKernelArgs<Value> args = row;
          if (!types.labelSmoothing)
            args.labelSmoothing = Value();
          if (!types.softcap)
            args.softcap = Value();
          launch(kernel, r, args.list(), geometry.threads);
        });

    if (gemms) {
      // The first chunk writes the weight's and the bias's gradients, the
      // others add to them.
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, i, zero);
      Value beta = arith::SelectOp::create(b, loc, first, f32Constant(0.0),
                                           f32Constant(1.0));
      // d_hidden rows = dl · weight, d_weight += dlᵀ · h, d_bias += dlᵀ · 1
      if (dHidden)
        callGemm(dl, weight, Value(), slice(dHidden, {i, c0}, {r, features}),
                 false, false, f32Constant(0.0));
      if (dWeight)
        callGemm(dl, h, Value(), asArg(dWeightAcc), true, false, beta);
      // d_bias (1 x V) += ones (1 x r) · dl: a GEMV, the ones' row stride
      // (cuBLASLt's leading dimension) a multiple of 16 bytes.
      if (dBias) {
        Value onesRow = asMatrix(asArg(ones), one, r, onesStride, one);
        Value dBiasRow = asMatrix(asArg(dBiasAcc), one, classes, classes, one);
        callGemm(onesRow, dl, Value(), dBiasRow, false, false, beta);
      }
    }
  }

  // The results from their f32 accumulators; the scratch freed.
  if (dWeightAcc != dWeight)
    convert(asArg(dWeightAcc), dWeight);
  if (dBiasAcc != dBias) {
    Value accRow = asMatrix(asArg(dBiasAcc), one, classes, classes, one);
    Value dBiasRow = asMatrix(dBias, one, classes, classes, one);
    convert(accRow, dBiasRow);
  }
  if (spec.reduced()) {
    for (auto [slot, out] : {std::pair{kLossSlot, loss}, {kZLossSlot, zLoss}}) {
      if (!out)
        continue;
      Type dstType = cast<MemRefType>(out.getType()).getElementType();
      gpu::GPUFuncOp kernel =
          buildKernel("xent_convert", [&](OpBuilder &kb, StringRef name) {
            return buildConvertKernel(kb, loc, name, dstType, slot);
          });
      launch(kernel, one, ValueRange{kernelScratch, out}, kLanes);
    }
  }
  for (Value buffer : scratch)
    gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, buffer);

  // The op's results: the launch's, and an empty tensor (no user; erased by
  // the next canonicalization) for a gradient not computed.
  b.setInsertionPointAfter(launchOp);
  SmallVector<Value> results;
  auto launched = launchOp.getResults().begin();
  for (Value result : op->getResults()) {
    if (llvm::is_contained(computed, result)) {
      results.push_back(*launched++);
      continue;
    }
    auto type = cast<RankedTensorType>(result.getType());
    results.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                              type.getElementType(),
                                              getDynamicSizes(result)));
  }
  return results;
}

namespace {

/// Replaces a linear op that takes the kernels by the launch of its chunk
/// loop; reports the path as the cross-entropy ops do.
struct LinearCrossEntropyLowering
    : public OpInterfaceRewritePattern<LinearCrossEntropyOpInterface> {
  LinearCrossEntropyLowering(MLIRContext *ctx,
                             const ConvertXentToGPUOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(LinearCrossEntropyOpInterface op,
                                PatternRewriter &rewriter) const override {
    LoweringChoice choice = chooseLowering(op, options);
    if (!choice.kernel)
      return rewriter.notifyMatchFailure(op,
                                         "takes no kernel: " + choice.reason);
    gpu::GPUModuleOp kernels =
        getOrCreateKernelModule(rewriter, op->getParentOfType<ModuleOp>());
    rewriter.setInsertionPoint(op);
    // Named before the emitter erases the op's sinks (uses of the results).
    SmallVector<std::string> gemms;
    for (auto &function : getGemmFunctions(op))
      gemms.push_back(function.first);
    LinearEmitter emitter(rewriter, op, kernels, options);
    SmallVector<Value> results = emitter.emit();
    std::string rows =
        options.linearChunkRows > 0
            ? std::to_string(options.linearChunkRows)
            : "auto (f32 logits <= " + std::to_string(options.linearChunkMiB) +
                  " MiB)";
    remark::passed(op.getLoc(), getRemarkOpts(op, "kernel"))
        << "lowered to row chunks: cuBLASLt GEMMs and the fused kernels in "
           "place over each chunk's logits"
        << remark::metric("Kernels", llvm::join(emitter.getKernelNames(), ", "))
        << remark::metric("Gemms", llvm::join(gemms, ", "))
        << remark::metric("ChunkRows", rows)
        << remark::reason("{0}", choice.reason);
    rewriter.replaceOp(op, results);
    return success();
  }

  ConvertXentToGPUOptions options;
};

} // namespace

void mlir::xent::populateLinearLoweringPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options) {
  patterns.add<LinearCrossEntropyLowering>(patterns.getContext(), options);
}
