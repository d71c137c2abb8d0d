//===- HostLowering.cpp - The host code of a cross-entropy op -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The host side of a cross-entropy op: an `xent.launch` whose body is the
// `gpu.launch_func` of the kernels that KernelBuilder generates, on the
// buffers of the op's tensors (HostEmitter, emitCrossEntropyLaunch). One-shot
// bufferization decides where those buffers come from
// (BufferizableOpInterfaceImpl.cpp). The body takes every buffer with a fully
// dynamic strided layout, so that a view (a slice of a padded vocabulary,
// shifted labels) is handed over as it is instead of copied on the host; the
// kernels read every buffer through its strides, in its own rank. The loss's
// scalars reach the kernels as arguments: the op's run-time operands (scalar
// inputs of the launch) or constants of its attributes. Also what both
// families' patterns share: the kernel module, kernel names and reuse,
// destinations.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "KernelBuilder.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::xent;


gpu::GPUModuleOp mlir::xent::getOrCreateKernelModule(RewriterBase &rewriter,
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

std::string mlir::xent::getUniqueName(gpu::GPUModuleOp kernels,
                                      StringRef prefix) {
  for (unsigned n = 0;; ++n) {
    std::string name = (prefix + "_" + Twine(n)).str();
    if (!kernels.lookupSymbol(name))
      return name;
  }
}

/// The discardable attribute holding a kernel's fingerprint.
static constexpr llvm::StringLiteral kKernelFingerprintAttrName =
    "xent.kernel_fingerprint";

/// `kernel` printed as if it were named `kernel`, without its fingerprint
/// and locations: equal for kernels that compute the same.
static std::string printAnonymous(gpu::GPUFuncOp kernel) {
  StringAttr name = kernel.getNameAttr();
  Attribute fingerprint = kernel->removeAttr(kKernelFingerprintAttrName);
  kernel.setName("kernel");
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  kernel.setName(name);
  if (fingerprint)
    kernel->setAttr(kKernelFingerprintAttrName, fingerprint);
  return text;
}

gpu::GPUFuncOp mlir::xent::buildOrReuseKernel(
    RewriterBase &rewriter, gpu::GPUModuleOp kernels, StringRef prefix,
    function_ref<gpu::GPUFuncOp(OpBuilder &, StringRef)> build,
    SmallVectorImpl<std::string> &kernelNames) {
  auto named = [&](gpu::GPUFuncOp kernel) {
    if (!llvm::is_contained(kernelNames, kernel.getName()))
      kernelNames.push_back(kernel.getName().str());
    return kernel;
  };
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(&kernels.getBodyRegion().front());
  // Named once it is kept (an erased op may stay in the module until a
  // conversion ends, holding its name).
  gpu::GPUFuncOp kernel = build(rewriter, (prefix + "_candidate").str());
  std::string text = printAnonymous(kernel);
  auto fingerprint = rewriter.getI64IntegerAttr(
      static_cast<int64_t>(llvm::xxh3_64bits(text)));
  for (auto existing : kernels.getOps<gpu::GPUFuncOp>()) {
    if (existing == kernel ||
        existing->getAttr(kKernelFingerprintAttrName) != fingerprint ||
        printAnonymous(existing) != text)
      continue;
    rewriter.eraseOp(kernel);
    return named(existing);
  }
  std::string name = getUniqueName(kernels, prefix);
  rewriter.modifyOpInPlace(kernel, [&] {
    kernel.setName(name);
    kernel->setAttr(kKernelFingerprintAttrName, fingerprint);
  });
  return named(kernel);
}

void mlir::xent::stripKernelFingerprints(Operation *root) {
  root->walk([](gpu::GPUFuncOp kernel) {
    kernel->removeAttr(kKernelFingerprintAttrName);
  });
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
  // Reduced results accumulate in the f64 scratch; the row that finishes
  // last writes them in their own types.
  if (op.getLoss())
    spec.lossType = getElementTypeOrSelf(op.getLoss().getType());
  if (op.getZLoss())
    spec.zLossType = getElementTypeOrSelf(op.getZLoss().getType());
  if (op.getLse())
    spec.lseType = getElementTypeOrSelf(op.getLse().getType());
  if (op.getArgmax())
    spec.argmaxType = getElementTypeOrSelf(op.getArgmax().getType());
  if (op.getAccuracy())
    spec.accuracyType = getElementTypeOrSelf(op.getAccuracy().getType());
  if (config.rowStats)
    spec.rowStatsWidth = config.getRowStatsWidth();
  return spec;
}

LossScalars mlir::xent::getKernelScalars(OpBuilder &b, Location loc,
                                         const CrossEntropyConfig &config,
                                         const LossScalars &runtime) {
  auto scalar = [&](Value runtime, bool present, TypedAttr attr) -> Value {
    if (!present)
      return Value();
    if (runtime)
      return runtime;
    return arith::ConstantOp::create(b, loc, attr);
  };
  LossScalars kernel;
  kernel.ignoreIndex =
      scalar(runtime.ignoreIndex, !config.probabilityTargets,
             b.getI64IntegerAttr(config.ignoreIndex));
  kernel.labelSmoothing =
      scalar(runtime.labelSmoothing, config.hasLabelSmoothing(),
             b.getF32FloatAttr(config.labelSmoothing));
  kernel.zLossScale = scalar(runtime.zLossScale, config.hasZLoss(),
                             b.getF32FloatAttr(config.zLossScale));
  kernel.softcap = scalar(runtime.softcap, config.hasSoftcap(),
                          b.getF32FloatAttr(config.softcap.value_or(0.0f)));
  return kernel;
}

bufferization::MaterializeInDestinationOp
mlir::xent::getDestination(Value result) {
  if (!result.hasOneUse())
    return nullptr;
  auto sink = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!sink || !sink.getWritable() || !sink.getRestrict())
    return nullptr;
  auto destType = dyn_cast<MemRefType>(sink.getDest().getType());
  if (!destType ||
      destType.getElementType() !=
          cast<RankedTensorType>(result.getType()).getElementType())
    return nullptr;
  return sink;
}

