//===- ChunkLinearCrossEntropy.cpp - Linear cross-entropy by row chunks ---===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// A linear cross-entropy op becomes
//
//   normalizers (mean only): K = #kept rows, W = Σ_kept class_weight[target]
//   scf.for %i = 0 to N step rows   (iter_args: loss, z_loss, d_hidden,
//                                    d_weight and d_bias in f32)
//     chunk rows r = min(rows, N - i)
//     logits  = hidden[i:i+r] · weightᵀ + bias            f32 [r, V]
//     loss_c, dlogits = xent.cross_entropy_and_grad sum|none on the chunk
//     d_hidden[i:i+r] = dlogits · weight                   rounded once
//     d_weight += dlogitsᵀ · hidden[i:i+r]                 f32
//     d_bias   += Σ_rows dlogits                           f32
//   mean: loss = Σ loss_c / D, z_loss = Σ z_c / K
//
// with D = W, or K when both class weights and a z-loss are present (their
// mean divides the two parts by W and K: the chunks then see the class
// weights times K / W). The chunks' gradients come from grad_output / D.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/Passes.h"

#include "xent/Dialect/Xent/IR/XentDecomposition.h"
#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTCHUNKLINEARCROSSENTROPY
#include "xent/Dialect/Xent/Transforms/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;
using namespace mlir::xent;

namespace {

/// The global normalizers of a `mean`: what the loss and the gradient divide
/// by, what the z-loss divides by, and the class weights the chunks see.
struct MeanNormalizers {
  Value divisor;     // f32: W, or K when class weights meet a z-loss
  Value keptCount;   // f32: K
  Value classWeight; // the class weights for the chunks (null: unweighted)
};

/// Builds the loop of one op.
class ChunkEmitter {
public:
  ChunkEmitter(RewriterBase &rewriter, LinearCrossEntropyOpInterface op,
               int64_t rowsPerChunk)
      : b(rewriter), op(op), loc(op.getLoc()), rowsPerChunk(rowsPerChunk),
        f32(rewriter.getF32Type()) {}

  SmallVector<Value> emit();

private:
  Value constF32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value constIndex(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  OpFoldResult size(Value v, int64_t dim) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.isDynamicDim(dim))
      return b.getIndexAttr(type.getDimSize(dim));
    return tensor::DimOp::create(b, loc, v, dim).getResult();
  }
  /// The f32 scalar held by a rank-0 float tensor.
  Value extractF32(Value scalarTensor) {
    Value v = tensor::ExtractOp::create(b, loc, scalarTensor, ValueRange{});
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(b, loc, f32, v);
    return v;
  }
  Value scalarTensor(Value v) {
    return tensor::FromElementsOp::create(b, loc,
                                          RankedTensorType::get({}, f32), v);
  }

  MeanNormalizers emitMeanNormalizers();
  Value emitChunkGradOutput(const MeanNormalizers &mean);

  OpBuilder &b;
  LinearCrossEntropyOpInterface op;
  Location loc;
  int64_t rowsPerChunk;
  Type f32;
  // The flattened problem.
  Value rows, target, weight, bias, classWeight, gradOutput;
};
} // namespace

