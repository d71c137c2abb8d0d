//===- LaunchOp.cpp - xent.launch -----------------------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The op's structure: which result is written into which operand, the
// dynamic sizes of each result and the buffers (and scalars) its body takes. How it
// bufferizes is in Transforms/BufferizableOpInterfaceImpl.cpp.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::xent;

OpOperand *LaunchOp::getTiedOperand(unsigned i) {
  int64_t tied = getTiedOperands()[i];
  return tied < 0 ? nullptr : &getOperation()->getOpOperand(tied);
}

OpResult LaunchOp::getTiedResult(OpOperand &operand) {
  for (auto [i, tied] : llvm::enumerate(getTiedOperands()))
    if (tied == operand.getOperandNumber())
      return getOperation()->getResult(i);
  return nullptr;
}

ValueRange LaunchOp::getResultDynamicSizes(unsigned i) {
  unsigned start = 0;
  for (unsigned r = 0; r < i; ++r)
    start += cast<RankedTensorType>(getResult(r).getType()).getNumDynamicDims();
  unsigned count =
      cast<RankedTensorType>(getResult(i).getType()).getNumDynamicDims();
  return getResultDims().slice(start, count);
}

/// Whether `buffer` can be the block argument of a tensor of `type`: a
/// memref of the same element type and rank whose static sizes agree.
static bool isBufferOf(Type buffer, RankedTensorType type) {
  auto memref = dyn_cast<MemRefType>(buffer);
  if (!memref || memref.getElementType() != type.getElementType() ||
      memref.getRank() != type.getRank())
    return false;
  for (auto [a, b] : llvm::zip(memref.getShape(), type.getShape()))
    if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b)
      return false;
  return true;
}

LogicalResult LaunchOp::verify() {
  ArrayRef<int64_t> tied = getTiedOperands();
  if (tied.size() != getNumResults())
    return emitOpError("tied_operands has ")
           << tied.size() << " entries for " << getNumResults() << " results";
  unsigned numTensors = getInputs().size() + getInits().size();
  llvm::SmallBitVector taken(numTensors);
  for (auto [i, index] : llvm::enumerate(tied)) {
    if (index == -1)
      continue;
    if (index < 0 || index >= numTensors)
      return emitOpError("result #")
             << i << " is tied to operand #" << index << ", not one of the "
             << numTensors << " inputs and inits";
    if (taken.test(index))
      return emitOpError("operand #") << index << " is tied to two results";
    taken.set(index);
    if (!isa<RankedTensorType>(getOperand(index).getType()))
      return emitOpError("result #")
             << i << " is tied to operand #" << index
             << ", a scalar (only a tensor has a buffer)";
    if (getOperand(index).getType() != getResult(i).getType())
      return emitOpError("result #")
             << i << " has type " << getResult(i).getType()
             << " but its tied operand #" << index << " has type "
             << getOperand(index).getType();
  }
  for (unsigned k = getInputs().size(); k < numTensors; ++k)
    if (!taken.test(k))
      return emitOpError("init operand #")
             << k << " is not tied to a result";
  unsigned numDynamic = 0;
  for (Type type : getResultTypes())
    numDynamic += cast<RankedTensorType>(type).getNumDynamicDims();
  if (getResultDims().size() != numDynamic)
    return emitOpError("has ")
           << getResultDims().size() << " result_dims for " << numDynamic
           << " dynamic result sizes";

  Block &body = getBody().front();
  unsigned expected = getInputs().size() + getNumResults();
  if (body.getNumArguments() != expected)
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments, expected " << expected
           << " (one buffer per input and per result)";
  SmallVector<Type> tensors(getInputs().getTypes());
  llvm::append_range(tensors, getResultTypes());
  for (auto [k, arg, type] : llvm::enumerate(body.getArguments(), tensors)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      // A scalar input reaches the body as it is.
      if (arg.getType() != type)
        return emitOpError("body argument #")
               << k << " has type " << arg.getType() << ", not " << type
               << " (a scalar input is passed as it is)";
      continue;
    }
    if (!isBufferOf(arg.getType(), tensor))
      return emitOpError("body argument #")
             << k << " has type " << arg.getType()
             << ", not a memref with the element type and shape of " << type;
  }
  return success();
}
