//===- Operands.cpp - Operands of the raised op, the mean's divisor -------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "Matchers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize;
using namespace mlir::xent::recognize::detail;

using K = ElementwiseKind;

//===----------------------------------------------------------------------===//
// Operands of the raised op
//===----------------------------------------------------------------------===//

/// The narrowest f16/bf16/f32 tensor value a node stands for, looking
/// through widening casts: the logits (or probabilities) as they come
/// before the chain widens them.
static Value findFloatTensor(Node *n, std::string &reason) {
  Value found;
  reason = "the logits are computed inside the chain, not a tensor value";
  while (true) {
    if (n->origin) {
      auto type = dyn_cast<RankedTensorType>(n->origin.getType());
      if (type && isSupportedFloat(type.getElementType()))
        found = n->origin;
      else if (type && isa<FloatType>(type.getElementType()) && !found)
        reason = "logits of element type " +
                 typeToString(type.getElementType()) +
                 " are not supported (f16, bf16 or f32)";
    }
    if (!isCast(n, CastKind::ExtF))
      break;
    n = n->operands[0];
  }
  return found;
}

SmallVector<Axis, 4> recognize::detail::elementDims(ArrayRef<Axis> logitsDims,
                                                   int64_t classDim) {
  SmallVector<Axis, 4> dims;
  for (auto [k, a] : llvm::enumerate(logitsDims))
    if (static_cast<int64_t>(k) != classDim)
      dims.push_back(a);
  return dims;
}

bool recognize::detail::alignsWithLogits(ViewAnalysis &va, const Operands &ops,
                                         ArrayRef<Axis> dims, bool withClass) {
  SmallVector<Axis, 4> expected =
      withClass ? SmallVector<Axis, 4>(ops.logitsDims)
                : elementDims(ops.logitsDims, ops.classDim);
  if (dims.size() != expected.size())
    return false;
  for (auto [a, b] : llvm::zip(dims, expected)) {
    if ((a == kUnitAxis) != (b == kUnitAxis))
      return false;
    if (a != kUnitAxis && !va.same(a, b))
      return false;
  }
  return true;
}

/// True when `dims` with their unit dimensions dropped are the logits'
/// dimensions without the class axis, none of which is a unit one: targets
/// computed with extra unit dimensions (JAX's `t[:, None]`), which the
/// raised op reads reshaped (Recognize.cpp).
static bool alignsUpToUnitDims(ViewAnalysis &va, const Operands &ops,
                               ArrayRef<Axis> dims) {
  SmallVector<Axis, 4> kept;
  for (Axis a : dims)
    if (a != kUnitAxis)
      kept.push_back(a);
  for (auto [k, a] : llvm::enumerate(ops.logitsDims))
    if (static_cast<int64_t>(k) != ops.classDim && a == kUnitAxis)
      return false;
  return alignsWithLogits(va, ops, kept);
}

/// Removes a safe-index select: `select(t != ignore, t, 0)` is `t` where the
/// element is kept. Returns the index unchanged when it is no select;
/// `ignore` receives the mask the select tests.
static Match<Node *> stripSafeIndex(ViewAnalysis &va, Node *idx,
                                    std::optional<IgnoreMask> &ignore,
                                    int64_t numClasses) {
  idx = stripIndexCasts(idx);
  // numpy's negative-index wrap is part of the target, not a safe index.
  if (!isOp(idx, K::Select) || (!ShapedType::isDynamic(numClasses) &&
                                isNegativeIndexWrap(va, idx, numClasses)))
    return idx;
  Node *target;
  bool keptWhen;
  if (isConstant(idx->operands[2], 0)) {
    target = idx->operands[1];
    keptWhen = true;
  } else if (isConstant(idx->operands[1], 0)) {
    target = idx->operands[2];
    keptWhen = false;
  } else {
    return Match<Node *>::failure("the class index is a select that is "
                                  "neither a safe target nor numpy's "
                                  "negative-index wrap");
  }
  Match<IgnoreMask> safe = matchIgnoreMask(va, {idx->operands[0], keptWhen});
  if (!safe)
    return Match<Node *>::failure(
        "the class index is a select that is neither numpy's negative-index "
        "wrap nor a safe target: " +
        safe.getReason());
  target = stripIndexCasts(target);
  if (!Equivalence(va).equal(target, stripIndexCasts(safe->target)))
    return Match<Node *>::failure("the safe target index tests another target");
  ignore = *safe;
  return target;
}

