//===- XentToGPU.cpp - Lowering of xent ops to fused GPU kernels ----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The host side: each xent op becomes `gpu.launch_func` of the kernels that
// KernelBuilder generates, on buffers taken from the op's tensors. Buffers
// are taken with a fully dynamic strided layout, so that one-shot
// bufferization hands over a view (a slice of a padded vocabulary, shifted
// labels) as it is instead of copying it on the host; the kernels read every
// buffer through its strides, in its own rank.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/Passes.h"
#include "xent/Conversion/XentToGPU/NVIDIAChip.h"

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xent {
#define GEN_PASS_DEF_CONVERTXENTTOGPU
#include "xent/Conversion/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

static constexpr llvm::StringLiteral kKernelModuleName = "xent_kernels";

/// The gpu.module that holds xent's kernels, created on first use.
static gpu::GPUModuleOp getOrCreateKernelModule(RewriterBase &rewriter,
                                                ModuleOp module) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return existing;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  rewriter.getUnitAttr());
  return gpu::GPUModuleOp::create(rewriter, module.getLoc(), kKernelModuleName);
}

/// A kernel name not yet used in `kernels`.
static std::string getUniqueName(gpu::GPUModuleOp kernels, StringRef prefix) {
  for (unsigned n = 0;; ++n) {
    std::string name = (prefix + "_" + Twine(n)).str();
    if (!kernels.lookupSymbol(name))
      return name;
  }
}

namespace {

/// Emits the host side of one op at the rewriter's insertion point.
class HostEmitter {
public:
  HostEmitter(RewriterBase &rewriter, Location loc,
              const CrossEntropyConfig &config, gpu::GPUModuleOp kernels,
              const LaunchGeometry &geometry)
      : rewriter(rewriter), loc(loc), config(config), kernels(kernels),
        geometry(geometry) {}

  /// A buffer holding `tensor`, with any strides and offset (or, when
  /// `identity`, the identity layout).
  Value toBuffer(Value tensor, bool readOnly = true, bool identity = false) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    auto layout = StridedLayoutAttr::get(rewriter.getContext(),
                                         ShapedType::kDynamic, strides);
    auto memrefType =
        identity
            ? MemRefType::get(type.getShape(), type.getElementType())
            : MemRefType::get(type.getShape(), type.getElementType(), layout);
    return bufferization::ToBufferOp::create(rewriter, loc, memrefType, tensor,
                                             readOnly);
  }

  /// `buffer` as a kernel takes it: dynamic sizes, any strides.
  Value kernelArg(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    auto argType = getBufferType(rewriter.getContext(), type.getRank(),
                                 type.getElementType());
    if (type == argType)
      return buffer;
    return memref::CastOp::create(rewriter, loc, argType, buffer);
  }

  /// Device memory for a value of `type`; dynamic sizes are read off
  /// `like`, whose dims are `dims` of `type` in order.
  Value allocate(MemRefType type, Value like, ArrayRef<int64_t> dims) {
    SmallVector<Value> sizes;
    for (auto [k, d] : llvm::enumerate(dims))
      if (type.isDynamicDim(k))
        sizes.push_back(memref::DimOp::create(rewriter, loc, like, d));
    return gpu::AllocOp::create(rewriter, loc, type, /*asyncToken=*/Type(),
                                ValueRange{}, sizes, ValueRange{})
        .getMemref();
  }
  Value allocateScalar(Type elementType) {
    return allocate(MemRefType::get({}, elementType), Value(), {});
  }
  void deallocate(Value buffer) {
    gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{}, buffer);
  }

  /// Launches `func` on max(`grid`, 1) blocks: a grid cannot be empty, and
  /// the row kernel skips blocks past the last row. No host-side branch, so
  /// all launches of an op stay in one stream-ordered chain.
  /// With `cluster` (blocks per row), launches max(grid, 1) clusters of
  /// that many blocks with `sharedBytes` (i32) of dynamic shared memory.
  void launch(gpu::GPUFuncOp func, Value grid, ValueRange operands,
              int64_t threads, Value cluster = Value(),
              Value sharedBytes = Value()) {
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value block = arith::ConstantIndexOp::create(rewriter, loc, threads);
    grid = arith::MaxUIOp::create(rewriter, loc, grid, one);
    std::optional<gpu::KernelDim3> clusterSize;
    if (cluster) {
      grid = arith::MulIOp::create(rewriter, loc, grid, cluster);
      clusterSize = gpu::KernelDim3{cluster, one, one};
    }
    gpu::LaunchFuncOp::create(rewriter, loc, func,
                              gpu::KernelDim3{grid, one, one},
                              gpu::KernelDim3{block, one, one}, sharedBytes,
                              operands, /*asyncTokenType=*/nullptr,
                              /*asyncDependencies=*/{}, clusterSize);
  }

  /// Builds a kernel into the kernel module.
  template <typename BuildFn>
  gpu::GPUFuncOp buildKernel(StringRef prefix, BuildFn build) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(&kernels.getBodyRegion().front());
    return build(rewriter, getUniqueName(kernels, prefix));
  }

  RewriterBase &rewriter;
  Location loc;
  const CrossEntropyConfig &config;
  gpu::GPUModuleOp kernels;
  const LaunchGeometry &geometry;
};

