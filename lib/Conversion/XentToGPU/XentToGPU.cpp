//===- XentToGPU.cpp - Lowering of xent ops to fused GPU kernels ----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// convert-xent-to-gpu: the options it checks, the choice between the
// kernels and the decomposition (the mode, the unsupported reasons, the
// remark), the patterns (a cross-entropy op becomes the `xent.launch` of
// HostLowering.cpp, a linear op that of LinearLowering.cpp, anything else
// its decomposition) and the pass.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/XentToGPU/XentToGPU.h"

#include "HostLowering.h"
#include "KernelBuilder.h"

#include "xent/Conversion/XentToGPU/NVIDIAChip.h"
#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/Transforms/BufferizableOpInterfaceImpl.h"

// The dialects the pass depends on (its generated base registers them).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Remarks.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_CONVERTXENTTOGPU
#include "xent/Conversion/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

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
  int64_t split = options.splitExponentials;
  if (split != 0 && split != 2 && split != 4 && split != 8)
    return module->emitError("split-exponentials must be 0, 2, 4 or 8, got ")
           << split;
  if (!NVIDIAChip::parse(options.chip))
    return module->emitError(
               "chip must name an NVIDIA chip sm_80 or newer, such as "
               "'sm_90', got '")
           << options.chip << "'";
  return checkLinearOptions(module, options);
}

//===----------------------------------------------------------------------===//
// Kernel or decomposition
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kAutoMode = "auto";
static constexpr llvm::StringLiteral kKernelMode = "kernel";
static constexpr llvm::StringLiteral kInlineMode = "inline";

llvm::cl::ValuesClass mlir::xent::getLoweringModeValues() {
  return llvm::cl::values(
      clEnumValN(LoweringMode::Auto, kAutoMode,
                 "the kernel where it can take the op, the decomposition "
                 "elsewhere"),
      clEnumValN(LoweringMode::Kernel, kKernelMode,
                 "the kernel for every op (an error where it cannot take one)"),
      clEnumValN(LoweringMode::Inline, kInlineMode,
                 "the decomposition for every op"));
}

std::optional<LoweringMode> mlir::xent::parseLoweringMode(StringRef spelling) {
  return llvm::StringSwitch<std::optional<LoweringMode>>(spelling)
      .Case(kAutoMode, LoweringMode::Auto)
      .Case(kKernelMode, LoweringMode::Kernel)
      .Case(kInlineMode, LoweringMode::Inline)
      .Default(std::nullopt);
}

/// The ops the conversion lowers: xent ops with a decomposition.
static bool isLowered(Operation *op) {
  // An unregistered op has no dialect.
  return isa_and_present<XentDialect>(op->getDialect()) &&
         isa<linalg::AggregatedOpInterface>(op);
}

/// The innermost op around `op` whose body is device code, or null.
static Operation *getDeviceCodeParent(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (isa<gpu::GPUModuleOp, gpu::GPUFuncOp, gpu::LaunchOp>(parent))
      return parent;
  return nullptr;
}

std::optional<std::string> mlir::xent::getKernelUnsupportedReason(
    Operation *op, const ConvertXentToGPUOptions & /*options*/) {
  auto family = dyn_cast<CrossEntropyOpInterface>(op);
  auto linear = dyn_cast<LinearCrossEntropyOpInterface>(op);
  if (!family && !linear)
    return ("there is no kernel for '" + op->getName().getStringRef() + "'")
        .str();
  if (Operation *device = getDeviceCodeParent(op))
    return ("it is in device code (inside '" +
            device->getName().getStringRef() +
            "'), which cannot launch the kernels")
        .str();
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return std::string("it is not inside a builtin.module, which the kernels "
                       "are generated into");
  Operation *kernels = module.lookupSymbol(kKernelModuleName);
  if (kernels && !isa<gpu::GPUModuleOp>(kernels))
    return ("the module's symbol @" + kKernelModuleName +
            ", which the kernels go into, is not a gpu.module")
        .str();
  if (linear)
    return getLinearUnsupportedReason(linear, module);
  return std::nullopt;
}