Value mlir::xent::getDestinationTensor(
    OpBuilder &b, Location loc, bufferization::MaterializeInDestinationOp sink,
    RankedTensorType type) {
  auto destType = cast<MemRefType>(sink.getDest().getType());
  Value dest = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(destType.getShape(), type.getElementType()),
      sink.getDest(), /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
  if (dest.getType() != type)
    dest = tensor::CastOp::create(b, loc, type, dest);
  return dest;
}

namespace {

/// Emits the host side of one op at the rewriter's insertion point: an
/// `xent.launch` whose body launches the prologue and the row kernel on the
/// buffers of the op's tensors and one scratch buffer. Where
/// those buffers come from is left to one-shot bufferization (the op's
/// BufferizableOpInterface); this only says which results may share a
/// buffer with an operand.
class HostEmitter {
public:
  HostEmitter(RewriterBase &rewriter, Location loc, CrossEntropyOpInterface op,
              gpu::GPUModuleOp kernels, const ConvertXentToGPUOptions &options)
      : rewriter(rewriter), loc(loc), op(op), kernels(kernels),
        spec(getKernelSpec(op)),
        geometry(getLaunchGeometry(options, spec.logitsType)),
        runtimeDispatch(options.runtimeDispatch) {
    spec.softcapMayBeOff =
        spec.config.scalars.softcap && !options.runtimeDispatch;
  }

  /// Creates the launch with its operands and an empty body, and sets the
  /// insertion point into the body.
  LaunchOp createLaunch();
  /// The kept weight / count on the device, the accumulators initialized.
  void launchPrologue();
  /// The row kernel, or with runtime-dispatch the variant each call needs
  /// (dispatchFeatures, dispatchGeometry).
  void launchRowKernel();
  /// The scratch released (stream-ordered after the kernels).
  void releaseScratch();

