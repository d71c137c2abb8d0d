//===- BufferizableOpInterfaceImpl.cpp - Bufferization of xent.launch -----===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// One-shot bufferization decides where each result of `xent.launch` is
// written: into a destination it is tied to, into an input's buffer when the
// analysis finds that in place, or into device memory the op allocates. The
// body, buffer code on block arguments, is then inlined on those buffers
// (and on the scalar inputs, which are not buffers).
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/BufferizableOpInterfaceImpl.h"

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::xent;

namespace {

/// Whether `operand` is one of the inputs' tensors. (A scalar input is no
/// buffer: the analysis never asks about it, and it reaches the body as it
/// is.)
bool isInput(LaunchOp op, OpOperand &operand) {
  return isa<TensorType>(operand.get().getType()) &&
         op.getInputs().getBeginOperandIndex() <= operand.getOperandNumber() &&
         operand.getOperandNumber() <
             op.getInputs().getBeginOperandIndex() + op.getInputs().size();
}

/// The identity-layout buffer a result the op allocates has.
MemRefType getAllocatedType(Value result) {
  auto type = cast<RankedTensorType>(result.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

struct LaunchOpInterface
    : public BufferizableOpInterface::ExternalModel<LaunchOpInterface,
                                                    LaunchOp> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return isInput(cast<LaunchOp>(op), operand);
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return static_cast<bool>(cast<LaunchOp>(op).getTiedResult(operand));
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (OpResult result = cast<LaunchOp>(op).getTiedResult(operand))
      return {{result, BufferRelation::Equivalent, /*isDefinite=*/true}};
    return {};
  }

  bool bufferizesToAllocation(Operation *op, Value value) const {
    auto result = dyn_cast<OpResult>(value);
    return result &&
           !cast<LaunchOp>(op).getTiedOperand(result.getResultNumber());
  }

  /// A result tied to an input that cannot take the input's buffer (the
  /// analysis put it out of place, or the buffer is a view) is untied: the
  /// op allocates it, with no copy, as the body writes all of it. A
  /// destination cannot be given up that way: the result must end up there.
  LogicalResult resolveConflicts(Operation *op, RewriterBase &rewriter,
                                 const AnalysisState &analysisState,
                                 const BufferizationState &state) const {
    auto launch = cast<LaunchOp>(op);
    SmallVector<int64_t> tied(launch.getTiedOperands());
    for (auto [i, index] : llvm::enumerate(tied)) {
      if (index < 0)
        continue;
      OpOperand &operand = op->getOpOperand(index);
      bool inPlace = analysisState.isInPlace(operand);
      if (!isInput(launch, operand)) {
        if (!inPlace)
          return op->emitOpError("cannot write result #")
                 << i << " into its destination (operand #" << index
                 << ") in place";
        continue;
      }
      if (inPlace) {
        FailureOr<BufferLikeType> type = bufferization::getBufferType(
            operand.get(), analysisState.getOptions(), state);
        if (failed(type))
          return failure();
        auto memref = dyn_cast<MemRefType>(*type);
        if (memref && memref.getLayout().isIdentity())
          continue;
      }
      index = -1;
    }
    if (ArrayRef<int64_t>(tied) != launch.getTiedOperands())
      rewriter.modifyOpInPlace(op, [&] { launch.setTiedOperands(tied); });
    return success();
  }

  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    auto result = cast<OpResult>(value);
    if (OpOperand *tied =
            cast<LaunchOp>(op).getTiedOperand(result.getResultNumber()))
      return bufferization::getBufferType(tied->get(), options, state,
                                          invocationStack);
    return cast<BufferLikeType>(getAllocatedType(result));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto launch = cast<LaunchOp>(op);
    Location loc = op->getLoc();
    Block &body = launch.getBody().front();
    SmallVector<Value> args;
    // A buffer cast once to each type its block arguments have (an input
    // and the result written into its buffer are one value in the body).
    DenseMap<std::pair<Value, Type>, Value> casts;
    // `buffer` as the next block argument takes it.
    auto addArg = [&](Value buffer) -> LogicalResult {
      Type argType = body.getArgument(args.size()).getType();
      if (buffer.getType() != argType) {
        if (!memref::CastOp::areCastCompatible(buffer.getType(), argType))
          return op->emitOpError("cannot pass a buffer of type ")
                 << buffer.getType() << " as body argument #" << args.size()
                 << " of type " << argType;
        Value &cast = casts[{buffer, argType}];
        if (!cast)
          cast = memref::CastOp::create(rewriter, loc, argType, buffer);
        buffer = cast;
      }
      args.push_back(buffer);
      return success();
    };
    // The buffer of each operand, taken once.
    DenseMap<Value, Value> buffers;
    auto getOperandBuffer = [&](Value tensor) -> FailureOr<Value> {
      Value &buffer = buffers[tensor];
      if (!buffer) {
        FailureOr<Value> taken = getBuffer(rewriter, tensor, options, state);
        if (failed(taken))
          return failure();
        buffer = *taken;
      }
      return buffer;
    };
    for (Value input : launch.getInputs()) {
      if (!isa<TensorType>(input.getType())) {
        args.push_back(input);
        continue;
      }
      FailureOr<Value> buffer = getOperandBuffer(input);
      if (failed(buffer) || failed(addArg(*buffer)))
        return failure();
    }
    SmallVector<Value> results;
    for (OpResult result : op->getResults()) {
      unsigned i = result.getResultNumber();
      Value buffer;
      if (OpOperand *tied = launch.getTiedOperand(i)) {
        FailureOr<Value> tiedBuffer = getOperandBuffer(tied->get());
        if (failed(tiedBuffer))
          return failure();
        buffer = *tiedBuffer;
      } else {
        buffer = gpu::AllocOp::create(rewriter, loc, getAllocatedType(result),
                                      /*asyncToken=*/Type(), ValueRange{},
                                      launch.getResultDynamicSizes(i),
                                      ValueRange{})
                     .getMemref();
      }
      results.push_back(buffer);
      if (failed(addArg(buffer)))
        return failure();
    }
    rewriter.inlineBlockBefore(&body, op, args);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void mlir::xent::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, XentDialect *) {
    LaunchOp::attachInterface<LaunchOpInterface>(*ctx);
    // The dialects of the ops bufferize() creates.
    ctx->loadDialect<gpu::GPUDialect, memref::MemRefDialect>();
  });
}
