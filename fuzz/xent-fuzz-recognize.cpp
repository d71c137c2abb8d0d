//===- xent-fuzz-recognize.cpp - Structured fuzzing of xent-recognize -----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Decodes the fuzzer's bytes into one function computing a loss as a
// frontend writes it (ChainWriter.h: torch-mlir's nll with label smoothing,
// softcap and z-loss terms, optax's loss, TOSA with a rank-keeping total,
// autograd's joint graph with the z-loss gradient, linear projections in
// linalg and TOSA before the loss or its gradient and the backward
// products), maybe mutated into a near miss, and checks:
//
//  1. the text parses and verifies (a generator bug otherwise);
//  2. every pass of passesUnderTest() keeps the promise of the other
//     harnesses (FuzzSupport.h): it succeeds or fails with an error, the IR
//     verifies after each of its passes, its postcondition holds;
//  3. xent-recognize leaves exactly the xent ops the generator expects at
//     the function's top level (raised forms raised, near misses left
//     whole), where the generator promises an outcome; the recognized
//     module then goes through the passes of 2. as well (one chain in four,
//     as a byte after the chain's decides).
//
//===----------------------------------------------------------------------===//

#include "ChainWriter.h"
#include "FuzzSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;
using namespace xent::fuzz;

namespace {

/// The names of the xent ops directly in the function's body.
std::vector<std::string> topLevelXentOps(ModuleOp module) {
  std::vector<std::string> names;
  module->walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "xent" &&
        isa<func::FuncOp>(op->getParentOp()))
      names.push_back(op->getName().getStringRef().str());
  });
  std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::vector<std::string> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i];
  return s + "]";
}

/// With XENT_FUZZ_STATS set, counts are printed at exit; XENT_FUZZ_PRINT
/// prints every generated function.
struct Stats {
  uint64_t chains = 0, checked = 0;
  bool enabled = std::getenv("XENT_FUZZ_STATS") != nullptr;
  bool printInputs = std::getenv("XENT_FUZZ_PRINT") != nullptr;
  ~Stats() {
    if (enabled)
      llvm::errs() << "xent-fuzz-recognize: " << chains << " chains, "
                   << checked << " with a promised outcome\n";
  }
};
Stats stats;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider provider(data, size);
  Chain chain = writeChain(provider);
  // The passes on the recognized module cost most: one chain in four.
  bool passesAfterRecognize =
      provider.ConsumeIntegralInRange<unsigned>(0, 3) == 3;
  ++stats.chains;
  if (stats.printInputs)
    llvm::errs() << "// " << chain.form << ", expected " << join(chain.expected)
                 << (chain.checked ? "" : " (not promised)") << "\n"
                 << chain.text;

  MLIRContext *ctx = &contextForInput();
  DiagnosticCollector diags(*ctx);
  ParserConfig config(ctx, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(chain.text, config, "fuzz-chain");
  if (!module || diags.numErrors() != 0)
    reportFailure("the generated chain (" + chain.form + ") does not verify",
                  chain.text, &diags);

  checkPasses(*module, chain.text, diags, FailurePolicy::ArbitraryIR);

  if (!chain.checked)
    return 0;
  ++stats.checked;
  OwningOpRef<ModuleOp> recognized = module->clone();
  PassManager pm(ctx, ModuleOp::getOperationName());
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline("xent-recognize", pm, os)) ||
      failed(pm.run(*recognized)))
    reportFailure("xent-recognize failed: " + errors, chain.text, &diags);
  std::vector<std::string> expected = chain.expected;
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> got = topLevelXentOps(*recognized);
  if (got != expected)
    reportFailure("xent-recognize left " + join(got) + ", the chain (" +
                      chain.form + ") expects " + join(expected),
                  chain.text, &diags, *recognized);
  // The raised ops go through the passes too (their regions hold the chain;
  // TOSA ones then fail the CPU pipeline with an error, as TOSA does).
  if (passesAfterRecognize)
    checkPasses(*recognized, chain.text, diags, FailurePolicy::ArbitraryIR);
  return 0;
}