MeanNormalizers ChunkEmitter::emitMeanNormalizers() {
  MeanNormalizers mean;
  mean.classWeight = classWeight;
  // K and W in one pass over the targets.
  Value zeroTensor = buildZeroTensor(b, loc, {});
  MLIRContext *ctx = b.getContext();
  AffineMap in = AffineMap::getMultiDimIdentityMap(1, ctx);
  AffineMap out = AffineMap::get(1, 0, ctx);
  int64_t ignoreIndex = op.getIgnoreIndexValue();
  Value dynamicIgnoreIndex = op.getDynamicIgnoreIndex();
  Type targetElt = cast<RankedTensorType>(target.getType()).getElementType();
  SmallVector<Value> inits = {zeroTensor};
  if (classWeight)
    inits.push_back(zeroTensor);
  SmallVector<AffineMap> maps = {in, out};
  if (classWeight)
    maps.push_back(out);
  auto sums = linalg::GenericOp::create(
      b, loc, TypeRange(ValueRange(inits)), target, inits, maps,
      {utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value t = args[0];
        Value ignored;
        if (dynamicIgnoreIndex) {
          // Compared as i64: a run-time index outside i32 matches no target.
          ignored = dynamicIgnoreIndex;
          if (!targetElt.isInteger(64))
            t = arith::ExtSIOp::create(nb, nloc, nb.getI64Type(), t);
        } else {
          ignored = arith::ConstantOp::create(
              nb, nloc, IntegerAttr::get(targetElt, ignoreIndex));
        }
        Value kept = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ne,
                                           t, ignored);
        Value one = arith::ConstantOp::create(nb, nloc, nb.getF32FloatAttr(1));
        Value zero = arith::ConstantOp::create(nb, nloc, nb.getF32FloatAttr(0));
        SmallVector<Value> yields = {arith::AddFOp::create(
            nb, nloc, args[1],
            arith::SelectOp::create(nb, nloc, kept, one, zero))};
        if (classWeight) {
          // An ignored row reads class 0: its target may be any value.
          Value zeroIndex = arith::ConstantOp::create(
              nb, nloc, IntegerAttr::get(targetElt, 0));
          Value t = arith::SelectOp::create(nb, nloc, kept, args[0], zeroIndex);
          Value index =
              arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), t);
          Value w = tensor::ExtractOp::create(nb, nloc, classWeight, index);
          if (!w.getType().isF32())
            w = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), w);
          w = arith::SelectOp::create(nb, nloc, kept, w, zero);
          yields.push_back(arith::AddFOp::create(nb, nloc, args[2], w));
        }
        linalg::YieldOp::create(nb, nloc, yields);
      });
  mean.keptCount = extractF32(sums.getResult(0));
  if (!classWeight) {
    mean.divisor = mean.keptCount;
    return mean;
  }
  Value weightSum = extractF32(sums.getResult(1));
  if (op.getZLossScale().isZero() && !op.getDynamicZLossScale()) {
    mean.divisor = weightSum;
    return mean;
  }
  // Σ ce_i / W + Σ z_i / K = Σ (ce_i · K / W + z_i) / K: the chunks see the
  // class weights times K / W (1 when every row is ignored).
  mean.divisor = mean.keptCount;
  Value anyKept = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                        mean.keptCount, constF32(0));
  Value scale = arith::SelectOp::create(
      b, loc, anyKept, arith::DivFOp::create(b, loc, mean.keptCount, weightSum),
      constF32(1));
  Value weights32 = convertFloatTensor(b, loc, classWeight, f32);
  Value init = tensor::EmptyOp::create(b, loc, {size(weights32, 0)}, f32);
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  mean.classWeight =
      linalg::GenericOp::create(
          b, loc, init.getType(), weights32, init, ArrayRef<AffineMap>{id, id},
          {utils::IteratorType::parallel},
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(
                nb, nloc,
                ValueRange{arith::MulFOp::create(nb, nloc, args[0], scale)});
          })
          .getResult(0);
  return mean;
}

/// The chunks' grad_output of a `mean`: grad_output / D, or 0 when D is 0
/// (every row ignored: zero gradients, never NaN).
Value ChunkEmitter::emitChunkGradOutput(const MeanNormalizers &mean) {
  Value g = extractF32(gradOutput);
  Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         mean.divisor, constF32(0));
  Value scaled = arith::SelectOp::create(
      b, loc, positive, arith::DivFOp::create(b, loc, g, mean.divisor),
      constF32(0));
  return scalarTensor(scaled);
}