/// Where one result goes: the memref written by the kernel and the tensor
/// that replaces the op's result.
struct ResultBuffer {
  Value buffer;                                   // in the result's shape
  bufferization::MaterializeInDestinationOp sink; // erased when used
};

/// A result whose only use materializes it into a writable buffer is
/// written there directly; otherwise it gets device memory.
static ResultBuffer getResultBuffer(HostEmitter &host, Value result,
                                    Value logitsBuffer,
                                    ArrayRef<int64_t> logitsDims,
                                    bool peek = false) {
  auto tensorType = cast<RankedTensorType>(result.getType());
  if (result.hasOneUse()) {
    auto sink = dyn_cast<bufferization::MaterializeInDestinationOp>(
        *result.getUsers().begin());
    if (sink && sink.getWritable() && sink.getRestrict()) {
      // Any strides: the kernels write through them.
      auto destType = dyn_cast<MemRefType>(sink.getDest().getType());
      if (destType && destType.getElementType() == tensorType.getElementType())
        return {sink.getDest(), sink};
    }
  }
  if (peek) // only asking whether a destination is given
    return {Value(), nullptr};
  auto type =
      MemRefType::get(tensorType.getShape(), tensorType.getElementType());
  return {host.allocate(type, logitsBuffer, logitsDims), nullptr};
}

/// Replaces `result` by the contents of `where`.
static void replaceResult(RewriterBase &rewriter, Location loc, Value result,
                          const ResultBuffer &where) {
  auto tensor = bufferization::ToTensorOp::create(
      rewriter, loc, result.getType(), where.buffer,
      /*restrict=*/where.sink ? UnitAttr() : rewriter.getUnitAttr(),
      /*writable=*/where.sink ? UnitAttr() : rewriter.getUnitAttr());
  rewriter.replaceAllUsesWith(result, tensor);
  if (where.sink)
    rewriter.eraseOp(where.sink);
}

/// False for a tensor known to bufferize to a view with strides: a slice, or
/// a strided buffer taken as a tensor.
static bool isDense(Value tensor) {
  if (tensor.getDefiningOp<tensor::ExtractSliceOp>())
    return false;
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return cast<MemRefType>(toTensor.getBuffer().getType())
        .getLayout()
        .isIdentity();
  return true;
}

/// The dims of the logits that a per-element value has: all but the axis.
static SmallVector<int64_t> getElementDims(int64_t rank, int64_t axis) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      dims.push_back(d);
  return dims;
}

