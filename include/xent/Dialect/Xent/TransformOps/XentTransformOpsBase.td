//===- XentTransformOpsBase.td - Shared op classes ---------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What the transform ops of the dialect (XentTransformOps.td) and those of
// the GPU conversion (xent/Conversion/XentToGPU/TransformOps) share. Classes
// only: a file that includes it generates no op.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPSBASE_TD
#define XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPSBASE_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Dialect/Transform/IR/TransformTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

// A transform that rewrites the payload nested in each target op as one of
// xent's passes does: the target handle is consumed (handles to the ops
// nested in it are invalidated) and `transformed` holds the same targets.
class Xent_PayloadRewriteOp<string mnemonic>
    : Op<Transform_Dialect, "xent." # mnemonic,
         [FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
          DeclareOpInterfaceMethods<TransformOpInterface>]> {
  let results = (outs TransformHandleTypeInterface:$transformed);
  let assemblyFormat =
      "$target attr-dict `:` functional-type(operands, results)";
}

#endif // XENT_DIALECT_XENT_TRANSFORMOPS_XENTTRANSFORMOPSBASE_TD
