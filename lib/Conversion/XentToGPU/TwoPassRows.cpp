//===- TwoPassRows.cpp - The two-pass walk over a row ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The row walk of every row kernel that does not keep its row on chip: the
// statistics read the logits, the gradient reads them again as it writes
// dlogits. Threads go over classes c = tid, tid + T, ... with scalar
// accesses, or over 16-byte vectors (kUnroll of them in flight per thread)
// where the row's strides and alignment allow it at run time.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::xent;

SmallVector<Value>
KernelEmitter::TwoPassWalk::emitPartialStatistics(ArrayRef<Value> init,
                                                  const ReductionPlan &plan) {
  ImplicitLocOpBuilder &b = e.b;
  SmallVector<Type> types =
      llvm::map_to_vector(init, [](Value v) { return v.getType(); });

  // Scalar walk: classes tid, tid + T, ...
  auto scalarLoop = [&]() -> SmallVector<Value> {
    auto loop = scf::ForOp::create(
        b, e.at.tid, e.at.numClasses, e.cstIdx(e.geometry.threads), init,
        [&](OpBuilder &nb, Location loc, Value c, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(
              b, e.emitStatisticsStep({c}, {e.loadLogit(c)}, acc, plan));
        });
    return SmallVector<Value>(loop.getResults());
  };

  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  if (!(e.spec.contiguousRows && width > 1))
    return scalarLoop();
  // Vector walk: each thread loads `width` consecutive logits at a time
  // (16 bytes), threads side by side.
  // The per-class operands (probability targets, class weights) as vectors
  // beside the logits' (emitCanVectorizeRow).
  Value canVectorize = e.emitCanVectorizeRow({e.args.x}, width);
  auto ifOp = scf::IfOp::create(b, types, canVectorize,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value x2 = e.rowVectorView(e.args.x);
    ClassViews views = e.emitClassViews();
    Value first = arith::MulIOp::create(b, e.at.tid, e.cstIdx(width));
    int64_t chunk = e.geometry.threads * width;
    // kUnroll loads are issued before any is used, so each thread keeps
    // several 16-byte requests in flight.
    auto loop = scf::ForOp::create(
        b, first, e.at.numClasses, e.cstIdx(chunk * kUnroll), init,
        [&](OpBuilder &nb, Location loc, Value c0, ValueRange accRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          UnrolledStep step = e.emitUnrolledLoads(x2, c0, chunk, width);
          SmallVector<ClassVectors> classes =
              e.emitClassVectors(views, step, width);
          SmallVector<Value> acc(accRange);
          for (int64_t u = 0; u < kUnroll; ++u) {
            SmallVector<Value> cs, xs;
            e.unpackVector(e.inRowStart(step, u), step.vecs[u], width, cs, xs);
            e.bindClassVectors(cs, classes[u]);
            SmallVector<Value> next = e.emitStatisticsStep(cs, xs, acc, plan);
            for (auto [a, n] : llvm::zip(acc, next))
              a = e.select(step.inside[u], n, a);
          }
          e.clearClassVectors();
          scf::YieldOp::create(b, acc);
        });
    scf::YieldOp::create(b, loop.getResults());
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, scalarLoop());
  }
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value>
KernelEmitter::TwoPassWalk::emitAllReduce(ArrayRef<Value> partial,
                                          const ReductionPlan &plan) {
  return e.emitBlockAllReduce(partial, plan, e.args.reduceScratch);
}

void KernelEmitter::TwoPassWalk::emitRowWrite(
    bool readLogits, function_ref<Value(const RowElement &)> fn) {
  ImplicitLocOpBuilder &b = e.b;
  // The vectors written have the width of those read (16-byte vectors of
  // the logits), in the gradient's type.
  Type outType = e.spec.getDlogitsType();
  Value dlogits = e.args.dlogits;
  auto scalarLoop = [&]() {
    scf::ForOp::create(
        b, e.at.tid, e.at.numClasses, e.cstIdx(e.geometry.threads),
        ValueRange{}, [&](OpBuilder &nb, Location loc, Value c, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          RowElement el{c, readLogits ? e.loadLogit(c) : Value()};
          memref::StoreOp::create(b, e.fromF32(fn(el), outType), dlogits,
                                  e.rowIndex(c));
          scf::YieldOp::create(b);
        });
  };
  int64_t width = e.geometry.vectorWidth(e.spec.logitsType);
  if (!(e.spec.contiguousRows && width > 1)) {
    scalarLoop();
    return;
  }
  SmallVector<Value> buffers = {dlogits};
  if (readLogits)
    buffers.push_back(e.args.x);
  Value canVectorize = readLogits ? e.emitCanVectorizeRow(buffers, width)
                                  : e.emitCanVectorize(buffers, width);
  auto ifOp = scf::IfOp::create(b, canVectorize, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scalarLoop();
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value x2 = readLogits ? e.rowVectorView(e.args.x) : Value();
  ClassViews views = readLogits ? e.emitClassViews() : ClassViews();
  Value d2 = e.rowVectorView(dlogits);
  auto vecType = VectorType::get({width}, outType);
  llvm::MaybeAlign align(width * vecType.getElementTypeBitWidth() / 8);
  Value first = arith::MulIOp::create(b, e.at.tid, e.cstIdx(width));
  int64_t chunk = e.geometry.threads * width;
  scf::ForOp::create(
      b, first, e.at.numClasses, e.cstIdx(chunk * kUnroll), ValueRange{},
      [&](OpBuilder &nb, Location loc, Value c0, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        UnrolledStep step = e.emitUnrolledLoads(x2, c0, chunk, width);
        SmallVector<ClassVectors> classes =
            e.emitClassVectors(views, step, width);
        for (int64_t u = 0; u < kUnroll; ++u) {
          SmallVector<RowElement> elements =
              e.unpackElements(e.inRowStart(step, u), step.vecs[u], width);
          e.bindClassVectors(
              llvm::map_to_vector(elements,
                                  [](const RowElement &el) { return el.c; }),
              classes[u]);
          SmallVector<Value> out;
          for (const RowElement &el : elements)
            out.push_back(e.fromF32(fn(el), outType));
          Value packed = vector::FromElementsOp::create(b, vecType, out);
          auto store = scf::IfOp::create(b, step.inside[u],
                                         /*withElseRegion=*/false);
          OpBuilder::InsertionGuard storeGuard(b);
          b.setInsertionPointToStart(store.thenBlock());
          vector::StoreOp::create(b, packed, d2, ValueRange{step.starts[u]},
                                  /*nontemporal=*/false, align);
        }
        e.clearClassVectors();
        scf::YieldOp::create(b);
      });
}
