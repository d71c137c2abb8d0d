//===- xent-downstream.cpp - A compiler tool built on installed xent ------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Reads a module, raises its log_softmax + nll_loss chains to xent ops
// (xent-recognize) and lowers them with xent's CPU pipeline to the LLVM
// dialect, or with --gpu-mode to the GPU kernels or the decomposition
// (convert-xent-to-gpu, each op reporting its path as a remark), through
// xent's C++ API only:
//
//   xent-downstream [--raise-only | --gpu-mode=auto|kernel|inline] input.mlir
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/InitAllXent.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Remarks.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input.mlir>"),
                                            llvm::cl::Required);
static llvm::cl::opt<bool>
    raiseOnly("raise-only",
              llvm::cl::desc("Stop after xent-recognize (print the xent ops)"),
              llvm::cl::init(false));
static llvm::cl::opt<xent::LoweringMode>
    gpuMode("gpu-mode",
            llvm::cl::desc("Lower with convert-xent-to-gpu in this mode, "
                           "printing each op's path as a remark"),
            xent::getLoweringModeValues());

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "xent downstream example\n");

  // The CPU pipeline is built from upstream passes by name.
  registerAllPasses();
  xent::registerXentPassesAndPipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  // one-shot-bufferize's models of the tensor, linalg, arith ... ops.
  registerAllExtensions(registry);
  xent::registerXentDialects(registry);
  MLIRContext context(registry);
  bool toGPU = gpuMode.getNumOccurrences() > 0;
  if (toGPU) {
    // The conversion's remarks (passed: the kernels, missed: the
    // decomposition), printed as diagnostics. The engine reads the filter
    // of each kind; `all` is a command-line convenience of MlirOptMain.
    remark::RemarkCategories categories;
    categories.passed = categories.missed = "convert-xent-to-gpu";
    if (failed(remark::enableOptimizationRemarks(
            context, /*streamer=*/nullptr,
            std::make_unique<remark::RemarkEmittingPolicyAll>(), categories,
            /*printAsEmitRemarks=*/true)))
      return 1;
  }

  llvm::SourceMgr sourceMgr;
  // Diagnostics, and the remarks printed as diagnostics, with the source
  // line they point at.
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return 1;

  PassManager pm(&context);
  pm.addPass(xent::createXentRecognize());
  if (toGPU) {
    xent::ConvertXentToGPUOptions options;
    options.mode = gpuMode;
    pm.addPass(xent::createConvertXentToGPU(options));
  } else if (!raiseOnly && failed(xent::buildXentCPUPipeline(pm))) {
    return 1;
  }
  if (failed(pm.run(*module)))
    return 1;

  if (raiseOnly) {
    int64_t raised = 0;
    module->walk([&](xent::CrossEntropyOpInterface) { ++raised; });
    llvm::errs() << "xent-downstream: " << raised << " xent op(s)\n";
  }
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
