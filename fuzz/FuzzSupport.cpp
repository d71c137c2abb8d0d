//===- FuzzSupport.cpp - Shared code of the xent fuzz harnesses -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "xent/InitAllXent.h"
#include "xent/Conversion/Passes.h"
#include "xent/Dialect/Xent/IR/XentOps.h"
#include "xent/Dialect/Xent/Transforms/Passes.h"
#include "xent/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace mlir;

/// LLVM's BumpPtrAllocator, inlined into xent's instrumented code, poisons a
/// whole new slab and unpoisons only what it hands out; the uninstrumented
/// libMLIR.so then allocates from that slab without unpoisoning, and ASan
/// reports a use-after-poison inside MLIR (found by both harnesses). Manual
/// poisoning is turned off; heap overflows are still caught by redzones.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace xent::fuzz {

//===----------------------------------------------------------------------===//
// The passes under test: one line per pass.
//===----------------------------------------------------------------------===//

static const PassUnderTest kPasses[] = {
    {"xent-materialize-decomposition", false, Postcondition::RegionsFilled},
    {"xent-inline-decomposition", false, Postcondition::NoLossOps},
    {"xent-cpu-pipeline", true, Postcondition::NoLossOps},
    {"xent-fuse-forward-backward", false, Postcondition::None},
    {"convert-xent-to-gpu", true, Postcondition::None,
     /*mayFailOnValidOps=*/true},
    // The launches it creates, through their BufferizableOpInterface.
    {"convert-xent-to-gpu,one-shot-bufferize{bufferize-function-boundaries "
     "function-boundary-type-conversion=identity-layout-map}",
     true, Postcondition::NoLossOps, /*mayFailOnValidOps=*/true},
    {"xent-recognize", false, Postcondition::None,
     /*mayFailOnValidOps=*/false, /*needsXentOp=*/false},
    // The whole GPU pipeline, down to PTX (no ptxas): host code, kernels and
    // the upstream passes after the conversion.
    {"xent-gpu-pipeline{chip=sm_90 format=isa}", true, Postcondition::NoLossOps,
     /*mayFailOnValidOps=*/true, /*needsXentOp=*/true, /*knownIssue=*/nullptr,
     /*mutatedInputsOnly=*/true, /*verifyEachPass=*/false},
};

bool anyPassReadsArbitraryIR() {
  return llvm::any_of(kPasses,
                      [](const PassUnderTest &p) { return !p.needsXentOp; });
}

llvm::ArrayRef<PassUnderTest> passesUnderTest() { return kPasses; }

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

static DialectRegistry &mutableRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    registerAllDialects(*r);
    registerAllExtensions(*r);
    registerAllToLLVMIRTranslations(*r);
    mlir::xent::registerXentDialects(*r);
    return r;
  }();
  return *registry;
}

const DialectRegistry &registry() { return mutableRegistry(); }

void initialize() {
  static bool done = [] {
    registerAllPasses();
    mlir::xent::registerXentPasses();
    mlir::xent::registerXentConversionPasses();
    mlir::xent::registerXentPipelines();
    (void)mutableRegistry();
    return true;
  }();
  (void)done;
}

std::unique_ptr<MLIRContext> makeContext() {
  return std::make_unique<MLIRContext>(registry(),
                                       MLIRContext::Threading::DISABLED);
}

MLIRContext &contextForInput() {
  static std::unique_ptr<MLIRContext> ctx;
  static unsigned uses = 0;
  static const bool fresh = [] {
    const char *env = std::getenv("XENT_FUZZ_FRESH_CONTEXT");
    return env && *env && *env != '0';
  }();
  if (!ctx || fresh || ++uses >= 256) {
    ctx.reset(); // destroy first: never two contexts alive
    ctx = makeContext();
    uses = 0;
  }
  return *ctx;
}

DiagnosticCollector::DiagnosticCollector(MLIRContext &ctx) : ctx(ctx) {
  handlerId = ctx.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    // Keep the report readable: the first few kilobytes are enough.
    if (log.size() < 8192) {
      llvm::raw_string_ostream os(log);
      os << diag.getLocation() << ": " << diag << "\n";
      for (Diagnostic &note : diag.getNotes())
        os << "  note: " << note << "\n";
    }
    return success();
  });
}

DiagnosticCollector::~DiagnosticCollector() {
  ctx.getDiagEngine().eraseHandler(handlerId);
}

bool containsXentOp(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<mlir::xent::XentDialect>(inner->getDialect())) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

void reportFailure(const llvm::Twine &what, llvm::StringRef input,
                   const DiagnosticCollector *diags, Operation *ir) {
  llvm::errs() << "\n==== xent fuzz check failed: " << what << "\n";
  llvm::errs() << "---- input (" << input.size() << " bytes)\n"
               << input.take_front(16384) << "\n";
  if (diags && !diags->text().empty())
    llvm::errs() << "---- diagnostics\n" << diags->text();
  if (ir) {
    llvm::errs() << "---- IR (generic form)\n";
    ir->print(llvm::errs(),
              OpPrintingFlags().printGenericOpForm().assumeVerified());
    llvm::errs() << "\n";
  }
  llvm::errs().flush();
  std::abort();
}

