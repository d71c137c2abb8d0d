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
// buffer through its strides, in its own rank. HostBuffers decides where
// each buffer comes from.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/XentToGPU/XentToGPU.h"

#include "HostBuffers.h"
#include "KernelBuilder.h"

#include "xent/Conversion/XentToGPU/NVIDIAChip.h"
#include "xent/Dialect/Xent/IR/XentOps.h"

// The dialects the pass depends on (its generated base registers them).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"

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
  rewriter.modifyOpInPlace(module, [&] {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    rewriter.getUnitAttr());
  });
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

/// The dims of the logits that a per-element value has: all but the axis.
static SmallVector<int64_t> getElementDims(int64_t rank, int64_t axis) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      dims.push_back(d);
  return dims;
}

/// What the kernels of the op compute.
static KernelSpec getKernelSpec(CrossEntropyOpInterface op) {
  CrossEntropyConfig config = op.getConfig();
  Type f32 = Float32Type::get(config.logitsType.getContext());
  KernelSpec spec;
  spec.config = config;
  spec.logitsType = config.logitsType.getElementType();
  spec.targetType = config.targetType.getElementType();
  if (op.getWeight())
    spec.weightType =
        cast<ShapedType>(op.getWeight().getType()).getElementType();
  if (op.getGradOutput())
    spec.gradOutputType =
        cast<ShapedType>(op.getGradOutput().getType()).getElementType();
  spec.withGrad = op.computesGradient();
  spec.contiguousRows =
      llvm::all_of(config.logitsType.getShape().drop_front(config.axis + 1),
                   [](int64_t d) { return d == 1; });
  // Reduced losses accumulate in f32; other types are converted afterwards.
  bool reduced = spec.reduced();
  if (op.getLoss())
    spec.lossType =
        reduced ? f32
                : cast<ShapedType>(op.getLoss().getType()).getElementType();
  if (op.getZLoss())
    spec.zLossType =
        reduced ? f32
                : cast<ShapedType>(op.getZLoss().getType()).getElementType();
  return spec;
}

namespace {

/// Emits the host side of one op at the rewriter's insertion point: the
/// buffers its kernels take, the launches of the prologue, the row kernel
/// and the conversions of reduced results, and the tensors that replace its
/// results.
class HostEmitter {
public:
  HostEmitter(RewriterBase &rewriter, Location loc, CrossEntropyOpInterface op,
              gpu::GPUModuleOp kernels, const ConvertXentToGPUOptions &options)
      : rewriter(rewriter), loc(loc), op(op), kernels(kernels),
        spec(getKernelSpec(op)),
        geometry(getLaunchGeometry(options, spec.logitsType)) {}

  /// Takes the op's operands as buffers and finds (or allocates) the buffers
  /// its results are written into.
  void emitBuffers();
  /// The kept weight / count on the device, the accumulators initialized.
  void launchPrologue();
  void launchRowKernel();
  /// Reduced results in another type than f32 from their accumulators; the
  /// scratch buffers released.
  void launchConversions();
  /// The tensors that replace the op's results, in the op's result order.
  SmallVector<Value> getResults();

private:
  /// `buffer` as a kernel takes it: dynamic sizes, any strides.
  Value kernelArg(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    auto argType = getBufferType(rewriter.getContext(), type.getRank(),
                                 type.getElementType());
    if (type == argType)
      return buffer;
    return memref::CastOp::create(rewriter, loc, argType, buffer);
  }
  Value allocateScalar(Type elementType) {
    return allocateDeviceBuffer(rewriter, loc, MemRefType::get({}, elementType),
                                Value(), {});
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
              Value sharedBytes = Value());
  /// Builds a kernel named `prefix`_N into the kernel module.
  template <typename BuildFn>
  gpu::GPUFuncOp buildKernel(StringRef prefix, BuildFn build) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(&kernels.getBodyRegion().front());
    return build(rewriter, getUniqueName(kernels, prefix));
  }

  RewriterBase &rewriter;
  Location loc;
  CrossEntropyOpInterface op;
  gpu::GPUModuleOp kernels;
  KernelSpec spec;
  LaunchGeometry geometry;

  // The op's buffers (emitBuffers).
  Value logitsBuffer;      // as taken, in the logits' type
  Value x, target, weight; // as the kernels take them
  Value numRows;
  std::optional<ResultBuffer> lossOut, zLossOut, dlogitsOut;
  /// f32 accumulators of reduced losses: the results' buffers when those are
  /// f32, else scratch that launchConversions converts.
  Value lossAcc, zLossAcc;
  /// The prologue's kept weight and count (KernelSpec::needsStats).
  Value stats;
};

} // namespace

