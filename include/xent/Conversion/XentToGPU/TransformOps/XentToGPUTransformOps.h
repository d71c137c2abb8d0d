//===- XentToGPUTransformOps.h - GPU lowering transform ops -----*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// `transform.xent.convert_to_gpu`: convert-xent-to-gpu on payload ops, for
// compilers driven by transform scripts. A transform-dialect extension of
// its own (library MLIRXentToGPUTransformOps), beside the dialect's
// (xent/Dialect/Xent/TransformOps/XentTransformOps.h);
// registerXentDialects (xent/InitAllXent.h) registers both.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_H
#define XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_H

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir {
class DialectRegistry;

namespace xent {
/// Registers the transform-dialect extension of the GPU lowering
/// (`transform.xent.convert_to_gpu`).
void registerXentToGPUTransformDialectExtension(DialectRegistry &registry);
} // namespace xent
} // namespace mlir

#define GET_OP_CLASSES
#include "xent/Conversion/XentToGPU/TransformOps/XentToGPUTransformOps.h.inc"

#endif // XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_H
