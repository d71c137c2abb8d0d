//===- LinearConvert.cpp - Element type conversion of matrices ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The kernel the linear family's lowering (LinearLowering.cpp) converts
// matrices with: the chunk's f32 dlogits to the hidden's type for the
// backward GEMMs, the bias to f32 for the GEMM's epilogue, the f32
// accumulators of d_weight and d_bias to their results.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xent;

gpu::GPUFuncOp mlir::xent::buildConvertRowsKernel(OpBuilder &b, Location loc,
                                                  StringRef name, Type from,
                                                  Type to) {
  MLIRContext *ctx = b.getContext();
  auto func = gpu::GPUFuncOp::create(
      b, loc, name,
      b.getFunctionType(
          {getBufferType(ctx, 2, from), getBufferType(ctx, 2, to)}, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(kConvertThreads), 1, 1}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  Value src = func.getArgument(0), dst = func.getArgument(1);
  // Block `row` converts its row, the threads striding over the columns.
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value rows = memref::DimOp::create(b, loc, src, 0);
  Value cols = memref::DimOp::create(b, loc, src, 1);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, rows);
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto convertValue = [&](OpBuilder &lb, Location lloc, Value v) -> Value {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(lb, lloc, to, v);
    if (from != to)
      return arith::TruncFOp::create(lb, lloc, to, v);
    return v;
  };
  // Groups of kConvertUnroll columns kConvertThreads apart, loaded before
  // any is stored (several loads in flight per thread), while the group's
  // last column is inside the row; then the remaining columns one by one.
  Value step = cst(kConvertThreads);
  Value span = cst(kConvertThreads * kConvertUnroll);
  Value reach = arith::AddIOp::create(
      b, loc, tid, cst(kConvertThreads * (kConvertUnroll - 1)));
  Value hasGroup =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, reach, cols);
  Value groups = arith::SelectOp::create(
      b, loc, hasGroup,
      arith::DivUIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc,
                                arith::SubIOp::create(b, loc, cols, reach),
                                cst(kConvertThreads * kConvertUnroll - 1)),
          span),
      cst(0));
  scf::ForOp::create(
      b, loc, cst(0), groups, cst(1), ValueRange{},
      [&](OpBuilder &lb, Location lloc, Value k, ValueRange) {
        Value base = arith::AddIOp::create(
            lb, lloc, tid, arith::MulIOp::create(lb, lloc, k, span));
        SmallVector<Value> columns, values;
        for (int64_t u = 0; u < kConvertUnroll; ++u) {
          columns.push_back(arith::AddIOp::create(
              lb, lloc, base,
              arith::ConstantIndexOp::create(lb, lloc, u * kConvertThreads)));
          values.push_back(memref::LoadOp::create(
              lb, lloc, src, ValueRange{row, columns.back()}));
        }
        for (auto [col, v] : llvm::zip(columns, values))
          memref::StoreOp::create(lb, lloc, convertValue(lb, lloc, v), dst,
                                  ValueRange{row, col});
        scf::YieldOp::create(lb, lloc);
      });
  Value rest = arith::AddIOp::create(
      b, loc, tid, arith::MulIOp::create(b, loc, groups, span));
  scf::ForOp::create(
      b, loc, rest, cols, step, ValueRange{},
      [&](OpBuilder &lb, Location lloc, Value col, ValueRange) {
        Value v = memref::LoadOp::create(lb, lloc, src, ValueRange{row, col});
        memref::StoreOp::create(lb, lloc, convertValue(lb, lloc, v), dst,
                                ValueRange{row, col});
        scf::YieldOp::create(lb, lloc);
      });
  b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(b, loc);
  return func;
}
