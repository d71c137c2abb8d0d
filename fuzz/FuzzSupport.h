//===- FuzzSupport.h - Shared code of the xent fuzz harnesses ---*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What every xent fuzz harness needs: one registry with every upstream
// dialect and extension plus xent, the passes under test, and the check that
// runs each of them on its own clone of a verified module.
//
// The promise checked (docs/reliability.md): on any verified input, each pass
// either transforms it into IR that verifies (after every single pass of a
// pipeline) or, where it may fail, fails with an error diagnostic; it never
// crashes, leaks or reads out of bounds (ASan/UBSan/LSan in the harness).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_FUZZ_FUZZSUPPORT_H
#define XENT_FUZZ_FUZZSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <memory>
#include <string>

namespace xent::fuzz {

/// What must hold after a pass succeeded, beyond verification.
enum class Postcondition {
  None,
  /// Every xent op has a non-empty decomposition region.
  RegionsFilled,
  /// No op of either loss family is left (xent.launch, the lowered host form,
  /// may be).
  NoLossOps,
};

/// One pass or pipeline under test.
struct PassUnderTest {
  /// Textual pipeline nested in `builtin.module(...)`.
  const char *pipeline;
  /// Whether the pass may fail on arbitrary verified IR (it must then emit an
  /// error). xent's own passes never fail; the CPU pipeline contains upstream
  /// passes that reject IR they cannot bufferize or lower.
  bool mayFailOnArbitraryIR;
  Postcondition post;
  /// Whether the pass may also fail (with an error) on a module that only
  /// holds one valid xent op on tensors: a lowering that supports only some
  /// configurations.
  bool mayFailOnValidOps = false;
  /// Whether xent-fuzz-passes runs it only on modules that hold a xent op
  /// (passes that lower xent ops); false for passes that read arbitrary IR
  /// (xent-recognize).
  bool needsXentOp = true;
  /// A recorded, not yet fixed bug of this pass (docs/reliability.md, with
  /// an XFAIL lit test): modules it matches skip the pass, so that fuzzing
  /// goes on looking for new ones. Null when none.
  bool (*knownIssue)(mlir::ModuleOp) = nullptr;
  /// Whether only xent-fuzz-passes (mutated test inputs: checkPasses's
  /// `mutatedInputs`) runs it: a whole pipeline down to PTX costs seconds an
  /// input, which the generated ops' harness would spend on nothing else.
  bool mutatedInputsOnly = false;
  /// Whether the harness verifies the IR after each pass of it (telling a
  /// pass that produces invalid IR from one that fails on purpose). False
  /// for a pipeline of upstream passes that lower only part of what they
  /// are given (xent-gpu-pipeline leaves host-side linalg to the caller,
  /// and convert-arith-to-llvm then rewrites a linalg.matmul's body into
  /// one its verifier rejects): the pass manager's own verifier then makes
  /// such a run fail with its diagnostic, as it does in xent-opt.
  bool verifyEachPass = true;
};

/// Every pass the harnesses run, in order. Adding a pass is one line in
/// FuzzSupport.cpp.
llvm::ArrayRef<PassUnderTest> passesUnderTest();

/// Registers every pass and pipeline (once); call from LLVMFuzzerInitialize.
void initialize();

/// Every upstream dialect and extension plus xent.
const mlir::DialectRegistry &registry();

/// A context for one input: single-threaded, dialects loaded on demand.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// The context to use for the next input. Loading the dialects that the
/// passes need costs more than the passes on a small module, so a context is
/// reused for up to 256 inputs (uniqued types and attributes do not change
/// what an input computes); XENT_FUZZ_FRESH_CONTEXT=1 makes one per input,
/// as does replaying a single input (a crash reproduces on a fresh context).
mlir::MLIRContext &contextForInput();

/// Collects the diagnostics of a context (instead of printing them) so that
/// a failure report can show them.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx);
  ~DiagnosticCollector();
  unsigned numErrors() const { return errors; }
  const std::string &text() const { return log; }
  void clear() {
    errors = 0;
    log.clear();
  }

private:
  mlir::MLIRContext &ctx;
  uint64_t handlerId;
  unsigned errors = 0;
  std::string log;
};

/// True when `op` or anything nested in it belongs to the xent dialect.
bool containsXentOp(mlir::Operation *op);

/// Prints `what`, the input, the diagnostics and (when given) the IR, then
/// aborts so that libFuzzer records the input as a crash.
[[noreturn]] void reportFailure(const llvm::Twine &what, llvm::StringRef input,
                                const DiagnosticCollector *diags,
                                mlir::Operation *ir = nullptr);

/// How strictly checkPasses judges a pass failure.
enum class FailurePolicy {
  /// Arbitrary IR: passes marked mayFailOnArbitraryIR may fail with an error.
  ArbitraryIR,
  /// IR that only holds valid xent ops on tensors: every pass must succeed.
  MustSucceed,
};

/// Runs every pass of passesUnderTest() on its own clone of `module`
/// (verified) and checks verification after each pass, the postcondition and
/// the failure policy. Reports and aborts on a violation. `mutatedInputs`:
/// the caller is xent-fuzz-passes (mutated test inputs), which also runs
/// the passes marked mutatedInputsOnly.
void checkPasses(mlir::ModuleOp module, llvm::StringRef input,
                 DiagnosticCollector &diags, FailurePolicy policy,
                 bool mutatedInputs = false);

/// Whether any pass under test reads modules without xent ops.
bool anyPassReadsArbitraryIR();

} // namespace xent::fuzz

#endif // XENT_FUZZ_FUZZSUPPORT_H