/// Lowers one forward or gradient op. `gradOutput` and `dlogits` are null
/// for the forward op; `loss` / `zLoss` null for the gradient op.
static LogicalResult lowerOp(RewriterBase &rewriter, Operation *op,
                             const CrossEntropyConfig &config, Value gradOutput,
                             Value logits, Value target, Value weight,
                             Value loss, Value zLoss, Value dlogits,
                             const ConvertXentToGPUOptions &options) {
  Location loc = op->getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return rewriter.notifyMatchFailure(op, "not inside a module");
  LaunchGeometry geometry =
      getLaunchGeometry(options, config.logitsType.getElementType());
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(rewriter, module);
  rewriter.setInsertionPoint(op);
  HostEmitter host(rewriter, loc, config, kernels, geometry);
  Type f32 = rewriter.getF32Type();

  KernelSpec spec;
  spec.config = config;
  spec.logitsType = config.logitsType.getElementType();
  spec.targetType = config.targetType.getElementType();
  if (weight)
    spec.weightType = cast<ShapedType>(weight.getType()).getElementType();
  if (gradOutput)
    spec.gradOutputType =
        cast<ShapedType>(gradOutput.getType()).getElementType();
  spec.withGrad = static_cast<bool>(dlogits);
  spec.contiguousRows =
      llvm::all_of(config.logitsType.getShape().drop_front(config.axis + 1),
                   [](int64_t d) { return d == 1; });
  bool reduced = spec.reduced();
  // Reduced losses accumulate in f32; other types are converted afterwards.
  if (loss)
    spec.lossType =
        reduced ? f32 : cast<ShapedType>(loss.getType()).getElementType();
  if (zLoss)
    spec.zLossType =
        reduced ? f32 : cast<ShapedType>(zLoss.getType()).getElementType();

  int64_t rank = config.logitsType.getRank();
  SmallVector<int64_t> logitsDims =
      llvm::to_vector(llvm::seq<int64_t>(0, rank));
  SmallVector<int64_t> elementDims = getElementDims(rank, config.axis);

  // dlogits may take the logits' buffer when nothing reads the logits after
  // this op (it is their only use) and no destination was given for it: each
  // thread reads a class's logit before it writes that class's gradient, and
  // the statistics of a row are complete before any of it is written.
  // The types must be equal, not only compatible: the buffer becomes the
  // dlogits tensor as it is (found by xent-fuzz-op).
  // Nor when the logits are a view (a slice, a strided buffer): dlogits must
  // leave the op in a dense buffer that any consumer (a function's result)
  // takes as it is, never one that bufferization would copy on the host.
  // Nor for a joint op whose kernel keeps rows on chip: there block 0 reads
  // the target's logit for the loss after the cluster's exchange, when the
  // block holding that element may already have written its gradient.
  bool gradInPlace =
      dlogits && dlogits.getType() == logits.getType() && logits.hasOneUse() &&
      isDense(logits) && !(loss && hasResidentPath(spec, geometry)) &&
      !getResultBuffer(host, dlogits, Value(), {}, /*peek=*/true).sink;
  Value xBuffer = host.toBuffer(logits, /*readOnly=*/!gradInPlace,
                                /*identity=*/gradInPlace);
  Value x = host.kernelArg(xBuffer);
  Value t = host.kernelArg(host.toBuffer(target));
  Value w = weight ? host.kernelArg(host.toBuffer(weight)) : Value();
  // One block per row: the product of every dim but the class axis.
  Value rows = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (int64_t d = 0; d < rank; ++d)
    if (d != config.axis)
      rows = arith::MulIOp::create(
          rewriter, loc, rows,
          memref::DimOp::create(rewriter, loc, xBuffer, d));

  // Results.
  std::optional<ResultBuffer> lossOut, zOut, gradOut;
  Value lossAcc, zAcc;
  if (loss) {
    lossOut = getResultBuffer(host, loss, xBuffer,
                              reduced ? ArrayRef<int64_t>() : elementDims);
    lossAcc = lossOut->buffer;
    if (reduced && !getElementTypeOrSelf(loss.getType()).isF32())
      lossAcc = host.allocateScalar(f32);
  }
  if (zLoss) {
    zOut = getResultBuffer(host, zLoss, xBuffer,
                           reduced ? ArrayRef<int64_t>() : elementDims);
    zAcc = zOut->buffer;
    if (reduced && !getElementTypeOrSelf(zLoss.getType()).isF32())
      zAcc = host.allocateScalar(f32);
  }
  if (dlogits)
    gradOut = gradInPlace ? ResultBuffer{xBuffer, nullptr}
                          : getResultBuffer(host, dlogits, xBuffer, logitsDims);

  // Prologue: kept weight / count on the device, accumulators initialized.
  Value stats;
  if (spec.needsStats())
    stats = host.allocate(MemRefType::get({2}, f32), Value(), {});
  if (spec.needsStats() || (loss && reduced)) {
    gpu::GPUFuncOp prologue =
        host.buildKernel("xent_prologue", [&](OpBuilder &b, StringRef name) {
          return buildPrologueKernel(b, loc, name, spec, geometry);
        });
    PrologueKernelArgs<Value> args;
    args.target = t;
    args.weight = w;
    args.stats = stats;
    if (loss)
      args.loss = host.kernelArg(lossAcc);
    if (zLoss)
      args.zLoss = host.kernelArg(zAcc);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    host.launch(prologue, one, args.list(), geometry.threads);
  }

  // The row kernel.
  gpu::GPUFuncOp rowKernel = host.buildKernel(
      dlogits ? (loss ? "xent_loss_grad" : "xent_grad") : "xent_loss",
      [&](OpBuilder &b, StringRef name) {
        return buildRowKernel(b, loc, name, spec, geometry);
      });
  RowKernelArgs<Value> args;
  args.x = x;
  args.target = t;
  args.weight = w;
  args.stats = stats;
  if (gradOutput)
    args.gradOutput = host.kernelArg(host.toBuffer(gradOutput));
  if (loss)
    args.loss = host.kernelArg(lossAcc);
  if (zLoss)
    args.zLoss = host.kernelArg(zAcc);
  if (dlogits)
    args.dlogits = host.kernelArg(gradOut->buffer);
  if (hasResidentPath(spec, geometry)) {
    // Rows that take the resident path get a cluster of blocks each and
    // the staging memory; others one block without it (the kernel decides
    // the same way from C).
    Value numClasses =
        memref::DimOp::create(rewriter, loc, xBuffer, config.axis);
    Value size =
        emitResidentClusterSize(rewriter, loc, numClasses, spec, geometry);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value fits = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                       size, zero);
    Value cluster = arith::SelectOp::create(
        rewriter, loc, fits, size,
        arith::ConstantIndexOp::create(rewriter, loc, 1));
    Value sharedBytes = arith::SelectOp::create(
        rewriter, loc, fits,
        arith::ConstantOp::create(
            rewriter, loc,
            rewriter.getI32IntegerAttr(getResidentSharedMemoryBytes(geometry))),
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getI32IntegerAttr(0)));
    host.launch(rowKernel, rows, args.list(), geometry.threads, cluster,
                sharedBytes);
  } else {
    host.launch(rowKernel, rows, args.list(), geometry.threads);
  }

  // Epilogue: reduced results in another type than f32.
  auto convert = [&](Value acc, Value out) {
    if (acc == out)
      return;
    Type dstType = cast<MemRefType>(out.getType()).getElementType();
    gpu::GPUFuncOp kernel =
        host.buildKernel("xent_convert", [&](OpBuilder &b, StringRef name) {
          return buildConvertKernel(b, loc, name, dstType);
        });
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    host.launch(kernel, one,
                ValueRange{host.kernelArg(acc), host.kernelArg(out)}, 32);
    host.deallocate(acc);
  };
  if (loss)
    convert(lossAcc, lossOut->buffer);
  if (zLoss)
    convert(zAcc, zOut->buffer);
  if (stats)
    host.deallocate(stats);

  if (loss)
    replaceResult(rewriter, loc, loss, *lossOut);
  if (zLoss)
    replaceResult(rewriter, loc, zLoss, *zOut);
  if (dlogits)
    replaceResult(rewriter, loc, dlogits, *gradOut);
  rewriter.eraseOp(op);
  return success();
}

