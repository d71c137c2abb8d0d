//===- xent-plugin.cpp - xent as a dialect and pass plugin for mlir-opt ---===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Loaded into a stock mlir-opt with
//   mlir-opt --load-dialect-plugin=XentPlugin.so \
//            --load-pass-plugin=XentPlugin.so ...
//
//===----------------------------------------------------------------------===//

#include "xent/InitAllXent.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Xent", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            xent::registerXentDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Xent", LLVM_VERSION_STRING, []() {
            xent::registerXentPassesAndPipelines();
          }};
}