Match<Operands> recognize::detail::resolveOperands(ViewAnalysis &va,
                                                   const Pieces &p) {
  using M = Match<Operands>;
  Operands ops;
  Equivalence eq(va);

  // Logits (uncapped when the chain caps them) and the class dimension.
  std::string reason;
  Node *logits = p.logSoftmax.input;
  Match<Softcap> cap = matchSoftcap(va, logits);
  if (cap) {
    logits = cap->input;
    ops.softcap = cap->cap;
  } else if (cap.isNearMiss()) {
    return M::failure(cap);
  }
  ops.logits = findFloatTensor(logits, reason);
  if (!ops.logits)
    return M::failure(reason);
  ops.logitsDims = va.get(ops.logits).dims;
  std::optional<int64_t> classDim;
  for (auto [k, a] : llvm::enumerate(ops.logitsDims)) {
    if (a != kUnitAxis && va.same(a, p.logSoftmax.axis)) {
      if (classDim)
        return M::failure("the class axis appears twice in the logits");
      classDim = k;
    }
  }
  if (!classDim)
    return M::failure("the class axis is not a dimension of the logits");
  ops.classDim = *classDim;
  auto logitsType = cast<RankedTensorType>(ops.logits.getType());
  int64_t numElements = 1;
  bool staticCount = true;
  for (auto [k, a] : llvm::enumerate(ops.logitsDims)) {
    if (static_cast<int64_t>(k) == ops.classDim)
      continue;
    if (a != kUnitAxis)
      ops.batchAxes.push_back(a);
    int64_t size = logitsType.getDimSize(k);
    if (ShapedType::isDynamic(size))
      staticCount = false;
    else
      numElements *= size;
  }
  ops.batchAxes = canonicalAxes(va, ops.batchAxes);
  if (staticCount)
    ops.numElements = numElements;

  // Ignore masks: one ignore index, one target.
  for (const IgnoreMask &mask : p.masks) {
    if (ops.ignoreIndex && *ops.ignoreIndex != mask.ignoreIndex)
      return M::failure("the masks ignore different target values");
    if (!eq.equal(mask.target, p.masks.front().target))
      return M::failure("the masks test different targets");
    ops.ignoreIndex = mask.ignoreIndex;
  }

  // Class weights, before the targets: probability targets read them along
  // the class axis.
  std::optional<IgnoreMask> weightSafe;
  Node *weightIndex = nullptr;
  if (p.weight) {
    ops.weight = p.weight->weight->origin;
    if (p.weight->index) {
      Match<Node *> index = stripSafeIndex(va, p.weight->index, weightSafe,
                                           logitsType.getDimSize(ops.classDim));
      if (!index)
        return M::failure(index);
      weightIndex = *index;
    } else {
      View w = va.get(ops.weight);
      if (w.dims.size() != 1 || w.dims[0] == kUnitAxis ||
          !va.same(w.dims[0], p.logSoftmax.axis))
        return M::failure("the class weight is not read along the class "
                          "axis");
    }
    int64_t numClasses = logitsType.getDimSize(ops.classDim);
    int64_t numWeights =
        cast<RankedTensorType>(ops.weight.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(numClasses) &&
        !ShapedType::isDynamic(numWeights) && numClasses != numWeights)
      return M::failure("the class weights do not have one entry per class");
  }

  if (p.probabilities) {
    if (!p.masks.empty())
      return M::failure("probability targets with an ignore mask");
    ops.target = findFloatTensor(p.probabilities, reason);
    // Computed inside a reduction's body (optax's smoothed one-hot fused
    // into the sum), they are built as a tensor for the op (Materialize.cpp).
    if (!ops.target && !stripWidening(p.probabilities)->origin) {
      if (Match<bool> ok =
              checkMaterializable(va, p.probabilities, ops.logitsDims);
          !ok)
        return M::failure("the probabilities are computed inside the "
                          "reduction and cannot be built as a tensor: " +
                          ok.getReason());
      if (!isSupportedFloat(p.probabilities->type))
        return M::failure("the probabilities computed inside the reduction "
                          "are not f16, bf16 or f32");
      ops.probabilityExpr = p.probabilities;
      ops.targetNode = p.probabilities;
      return ops;
    }
    if (!ops.target)
      return M::failure("the probabilities are not an f16, bf16 or f32 "
                        "tensor value");
    ops.targetNode = p.probabilities;
    if (!alignsWithLogits(va, ops, va.get(ops.target).dims,
                          /*withClass=*/true))
      return M::failure("the probabilities are not shaped like the logits");
    return ops;
  }

  // The class index: the target, or a safe index select(t != ignore, t, 0)
  // whose ignored elements are masked.
  std::optional<IgnoreMask> safe;
  Match<Node *> target =
      stripSafeIndex(va, p.index, safe, logitsType.getDimSize(ops.classDim));
  if (!target)
    return M::failure(target);
  for (const std::optional<IgnoreMask> &s : {safe, weightSafe})
    if (s && (!ops.ignoreIndex || *ops.ignoreIndex != s->ignoreIndex))
      return M::failure("a safe target index without a matching ignore mask");
  ops.targetNode = *target;
  if (weightIndex && !eq.equal(weightIndex, ops.targetNode))
    return M::failure("the class weight is read at another index than the "
                      "target");
  if (!p.masks.empty() &&
      !eq.equal(stripIndexCasts(p.masks.front().target), ops.targetNode))
    return M::failure("the ignore mask tests another value than the target "
                      "the pick reads");
  Node *t = ops.targetNode;
  if (!t->origin || !isa<RankedTensorType>(t->origin.getType()))
    return M::failure("the target is computed inside the chain, not a "
                      "tensor value");
  ops.target = t->origin;
  Type targetElement = getElementTypeOrSelf(ops.target.getType());
  if (!targetElement.isInteger(32) && !targetElement.isInteger(64))
    return M::failure("targets must be i32 or i64 class indices");
  // A guarded gather gives NaN for every index outside [0, C); without a
  // mask the op ignores the lowest i64 instead, which only an i64 target
  // can equal (numpy's wrap never gives it).
  if (p.guarded && !ops.ignoreIndex && targetElement.isInteger(64) &&
      !isNegativeIndexWrap(va, ops.targetNode,
                           logitsType.getDimSize(ops.classDim)))
    return M::failure("a guarded gather at i64 targets that may equal the "
                      "lowest i64, which the op, without an ignore mask, "
                      "ignores where the chain gives NaN");
  if (!alignsWithLogits(va, ops, va.get(ops.target).dims) &&
      !alignsUpToUnitDims(va, ops, va.get(ops.target).dims))
    return M::failure("the target's dimensions are not the logits' "
                      "dimensions without the class axis");
  return ops;
}

