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

#include "LinearEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::xent;

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
  if (options.linearTileCluster != 1 && options.linearTileCluster != 2)
    return module->emitError("linear-tile-cluster must be 1 or 2, got ")
           << options.linearTileCluster;
  return success();
}


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

SmallVector<Value> LinearEmitter::emit() {
  SmallVector<Value> computed = getComputedResults();
  LaunchOp launchOp = emitLaunch(computed);
  BodyBuffers io = bindBody(launchOp, computed);
  auto emitChunks = [&] {
    ChunkBuffers chunk = emitChunkBuffers(io);
    LossKernels loss = emitLossKernels(io, chunk);
    emitChunkLoop(io, chunk, loss);
    emitEpilogue(io, chunk, loss);
  };
  if (mayUseTiles(io)) {
    // The tile kernels where this call's values and buffers allow, else
    // the row chunks (one compiled function serves both).
    auto ifTiles = scf::IfOp::create(b, loc, emitTileCondition(io),
                                     /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifTiles.thenBlock());
    emitTileLoss(io);
    b.setInsertionPointToStart(ifTiles.elseBlock());
    emitChunks();
  } else {
    emitChunks();
  }
  b.setInsertionPointAfter(launchOp);
  return collectResults(launchOp, computed);
}

SmallVector<Value> LinearEmitter::getComputedResults() {
  // A gradient nobody uses is left out of the launch (isComputed).
  SmallVector<Value> computed;
  for (Value result : op->getResults())
    if (isComputed(op, result))
      computed.push_back(result);
  return computed;
}

SmallVector<Value> LinearEmitter::getDynamicSizes(Value result) {
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
}

LaunchOp LinearEmitter::emitLaunch(ArrayRef<Value> computed) {
  MLIRContext *ctx = b.getContext();
  // The launch takes the op's operands and results as they are; the body
  // flattens [B, T, ...] to rows (a memref.collapse_shape of each buffer:
  // tensors and destinations have contiguous rows).
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
  return launchOp;
}

LinearEmitter::BodyBuffers LinearEmitter::bindBody(LaunchOp launchOp,
                                                   ArrayRef<Value> computed) {
  MLIRContext *ctx = b.getContext();
  int64_t rowDims = op.getHidden().getType().getRank() - 1;
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
  auto args = launchOp.getBody().front().getArguments();
  unsigned next = 0;
  BodyBuffers io;
  io.gradOutput = op.getGradOutput() ? flatten(args[next++]) : Value();
  io.hidden = flatten(args[next++]);
  io.weight = args[next++];
  io.bias = op.getBias() ? args[next++] : Value();
  io.target = flatten(args[next++]);
  io.classWeight = op.getClassWeight() ? args[next++] : Value();
  // The op's run-time scalars (after the tensors), as the body has them.
  size_t numScalars = op.getLossScalars().getValues().size();
  io.runtimeScalars = op.getLossScalars().remap(args.slice(next, numScalars));
  next += numScalars;
  // The results' buffers; null for a gradient not computed.
  for (Value result : computed) {
    Value arg = args[next++];
    if (result == op.getLoss())
      io.loss = flatten(arg);
    else if (result == op.getZLoss())
      io.zLoss = flatten(arg);
    else if (result == op.getDHidden())
      io.dHidden = flatten(arg);
    else if (result == op.getDWeight())
      io.dWeight = arg;
    else
      io.dBias = arg;
  }
  return io;
}

SmallVector<Value> LinearEmitter::collectResults(LaunchOp launchOp,
                                                 ArrayRef<Value> computed) {
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