  /// The kernels built so far, in launch order.
  ArrayRef<std::string> getKernelNames() const { return kernelNames; }

private:
  /// The arguments the prologue and the row kernel share: target, weight,
  /// the scratch and the results (where `types`, the kernel's signature,
  /// takes them).
  template <template <typename> class Args>
  Args<Value> getSharedArgs(const Args<Type> &types) {
    Args<Value> args;
    args.target = target;
    args.weight = weight;
    args.scratch = scratch;
    if (types.loss)
      args.loss = kernelArg(loss);
    if (types.zLoss)
      args.zLoss = kernelArg(zLoss);
    if (types.accuracy)
      args.accuracy = kernelArg(accuracy);
    return args;
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
  /// Device memory of a static `type` (the op's scratch).
  Value allocate(MemRefType type) {
    return gpu::AllocOp::create(rewriter, loc, type, /*asyncToken=*/Type(),
                                ValueRange{}, ValueRange{}, ValueRange{})
        .getMemref();
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
  /// Launches the row kernel of `variant` (one of the op's spec's) built
  /// for `variantGeometry`.
  void launchRowVariant(const KernelSpec &variant,
                        const LaunchGeometry &variantGeometry);
  /// runtime-dispatch: a gradient kernel on the resident path runs with
  /// 256 threads where two blocks of 256 hold the row, else with `geometry`
  /// (each takes its two-pass walk where dlogits is the logits' memory).
  void dispatchGeometry(const KernelSpec &variant);
  /// The variants dispatchRuntimeFeatures may launch (for the buffer
  /// decisions).
  SmallVector<KernelSpec> getFeatureVariants() const;
  /// A buffer of `type` that a kernel takes but does not touch: a private
  /// constant global of one element (host memory), cast to `type`.
  Value getUnusedBuffer(MemRefType type);
  /// Emits `scf.if cond {then} else {otherwise}` at the insertion point.
  void emitIfElse(Value cond, function_ref<void()> then,
                  function_ref<void()> otherwise);
  /// Builds a kernel named `prefix`_N into the kernel module.
  /// (or reuses an identical one, buildOrReuseKernel).
  gpu::GPUFuncOp
  buildKernel(StringRef prefix,
              function_ref<gpu::GPUFuncOp(OpBuilder &, StringRef)> build) {
    return buildOrReuseKernel(rewriter, kernels, prefix, build, kernelNames);
  }

  RewriterBase &rewriter;
  Location loc;
  CrossEntropyOpInterface op;
  gpu::GPUModuleOp kernels;
  KernelSpec spec;
  LaunchGeometry geometry;
  bool runtimeDispatch;

  // The body's buffers (createLaunch), as the kernels take them.
  Value x, target, weight, gradOutput;
  /// The loss's scalars as the kernels take them (createLaunch): the body's
  /// scalar argument for a run-time value, an arith.constant of the
  /// attribute otherwise; null for a feature the kernels do not compute.
  Value ignoreIndex, labelSmoothing, zLossScale, softcap;
  Value loss, zLoss, lse, argmax, accuracy, dlogits;
  /// The statistics (the forward's result or the gradient's operand); a
  /// class slice's offset and C (i64: the body's scalar arguments, or a
  /// constant of the num_classes attribute).
  Value rowStats, classOffset, numClasses;
  Value numRows;
  /// The kernels' scratch (ScratchSlot; KernelSpec::needsScratch).
  Value scratch;
  SmallVector<std::string> kernelNames;
};

} // namespace

void mlir::xent::emitKernelLaunch(OpBuilder &b, Location loc,
                                  gpu::GPUFuncOp func, Value grid,
                                  ValueRange operands, int64_t threads,
                                  Value cluster, Value sharedBytes) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, threads);
  grid = arith::MaxUIOp::create(b, loc, grid, one);
  std::optional<gpu::KernelDim3> clusterSize;
  if (cluster) {
    grid = arith::MulIOp::create(b, loc, grid, cluster);
    clusterSize = gpu::KernelDim3{cluster, one, one};
  }
  gpu::LaunchFuncOp::create(b, loc, func, gpu::KernelDim3{grid, one, one},
                            gpu::KernelDim3{block, one, one}, sharedBytes,
                            operands, /*asyncTokenType=*/nullptr,
                            /*asyncDependencies=*/{}, clusterSize);
}

void HostEmitter::launch(gpu::GPUFuncOp func, Value grid, ValueRange operands,
                         int64_t threads, Value cluster, Value sharedBytes) {
  emitKernelLaunch(rewriter, loc, func, grid, operands, threads, cluster,
                   sharedBytes);
}