LoweringChoice
mlir::xent::chooseLowering(Operation *op,
                           const ConvertXentToGPUOptions &options) {
  if (options.mode == LoweringMode::Inline)
    return {/*kernel=*/false, /*ruledOut=*/false, "mode=inline"};
  std::optional<std::string> unsupported =
      getKernelUnsupportedReason(op, options);
  if (options.mode == LoweringMode::Kernel) {
    if (unsupported)
      return {/*kernel=*/false, /*ruledOut=*/true, *unsupported};
    return {/*kernel=*/true, /*ruledOut=*/false, "mode=kernel"};
  }
  if (unsupported)
    return {/*kernel=*/false, /*ruledOut=*/false,
            "mode=auto, and " + *unsupported};
  return {/*kernel=*/true, /*ruledOut=*/false,
          "mode=auto, and the kernels take this op"};
}

/// `op` would take the decomposition, which `allow-decomposition=false`
/// rules out.
static bool isRuledOutDecomposition(const ConvertXentToGPUOptions &options,
                                    const LoweringChoice &choice) {
  return !choice.kernel && !choice.ruledOut && !options.allowDecomposition;
}

/// Diagnoses the ops that the options rule out, before anything is
/// rewritten: mode=kernel where the kernels cannot take an op, and a
/// decomposition without allow-decomposition.
static LogicalResult checkLowerings(Operation *root,
                                    const ConvertXentToGPUOptions &options) {
  bool valid = true;
  root->walk([&](Operation *op) {
    if (!isLowered(op))
      return;
    LoweringChoice choice = chooseLowering(op, options);
    if (choice.ruledOut) {
      op->emitOpError("cannot take the kernel (mode=kernel): ")
          << choice.reason
          << "; use mode=auto or mode=inline to take its decomposition";
      valid = false;
      return;
    }
    if (!isRuledOutDecomposition(options, choice))
      return;
    valid = false;
    InFlightDiagnostic diag =
        op->emitOpError("would take the decomposition (")
        << choice.reason
        << "), but allow-decomposition=false (as in xent-gpu-pipeline, "
           "which lowers only the kernels to the device): ";
    if (getDeviceCodeParent(op)) {
      diag << "lower it with convert-xent-to-gpu in a compiler that lowers "
              "linalg in device code";
      return;
    }
    diag << "its decomposition computes on host tensors; ";
    if (options.mode == LoweringMode::Inline)
      diag << "use mode=auto or mode=kernel, or ";
    diag << "lower it with convert-xent-to-gpu{mode=inline} in a compiler "
            "that lowers linalg to the device, or with xent-cpu-pipeline";
  });
  return success(valid);
}

static constexpr llvm::StringLiteral kRemarkCategory = "convert-xent-to-gpu";

remark::RemarkOpts mlir::xent::getRemarkOpts(Operation *op, StringRef name) {
  StringRef function;
  if (auto func = op->getParentOfType<FunctionOpInterface>())
    function = func.getName();
  return remark::RemarkOpts::name(name)
      .category(kRemarkCategory)
      .function(function);
}

