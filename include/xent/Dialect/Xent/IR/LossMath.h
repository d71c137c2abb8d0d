//===- LossMath.h - The loss's scalar formulas, written once ----*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The scalar formulas of the loss that the decompositions (linalg.generic
// bodies on tensors) and the GPU kernels share, written once over LossMath:
// the arithmetic, and the functions and the loss's scalars as each consumer
// forms them. MathDialectLossMath is the decompositions' (math dialect ops,
// the scalars of a CrossEntropyConfig); the kernels' is
// KernelEmitter::KernelMath (the NVVM approximations, the kernel's arguments
// and what each thread derives from them once). Every value is an f32
// scalar.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_IR_LOSSMATH_H
#define XENT_DIALECT_XENT_IR_LOSSMATH_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::xent::loss {

/// What the loss formulas are written in, at one insertion point.
class LossMath {
public:
  LossMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  virtual ~LossMath() = default;

  Value cst(double v);
  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value select(Value c, Value t, Value f);

  virtual Value tanh(Value x) = 0;
  /// x / s for the softcap s.
  virtual Value overSoftcap(Value x) = 0;
  /// The softcap s.
  virtual Value softcap() = 0;
  /// True where a run-time softcap is 0 (none); null where it cannot be.
  virtual Value softcapOff() = 0;
  /// 1 - ε and ε / C of label smoothing.
  virtual Value keepShare() = 0;
  virtual Value smoothShare() = 0;
  /// The z-loss scale z.
  virtual Value zLossScale() = 0;

protected:
  OpBuilder &b;
  Location loc;
};

/// The soft-capped logit s·tanh(x / s); x where the softcap is a run-time 0.
/// Where `tanh` is given and the softcap cannot be off, it receives
/// tanh(x / s) (the logit is s times it).
Value softcapLogit(LossMath &m, Value x, Value *tanh = nullptr);
/// The softcap's slope at the capped logit c: 1 - (c / s)²; 1 where the
/// softcap is a run-time 0.
Value softcapSlope(LossMath &m, Value capped);
/// A probability target smoothed: q·(1-ε) + ε/C.
Value smoothedProbability(LossMath &m, Value q);
/// The z-loss term z·lse².
Value zLossTerm(LossMath &m, Value lse);

/// The decompositions' LossMath: math dialect ops, and the scalars of
/// `config` (its operands, or constants of its attributes) read where the
/// formulas first ask for them; C from `numClasses` (for ε / C), a callable
/// that outlives the object.
class MathDialectLossMath final : public LossMath {
public:
  MathDialectLossMath(OpBuilder &b, Location loc,
                      const CrossEntropyConfig &config,
                      function_ref<Value()> numClasses = {})
      : LossMath(b, loc), config(config), numClasses(numClasses) {}

  Value tanh(Value x) override;
  Value overSoftcap(Value x) override;
  Value softcap() override;
  Value softcapOff() override;
  Value keepShare() override;
  Value smoothShare() override;
  Value zLossScale() override;

private:
  Value epsilon();

  const CrossEntropyConfig &config;
  function_ref<Value()> numClasses;
  Value cap, eps;
};

} // namespace mlir::xent::loss

#endif // XENT_DIALECT_XENT_IR_LOSSMATH_H
