//===- ViewArith.cpp - The view of arith and math ops ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "View.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

//===----------------------------------------------------------------------===//
// Classification of scalar operations
//===----------------------------------------------------------------------===//

std::optional<ElementwiseSpec>
recognize::detail::classifyArithMath(Operation *op) {
  using K = ElementwiseKind;
  auto spec = [](K k) { return std::optional<ElementwiseSpec>({k}); };
  auto castSpec = [](CastKind c) {
    return std::optional<ElementwiseSpec>({K::Cast, 0, c});
  };
  return TypeSwitch<Operation *, std::optional<ElementwiseSpec>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([&](auto) { return spec(K::Add); })
      .Case<arith::SubFOp, arith::SubIOp>([&](auto) { return spec(K::Sub); })
      .Case<arith::MulFOp, arith::MulIOp>([&](auto) { return spec(K::Mul); })
      .Case<arith::DivFOp>([&](auto) { return spec(K::Div); })
      .Case<arith::NegFOp>([&](auto) { return spec(K::Neg); })
      .Case<math::ExpOp>([&](auto) { return spec(K::Exp); })
      .Case<math::LogOp>([&](auto) { return spec(K::Log); })
      .Case<math::TanhOp>([&](auto) { return spec(K::Tanh); })
      .Case<math::AbsFOp>([&](auto) { return spec(K::Abs); })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(
          [&](auto) { return spec(K::Max); })
      .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
          [&](auto) { return spec(K::Min); })
      .Case<arith::SelectOp>([&](auto) { return spec(K::Select); })
      .Case<arith::AndIOp>([&](auto) { return spec(K::And); })
      .Case<arith::OrIOp>([&](auto) { return spec(K::Or); })
      .Case<arith::XOrIOp>([&](auto) { return spec(K::Xor); })
      .Case<arith::CmpFOp>([&](arith::CmpFOp c) {
        return std::optional<ElementwiseSpec>(
            {K::CmpF, static_cast<int64_t>(c.getPredicate())});
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp c) {
        return std::optional<ElementwiseSpec>(
            {K::CmpI, static_cast<int64_t>(c.getPredicate())});
      })
      .Case<arith::ExtFOp>([&](auto) { return castSpec(CastKind::ExtF); })
      .Case<arith::TruncFOp>([&](auto) { return castSpec(CastKind::TruncF); })
      .Case<arith::SIToFPOp>([&](auto) { return castSpec(CastKind::SIToFP); })
      .Case<arith::UIToFPOp>([&](auto) { return castSpec(CastKind::UIToFP); })
      .Case<arith::FPToSIOp>([&](auto) { return castSpec(CastKind::FPToSI); })
      .Case<arith::FPToUIOp>([&](auto) { return castSpec(CastKind::FPToUI); })
      .Case<arith::ExtSIOp>([&](auto) { return castSpec(CastKind::ExtSI); })
      .Case<arith::ExtUIOp>([&](auto) { return castSpec(CastKind::ExtUI); })
      .Case<arith::TruncIOp>([&](auto) { return castSpec(CastKind::TruncI); })
      .Case<arith::IndexCastOp>(
          [&](auto) { return castSpec(CastKind::IndexCast); })
      .Case<arith::IndexCastUIOp>(
          [&](auto) { return castSpec(CastKind::IndexCastUI); })
      .Default([](Operation *) { return std::nullopt; });
}

//===----------------------------------------------------------------------===//
// Views of arith and math ops
//===----------------------------------------------------------------------===//

std::optional<View> ViewAnalysis::visitArithMath(OpResult result) {
  Operation *op = result.getOwner();
  if (auto spec = classifyArithMath(op)) {
    if (isa<ShapedType>(result.getType()))
      return analyzeTensorElementwise(op, spec->kind,
                                      llvm::to_vector(op->getOperands()),
                                      spec->predicate, spec->cast);
    return analyzeScalarOp(op);
  }
  return std::nullopt;
}

View ViewAnalysis::analyzeScalarOp(Operation *op) {
  std::optional<ElementwiseSpec> spec = classifyArithMath(op);
  if (!spec || op->getNumResults() != 1)
    return leaf(op->getResult(0));
  SmallVector<Node *> operands;
  for (Value operand : op->getOperands()) {
    View v = get(operand);
    if (!v.dims.empty())
      return leaf(op->getResult(0));
    operands.push_back(v.node);
  }
  Node *node =
      makeElementwise(spec->kind, getElementType(op->getResult(0)), operands);
  node->predicate = spec->predicate;
  if (spec->cast)
    node->cast = *spec->cast;
  return {node, {}};
}
