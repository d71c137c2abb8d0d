//===- ProjectionGrad.cpp - Raise the backward of a projection ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The backward of `logits = hidden · weightᵀ (+ bias)` feeding a cross
// entropy: from the recognized gradient op's dlogits (shaped like the
// logits), `d_hidden = dlogits · weight`, `d_weight = dlogitsᵀ · hidden` (or
// the transpose of `hiddenᵀ · dlogits`, as autograd writes the gradient of
// a transposed weight) and, with a bias, `d_bias = Σ_rows dlogits`, each a
// matrix product or row sum of Projection.h, with reshapes that keep the
// last dimension and matrix transposes anywhere in between. When the
// dlogits feed nothing else, the projection, the gradient op (with the
// forward xent.cross_entropy on the same logits, if any) and these become
// one `xent.linear_cross_entropy_grad`, or `_and_grad` when the loss is
// computed too.
//
//===----------------------------------------------------------------------===//

#include "Projection.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize::projection;

namespace {
/// The gradients of the projection that the backward computes.
struct Gradients {
  Value dHidden, dWeight, dBias;
};
} // namespace

/// The value of type `want` that `v` becomes through its only users, row
/// reshapes and matrix transposes, when `v`'s matrix is that value's
/// (transposed when `transposed`); null if none.
static Value followTo(Value v, bool transposed, Type want) {
  for (unsigned i = 0; i < 16; ++i) {
    if (!transposed && v.getType() == want)
      return v;
    if (!v.hasOneUse())
      return {};
    Operation *user = *v.getUsers().begin();
    if (getRowReshapeSource(user) == v) {
      v = user->getResult(0);
    } else if (getMatrixTransposeSource(user) == v) {
      v = user->getResult(0);
      transposed = !transposed;
    } else {
      return {};
    }
  }
  return {};
}

/// Records `value` as `slot`, failing when it is already set or null.
static LogicalResult record(Value &slot, Value value, StringRef what,
                            std::string &reason) {
  if (!value) {
    reason = ("the " + what +
              " product is not followed by a value shaped "
              "like the operand")
                 .str();
    return failure();
  }
  if (slot) {
    reason = ("the backward computes the " + what + " twice").str();
    return failure();
  }
  slot = value;
  return success();
}

/// Classifies `user`, which reads `d` (the dlogits' matrix, transposed when
/// `d.transposed`), as one of the projection's gradients.
static LogicalResult matchGradientUse(Operation *user, MatrixRef d,
                                      const Projection &p, Gradients &g,
                                      std::string &reason) {
  std::string why;
  Value result = user->getNumResults() == 1 ? user->getResult(0) : Value();
  FailureOr<Product> product =
      result ? matchProduct(result, why) : FailureOr<Product>(failure());
  if (succeeded(product)) {
    if (product->init && !isZeroFill(product->init)) {
      reason = "a product of the dlogits accumulates into a non-zero value";
      return failure();
    }
    bool asLhs = product->lhs.value == d.value;
    bool asRhs = product->rhs.value == d.value;
    if (asLhs != asRhs) {
      MatrixRef mine = asLhs ? product->lhs : product->rhs;
      bool transposed = mine.transposed != d.transposed;
      MatrixRef other = peelMatrix(asLhs ? product->rhs : product->lhs).back();
      Type hiddenType = p.hidden.getType(), weightType = p.weight.getType();
      // dlogits · weight
      if (asLhs && !transposed && other.value == p.weight && !other.transposed)
        return record(g.dHidden, followTo(result, false, hiddenType),
                      "d hidden", reason);
      // dlogitsᵀ · hidden
      if (asLhs && transposed && other.value == p.rows && !other.transposed)
        return record(g.dWeight, followTo(result, false, weightType),
                      "d weight", reason);
      // (hiddenᵀ · dlogits)ᵀ
      if (asRhs && !transposed && other.value == p.rows && other.transposed)
        return record(g.dWeight, followTo(result, true, weightType), "d weight",
                      reason);
    }
    reason = "the dlogits feed a product that is neither dlogits · weight "
             "nor dlogitsᵀ · hidden";
    return failure();
  }
  if (result && p.bias && !d.transposed && matchRowSum(result) == d.value)
    return record(g.dBias, followTo(result, false, p.bias.getType()), "d bias",
                  reason);
  reason = ("the dlogits have another user ('" +
            user->getName().getStringRef() + "')")
               .str();
  return failure();
}

