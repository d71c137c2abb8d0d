//===- xent-reduce.cpp - mlir-reduce with the xent dialect and passes -----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Shrinks a module that crashes or misbehaves in xent-opt to what an
// interestingness script still needs (docs/testing.md, "Shrinking a failing
// module"). xent's passes are registered so that `opt-reduction-pass` can run
// them as reductions.
//
//===----------------------------------------------------------------------===//

#include "XentToolRegistration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-reduce/MlirReduceMain.h"

int main(int argc, char **argv) {
  // As in xent-opt (gpu-module-to-binary of xent-gpu-pipeline translates
  // kernels to LLVM IR in-process).
  mlir::DialectRegistry registry;
  mlir::xent::registerToolPassesAndDialects(registry);

  mlir::MLIRContext context(registry);
  // opt-reduction-pass parses its pipeline while it runs, so nothing loads
  // the dependent dialects of the passes in it: a pass that creates ops of a
  // dialect the input does not use (convert-xent-to-gpu, one-shot-bufferize)
  // would build unregistered ops and crash. Every dialect is loaded up front.
  context.loadAllAvailableDialects();
  return mlir::failed(mlir::mlirReduceMain(argc, argv, context)) ? 1 : 0;
}