SmallVector<Value> ChunkEmitter::emit() {
  unsigned next = 0;
  ValueRange operands = op->getOperands();
  gradOutput = op.computesGradient() ? operands[next++] : Value();
  Value hidden = operands[next++];
  weight = operands[next++];
  bias = op.getBias() ? operands[next++] : Value();
  Value fullTarget = operands[next++];
  classWeight = op.getClassWeight() ? operands[next++] : Value();

  int64_t rowDims = op.getHidden().getType().getRank() - 1;
  Reduction reduction = op.getReduction();
  bool perRow = reduction == Reduction::none;
  rows = collapseRows(b, loc, hidden, rowDims);
  target = collapseRows(b, loc, fullTarget, rowDims);
  if (gradOutput && perRow)
    gradOutput = collapseRows(b, loc, gradOutput, rowDims);

  MeanNormalizers mean;
  mean.classWeight = classWeight;
  if (reduction == Reduction::mean) {
    mean = emitMeanNormalizers();
    if (gradOutput)
      gradOutput = emitChunkGradOutput(mean);
  }
  Reduction chunkReduction = perRow ? Reduction::none : Reduction::sum;

  // The loop's state: the losses (f32 sums, or per-row f32 tensors) and the
  // gradients.
  OpFoldResult numRows = size(rows, 0), features = size(rows, 1),
               classes = size(weight, 0);
  SmallVector<Value> inits;
  auto addLossInit = [&]() {
    inits.push_back(
        perRow ? tensor::EmptyOp::create(b, loc, {numRows}, f32).getResult()
               : constF32(0));
  };
  if (op.computesLoss()) {
    addLossInit();
    if (op.getZLoss())
      addLossInit();
  }
  Type hiddenElt = op.getHidden().getType().getElementType();
  if (op.computesGradient()) {
    inits.push_back(
        tensor::EmptyOp::create(b, loc, {numRows, features}, hiddenElt));
    inits.push_back(buildZeroTensor(b, loc, {classes, features}));
    if (bias)
      inits.push_back(buildZeroTensor(b, loc, {classes}));
  }

  Value upper = getValueOrCreateConstantIndexOp(b, loc, numRows);
  Value step = constIndex(rowsPerChunk);
  auto loop = scf::ForOp::create(
      b, loc, constIndex(0), upper, step, inits,
      [&](OpBuilder &lb, Location lloc, Value iv, ValueRange state) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value remaining = arith::SubIOp::create(b, loc, upper, iv);
        Value chunk = arith::MinSIOp::create(b, loc, step, remaining);
        OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
        Value h = tensor::ExtractSliceOp::create(
            b, loc, rows, ArrayRef<OpFoldResult>{iv, zero},
            ArrayRef<OpFoldResult>{chunk, features},
            ArrayRef<OpFoldResult>{one, one});
        Value t = tensor::ExtractSliceOp::create(
            b, loc, target, ArrayRef<OpFoldResult>{iv},
            ArrayRef<OpFoldResult>{chunk}, ArrayRef<OpFoldResult>{one});
        Value g = gradOutput;
        if (g && perRow)
          g = tensor::ExtractSliceOp::create(
              b, loc, gradOutput, ArrayRef<OpFoldResult>{iv},
              ArrayRef<OpFoldResult>{chunk}, ArrayRef<OpFoldResult>{one});
        Value logits = buildProjection(b, loc, h, weight, bias);
        Operation *ce = buildLinearLoss(b, loc, op, chunkReduction, g, logits,
                                        t, mean.classWeight,
                                        op.getLossScalars());

        SmallVector<Value> yields;
        unsigned result = 0, slot = 0;
        auto accumulateLoss = [&]() {
          Value acc = state[slot++];
          Value part = ce->getResult(result++);
          yields.push_back(
              perRow ? Value(tensor::InsertSliceOp::create(
                           b, loc, part, acc, ArrayRef<OpFoldResult>{iv},
                           ArrayRef<OpFoldResult>{chunk},
                           ArrayRef<OpFoldResult>{one}))
                     : Value(arith::AddFOp::create(b, loc, acc,
                                                   extractF32(part))));
        };
        if (op.computesLoss()) {
          accumulateLoss();
          if (op.getZLoss())
            accumulateLoss();
        }
        if (op.computesGradient()) {
          Value dlogits = ce->getResult(result);
          Value dRows =
              buildHiddenGradient(b, loc, dlogits, weight,
                                  buildZeroTensor(b, loc, {chunk, features}));
          dRows = convertFloatTensor(b, loc, dRows, hiddenElt);
          yields.push_back(tensor::InsertSliceOp::create(
              b, loc, dRows, state[slot++], ArrayRef<OpFoldResult>{iv, zero},
              ArrayRef<OpFoldResult>{chunk, features},
              ArrayRef<OpFoldResult>{one, one}));
          yields.push_back(
              buildWeightGradient(b, loc, dlogits, h, state[slot++]));
          if (bias)
            yields.push_back(buildBiasGradient(b, loc, dlogits, state[slot++]));
        }
        scf::YieldOp::create(b, loc, yields);
      });

  // Results: the reduced losses divided by the global normalizers, the
  // gradients rounded once and given the op's result types.
  SmallVector<Value> results;
  unsigned slot = 0;
  auto finishLoss = [&](Value resultValue, Value divisor) {
    Value v = loop.getResult(slot++);
    if (!perRow) {
      if (divisor)
        v = arith::DivFOp::create(b, loc, v, divisor);
      v = scalarTensor(v);
    }
    results.push_back(restoreRows(b, loc, v, hidden, resultValue.getType()));
  };
  bool isMean = reduction == Reduction::mean;
  if (op.computesLoss()) {
    finishLoss(op.getLoss(), isMean ? mean.divisor : Value());
    if (Value z = op.getZLoss())
      finishLoss(z, isMean ? mean.keptCount : Value());
  }
  if (op.computesGradient()) {
    results.push_back(restoreRows(b, loc, loop.getResult(slot++), hidden,
                                  op.getDHidden().getType()));
    results.push_back(restoreRows(b, loc, loop.getResult(slot++), hidden,
                                  op.getDWeight().getType()));
    if (Value dBias = op.getDBias())
      results.push_back(
          restoreRows(b, loc, loop.getResult(slot++), hidden, dBias.getType()));
  }
  return results;
}

void mlir::xent::chunkLinearCrossEntropy(RewriterBase &rewriter,
                                         LinearCrossEntropyOpInterface op,
                                         int64_t rows) {
  rewriter.setInsertionPoint(op);
  SmallVector<Value> results = ChunkEmitter(rewriter, op, rows).emit();
  rewriter.replaceOp(op, results);
}

namespace {
struct XentChunkLinearCrossEntropyPass
    : public xent::impl::XentChunkLinearCrossEntropyBase<
          XentChunkLinearCrossEntropyPass> {
  using Base::Base;

  void runOnOperation() override {
    if (rows <= 0) {
      getOperation()->emitError("rows must be positive, got ")
          << static_cast<int64_t>(rows);
      return signalPassFailure();
    }
    SmallVector<LinearCrossEntropyOpInterface> ops;
    getOperation()->walk(
        [&](LinearCrossEntropyOpInterface op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (LinearCrossEntropyOpInterface op : ops)
      chunkLinearCrossEntropy(rewriter, op, rows);
  }
};
} // namespace
