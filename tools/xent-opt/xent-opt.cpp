//===- xent-opt.cpp - mlir-opt with the xent dialect and passes -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/InitAllXent.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::xent::registerXentPassesAndPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR in-process.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::xent::registerXentDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "xent optimizer driver\n", registry));
}
