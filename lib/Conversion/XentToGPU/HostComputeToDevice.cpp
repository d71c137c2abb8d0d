//===- HostComputeToDevice.cpp - Host buffer code onto the device ---------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// xent-host-compute-to-device: in xent-gpu-pipeline a function's buffers are
// device memory, so what the host code computes on them (the linalg that a
// frontend leaves around the ops xent-recognize raised) runs on the device:
// linalg ops become parallel loops, flattened into one loop, tiled into
// blocks of threads and mapped by upstream's gpu-map-parallel-loops and
// convert-parallel-loops-to-gpu; host allocations become device ones. What
// still reads or writes a buffer on the host is an error.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::xent {
#define GEN_PASS_DEF_XENTHOSTCOMPUTETODEVICE
#include "xent/Conversion/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;

/// Host code: neither device code nor inside a launch's body.
static bool isHostCode(Operation *op) {
  return !op->getParentOfType<gpu::GPUModuleOp>() &&
         !op->getParentOfType<gpu::LaunchOp>();
}

/// The buffer `v` is a view of (through view-like ops), or `v` itself.
static Value getRootBuffer(Value v) {
  while (true) {
    if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else if (auto view = v.getDefiningOp<ViewLikeOpInterface>())
      v = view.getViewSource();
    else
      return v;
  }
}

/// Host memory: a stack buffer or a global of the host module.
static bool isHostMemory(Value buffer) {
  Operation *def = getRootBuffer(buffer).getDefiningOp();
  return isa_and_nonnull<memref::AllocaOp, memref::GetGlobalOp>(def);
}

/// `buffer` and every view of it, transitively.
static void collectAliases(Value buffer, SmallVectorImpl<Value> &aliases) {
  aliases.push_back(buffer);
  for (Operation *user : buffer.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (isa<memref::CastOp>(user) || (view && view.getViewSource() == buffer))
      for (Value result : user->getResults())
        collectAliases(result, aliases);
  }
}

/// `op` (a parallel loop without reductions) as a loop over [0, max(n, 1))
/// whose body recovers the original induction variables from the linear
/// index and runs only below n, the iteration count (a grid is never empty).
static scf::ParallelOp flatten(RewriterBase &rewriter, scf::ParallelOp op) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  SmallVector<Value> counts;
  Value total = cst(1);
  for (auto [lb, ub, step] : llvm::zip_equal(
           op.getLowerBound(), op.getUpperBound(), op.getStep())) {
    Value count = arith::CeilDivUIOp::create(
        rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), step);
    counts.push_back(count);
    total = arith::MulIOp::create(rewriter, loc, total, count);
  }
  Value bound = arith::MaxUIOp::create(rewriter, loc, total, cst(1));
  auto flat = scf::ParallelOp::create(rewriter, loc, ValueRange{cst(0)},
                                      ValueRange{bound}, ValueRange{cst(1)});
  rewriter.setInsertionPointToStart(flat.getBody());
  Value index = flat.getInductionVars()[0];
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       index, total);
  auto ifOp = scf::IfOp::create(rewriter, loc, inside, /*withElseRegion=*/false);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> ivs(counts.size());
  Value rest = index;
  for (int64_t d = static_cast<int64_t>(counts.size()) - 1; d >= 0; --d) {
    Value q = arith::RemUIOp::create(rewriter, loc, rest, counts[d]);
    rest = arith::DivUIOp::create(rewriter, loc, rest, counts[d]);
    ivs[d] = arith::AddIOp::create(
        rewriter, loc, op.getLowerBound()[d],
        arith::MulIOp::create(rewriter, loc, q, op.getStep()[d]));
  }
  Block *body = op.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, ifOp.thenBlock()->getTerminator(), ivs);
  rewriter.eraseOp(op);
  return flat;
}

namespace {

struct XentHostComputeToDevicePass
    : public xent::impl::XentHostComputeToDeviceBase<
          XentHostComputeToDevicePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(lowerLinalg(func)))
        return signalPassFailure();
    // The loops onto the device (their bodies become kernels, outlined).
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
    pm.addPass(createGpuKernelOutliningPass());
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
    for (func::FuncOp func : funcs) {
      moveAllocations(func);
      if (failed(checkHostAccesses(func)))
        return signalPassFailure();
    }
  }

  /// Each linalg op of `func`'s host code as parallel loops, tiled for
  /// thread blocks; host constants that they read copied to the device.
  LogicalResult lowerLinalg(func::FuncOp func);
  /// memref.alloc / dealloc / copy of the host code as their gpu forms.
  void moveAllocations(func::FuncOp func);
  /// An error for each host read or write of a buffer left.
  LogicalResult checkHostAccesses(func::FuncOp func);
};

} // namespace

