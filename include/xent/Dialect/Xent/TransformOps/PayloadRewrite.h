//===- PayloadRewrite.h - What the payload-rewriting ops share --*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The apply() of the transform ops declared with Xent_PayloadRewriteOp
// (XentTransformOpsBase.td): those of the dialect (XentTransformOps.cpp) and
// that of the GPU lowering (lib/Conversion/XentToGPU/TransformOps).
// Header-only.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMOPS_PAYLOADREWRITE_H
#define XENT_DIALECT_XENT_TRANSFORMOPS_PAYLOADREWRITE_H

#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::xent::detail {

/// Runs `rewrite` on every payload op of `op`'s target and hands the same
/// ops back through `transformed`.
template <typename OpTy, typename Fn>
DiagnosedSilenceableFailure
rewriteEachTarget(OpTy op, transform::TransformResults &results,
                  transform::TransformState &state, Fn rewrite) {
  SmallVector<Operation *> targets =
      llvm::to_vector(state.getPayloadOps(op.getTarget()));
  for (Operation *target : targets) {
    if (succeeded(rewrite(target)))
      continue;
    DiagnosedDefiniteFailure diag = emitDefiniteFailure(op, "could not apply ")
                                    << op->getName();
    diag.attachNote(target->getLoc()) << "to this op";
    return diag;
  }
  results.set(cast<OpResult>(op.getTransformed()), targets);
  return DiagnosedSilenceableFailure::success();
}

} // namespace mlir::xent::detail

#endif // XENT_DIALECT_XENT_TRANSFORMOPS_PAYLOADREWRITE_H