//===----------------------------------------------------------------------===//
// Running the passes
//===----------------------------------------------------------------------===//

namespace {
/// Verifies the IR after every pass that succeeded, so that a pass producing
/// invalid IR is told apart from a pass that fails on purpose.
struct VerifyAfterEachPass : public PassInstrumentation {
  VerifyAfterEachPass(const PassUnderTest &unit, llvm::StringRef input,
                      DiagnosticCollector &diags)
      : unit(unit), input(input), diags(diags) {}

  void runAfterPass(Pass *pass, Operation *op) override {
    if (succeeded(verify(op)))
      return;
    reportFailure(llvm::Twine("IR does not verify after pass '") +
                      pass->getName() + "' (argument '" +
                      pass->getArgument() + "') of '" + unit.pipeline + "'",
                  input, &diags, op);
  }

  const PassUnderTest &unit;
  llvm::StringRef input;
  DiagnosticCollector &diags;
};

bool holds(Postcondition post, ModuleOp module) {
  switch (post) {
  case Postcondition::None:
    return true;
  case Postcondition::NoLossOps: {
    // xent.launch (the lowered host form) may remain; no op of either loss
    // family may.
    WalkResult found = module->walk([](Operation *op) {
      return isa<mlir::xent::CrossEntropyOpInterface,
                 mlir::xent::LinearCrossEntropyOpInterface>(op)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    return !found.wasInterrupted();
  }
  case Postcondition::RegionsFilled: {
    bool ok = true;
    module->walk([&](Operation *op) {
      if (auto xent = dyn_cast<mlir::xent::CrossEntropyOpInterface>(op);
          xent && xent.getDecomposition().empty())
        ok = false;
    });
    return ok;
  }
  }
  return false;
}

const char *describe(Postcondition post) {
  switch (post) {
  case Postcondition::None:
    return "none";
  case Postcondition::NoLossOps:
    return "no op of the loss families is left";
  case Postcondition::RegionsFilled:
    return "every xent op has a decomposition";
  }
  return "?";
}
} // namespace

/// One mutated input in this many runs the passes marked mutatedInputsOnly.
static constexpr uint64_t kGpuPipelineSampling = 8;

void checkPasses(ModuleOp module, llvm::StringRef input,
                 DiagnosticCollector &diags, FailurePolicy policy,
                 bool mutatedInputs) {
  MLIRContext *ctx = module->getContext();
  bool hasXentOp = containsXentOp(module);
  for (const PassUnderTest &unit : passesUnderTest()) {
    if (unit.needsXentOp && !hasXentOp)
      continue;
    if (unit.knownIssue && unit.knownIssue(module))
      continue;
    // A whole GPU pipeline costs seconds an input: one mutated input in
    // kGpuPipelineSampling takes it (chosen by the input's hash, so a
    // finding replays).
    if (unit.mutatedInputsOnly &&
        (!mutatedInputs || llvm::xxh3_64bits(input) % kGpuPipelineSampling))
      continue;
    OwningOpRef<ModuleOp> clone = module.clone();
    PassManager pm(ctx, ModuleOp::getOperationName());
    // Verification is done by the instrumentation, after each pass, or by
    // the pass manager for a unit that does not verify each pass itself.
    pm.enableVerifier(!unit.verifyEachPass);
    std::string pipelineErrors;
    llvm::raw_string_ostream errs(pipelineErrors);
    if (failed(parsePassPipeline(unit.pipeline, pm, errs)))
      reportFailure(llvm::Twine("pipeline '") + unit.pipeline +
                        "' does not parse: " + pipelineErrors,
                    input, &diags);
    if (unit.verifyEachPass)
      pm.addInstrumentation(
          std::make_unique<VerifyAfterEachPass>(unit, input, diags));

    diags.clear();
    if (failed(pm.run(*clone))) {
      bool mayFail = unit.mayFailOnValidOps ||
                     (policy == FailurePolicy::ArbitraryIR &&
                      unit.mayFailOnArbitraryIR);
      if (!mayFail)
        reportFailure(llvm::Twine("'") + unit.pipeline + "' failed", input,
                      &diags, *clone);
      if (diags.numErrors() == 0)
        reportFailure(llvm::Twine("'") + unit.pipeline +
                          "' failed without an error diagnostic",
                      input, &diags, *clone);
      continue;
    }
    if (failed(verify(*clone)))
      reportFailure(llvm::Twine("result of '") + unit.pipeline +
                        "' does not verify",
                    input, &diags, *clone);
    if (!holds(unit.post, *clone))
      reportFailure(llvm::Twine("after '") + unit.pipeline +
                        "': postcondition violated: " + describe(unit.post),
                    input, &diags, *clone);
  }
}

} // namespace xent::fuzz