LogicalResult XentHostComputeToDevicePass::lowerLinalg(func::FuncOp func) {
  SmallVector<linalg::LinalgOp> ops;
  func.walk([&](linalg::LinalgOp op) {
    if (isHostCode(op) && op.hasPureBufferSemantics())
      ops.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::LinalgOp op : ops) {
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    // A host constant that the op reads: a copy in device memory.
    for (OpOperand &operand : op->getOpOperands()) {
      Value buffer = operand.get();
      if (!isa<MemRefType>(buffer.getType()) ||
          !getRootBuffer(buffer).getDefiningOp<memref::GetGlobalOp>())
        continue;
      auto type = cast<MemRefType>(buffer.getType());
      if (!type.hasStaticShape() || !type.getLayout().isIdentity())
        return op->emitOpError("reads a host constant of type ")
               << type << ", which cannot be copied to the device as it is";
      Value device =
          gpu::AllocOp::create(rewriter, loc, type, /*asyncToken=*/Type(),
                               ValueRange{}, ValueRange{}, ValueRange{})
              .getMemref();
      gpu::MemcpyOp::create(rewriter, loc, TypeRange{}, ValueRange{}, device,
                            buffer);
      operand.set(device);
    }
    bool anyParallel = llvm::any_of(op.getIteratorTypesArray(),
                                    linalg::isParallelIterator);
    scf::ParallelOp single;
    if (!anyParallel) {
      // No parallel loop: one thread, in a parallel loop of one iteration.
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      single = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                       ValueRange{one}, ValueRange{one});
      rewriter.moveOpBefore(op, single.getBody()->getTerminator());
      rewriter.setInsertionPoint(op);
    }
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToParallelLoops(rewriter, op);
    if (failed(loops))
      return op->emitOpError("cannot be lowered to parallel loops for the "
                             "device");
    rewriter.eraseOp(op);
    if (single || loops->empty())
      continue;
    // The loop nest's parallel loop as one loop over its whole iteration
    // space (the last dim fastest: neighbouring threads, neighbouring
    // elements), tiled by `threads`: blocks of `threads` threads along x,
    // within every limit of a launch's dims.
    auto parallel = dyn_cast<scf::ParallelOp>(loops->front());
    if (!parallel)
      continue;
    scf::tileParallelLoop(flatten(rewriter, parallel), {threads},
                          /*noMinMaxBounds=*/true);
  }
  return success();
}

void XentHostComputeToDevicePass::moveAllocations(func::FuncOp func) {
  IRRewriter rewriter(func.getContext());
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isHostCode(op) &&
        isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      rewriter.replaceOpWithNewOp<gpu::MemcpyOp>(
          op, TypeRange{}, ValueRange{}, copy.getTarget(), copy.getSource());
      continue;
    }
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      rewriter.replaceOpWithNewOp<gpu::DeallocOp>(op, Type(), ValueRange{},
                                                  dealloc.getMemref());
      continue;
    }
    auto alloc = cast<memref::AllocOp>(op);
    auto device = gpu::AllocOp::create(
        rewriter, loc, alloc.getType(), /*asyncToken=*/Type(), ValueRange{},
        alloc.getDynamicSizes(), alloc.getSymbolOperands());
    rewriter.replaceOp(alloc, device.getMemref());
    // Freed after its last use in the block, unless it leaves the function
    // (returned or passed on) or is freed already.
    SmallVector<Value> aliases;
    collectAliases(device.getMemref(), aliases);
    Block *block = device->getBlock();
    Operation *last = device;
    bool escapes = false;
    for (Value alias : aliases) {
      for (Operation *user : alias.getUsers()) {
        if (isa<func::ReturnOp, func::CallOp, memref::StoreOp,
                memref::DeallocOp, gpu::DeallocOp>(user)) {
          escapes = true;
          break;
        }
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (!ancestor) {
          escapes = true;
          break;
        }
        if (last->isBeforeInBlock(ancestor))
          last = ancestor;
      }
    }
    if (escapes)
      continue;
    rewriter.setInsertionPointAfter(last);
    gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{},
                           device.getMemref());
  }
}

LogicalResult XentHostComputeToDevicePass::checkHostAccesses(func::FuncOp func) {
  WalkResult result = func.walk([&](Operation *op) {
    // Device-side ops, calls and ops of unknown effects (unregistered) are
    // not judged.
    Dialect *dialect = op->getDialect();
    if (!isHostCode(op) || !dialect || isa<gpu::GPUDialect>(dialect) ||
        isa<CallOpInterface>(op))
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return WalkResult::advance();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (!isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect()))
        continue;
      Value buffer = effect.getValue();
      if (!buffer || !isa<BaseMemRefType>(buffer.getType()) ||
          isHostMemory(buffer))
        continue;
      op->emitOpError("reads or writes a buffer on the host, where "
                      "xent-gpu-pipeline's buffers are device memory: only "
                      "linalg ops and copies move to the device");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
