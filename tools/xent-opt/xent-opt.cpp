//===- xent-opt.cpp - mlir-opt with the xent dialect and passes -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "XentToolRegistration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::xent::test {
void registerTestExpOnFmaPipePass();
} // namespace mlir::xent::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::xent::registerToolPassesAndDialects(registry);
  mlir::xent::test::registerTestExpOnFmaPipePass();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "xent optimizer driver\n", registry));
}