LaunchOp HostEmitter::createLaunch() {
  MLIRContext *ctx = rewriter.getContext();
  Value logits = op.getLogits();
  SmallVector<Value> inputs = {logits, op.getTarget()};
  if (op.getWeight())
    inputs.push_back(op.getWeight());
  if (op.getGradOutput())
    inputs.push_back(op.getGradOutput());
  if (op.takesRowStats())
    inputs.push_back(op.getRowStats());
  // Run-time scalars after the tensors, passed to the body as they are,
  // then a class slice's offset and run-time C.
  const CrossEntropyConfig &config = spec.config;
  llvm::append_range(inputs, config.scalars.getValues());
  if (config.classOffset)
    inputs.push_back(config.classOffset);
  if (config.dynamicNumClasses)
    inputs.push_back(config.dynamicNumClasses);

  // Results materialized into a caller's buffer are written there; the
  // gradient may take the logits' buffer, which bufferization grants when
  // nothing reads the logits afterwards. The kernels read a class's logit
  // before they write its gradient, and a row's statistics are complete
  // before any of it is written; but a joint op on the resident path reads
  // the target's logit for the loss after other blocks of the cluster may
  // have written their gradient, so its gradient never shares the buffer.
  SmallVector<Value> inits;
  SmallVector<int64_t> tied;
  SmallVector<bufferization::MaterializeInDestinationOp> sinks;
  SmallVector<Value> dims;
  SmallVector<int64_t> elementDims =
      getElementDims(spec.config.logitsType.getRank(), spec.config.axis);
  bool rereadsLogits =
      op.computesLoss() &&
      llvm::any_of(getFeatureVariants(), [&](const KernelSpec &variant) {
        return hasResidentPath(variant, geometry);
      });
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    // The result's sizes are the logits' (dlogits) or those of every dim but
    // the class axis (per-element losses).
    // The statistics' last dim holds their K values per row.
    for (int64_t k = 0; k < type.getRank(); ++k) {
      if (!type.isDynamicDim(k))
        continue;
      if (result != op.getDlogits() &&
          k == static_cast<int64_t>(elementDims.size()))
        dims.push_back(arith::ConstantIndexOp::create(rewriter, loc,
                                                      spec.rowStatsWidth));
      else
        dims.push_back(tensor::DimOp::create(
            rewriter, loc, logits,
            result == op.getDlogits() ? k : elementDims[k]));
    }
    if (auto sink = getDestination(result)) {
      tied.push_back(inputs.size() + inits.size());
      inits.push_back(getDestinationTensor(rewriter, loc, sink, type));
      sinks.push_back(sink);
    } else if (result == op.getDlogits() && type == logits.getType() &&
               !rereadsLogits) {
      tied.push_back(0);
    } else {
      tied.push_back(-1);
    }
  }
  for (auto sink : sinks)
    rewriter.eraseOp(sink);

  auto launch = LaunchOp::create(rewriter, loc, op->getResultTypes(), inputs,
                                 inits, dims, tied);
  SmallVector<Type> argTypes;
  for (Value value : llvm::concat<Value>(inputs, op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    argTypes.push_back(type ? getBufferType(ctx, type.getRank(),
                                            type.getElementType())
                            : value.getType());
  }
  Block *body = rewriter.createBlock(
      &launch.getBody(), {}, argTypes,
      SmallVector<Location>(argTypes.size(), loc));

  auto args = body->getArguments();
  unsigned next = 0;
  x = args[next++];
  target = args[next++];
  if (op.getWeight())
    weight = args[next++];
  if (op.getGradOutput())
    gradOutput = args[next++];
  if (op.takesRowStats())
    rowStats = args[next++];
  LossScalars scalars = config.scalars.remap(
      args.slice(next, config.scalars.getValues().size()));
  next += config.scalars.getValues().size();
  if (config.classOffset)
    classOffset = args[next++];
  if (config.dynamicNumClasses)
    numClasses = args[next++];
  for (Value result : op->getResults()) {
    Value arg = args[next++];
    if (op.returnsRowStats() && result == op.getRowStats())
      rowStats = arg;
    else if (result == op.getLoss())
      loss = arg;
    else if (result == op.getZLoss())
      zLoss = arg;
    else if (result == op.getLse())
      lse = arg;
    else if (result == op.getArgmax())
      argmax = arg;
    else if (result == op.getAccuracy())
      accuracy = arg;
    else
      dlogits = arg;
  }

  // One block per row: the product of every dim but the class axis.
  rewriter.setInsertionPointToStart(body);
  LossScalars kernelScalars = getKernelScalars(rewriter, loc, config, scalars);
  ignoreIndex = kernelScalars.ignoreIndex;
  labelSmoothing = kernelScalars.labelSmoothing;
  zLossScale = kernelScalars.zLossScale;
  softcap = kernelScalars.softcap;
  if (config.classOffset && !numClasses)
    numClasses = arith::ConstantOp::create(
        rewriter, loc, rewriter.getI64IntegerAttr(*config.globalNumClasses));
  numRows = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (int64_t d : elementDims)
    numRows = arith::MulIOp::create(rewriter, loc, numRows,
                                    memref::DimOp::create(rewriter, loc, x, d));
  if (spec.needsScratch())
    scratch = allocate(getScratchType(ctx));
  return launch;
}