namespace {

/// Replaces a cross-entropy op (any CrossEntropyOpInterface) that takes the
/// kernel by an `xent.launch` of its kernels. A rewrite pattern rather than
/// a conversion pattern: no type changes, and a result's materialization
/// into a destination (one of its users) is folded into the launch.
struct CrossEntropyLowering
    : public OpInterfaceRewritePattern<CrossEntropyOpInterface> {
  CrossEntropyLowering(MLIRContext *ctx, const ConvertXentToGPUOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(CrossEntropyOpInterface op,
                                PatternRewriter &rewriter) const override {
    LoweringChoice choice = chooseLowering(op, options);
    if (!choice.kernel)
      return rewriter.notifyMatchFailure(op,
                                         "takes no kernel: " + choice.reason);
    auto module = op->getParentOfType<ModuleOp>();
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(rewriter, module);
    rewriter.setInsertionPoint(op);
    SmallVector<std::string> kernelNames;
    LaunchOp launch =
        emitCrossEntropyLaunch(rewriter, op, kernels, options, kernelNames);
    remark::passed(op.getLoc(), getRemarkOpts(op, "kernel"))
        << "lowered to the fused kernels"
        << remark::metric("Kernels", llvm::join(kernelNames, ", "))
        << remark::reason("{0}", choice.reason);
    rewriter.replaceOp(op, launch.getResults());
    return success();
  }

  ConvertXentToGPUOptions options;
};

/// Replaces a xent op that takes no kernel by its decomposition (the op's
/// linalg::AggregatedOpInterface: its region, or the canonical one).
struct DecompositionLowering
    : public OpInterfaceRewritePattern<linalg::AggregatedOpInterface> {
  DecompositionLowering(MLIRContext *ctx,
                        const ConvertXentToGPUOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {
    // A linear op's decomposition holds a cross-entropy op, which this
    // pattern lowers in turn under mode=inline.
    setHasBoundedRewriteRecursion();
  }

  LogicalResult matchAndRewrite(linalg::AggregatedOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (!isLowered(op))
      return rewriter.notifyMatchFailure(op, "not a xent op");
    LoweringChoice choice = chooseLowering(op, options);
    if (choice.kernel)
      return rewriter.notifyMatchFailure(op, "takes the kernel");
    if (choice.ruledOut)
      return rewriter.notifyMatchFailure(op, "mode=kernel: " + choice.reason);
    if (isRuledOutDecomposition(options, choice))
      return rewriter.notifyMatchFailure(op, "allow-decomposition=false");
    rewriter.setInsertionPoint(op);
    FailureOr<SmallVector<Value>> results = op.decomposeOperation(rewriter);
    if (failed(results))
      return rewriter.notifyMatchFailure(op, "no decomposition");
    remark::missed(op.getLoc(), getRemarkOpts(op, "decomposition"))
        << "lowered to the decomposition"
        << remark::reason("{0}", choice.reason);
    rewriter.replaceOp(op, *results);
    return success();
  }

  ConvertXentToGPUOptions options;
};

struct ConvertXentToGPUPass
    : public xent::impl::ConvertXentToGPUBase<ConvertXentToGPUPass> {
  using Base::Base;

  // Reads the pass's (protected) options.
  friend ConvertXentToGPUOptions
  xent::getKernelOptions<ConvertXentToGPUPass>(const ConvertXentToGPUPass &);

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    // One-shot bufferization of the launches the pass creates.
    registerBufferizableOpInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    ConvertXentToGPUOptions options = getKernelOptions(*this);
    options.allowDecomposition = allowDecomposition;
    if (failed(convertXentToGPU(getOperation(), options)))
      signalPassFailure();
  }
};

} // namespace

void mlir::xent::populateXentToGPUConversionPatterns(
    RewritePatternSet &patterns, const ConvertXentToGPUOptions &options) {
  patterns.add<CrossEntropyLowering, DecompositionLowering>(
      patterns.getContext(), options);
  populateLinearLoweringPatterns(patterns, options);
}

LogicalResult
mlir::xent::convertXentToGPU(Operation *root,
                             const ConvertXentToGPUOptions &options) {
  if (failed(checkOptions(root, options)) ||
      failed(checkLowerings(root, options)))
    return failure();
  // Every xent op is lowered; what the patterns build (host code, the kernel
  // module, the kernels' bodies and the decompositions) is legal, but for
  // the xent ops a decomposition holds, which are lowered in turn. The
  // conversion visits the ops in program order, so kernels are named and
  // placed in the order of their ops.
  MLIRContext *ctx = root->getContext();
  ConversionTarget target(*ctx);
  target.addIllegalDialect<XentDialect>();
  target.addLegalOp<LaunchOp>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  RewritePatternSet patterns(ctx);
  populateXentToGPUConversionPatterns(patterns, options);
  if (failed(applyPartialConversion(root, target, std::move(patterns))))
    return failure();
  stripKernelFingerprints(root);
  return success();
}
