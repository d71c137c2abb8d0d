//===- HostBuffers.h - Buffers of the xent GPU host code --------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The buffer decisions of the host side, in one place: how an op's tensors
// become the buffers its kernels take, where each result is written (a
// destination the result is materialized into, the logits' own buffer, or
// new device memory) and how the result comes back as a tensor.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_HOSTBUFFERS_H
#define XENT_LIB_CONVERSION_XENTTOGPU_HOSTBUFFERS_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {

/// A buffer holding `tensor`, with any strides and offset (or, when
/// `identity`, the identity layout).
Value toBuffer(OpBuilder &b, Location loc, Value tensor, bool readOnly = true,
               bool identity = false);

/// Device memory for a value of `type`; dynamic sizes are read off `like`,
/// whose dims are `dims` of `type` in order.
Value allocateDeviceBuffer(OpBuilder &b, Location loc, MemRefType type,
                           Value like, ArrayRef<int64_t> dims);

/// The destination `result` is written into directly: its only use
/// materializes it into a writable, restrict buffer of its element type
/// (with any strides, which the kernels write through). Null otherwise.
bufferization::MaterializeInDestinationOp getDestination(Value result);

/// Where one result goes: the memref written by the kernel and, when that is
/// the result's destination, the op that materialized it there.
struct ResultBuffer {
  Value buffer;                                   // in the result's shape
  bufferization::MaterializeInDestinationOp sink; // erased when used
};

/// The result's destination, or device memory sized like `like` (see
/// allocateDeviceBuffer).
ResultBuffer getResultBuffer(OpBuilder &b, Location loc, Value result,
                             Value like, ArrayRef<int64_t> dims);

/// The tensor that replaces `result` once the kernels wrote `where`; erases
/// the materialization into a destination, which the kernels did.
Value getResultTensor(RewriterBase &rewriter, Location loc, Value result,
                      const ResultBuffer &where);

/// False for a tensor known to bufferize to a view with strides: a slice, or
/// a strided buffer taken as a tensor.
bool isDense(Value tensor);

/// Whether `dlogits` may be written into the buffer of `logits`: nothing
/// reads the logits after the op (the op is their only use), no destination
/// was given for dlogits, the types are equal (the buffer becomes the dlogits
/// tensor as it is) and the logits are dense (dlogits must leave the op in a
/// dense buffer that any consumer, a function's result, takes as it is,
/// never one that bufferization would copy on the host). The kernels read a
/// class's logit before they write its gradient, and a row's statistics are
/// complete before any of it is written; `rereadsLogits` says that a kernel
/// reads logits after other blocks may have written their gradient (a joint
/// op on the resident path, where block 0 reads the target's logit for the
/// loss after the cluster's exchange).
bool canWriteGradientInPlace(Value logits, Value dlogits, bool rereadsLogits);

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_HOSTBUFFERS_H
