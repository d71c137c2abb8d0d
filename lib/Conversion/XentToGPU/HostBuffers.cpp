//===- HostBuffers.cpp - Buffers of the xent GPU host code ----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "HostBuffers.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::xent;

Value mlir::xent::toBuffer(OpBuilder &b, Location loc, Value tensor,
                           bool readOnly, bool identity) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  auto memrefType =
      identity
          ? MemRefType::get(type.getShape(), type.getElementType())
          : MemRefType::get(type.getShape(), type.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                           readOnly);
}

Value mlir::xent::allocateDeviceBuffer(OpBuilder &b, Location loc,
                                       MemRefType type, Value like,
                                       ArrayRef<int64_t> dims) {
  SmallVector<Value> sizes;
  for (auto [k, d] : llvm::enumerate(dims))
    if (type.isDynamicDim(k))
      sizes.push_back(memref::DimOp::create(b, loc, like, d));
  return gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(), ValueRange{},
                              sizes, ValueRange{})
      .getMemref();
}

bufferization::MaterializeInDestinationOp
mlir::xent::getDestination(Value result) {
  if (!result.hasOneUse())
    return nullptr;
  auto sink = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!sink || !sink.getWritable() || !sink.getRestrict())
    return nullptr;
  auto destType = dyn_cast<MemRefType>(sink.getDest().getType());
  if (!destType ||
      destType.getElementType() !=
          cast<RankedTensorType>(result.getType()).getElementType())
    return nullptr;
  return sink;
}

ResultBuffer mlir::xent::getResultBuffer(OpBuilder &b, Location loc,
                                         Value result, Value like,
                                         ArrayRef<int64_t> dims) {
  if (auto sink = getDestination(result))
    return {sink.getDest(), sink};
  auto tensorType = cast<RankedTensorType>(result.getType());
  auto type =
      MemRefType::get(tensorType.getShape(), tensorType.getElementType());
  return {allocateDeviceBuffer(b, loc, type, like, dims), nullptr};
}

Value mlir::xent::getResultTensor(RewriterBase &rewriter, Location loc,
                                  Value result, const ResultBuffer &where) {
  // The op's own device memory has no other alias and may be written by
  // later ops; a destination belongs to the IR that gave it.
  Value tensor = bufferization::ToTensorOp::create(
      rewriter, loc, result.getType(), where.buffer,
      /*restrict=*/where.sink ? UnitAttr() : rewriter.getUnitAttr(),
      /*writable=*/where.sink ? UnitAttr() : rewriter.getUnitAttr());
  if (where.sink)
    rewriter.eraseOp(where.sink);
  return tensor;
}

bool mlir::xent::isDense(Value tensor) {
  if (tensor.getDefiningOp<tensor::ExtractSliceOp>())
    return false;
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return cast<MemRefType>(toTensor.getBuffer().getType())
        .getLayout()
        .isIdentity();
  return true;
}

bool mlir::xent::canWriteGradientInPlace(Value logits, Value dlogits,
                                         bool rereadsLogits) {
  return dlogits && dlogits.getType() == logits.getType() &&
         logits.hasOneUse() && isDense(logits) && !rereadsLogits &&
         !getDestination(dlogits);
}