void HostEmitter::launchPrologue() {
  if (!spec.needsScratch())
    return;
  gpu::GPUFuncOp prologue =
      buildKernel("xent_prologue", [&](OpBuilder &b, StringRef name) {
        return buildPrologueKernel(b, loc, name, spec, geometry);
      });
  PrologueKernelArgs<Type> types =
      getPrologueKernelArgTypes(rewriter.getContext(), spec);
  auto args = getSharedArgs(types);
  if (spec.needsStats())
    args.ignoreIndex = ignoreIndex;
  if (types.x) {
    args.x = x;
    args.classOffset = classOffset;
    args.numClasses = numClasses;
  }
  if (types.rowStats)
    args.rowStats = rowStats;
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  launch(prologue, one, args.list(), geometry.threads);
}

void HostEmitter::launchRowKernel() {
  if (runtimeDispatch)
    dispatchRuntimeFeatures(
        rewriter, loc, spec, labelSmoothing, softcap,
        [&](const KernelSpec &variant) { dispatchGeometry(variant); });
  else
    launchRowVariant(spec, geometry);
}

KernelSpec mlir::xent::withoutFeature(KernelSpec spec, unsigned feature) {
  CrossEntropyConfig &config = spec.config;
  if (feature == 0) {
    config.scalars.labelSmoothing = Value();
    config.labelSmoothing = 0.0f;
  } else {
    config.scalars.softcap = Value();
    config.softcap = std::nullopt;
  }
  return spec;
}

Value mlir::xent::getRuntimeFeature(const CrossEntropyConfig &config,
                                   unsigned feature) {
  return feature == 0 ? config.scalars.labelSmoothing : config.scalars.softcap;
}

/// Whether runtime-dispatch picks a kernel without `feature` for a run-time
/// value of 0. Not label smoothing where the kernel writes the row's
/// statistics: their layout has the smoothing sums whatever ε is.
static bool isDispatched(const KernelSpec &spec, unsigned feature) {
  return getRuntimeFeature(spec.config, feature) &&
         !(feature == 0 && spec.writesRowStats());
}

SmallVector<KernelSpec> HostEmitter::getFeatureVariants() const {
  SmallVector<KernelSpec> variants = {spec};
  if (!runtimeDispatch)
    return variants;
  for (unsigned feature = 0; feature < kDispatchedFeatures; ++feature) {
    if (!isDispatched(spec, feature))
      continue;
    for (unsigned i = 0, e = variants.size(); i < e; ++i)
      variants.push_back(withoutFeature(variants[i], feature));
  }
  return variants;
}

