//===- XentToGPUTransformOps.td - GPU transform op ---------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The transform op of convert-xent-to-gpu. It lives with the conversion
// (library MLIRXentToGPUTransformOps) so that the dialect's transform ops
// (xent/Dialect/Xent/TransformOps) do not depend on the GPU lowering.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_TD
#define XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_TD

include "xent/Dialect/Xent/TransformOps/XentTransformOpsBase.td"

def XentConvertToGPUOp : Xent_PayloadRewriteOp<"convert_to_gpu"> {
  let summary = "lower xent ops to fused GPU kernels";
  let description = [{
    What `convert-xent-to-gpu` does, on the ops nested in each target (a
    module, or an op inside one): every xent op becomes launches of kernels
    generated into the enclosing module's `@xent_kernels`, or its
    decomposition, as `mode` (`"auto"`, `"kernel"` or `"inline"`) says. The
    attributes are the pass's options; an absent one takes the pass's
    default. Options the kernels cannot take, and ops the mode rules out,
    are a definite failure with the pass's diagnostic.

    ```mlir
    %m2 = transform.xent.convert_to_gpu %m {threads = 256 : i64, mode = "auto"}
        : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                       OptionalAttr<StrAttr>:$chip,
                       OptionalAttr<I64Attr>:$threads,
                       OptionalAttr<I64Attr>:$vector_width,
                       OptionalAttr<BoolAttr>:$resident_rows,
                       OptionalAttr<StrAttr>:$mode,
                       OptionalAttr<BoolAttr>:$allow_decomposition);
  let hasVerifier = 1;
}

#endif // XENT_CONVERSION_XENTTOGPU_TRANSFORMOPS_XENTTOGPUTRANSFORMOPS_TD