void HostEmitter::launch(gpu::GPUFuncOp func, Value grid, ValueRange operands,
                         int64_t threads, Value cluster, Value sharedBytes) {
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

void HostEmitter::emitBuffers() {
  Type f32 = rewriter.getF32Type();
  bool reduced = spec.reduced();
  int64_t rank = spec.config.logitsType.getRank();
  SmallVector<int64_t> logitsDims =
      llvm::to_vector(llvm::seq<int64_t>(0, rank));
  SmallVector<int64_t> elementDims = getElementDims(rank, spec.config.axis);

  // A joint op on the resident path reads the target's logit for the loss
  // after other blocks of the cluster may have written their gradient.
  bool gradInPlace = canWriteGradientInPlace(
      op.getLogits(), op.getDlogits(),
      op.computesLoss() && hasResidentPath(spec, geometry));
  logitsBuffer =
      toBuffer(rewriter, loc, op.getLogits(), /*readOnly=*/!gradInPlace,
               /*identity=*/gradInPlace);
  x = kernelArg(logitsBuffer);
  target = kernelArg(toBuffer(rewriter, loc, op.getTarget()));
  if (op.getWeight())
    weight = kernelArg(toBuffer(rewriter, loc, op.getWeight()));
  // One block per row: the product of every dim but the class axis.
  numRows = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (int64_t d = 0; d < rank; ++d)
    if (d != spec.config.axis)
      numRows = arith::MulIOp::create(
          rewriter, loc, numRows,
          memref::DimOp::create(rewriter, loc, logitsBuffer, d));

  // A loss result's buffer, and the f32 accumulator the kernels add a
  // reduced loss into (the result's own buffer when it is f32).
  auto takeLossBuffer = [&](Value result, std::optional<ResultBuffer> &out,
                            Value &acc) {
    if (!result)
      return;
    out = getResultBuffer(rewriter, loc, result, logitsBuffer,
                          reduced ? ArrayRef<int64_t>() : elementDims);
    acc = out->buffer;
    if (reduced && !getElementTypeOrSelf(result.getType()).isF32())
      acc = allocateScalar(f32);
  };
  takeLossBuffer(op.getLoss(), lossOut, lossAcc);
  takeLossBuffer(op.getZLoss(), zLossOut, zLossAcc);
  if (op.getDlogits())
    dlogitsOut = gradInPlace ? ResultBuffer{logitsBuffer, nullptr}
                             : getResultBuffer(rewriter, loc, op.getDlogits(),
                                               logitsBuffer, logitsDims);
  if (spec.needsStats())
    stats = allocateDeviceBuffer(rewriter, loc, MemRefType::get({2}, f32),
                                 Value(), {});
}

void HostEmitter::launchPrologue() {
  if (!spec.needsStats() && !(op.computesLoss() && spec.reduced()))
    return;
  gpu::GPUFuncOp prologue =
      buildKernel("xent_prologue", [&](OpBuilder &b, StringRef name) {
        return buildPrologueKernel(b, loc, name, spec, geometry);
      });
  PrologueKernelArgs<Value> args;
  args.target = target;
  args.weight = weight;
  args.stats = stats;
  if (op.getLoss())
    args.loss = kernelArg(lossAcc);
  if (op.getZLoss())
    args.zLoss = kernelArg(zLossAcc);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  launch(prologue, one, args.list(), geometry.threads);
}

void HostEmitter::launchRowKernel() {
  gpu::GPUFuncOp rowKernel =
      buildKernel(op.computesGradient()
                      ? (op.computesLoss() ? "xent_loss_grad" : "xent_grad")
                      : "xent_loss",
                  [&](OpBuilder &b, StringRef name) {
                    return buildRowKernel(b, loc, name, spec, geometry);
                  });
  RowKernelArgs<Value> args;
  args.x = x;
  args.target = target;
  args.weight = weight;
  args.stats = stats;
  if (op.getGradOutput())
    args.gradOutput = kernelArg(toBuffer(rewriter, loc, op.getGradOutput()));
  if (op.getLoss())
    args.loss = kernelArg(lossAcc);
  if (op.getZLoss())
    args.zLoss = kernelArg(zLossAcc);
  if (op.getDlogits())
    args.dlogits = kernelArg(dlogitsOut->buffer);
  if (!hasResidentPath(spec, geometry)) {
    launch(rowKernel, numRows, args.list(), geometry.threads);
    return;
  }
  // Rows that take the resident path get a cluster of blocks each and the
  // staging memory; others one block without it (the kernel decides the
  // same way from C).
  Value numClasses =
      memref::DimOp::create(rewriter, loc, logitsBuffer, spec.config.axis);
  Value size =
      emitResidentClusterSize(rewriter, loc, numClasses, spec, geometry);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value fits = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                     size, zero);
  Value cluster =
      arith::SelectOp::create(rewriter, loc, fits, size,
                              arith::ConstantIndexOp::create(rewriter, loc, 1));
  Value sharedBytes = arith::SelectOp::create(
      rewriter, loc, fits,
      arith::ConstantOp::create(
          rewriter, loc,
          rewriter.getI32IntegerAttr(getResidentSharedMemoryBytes(geometry))),
      arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0)));
  launch(rowKernel, numRows, args.list(), geometry.threads, cluster,
         sharedBytes);
}