void HostEmitter::emitIfElse(Value cond, function_ref<void()> then,
                             function_ref<void()> otherwise) {
  auto ifOp = scf::IfOp::create(rewriter, loc, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  then();
  rewriter.setInsertionPointToStart(ifOp.elseBlock());
  otherwise();
}

void mlir::xent::dispatchRuntimeFeatures(
    OpBuilder &b, Location loc, const KernelSpec &variant, Value labelSmoothing,
    Value softcap, function_ref<void(const KernelSpec &)> launch,
    unsigned first) {
  for (unsigned feature = first; feature < kDispatchedFeatures; ++feature) {
    if (!isDispatched(variant, feature))
      continue;
    Value value = feature == 0 ? labelSmoothing : softcap;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value on =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value, zero);
    auto ifOp = scf::IfOp::create(b, loc, on, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    dispatchRuntimeFeatures(b, loc, variant, labelSmoothing, softcap, launch,
                            feature + 1);
    b.setInsertionPointToStart(ifOp.elseBlock());
    dispatchRuntimeFeatures(b, loc, withoutFeature(variant, feature),
                            labelSmoothing, softcap, launch, feature + 1);
    return;
  }
  launch(variant);
}

/// Threads per block of the resident kernel for rows that two of its blocks
/// hold (runtime-dispatch).
static constexpr int64_t kShortRowThreads = 256;

void HostEmitter::dispatchGeometry(const KernelSpec &variant) {
  // The gradient over the logits' own memory takes the kernel's two-pass
  // walk (emitResidentClusterSize: no cluster, no staging memory).
  if (!variant.withGrad || !hasResidentPath(variant, geometry) ||
      geometry.threads == kShortRowThreads) {
    launchRowVariant(variant, geometry);
    return;
  }
  LaunchGeometry shortRows = geometry;
  shortRows.threads = kShortRowThreads;
  Value numClasses = memref::DimOp::create(rewriter, loc, x, spec.config.axis);
  Value vectors = arith::CeilDivUIOp::create(
      rewriter, loc, numClasses,
      arith::ConstantIndexOp::create(rewriter, loc,
                                     geometry.vectorWidth(spec.logitsType)));
  Value fitsTwo = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ule, vectors,
      arith::ConstantIndexOp::create(rewriter, loc,
                                     2 * kResidentVectors * kShortRowThreads));
  emitIfElse(
      fitsTwo, [&] { launchRowVariant(variant, shortRows); },
      [&] { launchRowVariant(variant, geometry); });
}

/// `spec` with the loss's type chosen at run time (KernelSpec::
/// narrowLossType), where the loss is written in f32 or the logits' bf16 /
/// f16 and the kernel has no class sums: with them (label smoothing, or
/// probability targets) the second loss buffer and its flag push the
/// resident kernels past their 64 registers (ptxas spills 28-32 bytes where
/// they spilled 12-16, 2.4 % slower on the H100), so those keep a kernel per
/// loss type.
static KernelSpec withRuntimeLossType(KernelSpec spec) {
  bool narrowLogits = spec.logitsType.isF16() || spec.logitsType.isBF16();
  if (!spec.lossType || !narrowLogits || spec.needsClassSums() ||
      (!spec.lossType.isF32() && spec.lossType != spec.logitsType) ||
      (spec.reduced() && !spec.finalizes))
    return spec;
  spec.narrowLossType = spec.logitsType;
  spec.lossType = Float32Type::get(spec.logitsType.getContext());
  return spec;
}

Value HostEmitter::getUnusedBuffer(MemRefType type) {
  // A constant global of one element: getting it has no side effect, so
  // gpu-async-region adds no host wait before it (an alloca would).
  auto one = MemRefType::get(SmallVector<int64_t>(type.getRank(), 1),
                             type.getElementType());
  auto module = kernels->getParentOfType<ModuleOp>();
  std::string base;
  llvm::raw_string_ostream os(base);
  os << "xent_unused_" << type.getElementType() << "_" << type.getRank();
  std::string name = base;
  for (unsigned n = 0;; name = base + "_" + std::to_string(++n)) {
    auto existing = module.lookupSymbol<memref::GlobalOp>(name);
    if (existing && existing.getType() == one && existing.getConstant())
      break;
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto tensorType = RankedTensorType::get(one.getShape(),
                                              one.getElementType());
      memref::GlobalOp::create(
          rewriter, loc, name, rewriter.getStringAttr("private"), one,
          rewriter.getZeroAttr(tensorType), /*constant=*/true,
          /*alignment=*/IntegerAttr());
      break;
    }
  }
  Value buffer = memref::GetGlobalOp::create(rewriter, loc, one, name);
  return memref::CastOp::create(rewriter, loc, type, buffer);
}

