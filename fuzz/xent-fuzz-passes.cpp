//===- xent-fuzz-passes.cpp - Fuzz xent's passes with arbitrary MLIR text -===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// bytes -> parse as MLIR (every upstream dialect + xent) -> verify -> each
// pass of passesUnderTest() on its own clone -> verify after every pass and
// check the pass's postcondition (see FuzzSupport.h).
//
// Passes that lower xent ops run only on modules that hold one: the promise
// is about xent's passes, and upstream MLIR on IR without xent ops is not
// what this harness fuzzes. xent-recognize, which reads arbitrary IR, runs on
// every verified module. MLIR bytecode inputs are skipped (the bytecode
// reader is upstream code).
//
// Seeds: the .mlir files of the test suite split at `// -----`
// (fuzz/make-seeds.py); dictionary: fuzz/mlir.dict.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;
using namespace xent::fuzz;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The MLIR lexer expects a NUL after the buffer; std::string has one.
  std::string text(reinterpret_cast<const char *>(data), size);
  if (llvm::StringRef(text).starts_with("ML\xef" "R"))
    return -1; // bytecode: not xent's code
  // Keep inputs cheap to run: the passes are what is under test, not the
  // time the CPU pipeline takes on a huge module.
  if (size > 16384)
    return -1;

  MLIRContext *ctx = &contextForInput();
  DiagnosticCollector diags(*ctx);
  ParserConfig config(ctx, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "fuzz-input");
  if (!module)
    return 0;
  if (diags.numErrors() != 0)
    reportFailure("the parser succeeded but emitted an error", text, &diags,
                  *module);
  if (!anyPassReadsArbitraryIR() && !containsXentOp(*module))
    return 0;
  checkPasses(*module, text, diags, FailurePolicy::ArbitraryIR,
              /*mutatedInputs=*/true);
  return 0;
}
