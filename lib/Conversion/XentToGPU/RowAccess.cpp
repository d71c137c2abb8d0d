//===- RowAccess.cpp - Row indexing and vector loads of the xent kernels --===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// How a kernel finds its row in a buffer of any strides: the row's index,
// its linear offset, a unit-stride view of it for vector loads (when the
// strides and alignment allow them, checked at run time), and the guarded,
// unrolled 16-byte loads of the vector walks.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::xent;

SmallVector<Value> KernelEmitter::emitDelinearize(Value row, Value buffer,
                                                  int64_t skip) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < cast<MemRefType>(buffer.getType()).getRank(); ++d)
    if (d != skip)
      dims.push_back(d);
  SmallVector<Value> index(dims.size());
  // Innermost dim first: index_d = rest mod size_d, rest /= size_d; the
  // outermost takes the rest (row < count, so no size is 0 here).
  Value rest = row;
  for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k > 0; --k) {
    Value size = memref::DimOp::create(b, buffer, dims[k]);
    index[k] = arith::RemUIOp::create(b, rest, size);
    rest = arith::DivUIOp::create(b, rest, size);
  }
  if (!dims.empty())
    index[0] = rest;
  return index;
}

Value KernelEmitter::emitRowCount(Value buffer, int64_t skip) {
  Value count = cstIdx(1);
  for (int64_t d = 0; d < cast<MemRefType>(buffer.getType()).getRank(); ++d)
    if (d != skip)
      count =
          arith::MulIOp::create(b, count, memref::DimOp::create(b, buffer, d));
  return count;
}

Value KernelEmitter::emitRowOffset(Value buffer,
                                   memref::ExtractStridedMetadataOp meta) {
  if (!meta)
    meta = memref::ExtractStridedMetadataOp::create(b, buffer);
  Value offset = meta.getOffset();
  for (auto [k, idx] : llvm::enumerate(at.rowIdx)) {
    int64_t d = static_cast<int64_t>(k) < config.axis ? k : k + 1;
    offset = arith::AddIOp::create(
        b, offset, arith::MulIOp::create(b, idx, meta.getStrides()[d]));
  }
  return offset;
}

Value KernelEmitter::unitStrideView(Value buffer,
                                    memref::ExtractStridedMetadataOp meta,
                                    Value offset, Value size) {
  auto type = cast<MemRefType>(buffer.getType());
  auto viewType = MemRefType::get(
      {ShapedType::kDynamic}, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}));
  return memref::ReinterpretCastOp::create(
      b, viewType, meta.getBaseBuffer(), OpFoldResult(offset),
      ArrayRef<OpFoldResult>{OpFoldResult(size)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

Value KernelEmitter::rowVectorView(Value buffer) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, buffer);
  return unitStrideView(buffer, meta, emitRowOffset(buffer, meta),
                        at.numClasses);
}

Value KernelEmitter::emitIsAlignedUnitStride(Value ok, Value buffer,
                                             Value stride, Value offset,
                                             int64_t width) {
  // `ok`, stride 1, and a start (the aligned pointer plus `offset`
  // elements) aligned to `width` elements.
  auto type = cast<MemRefType>(buffer.getType());
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  ok = arith::AndIOp::create(
      b, ok,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, stride, cstIdx(1)));
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, buffer);
  Value start = arith::AddIOp::create(
      b, ptr, arith::MulIOp::create(b, offset, cstIdx(bytes)));
  Value aligned = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, start, cstIdx(width * bytes)), cstIdx(0));
  return arith::AndIOp::create(b, ok, aligned);
}

Value KernelEmitter::emitCanVectorize(ArrayRef<Value> buffers, int64_t width) {
  Value divisible = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, at.numClasses, cstIdx(width)), cstIdx(0));
  Value ok = divisible;
  for (Value buffer : buffers) {
    // Classes side by side (stride 1) from a 16-byte aligned row start.
    auto meta = memref::ExtractStridedMetadataOp::create(b, buffer);
    ok = emitIsAlignedUnitStride(ok, buffer, meta.getStrides()[config.axis],
                                 emitRowOffset(buffer, meta), width);
  }
  return ok;
}