struct CrossEntropyOpLowering : public OpRewritePattern<CrossEntropyOp> {
  CrossEntropyOpLowering(MLIRContext *ctx,
                         const ConvertXentToGPUOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    return lowerOp(rewriter, op, op.getConfig(), Value(), op.getLogits(),
                   op.getTarget(), op.getWeight(), op.getLoss(), op.getZLoss(),
                   Value(), options);
  }
  ConvertXentToGPUOptions options;
};

struct CrossEntropyAndGradOpLowering
    : public OpRewritePattern<CrossEntropyAndGradOp> {
  CrossEntropyAndGradOpLowering(MLIRContext *ctx,
                                const ConvertXentToGPUOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  LogicalResult matchAndRewrite(CrossEntropyAndGradOp op,
                                PatternRewriter &rewriter) const override {
    return lowerOp(rewriter, op, op.getConfig(), op.getGradOutput(),
                   op.getLogits(), op.getTarget(), op.getWeight(), op.getLoss(),
                   op.getZLoss(), op.getDlogits(), options);
  }
  ConvertXentToGPUOptions options;
};

struct CrossEntropyGradOpLowering
    : public OpRewritePattern<CrossEntropyGradOp> {
  CrossEntropyGradOpLowering(MLIRContext *ctx,
                             const ConvertXentToGPUOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    return lowerOp(rewriter, op, op.getConfig(), op.getGradOutput(),
                   op.getLogits(), op.getTarget(), op.getWeight(), Value(),
                   Value(), op.getDlogits(), options);
  }
  ConvertXentToGPUOptions options;
};

struct ConvertXentToGPUPass
    : public xent::impl::ConvertXentToGPUBase<ConvertXentToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    if (threads < 32 || threads > 1024 || threads % 32 != 0) {
      getOperation().emitError(
          "threads must be a multiple of 32 in [32, 1024], got ")
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    int64_t width = vectorWidth;
    if (width < 0 || width > 16 ||
        (width != 0 && !llvm::isPowerOf2_64(width))) {
      getOperation().emitError("vector-width must be 0 (16 bytes' worth) or a "
                               "power of two up to 16, got ")
          << width;
      return signalPassFailure();
    }
    if (!NVIDIAChip::parse(chip)) {
      getOperation().emitError(
          "chip must name an NVIDIA chip sm_80 or newer, such as 'sm_90', "
          "got '")
          << chip << "'";
      return signalPassFailure();
    }
    ConvertXentToGPUOptions options;
    options.chip = chip;
    options.threads = threads;
    options.vectorWidth = vectorWidth;
    options.residentRows = residentRows;
    // Lower in program order so that kernels appear in the order of their
    // ops; the patterns (populateXentToGPUConversionPatterns) do the same
    // rewrite for drivers that want them.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<CrossEntropyOp, CrossEntropyGradOp, CrossEntropyAndGradOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    bool failedAny = false;
    for (Operation *op : ops) {
      LogicalResult result = failure();
      if (auto fwd = dyn_cast<CrossEntropyOp>(op))
        result = lowerOp(rewriter, fwd, fwd.getConfig(), Value(),
                         fwd.getLogits(), fwd.getTarget(), fwd.getWeight(),
                         fwd.getLoss(), fwd.getZLoss(), Value(), options);
      else if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
        result = lowerOp(rewriter, grad, grad.getConfig(), grad.getGradOutput(),
                         grad.getLogits(), grad.getTarget(), grad.getWeight(),
                         Value(), Value(), grad.getDlogits(), options);
      else if (auto joint = dyn_cast<CrossEntropyAndGradOp>(op))
        result = lowerOp(rewriter, joint, joint.getConfig(),
                         joint.getGradOutput(), joint.getLogits(),
                         joint.getTarget(), joint.getWeight(), joint.getLoss(),
                         joint.getZLoss(), joint.getDlogits(), options);
      if (failed(result)) {
        op->emitError("could not lower to the GPU");
        failedAny = true;
      }
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

void mlir::xent::populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options) {
  patterns.add<CrossEntropyOpLowering, CrossEntropyGradOpLowering,
               CrossEntropyAndGradOpLowering>(patterns.getContext(), options);
}