void HostEmitter::launchRowVariant(const KernelSpec &opVariant,
                                   const LaunchGeometry &variantGeometry) {
  // Under runtime-dispatch the loss's type is a run-time choice of the
  // kernel, so that the entries of a library share it.
  KernelSpec variant =
      runtimeDispatch ? withRuntimeLossType(opVariant) : opVariant;
  gpu::GPUFuncOp rowKernel =
      buildKernel(op.computesGradient()
                      ? (op.computesLoss() ? "xent_loss_grad" : "xent_grad")
                      : "xent_loss",
                  [&](OpBuilder &b, StringRef name) {
                    return buildRowKernel(b, loc, name, variant,
                                          variantGeometry);
                  });
  RowKernelArgs<Type> types =
      getRowKernelArgTypes(rewriter.getContext(), variant);
  auto args = getSharedArgs(types);
  if (types.narrowLoss) {
    // The op's buffer as the one of its type, an empty one as the other.
    bool narrow = opVariant.lossType == variant.narrowLossType;
    args.loss = narrow ? getUnusedBuffer(cast<MemRefType>(types.loss))
                       : kernelArg(loss);
    args.narrowLoss = narrow
                          ? kernelArg(loss)
                          : getUnusedBuffer(cast<MemRefType>(types.narrowLoss));
    args.lossIsNarrow = arith::ConstantOp::create(
        rewriter, loc, rewriter.getBoolAttr(narrow));
  }
  args.x = x;
  args.gradOutput = gradOutput;
  args.lse = lse;
  args.argmax = argmax;
  args.dlogits = dlogits;
  args.rowStats = rowStats;
  args.classOffset = classOffset;
  args.numClasses = numClasses;
  args.ignoreIndex = ignoreIndex;
  // The scalars of the features this variant computes.
  args.labelSmoothing = types.labelSmoothing ? labelSmoothing : Value();
  args.zLossScale = types.zLossScale ? zLossScale : Value();
  args.softcap = types.softcap ? softcap : Value();
  if (!hasResidentPath(variant, variantGeometry)) {
    launch(rowKernel, numRows, args.list(), variantGeometry.threads);
    return;
  }
  // Rows that take the resident path get a cluster of blocks each and the
  // staging memory; others one block without it (the kernel decides the
  // same way from C).
  Value numClasses = memref::DimOp::create(rewriter, loc, x, spec.config.axis);
  Value size = emitResidentClusterSize(rewriter, loc, numClasses, variant,
                                       variantGeometry, x, dlogits);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value fits = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                     size, zero);
  Value cluster =
      arith::SelectOp::create(rewriter, loc, fits, size,
                              arith::ConstantIndexOp::create(rewriter, loc, 1));
  Value sharedBytes = arith::SelectOp::create(
      rewriter, loc, fits,
      arith::ConstantOp::create(rewriter, loc,
                                rewriter.getI32IntegerAttr(
                                    getResidentSharedMemoryBytes(
                                        variantGeometry))),
      arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0)));
  launch(rowKernel, numRows, args.list(), variantGeometry.threads, cluster,
         sharedBytes);
}

void HostEmitter::releaseScratch() {
  if (scratch)
    deallocate(scratch);
}

LaunchOp mlir::xent::emitCrossEntropyLaunch(
    RewriterBase &rewriter, CrossEntropyOpInterface op,
    gpu::GPUModuleOp kernels, const ConvertXentToGPUOptions &options,
    SmallVectorImpl<std::string> &kernelNames) {
  HostEmitter host(rewriter, op.getLoc(), op, kernels, options);
  LaunchOp launch = host.createLaunch();
  host.launchPrologue();
  host.launchRowKernel();
  host.releaseScratch();
  llvm::append_range(kernelNames, host.getKernelNames());
  return launch;
}