Value KernelEmitter::emitGuardedVectorLoad(VectorType type, Value row, Value c,
                                           Value inside, int64_t width) {
  auto ifOp = scf::IfOp::create(b, TypeRange{type}, inside,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value v = vector::LoadOp::create(
      b, type, row, ValueRange{c}, /*nontemporal=*/false,
      llvm::MaybeAlign(width * type.getElementTypeBitWidth() / 8));
  scf::YieldOp::create(b, v);
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value zeros = arith::ConstantOp::create(
      b, type,
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
  scf::YieldOp::create(b, zeros);
  return ifOp.getResult(0);
}

KernelEmitter::UnrolledStep KernelEmitter::emitUnrolledLoads(Value row,
                                                             Value c0,
                                                             int64_t chunk,
                                                             int64_t width) {
  auto vecType = VectorType::get({width}, spec.logitsType);
  UnrolledStep step;
  for (int64_t u = 0; u < kUnroll; ++u) {
    Value cu = arith::AddIOp::create(b, c0, cstIdx(u * chunk));
    step.starts.push_back(cu);
    step.inside.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, cu, at.numClasses));
    step.vecs.push_back(
        row ? emitGuardedVectorLoad(vecType, row, cu, step.inside.back(), width)
            : Value());
  }
  return step;
}

void KernelEmitter::unpackVector(Value start, Value vec, int64_t width,
                                 SmallVectorImpl<Value> &cs,
                                 SmallVectorImpl<Value> &xs) {
  for (const RowElement &el : unpackElements(start, vec, width)) {
    cs.push_back(el.c);
    xs.push_back(el.x);
  }
}

SmallVector<RowElement> KernelEmitter::unpackElements(Value start, Value vec,
                                                      int64_t width) {
  SmallVector<RowElement> elements;
  for (int64_t e = 0; e < width; ++e) {
    RowElement el;
    el.c = arith::AddIOp::create(b, start, cstIdx(e));
    if (vec)
      el.x = emitLogit(vector::ExtractOp::create(b, vec, e),
                       splitsGradientExponentials() ? &el.t : nullptr);
    el.lane = e;
    elements.push_back(el);
  }
  return elements;
}

KernelEmitter::ClassViews KernelEmitter::emitClassViews() {
  ClassViews views;
  if (readsTargetPerClass())
    views.target = rowVectorView(args.target);
  if (readsWeightPerClass()) {
    auto meta = memref::ExtractStridedMetadataOp::create(b, args.weight);
    views.weight = unitStrideView(args.weight, meta, meta.getOffset(),
                                  meta.getSizes()[0]);
  }
  return views;
}

Value KernelEmitter::emitCanVectorizeRow(SmallVector<Value> buffers,
                                         int64_t width) {
  if (readsTargetPerClass())
    buffers.push_back(args.target);
  Value ok = emitCanVectorize(buffers, width);
  if (!readsWeightPerClass())
    return ok;
  // The walks' vectors start at multiples of `width` classes: the weights
  // from class 0.
  auto meta = memref::ExtractStridedMetadataOp::create(b, args.weight);
  // The weights' two conditions joined first, then with the rows' (with
  // this order ptxas gives bf16 weighted smoothing 81 registers, not 82).
  Value weights = emitIsAlignedUnitStride(
      arith::ConstantOp::create(b, b.getBoolAttr(true)), args.weight,
      meta.getStrides()[0], meta.getOffset(), width);
  return arith::AndIOp::create(b, ok, weights);
}

KernelEmitter::ClassVectors
KernelEmitter::emitClassVectors(const ClassViews &views, Value start,
                                Value inside, int64_t width) {
  auto load = [&](Value view) -> Value {
    if (!view)
      return Value();
    auto type = VectorType::get(
        {width}, cast<MemRefType>(view.getType()).getElementType());
    return emitGuardedVectorLoad(type, view, start, inside, width);
  };
  return {load(views.target), load(views.weight)};
}

void KernelEmitter::bindClassVectors(ArrayRef<Value> cs,
                                     const ClassVectors &vectors) {
  clearClassVectors();
  for (auto [e, c] : llvm::enumerate(cs)) {
    if (vectors.target)
      stepTargets[c] = vector::ExtractOp::create(b, vectors.target, e);
    if (vectors.weight)
      stepWeights[c] = vector::ExtractOp::create(b, vectors.weight, e);
  }
}

SmallVector<KernelEmitter::ClassVectors>
KernelEmitter::emitClassVectors(const ClassViews &views,
                                const UnrolledStep &step, int64_t width) {
  SmallVector<ClassVectors> vectors;
  for (auto [start, inside] : llvm::zip(step.starts, step.inside))
    vectors.push_back(emitClassVectors(views, start, inside, width));
  return vectors;
}