/// The gradients that the backward computes from `dlogits`, when nothing
/// else reads them.
static FailureOr<Gradients> matchGradients(Value dlogits, const Projection &p,
                                           std::string &reason) {
  Gradients g;
  SmallVector<MatrixRef> worklist = {{dlogits, false}};
  unsigned visited = 0;
  while (!worklist.empty()) {
    if (++visited > 64) {
      reason = "the dlogits have too many users";
      return failure();
    }
    MatrixRef d = worklist.pop_back_val();
    for (Operation *user : d.value.getUsers()) {
      if (getRowReshapeSource(user) == d.value)
        worklist.push_back({user->getResult(0), d.transposed});
      else if (getMatrixTransposeSource(user) == d.value)
        worklist.push_back({user->getResult(0), !d.transposed});
      else if (failed(matchGradientUse(user, d, p, g, reason)))
        return failure();
    }
  }
  if (!g.dHidden || !g.dWeight || (p.bias && !g.dBias)) {
    reason = "the backward does not compute every gradient of the projection";
    return failure();
  }
  return g;
}

/// Creates the linear op of `grad`'s attributes: the gradient form, or the
/// joint one when `lossTypes` (the loss and maybe the z-loss) is not empty.
template <typename GradOpT>
static Operation *createLinear(RewriterBase &rewriter, GradOpT grad,
                               const Projection &p, TypeRange lossTypes,
                               TypeRange gradTypes) {
  Location loc = grad.getLoc();
  Type dBias = p.bias ? gradTypes[2] : Type();
  LossScalars s = grad.getLossScalars();
  if (lossTypes.empty())
    return LinearCrossEntropyGradOp::create(
        rewriter, loc, gradTypes[0], gradTypes[1], dBias, grad.getGradOutput(),
        p.hidden, p.weight, p.bias, grad.getTarget(), grad.getWeight(),
        s.ignoreIndex, s.labelSmoothing, s.zLossScale, s.softcap,
        grad.getReductionAttr(), grad.getIgnoreIndexAttr(),
        grad.getLabelSmoothingAttr(), grad.getZLossScaleAttr(),
        grad.getSoftcapAttr());
  return LinearCrossEntropyAndGradOp::create(
      rewriter, loc, lossTypes[0], lossTypes.size() > 1 ? lossTypes[1] : Type(),
      gradTypes[0], gradTypes[1], dBias, grad.getGradOutput(), p.hidden,
      p.weight, p.bias, grad.getTarget(), grad.getWeight(), s.ignoreIndex,
      s.labelSmoothing, s.zLossScale, s.softcap, grad.getReductionAttr(),
      grad.getIgnoreIndexAttr(), grad.getLabelSmoothingAttr(),
      grad.getZLossScaleAttr(), grad.getSoftcapAttr());
}

LogicalResult recognize::projection::raiseGradient(RewriterBase &rewriter,
                                                   CrossEntropyOpInterface grad,
                                                   CrossEntropyOp forward,
                                                   const Projection &p,
                                                   std::string &reason) {
  FailureOr<Gradients> g = matchGradients(grad.getDlogits(), p, reason);
  if (failed(g))
    return failure();
  SmallVector<Value> leaves = {grad.getGradOutput(), p.hidden, p.weight};
  if (p.bias)
    leaves.push_back(p.bias);
  leaves.push_back(grad.getTarget());
  if (grad.getWeight())
    leaves.push_back(grad.getWeight());
  llvm::append_range(leaves, grad.getLossScalars().getValues());
  // The loss results: the forward op's, or the joint op's.
  SmallVector<Value> roots;
  CrossEntropyOpInterface loss =
      forward ? cast<CrossEntropyOpInterface>(forward.getOperation()) : grad;
  if (loss.getLoss()) {
    roots.push_back(loss.getLoss());
    if (loss.getZLoss())
      roots.push_back(loss.getZLoss());
  }
  SmallVector<Type> lossTypes(ValueRange(roots).getTypes());
  roots.append({g->dHidden, g->dWeight});
  if (p.bias)
    roots.push_back(g->dBias);
  SmallVector<Type> gradTypes(
      ValueRange(roots).drop_front(lossTypes.size()).getTypes());
  FailureOr<SmallVector<Operation *>> slice = collectSlice(roots, leaves);
  if (failed(slice)) {
    reason = "the backward reads values that are not the op's operands";
    return failure();
  }
  rewriter.setInsertionPoint(grad);
  Operation *linear =
      TypeSwitch<Operation *, Operation *>(grad)
          .Case<CrossEntropyGradOp, CrossEntropyAndGradOp>([&](auto op) {
            return createLinear(rewriter, op, p, lossTypes, gradTypes);
          })
          .Default([](Operation *) { return nullptr; });
  if (!linear)
    return failure();
  return finishRaise(rewriter, linear, *slice, roots);
}