void HostEmitter::launchConversions() {
  auto convert = [&](Value acc, Value out) {
    if (acc == out)
      return;
    Type dstType = cast<MemRefType>(out.getType()).getElementType();
    gpu::GPUFuncOp kernel =
        buildKernel("xent_convert", [&](OpBuilder &b, StringRef name) {
          return buildConvertKernel(b, loc, name, dstType);
        });
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    launch(kernel, one, ValueRange{kernelArg(acc), kernelArg(out)}, kLanes);
    deallocate(acc);
  };
  if (op.getLoss())
    convert(lossAcc, lossOut->buffer);
  if (op.getZLoss())
    convert(zLossAcc, zLossOut->buffer);
  if (stats)
    deallocate(stats);
}

SmallVector<Value> HostEmitter::getResults() {
  IRMapping results;
  if (op.getLoss())
    results.map(op.getLoss(),
                getResultTensor(rewriter, loc, op.getLoss(), *lossOut));
  if (op.getZLoss())
    results.map(op.getZLoss(),
                getResultTensor(rewriter, loc, op.getZLoss(), *zLossOut));
  if (op.getDlogits())
    results.map(op.getDlogits(),
                getResultTensor(rewriter, loc, op.getDlogits(), *dlogitsOut));
  return llvm::map_to_vector(op->getResults(),
                             [&](Value r) { return results.lookup(r); });
}

/// Checks the options the patterns assume; diagnostics go to `module`.
static LogicalResult checkOptions(Operation *module,
                                  const ConvertXentToGPUOptions &options) {
  int64_t threads = options.threads;
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    return module->emitError(
               "threads must be a multiple of 32 in [32, 1024], got ")
           << threads;
  int64_t width = options.vectorWidth;
  if (width < 0 || width > 16 || (width != 0 && !llvm::isPowerOf2_64(width)))
    return module->emitError("vector-width must be 0 (16 bytes' worth) or a "
                            "power of two up to 16, got ")
           << width;
  if (!NVIDIAChip::parse(options.chip))
    return module->emitError(
               "chip must name an NVIDIA chip sm_80 or newer, such as "
               "'sm_90', got '")
           << options.chip << "'";
  return success();
}

namespace {

/// Replaces a cross-entropy op (any CrossEntropyOpInterface) by the launches
/// of its kernels. A rewrite pattern rather than a conversion pattern: no
/// type changes, and the buffer decisions (HostBuffers) look at the uses of
/// the op's own operands. Until the conversion commits, an operand that an
/// earlier op produced keeps the uses its replacement will have (the
/// replacement has none yet).
struct CrossEntropyLowering
    : public OpInterfaceRewritePattern<CrossEntropyOpInterface> {
  CrossEntropyLowering(MLIRContext *ctx, const ConvertXentToGPUOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(CrossEntropyOpInterface op,
                                PatternRewriter &rewriter) const override {
    auto module = op->getParentOfType<ModuleOp>();
    if (!module)
      return rewriter.notifyMatchFailure(op, "not inside a module");
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(rewriter, module);
    rewriter.setInsertionPoint(op);
    HostEmitter host(rewriter, op.getLoc(), op, kernels, options);
    host.emitBuffers();
    host.launchPrologue();
    host.launchRowKernel();
    host.launchConversions();
    rewriter.replaceOp(op, host.getResults());
    return success();
  }

  ConvertXentToGPUOptions options;
};

struct ConvertXentToGPUPass
    : public xent::impl::ConvertXentToGPUBase<ConvertXentToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ConvertXentToGPUOptions options;
    options.chip = chip;
    options.threads = threads;
    options.vectorWidth = vectorWidth;
    options.residentRows = residentRows;
    if (failed(convertXentToGPU(getOperation(), options)))
      signalPassFailure();
  }
};

} // namespace

void mlir::xent::populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options) {
  patterns.add<CrossEntropyLowering>(patterns.getContext(), options);
}

LogicalResult
mlir::xent::convertXentToGPU(Operation *root,
                             const ConvertXentToGPUOptions &options) {
  if (failed(checkOptions(root, options)))
    return failure();
  // The linear family's GEMMs have no device lowering here.
  WalkResult linear = root->walk([](LinearCrossEntropyOpInterface op) {
    op.emitOpError("has no GPU lowering: its projection needs a device GEMM");
    return WalkResult::interrupt();
  });
  if (linear.wasInterrupted())
    return failure();
  // Every xent op is lowered; what the patterns build (host code, the kernel
  // module and the kernels' bodies) is legal. The conversion visits the ops
  // in program order, so kernels are named and placed in the order of their
  // ops.
  MLIRContext *ctx = root->getContext();
  ConversionTarget target(*ctx);
  target.addIllegalDialect<XentDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  RewritePatternSet patterns(ctx);
  populateXentToGPUConversionPatterns(patterns, options);
  return applyPartialConversion(root, target, std::move(patterns));
}
