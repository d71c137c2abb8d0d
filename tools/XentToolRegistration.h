//===- XentToolRegistration.h - What xent's tools register ------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_TOOLS_XENTTOOLREGISTRATION_H
#define XENT_TOOLS_XENTTOOLREGISTRATION_H

#include "xent/InitAllXent.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir::xent {

/// What xent-opt and xent-reduce register: every upstream pass, dialect and
/// extension, the LLVM IR translations (gpu-module-to-binary translates
/// kernels in-process), and all of xent. Passes go to the global registry;
/// dialects to `registry`.
inline void registerToolPassesAndDialects(DialectRegistry &registry) {
  registerAllPasses();
  registerXentPassesAndPipelines();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerXentDialects(registry);
}

} // namespace mlir::xent

#endif // XENT_TOOLS_XENTTOOLREGISTRATION_H