Match<bool> recognize::detail::matchTotalWeight(ViewAnalysis &va, Node *den,
                                                const Pieces &p,
                                                const Operands &ops) {
  using M = Match<bool>;
  Monomial m = factorize(va, den);
  SumOver s;
  bool complement = false;
  if (m.coeff == 1 && m.num.size() == 1 && m.den.empty() && m.masks.empty() &&
      isSum(m.num[0])) {
    s = expandSum(va, m.num[0]);
  } else if (m.coeff == 1 && m.num.size() == 1 && m.den.empty() &&
             m.masks.empty() && ops.numElements) {
    // N - Σ ignored.
    LinearForm form = flattenLinear(va, m.num[0]);
    if (form.terms.size() != 1 || form.terms[0].coeff != -1 ||
        form.constant != static_cast<double>(*ops.numElements) ||
        !isSum(form.terms[0].node))
      return M::failure("the mean divides by a value that is not a sum over "
                        "the elements");
    s = expandSum(va, form.terms[0].node);
    complement = true;
  } else if (ops.batchAxes.empty()) {
    s.body = m; // a single element: the "sum" is the term itself
  } else {
    return M::failure("the mean divides by a value that is not a sum over "
                      "the elements");
  }
  if (s.axes != ops.batchAxes)
    return M::failure("the mean's divisor does not sum over every element");
  if (s.body.coeff != 1 || !s.body.den.empty())
    return M::failure("the mean's divisor is not a count or a sum of weights");
  Equivalence eq(va);
  SmallVector<Mask, 2> masks = splitMasks(s.body.masks);
  if (complement) {
    // N - Σ [t == ignore] = Σ [t != ignore].
    if (masks.size() != 1 || !s.body.num.empty())
      return M::failure("the mean's divisor is not the element count minus "
                        "the ignored count");
    masks[0].keptWhen = !masks[0].keptWhen;
  }
  // Masks: the same ignore mask as the loss (or none when it has none).
  if (Match<bool> same =
          matchSameIgnoreMasks(va, masks, ops, "the mean's divisor");
      !same)
    return same;
  // Weights: the same class weight as the loss.
  if (s.body.num.size() > 1)
    return M::failure("the mean's divisor is not a count or a sum of weights");
  if (s.body.num.empty()) {
    if (p.weight)
      return M::failure("a weighted loss divided by a count, not by the sum "
                        "of the kept weights");
    return true;
  }
  Match<ClassWeight> w = matchClassWeight(va, s.body.num[0]);
  if (!w)
    return M::failure("the mean's divisor sums something other than class "
                      "weights");
  if (!p.weight || w->weight->origin != ops.weight)
    return M::failure("the mean's divisor sums other weights than the loss "
                      "uses");
  if (!w->index)
    return M::failure("the mean's divisor sums the weights of every class");
  std::optional<IgnoreMask> safe;
  Match<Node *> index = stripSafeIndex(
      va, w->index, safe,
      cast<RankedTensorType>(ops.logits.getType()).getDimSize(ops.classDim));
  if (!index || !eq.equal(*index, ops.targetNode))
    return M::failure("the mean's divisor reads the weights at another index");
  return true;
}

Match<bool> recognize::detail::matchSameIgnoreMasks(ViewAnalysis &va,
                                                    ArrayRef<Mask> masks,
                                                    const Operands &ops,
                                                    StringRef what) {
  using M = Match<bool>;
  Equivalence eq(va);
  for (const Mask &mask : masks) {
    Match<IgnoreMask> ignore = matchIgnoreMask(va, mask);
    if (!ignore)
      return M::failure(what + " has a mask that is not an ignore mask: " +
                        ignore.getReason());
    if (!ops.ignoreIndex || ignore->ignoreIndex != *ops.ignoreIndex ||
        !eq.equal(stripIndexCasts(ignore->target), ops.targetNode))
      return M::failure(what + " ignores other elements than the loss");
  }
  if (ops.ignoreIndex && masks.empty())
    return M::failure(what + " is not masked like the loss: it keeps the "
                      "ignored elements");
  return true;
}
