//===- xent-lsp-server.cpp - mlir-lsp-server with the xent dialect --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The MLIR language server for editors: every upstream dialect plus xent, so
// that xent ops parse and verify, and their diagnostics, hovers, definitions
// and references reach the editor.
//
//===----------------------------------------------------------------------===//

#include "xent/InitAllXent.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::xent::registerXentDialects(registry);
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry)) ? 1 : 0;
}
