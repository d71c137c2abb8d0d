//===- TestExpOnFmaPipe.cpp - The kernels' FMA-pipe exp on the CPU --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// test-xent-exp-on-fma-pipe replaces each f32 `math.exp` with the op
// sequence the gradient kernels emit for it on the FMA pipe
// (emitExpOnFmaPipeF32, option split-exponentials). The sequence is plain
// arith and llvm.intr.fma, so a module lowered for the host runs it: the
// CPU integration test (test/Integration/CPU/exp-on-fma-pipe.mlir) measures
// its error against f64 exp2 of the same z = x·log2 e where no GPU is at
// hand.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct TestExpOnFmaPipePass
    : public PassWrapper<TestExpOnFmaPipePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestExpOnFmaPipePass)

  StringRef getArgument() const final { return "test-xent-exp-on-fma-pipe"; }
  StringRef getDescription() const final {
    return "Replace f32 math.exp with the kernels' FMA-pipe exponential "
           "(valid for arguments <= 0 and NaN)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    // What the sequence is made of: arith ops and llvm.intr.fma.
    registry.insert<arith::ArithDialect, LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    SmallVector<math::ExpOp> exps;
    getOperation().walk([&](math::ExpOp op) {
      if (op.getType().isF32())
        exps.push_back(op);
    });
    for (math::ExpOp op : exps) {
      ImplicitLocOpBuilder b(op.getLoc(), op);
      op.replaceAllUsesWith(xent::emitExpOnFmaPipeF32(b, op.getOperand()));
      op.erase();
    }
  }
};
} // namespace

namespace mlir::xent::test {
void registerTestExpOnFmaPipePass() {
  PassRegistration<TestExpOnFmaPipePass>();
}
} // namespace mlir::xent::test
