//===- XentOps.cpp - Xent dialect, attribute and op implementation --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "Verification.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::detail;

#include "xent/Dialect/Xent/IR/XentOpsDialect.cpp.inc"

#include "xent/Dialect/Xent/IR/XentEnums.cpp.inc"

#include "xent/Dialect/Xent/IR/XentInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "xent/Dialect/Xent/IR/XentAttrs.cpp.inc"

void XentDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "xent/Dialect/Xent/IR/XentAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "xent/Dialect/Xent/IR/XentOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// Parses the reduction written as a bare keyword: `mean`, `sum` or `none`.
static ParseResult parseReduction(OpAsmParser &parser, ReductionAttr &attr) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Reduction> reduction = symbolizeReduction(keyword);
  if (!reduction)
    return parser.emitError(loc, "unknown reduction '")
           << keyword << "', expected 'mean', 'sum' or 'none'";
  attr = ReductionAttr::get(parser.getContext(), *reduction);
  return success();
}

static void printReduction(OpAsmPrinter &printer, Operation *,
                           ReductionAttr attr) {
  printer << stringifyReduction(attr.getValue());
}

//===----------------------------------------------------------------------===//
// CrossEntropyConfig
//===----------------------------------------------------------------------===//

SmallVector<int64_t> mlir::xent::dropAxis(ArrayRef<int64_t> shape,
                                          int64_t axis) {
  SmallVector<int64_t> result;
  for (auto [i, d] : llvm::enumerate(shape))
    if (static_cast<int64_t>(i) != axis)
      result.push_back(d);
  return result;
}

SmallVector<int64_t> CrossEntropyConfig::getElementShape() const {
  return dropAxis(logitsType.getShape(), axis);
}

CrossEntropyConfig CrossEntropyConfig::get(CrossEntropyOpInterface op) {
  CrossEntropyConfig c;
  c.reduction = op.getReduction();
  c.ignoreIndex = op.getIgnoreIndexValue();
  c.labelSmoothing = op.getLabelSmoothing().convertToFloat();
  c.zLossScale = op.getZLossScale().convertToFloat();
  if (auto cap = op.getSoftcap())
    c.softcap = cap->convertToFloat();
  c.axis = op.getClassAxis();
  c.weighted = static_cast<bool>(op.getWeight());
  c.probabilityTargets = op.hasProbabilityTargets();
  c.logitsType = op.getLogits().getType();
  c.targetType = op.getTarget().getType();
  c.scalars = op.getLossScalars();
  c.rowStats = static_cast<bool>(op.getRowStats());
  c.classOffset = op.getClassOffset();
  if (IntegerAttr n = op.getNumClassesAttr())
    c.globalNumClasses = n.getInt();
  c.dynamicNumClasses = op.getDynamicNumClasses();
  return c;
}

bool CrossEntropyConfig::operator==(const CrossEntropyConfig &other) const {
  return reduction == other.reduction && ignoreIndex == other.ignoreIndex &&
         labelSmoothing == other.labelSmoothing &&
         zLossScale == other.zLossScale && softcap == other.softcap &&
         axis == other.axis && weighted == other.weighted &&
         probabilityTargets == other.probabilityTargets &&
         logitsType == other.logitsType && targetType == other.targetType &&
         scalars == other.scalars && rowStats == other.rowStats &&
         classOffset == other.classOffset &&
         globalNumClasses == other.globalNumClasses &&
         dynamicNumClasses == other.dynamicNumClasses;
}

//===----------------------------------------------------------------------===//
// Verification of the family (CrossEntropyOpInterface)
//===----------------------------------------------------------------------===//

std::string mlir::xent::detail::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

/// The shortest decimal that reads back as `value`.
static std::string formatFloat(const APFloat &value) {
  SmallString<16> s;
  value.toString(s);
  return std::string(s);
}

/// Checks the attributes that every op of the dialect shares.
LogicalResult mlir::xent::detail::verifyLossAttributes(
    OpState op, const APFloat &smoothing, const APFloat &zLossScale,
    std::optional<APFloat> softcap) {
  float eps = smoothing.convertToFloat();
  if (!(eps >= 0.0f && eps <= 1.0f))
    return op.emitOpError("label_smoothing must be in [0, 1], got ")
           << formatFloat(smoothing);
  float zScale = zLossScale.convertToFloat();
  if (!(zScale >= 0.0f) || !std::isfinite(zScale))
    return op.emitOpError("z_loss_scale must be finite and non-negative, got ")
           << formatFloat(zLossScale);
  if (softcap) {
    float c = softcap->convertToFloat();
    if (!(c > 0.0f) || !std::isfinite(c))
      return op.emitOpError("softcap must be finite and positive, got ")
             << formatFloat(*softcap);
  }
  return success();
}

/// Checks that no feature is given both by its attribute and by a run-time
/// scalar. A default-valued attribute at its default (label_smoothing or
/// z_loss_scale of 0) counts as absent: it is what the printer elides.
LogicalResult mlir::xent::detail::verifyLossScalars(Operation *op,
                                                   LossScalars scalars) {
  auto isSet = [&](StringRef name) {
    Attribute attr = op->getAttr(name);
    if (auto f = dyn_cast_if_present<FloatAttr>(attr))
      return !(name == "label_smoothing" || name == "z_loss_scale") ||
             !f.getValue().isZero();
    return static_cast<bool>(attr);
  };
  for (auto [name, value] : {std::pair<StringRef, Value>{"ignore_index",
                                                         scalars.ignoreIndex},
                             {"label_smoothing", scalars.labelSmoothing},
                             {"z_loss_scale", scalars.zLossScale},
                             {"softcap", scalars.softcap}})
    if (value && isSet(name))
      return op->emitOpError()
             << name
             << " is given both as an attribute and as an operand; give one";
  return success();
}

/// Two shapes are compatible when they have the same rank and every pair of
/// static dimensions agrees.
bool mlir::xent::detail::areShapesCompatible(ArrayRef<int64_t> a,
                                               ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

/// The logits shape with each dynamic size that an operand or a result fixes
/// made static (in this order: target, weight, grad_output, loss, z_loss,
/// dlogits). All operands describe one tensor, so `grad_output` and the
/// results must agree with every static size among them, not only with the
/// logits': two sizes each compatible with dynamic logits but not with each
/// other would give a decomposition that canonicalize makes invalid. Call
/// after checking `target` against `logits`.
static SmallVector<int64_t> getKnownLogitsShape(CrossEntropyOpInterface op) {
  SmallVector<int64_t> shape(op.getLogits().getType().getShape());
  int64_t axis = op.getClassAxis();
  auto refine = [](int64_t &size, int64_t known) {
    if (ShapedType::isDynamic(size))
      size = known;
  };
  ArrayRef<int64_t> target = op.getTarget().getType().getShape();
  if (op.hasProbabilityTargets()) {
    if (target.size() == shape.size())
      for (auto [size, known] : llvm::zip(shape, target))
        refine(size, known);
  } else if (target.size() + 1 == shape.size()) {
    for (int64_t d = 0, t = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (d != axis)
        refine(shape[d], target[t++]);
  }
  if (Value weight = op.getWeight()) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    if (weightType.getRank() == 1)
      refine(shape[axis], weightType.getDimSize(0));
  }
  // Per-element values (grad_output, loss, z_loss) and dlogits fix sizes too:
  // the decomposition computes them together.
  // Per-row outputs have the element shape whatever the reduction.
  auto refineRows = [&](Value v) {
    if (!v)
      return;
    ArrayRef<int64_t> e = cast<RankedTensorType>(v.getType()).getShape();
    if (e.size() + 1 == shape.size())
      for (int64_t d = 0, k = 0; d < static_cast<int64_t>(shape.size()); ++d)
        if (d != axis)
          refine(shape[d], e[k++]);
  };
  auto refineElements = [&](Value v) {
    if (op.getReduction() == Reduction::none)
      refineRows(v);
  };
  auto refineAll = [&](Value v) {
    ArrayRef<int64_t> full = cast<RankedTensorType>(v.getType()).getShape();
    if (full.size() == shape.size())
      for (auto [size, known] : llvm::zip(shape, full))
        refine(size, known);
  };
  refineElements(op.getGradOutput());
  refineElements(op.getLoss());
  refineElements(op.getZLoss());
  refineElements(op.getAccuracy());
  refineRows(op.getLse());
  refineRows(op.getArgmax());
  if (Value dlogits = op.getDlogits())
    refineAll(dlogits);
  return shape;
}

/// Checks the attributes, `target` and `weight` against `logits`.
static LogicalResult verifyOperands(CrossEntropyOpInterface op) {
  RankedTensorType logitsType = op.getLogits().getType();
  int64_t rank = logitsType.getRank();
  if (rank == 0)
    return op.emitOpError("logits must have at least one dimension");

  if (auto axisAttr = op.getAxisAttr()) {
    int64_t axis = axisAttr.getInt();
    if (axis < 0 || axis >= rank)
      return op.emitOpError("axis ")
             << axis << " is out of range for logits of rank " << rank;
  }
  int64_t axis = op.getClassAxis();
  int64_t numClasses = logitsType.getDimSize(axis);
  if (numClasses == 0)
    return op.emitOpError("logits must have at least one class");

  if (failed(verifyLossAttributes(op, op.getLabelSmoothing(),
                                  op.getZLossScale(), op.getSoftcap())) ||
      failed(verifyLossScalars(op, op.getLossScalars())))
    return failure();

  RankedTensorType targetType = op.getTarget().getType();
  SmallVector<int64_t> elementShape = dropAxis(logitsType.getShape(), axis);
  if (op.hasProbabilityTargets()) {
    if (op.getIgnoreIndexAttr() || op.getDynamicIgnoreIndex())
      return op.emitOpError(
          "ignore_index must not be set with probability targets");
    if (!areShapesCompatible(targetType.getShape(), logitsType.getShape()))
      return op.emitOpError("probability target shape ")
             << formatShape(targetType.getShape())
             << " must match the logits shape "
             << formatShape(logitsType.getShape());
  } else if (!areShapesCompatible(targetType.getShape(), elementShape)) {
    return op.emitOpError("class-index target shape ")
           << formatShape(targetType.getShape())
           << " must be the logits shape without the class axis "
           << formatShape(elementShape);
  }

  if (Value weight = op.getWeight()) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    if (weightType.getRank() != 1)
      return op.emitOpError("weight must have rank 1, got rank ")
             << weightType.getRank();
    // Probability targets may fix a dynamic class count.
    numClasses = getKnownLogitsShape(op)[axis];
    if (!areShapesCompatible(weightType.getShape(), {numClasses}))
      return op.emitOpError("weight has ")
             << weightType.getDimSize(0) << " elements but logits have "
             << numClasses << " classes";
  }
  return success();
}

/// The shape that a per-element or reduced value (loss, z_loss, grad_output)
/// must have under the op's reduction.
static SmallVector<int64_t> getReducedShape(CrossEntropyOpInterface op) {
  if (op.getReduction() != Reduction::none)
    return {};
  return dropAxis(getKnownLogitsShape(op), op.getClassAxis());
}

LogicalResult mlir::xent::detail::verifyDecompositionRegion(Operation *op) {
  Region &region = op->getRegion(0);
  if (region.empty())
    return success();
  Block &block = region.front();
  if (block.getNumArguments() != op->getNumOperands())
    return op->emitOpError("decomposition block must have ")
           << op->getNumOperands() << " arguments (one per operand), got "
           << block.getNumArguments();
  // Each of `values` has the type of the same position in `expected`.
  auto checkTypes = [&](ValueRange values, ValueRange expected,
                        StringRef which, StringRef ofType) -> LogicalResult {
    for (auto [i, value, like] : llvm::enumerate(values, expected))
      if (value.getType() != like.getType())
        return op->emitOpError("decomposition ")
               << which << " #" << i << ofType << value.getType()
               << ", expected " << like.getType();
    return success();
  };
  if (failed(checkTypes(block.getArguments(), op->getOperands(), "argument",
                        " has type ")))
    return failure();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op->emitOpError("decomposition must end in 'xent.yield'");
  if (yield.getValues().size() != op->getNumResults())
    return op->emitOpError("decomposition yields ")
           << yield.getValues().size() << " values, expected "
           << op->getNumResults();
  return checkTypes(yield.getValues(), op->getResults(), "yields value",
                    " of type ");
}

/// Checks that `value` (named `name`: loss, z_loss or grad_output) has the
/// shape `expected` of a per-element or reduced value under the reduction.
static LogicalResult verifyReducedShape(CrossEntropyOpInterface op,
                                        StringRef name, Value value,
                                        ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  if (areShapesCompatible(shape, expected))
    return success();
  return op.emitOpError() << name << " shape " << formatShape(shape)
                          << " must be " << formatShape(expected)
                          << " for reduction '"
                          << stringifyReduction(op.getReduction()) << "'";
}

/// Checks `loss` and `z_loss` (when present) against the reduction.
static LogicalResult verifyLossResults(CrossEntropyOpInterface op) {
  SmallVector<int64_t> expected = getReducedShape(op);
  // Results are f32 or the logits' element type.
  Type logitsElt = op.getLogits().getType().getElementType();
  for (auto [name, result] : {std::pair<StringRef, Value>{"loss", op.getLoss()},
                              {"z_loss", op.getZLoss()}}) {
    if (!result)
      continue;
    Type elt = cast<RankedTensorType>(result.getType()).getElementType();
    if (!elt.isF32() && elt != logitsElt)
      return op.emitOpError() << name << " element type " << elt
                              << " must be f32 or the logits' element type "
                              << logitsElt;
  }
  for (auto [name, result] : {std::pair<StringRef, Value>{"loss", op.getLoss()},
                              {"z_loss", op.getZLoss()}})
    if (result && failed(verifyReducedShape(op, name, result, expected)))
      return failure();
  return success();
}

mlir::xent::detail::LossExtras
mlir::xent::detail::getLossExtras(ValueRange extras, bool lse, bool argmax,
                                  bool accuracy) {
  mlir::xent::detail::LossExtras result;
  unsigned selected = lse + argmax + accuracy;
  unsigned next = 0;
  auto take = [&](Value &slot, bool present) {
    if (present && next < extras.size())
      slot = extras[next++];
  };
  take(result.zLoss, extras.size() > selected);
  take(result.lse, lse);
  take(result.argmax, argmax);
  take(result.accuracy, accuracy);
  return result;
}

void mlir::xent::detail::getResultNames(CrossEntropyOpInterface op,
                                        OpAsmSetValueNameFn setNameFn) {
  for (auto [value, name] : {std::pair<Value, StringRef>{op.getLoss(), "loss"},
                             {op.getZLoss(), "z_loss"},
                             {op.getLse(), "lse"},
                             {op.getArgmax(), "argmax"},
                             {op.getAccuracy(), "accuracy"},
                             {op.returnsRowStats() ? op.getRowStats()
                                                   : Value(),
                              "row_stats"},
                             {op.getDlogits(), "dlogits"}})
    if (value)
      setNameFn(value, name);
}

/// The number of results of `op` between `loss` and `dlogits`, the row
/// statistics left out.
static unsigned getNumExtraResults(CrossEntropyOpInterface op) {
  return op->getNumResults() - 1 - (op.computesGradient() ? 1 : 0) -
         (op.returnsRowStats() ? 1 : 0);
}

/// Checks the per-row outputs selected by the `return_*` attributes: their
/// number, then each one's type.
static LogicalResult verifyRowOutputs(CrossEntropyOpInterface op) {
  Operation *operation = op.getOperation();
  bool lse = operation->hasAttr("return_lse");
  bool argmax = operation->hasAttr("return_argmax");
  bool accuracy = operation->hasAttr("return_accuracy");
  unsigned selected = lse + argmax + accuracy;
  unsigned extras = getNumExtraResults(op);
  if (extras != selected && extras != selected + 1)
    return op.emitOpError("expected ")
           << selected << " or " << selected + 1
           << " results after loss (optional z_loss, then one per selected "
              "output), got "
           << extras;

  Type logitsElt = op.getLogits().getType().getElementType();
  SmallVector<int64_t> rows =
      dropAxis(getKnownLogitsShape(op), op.getClassAxis());
  auto checkShape = [&](StringRef name, Value v,
                        ArrayRef<int64_t> expected) -> LogicalResult {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    if (areShapesCompatible(shape, expected))
      return success();
    return op.emitOpError() << name << " shape " << formatShape(shape)
                            << " must be " << formatShape(expected);
  };
  auto checkFloat = [&](StringRef name, Value v) -> LogicalResult {
    Type elt = cast<RankedTensorType>(v.getType()).getElementType();
    if (elt.isF32() || elt == logitsElt)
      return success();
    return op.emitOpError() << name << " element type " << elt
                            << " must be f32 or the logits' element type "
                            << logitsElt;
  };
  if (Value v = op.getLse())
    if (failed(checkFloat("lse", v)) || failed(checkShape("lse", v, rows)))
      return failure();
  if (Value v = op.getArgmax()) {
    Type elt = cast<RankedTensorType>(v.getType()).getElementType();
    if (!elt.isInteger(32) && !elt.isInteger(64))
      return op.emitOpError("argmax element type ")
             << elt << " must be i32 or i64";
    if (failed(checkShape("argmax", v, rows)))
      return failure();
  }
  if (Value v = op.getAccuracy()) {
    if (op.hasProbabilityTargets())
      return op.emitOpError(
          "return_accuracy requires class-index targets");
    if (failed(checkFloat("accuracy", v)) ||
        failed(verifyReducedShape(op, "accuracy", v, getReducedShape(op))))
      return failure();
  }
  return success();
}

/// Checks `grad_output` against the reduction and `dlogits` against the
/// logits.
static LogicalResult verifyGradient(CrossEntropyOpInterface op) {
  SmallVector<int64_t> expected = getReducedShape(op);
  if (failed(verifyReducedShape(op, "grad_output", op.getGradOutput(),
                                expected)))
    return failure();
  auto logitsType = op.getLogits().getType();
  auto dType = cast<RankedTensorType>(op.getDlogits().getType());
  if (dType.getElementType() != logitsType.getElementType() ||
      !areShapesCompatible(dType.getShape(), getKnownLogitsShape(op)))
    return op.emitOpError("dlogits type ")
           << dType << " must match the logits type " << logitsType;
  return success();
}

LogicalResult mlir::xent::detail::verifyCrossEntropyOp(
    CrossEntropyOpInterface op) {
  if (failed(verifyOperands(op)) || failed(verifyRowStats(op)))
    return failure();
  if (op.computesLoss() &&
      (failed(verifyRowOutputs(op)) || failed(verifyLossResults(op))))
    return failure();
  if (op.computesGradient() && failed(verifyGradient(op)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//

namespace {
/// The sizes that the operands and results of a linear op describe: the rows
/// (the hidden's leading dimensions), the features H and the classes V. Each
/// value is checked against what earlier ones fixed, so two dynamic-looking
/// sizes that disagree with each other are caught.
struct LinearShapes {
  SmallVector<int64_t> rows;
  int64_t features;
  int64_t classes;

  /// Merges `size` into `known`; false when both are static and differ.
  static bool unify(int64_t &known, int64_t size) {
    if (ShapedType::isDynamic(known))
      known = size;
    return ShapedType::isDynamic(size) || known == size;
  }
  bool unifyRows(ArrayRef<int64_t> shape) {
    if (shape.size() != rows.size())
      return false;
    bool ok = true;
    for (auto [known, size] : llvm::zip(rows, shape))
      ok &= unify(known, size);
    return ok;
  }
};
} // namespace

/// Checks the results that a loss op has: `loss` and `z_loss`.
static LogicalResult verifyLinearLoss(LinearCrossEntropyOpInterface op) {
  Type hiddenElt = op.getHidden().getType().getElementType();
  for (auto [name, result] : {std::pair<StringRef, Value>{"loss", op.getLoss()},
                              {"z_loss", op.getZLoss()}}) {
    if (!result)
      continue;
    auto type = cast<RankedTensorType>(result.getType());
    if (!type.getElementType().isF32() && type.getElementType() != hiddenElt)
      return op.emitOpError()
             << name << " element type " << type.getElementType()
             << " must be f32 or the hidden element type " << hiddenElt;
  }
  return success();
}

/// Checks that `value` (a loss, z_loss or grad_output) is rank 0 under `mean`
/// and `sum`, shaped like the rows under `none`.
static LogicalResult verifyLinearReduced(LinearCrossEntropyOpInterface op,
                                         StringRef name, Value value,
                                         LinearShapes &shapes) {
  if (!value)
    return success();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  bool perRow = op.getReduction() == Reduction::none;
  if (perRow ? shapes.unifyRows(shape) : shape.empty())
    return success();
  return op.emitOpError() << name << " shape " << formatShape(shape)
                          << " must be "
                          << formatShape(perRow ? ArrayRef(shapes.rows)
                                                : ArrayRef<int64_t>{})
                          << " for reduction '"
                          << stringifyReduction(op.getReduction()) << "'";
}

/// Checks that the gradient `value` named `name` has the type of `operand`
/// and the sizes that the other values fix.
static LogicalResult verifyLinearGradient(LinearCrossEntropyOpInterface op,
                                          StringRef name, Value value,
                                          Value operand, bool sizesAgree) {
  auto type = cast<RankedTensorType>(value.getType());
  auto operandType = cast<RankedTensorType>(operand.getType());
  if (type.getElementType() != operandType.getElementType() ||
      !areShapesCompatible(type.getShape(), operandType.getShape()) ||
      !sizesAgree)
    return op.emitOpError()
           << name << " type " << type << " must match the type " << operandType
           << " of its operand";
  return success();
}

LogicalResult mlir::xent::detail::verifyLinearCrossEntropyOp(
    LinearCrossEntropyOpInterface op) {
  RankedTensorType hiddenType = op.getHidden().getType();
  int64_t rank = hiddenType.getRank();
  if (rank != 2 && rank != 3)
    return op.emitOpError(
               "hidden must have rank 2 ([N, H]) or 3 ([B, T, H]), got rank ")
           << rank;
  RankedTensorType weightType = op.getWeight().getType();
  if (weightType.getRank() != 2)
    return op.emitOpError("weight must have rank 2 ([V, H]), got rank ")
           << weightType.getRank();
  Type elt = hiddenType.getElementType();
  if (weightType.getElementType() != elt)
    return op.emitOpError("weight element type ")
           << weightType.getElementType() << " must be the hidden element type "
           << elt;

  LinearShapes shapes{SmallVector<int64_t>(hiddenType.getShape().drop_back()),
                      hiddenType.getDimSize(rank - 1),
                      weightType.getDimSize(0)};
  if (!LinearShapes::unify(shapes.features, weightType.getDimSize(1)))
    return op.emitOpError("weight has ")
           << weightType.getDimSize(1) << " features but hidden has "
           << hiddenType.getDimSize(rank - 1);
  if (shapes.classes == 0)
    return op.emitOpError("weight must have at least one class");

  if (Value bias = op.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1)
      return op.emitOpError("bias must have rank 1, got rank ")
             << biasType.getRank();
    if (biasType.getElementType() != elt)
      return op.emitOpError("bias element type ")
             << biasType.getElementType() << " must be the hidden element type "
             << elt;
    if (!LinearShapes::unify(shapes.classes, biasType.getDimSize(0)))
      return op.emitOpError("bias has ")
             << biasType.getDimSize(0) << " elements but weight has "
             << weightType.getDimSize(0) << " classes";
  }

  if (failed(verifyLossAttributes(op, op.getLabelSmoothing(),
                                  op.getZLossScale(), op.getSoftcap())) ||
      failed(verifyLossScalars(op, op.getLossScalars())))
    return failure();

  ArrayRef<int64_t> targetShape = op.getTarget().getType().getShape();
  if (!shapes.unifyRows(targetShape))
    return op.emitOpError("target shape ")
           << formatShape(targetShape)
           << " must be the hidden shape without its last dimension "
           << formatShape(hiddenType.getShape().drop_back());

  if (Value classWeight = op.getClassWeight()) {
    auto type = cast<RankedTensorType>(classWeight.getType());
    if (type.getRank() != 1)
      return op.emitOpError("class_weight must have rank 1, got rank ")
             << type.getRank();
    int64_t classes = shapes.classes;
    if (!LinearShapes::unify(shapes.classes, type.getDimSize(0)))
      return op.emitOpError("class_weight has ")
             << type.getDimSize(0) << " elements but the projection has "
             << classes << " classes";
  }

  if (op.computesLoss()) {
    if (failed(verifyLinearLoss(op)) ||
        failed(verifyLinearReduced(op, "loss", op.getLoss(), shapes)) ||
        failed(verifyLinearReduced(op, "z_loss", op.getZLoss(), shapes)))
      return failure();
  }
  if (!op.computesGradient())
    return success();
  if (failed(
          verifyLinearReduced(op, "grad_output", op.getGradOutput(), shapes)))
    return failure();

  auto dHidden = cast<RankedTensorType>(op.getDHidden().getType());
  bool hiddenAgrees =
      dHidden.getRank() == rank &&
      shapes.unifyRows(dHidden.getShape().drop_back()) &&
      LinearShapes::unify(shapes.features, dHidden.getShape().back());
  if (failed(verifyLinearGradient(op, "d_hidden", op.getDHidden(),
                                  op.getHidden(), hiddenAgrees)))
    return failure();
  auto dWeight = cast<RankedTensorType>(op.getDWeight().getType());
  bool weightAgrees =
      dWeight.getRank() == 2 &&
      LinearShapes::unify(shapes.classes, dWeight.getDimSize(0)) &&
      LinearShapes::unify(shapes.features, dWeight.getDimSize(1));
  if (failed(verifyLinearGradient(op, "d_weight", op.getDWeight(),
                                  op.getWeight(), weightAgrees)))
    return failure();
  if (static_cast<bool>(op.getBias()) != static_cast<bool>(op.getDBias()))
    return op.emitOpError(op.getBias() ? "has a bias but no d_bias result"
                                       : "has a d_bias result but no bias");
  if (Value dBias = op.getDBias()) {
    auto type = cast<RankedTensorType>(dBias.getType());
    bool biasAgrees = type.getRank() == 1 &&
                      LinearShapes::unify(shapes.classes, type.getDimSize(0));
    if (failed(verifyLinearGradient(op, "d_bias", dBias, op.getBias(),
                                    biasAgrees)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Custom directive of xent.linear_cross_entropy_and_grad
//===----------------------------------------------------------------------===//

/// Parses `(loss [, z_loss], d_hidden, d_weight [, d_bias])`: with a bias the
/// last type is d_bias, and one type more than the required ones is the
/// z-loss.
static ParseResult parseJointResultTypes(
    OpAsmParser &parser, std::optional<OpAsmParser::UnresolvedOperand> bias,
    Type &loss, Type &zLoss, Type &dHidden, Type &dWeight, Type &dBias) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<Type> types;
  if (parser.parseLParen() || parser.parseTypeList(types) ||
      parser.parseRParen())
    return failure();
  size_t required = bias ? 4 : 3;
  if (types.size() != required && types.size() != required + 1)
    return parser.emitError(loc, "expected ")
           << required << " or " << required + 1
           << " result types (loss, optional z_loss, d_hidden, d_weight"
           << (bias ? ", d_bias" : "") << "), got " << types.size();
  ArrayRef<Type> rest(types);
  loss = rest.front();
  rest = rest.drop_front();
  if (types.size() == required + 1) {
    zLoss = rest.front();
    rest = rest.drop_front();
  }
  dHidden = rest[0];
  dWeight = rest[1];
  if (bias)
    dBias = rest[2];
  return success();
}

static void printJointResultTypes(OpAsmPrinter &printer, Operation *, Value,
                                  Type loss, Type zLoss, Type dHidden,
                                  Type dWeight, Type dBias) {
  SmallVector<Type> types = {loss};
  if (zLoss)
    types.push_back(zLoss);
  types.append({dHidden, dWeight});
  if (dBias)
    types.push_back(dBias);
  printer << "(";
  llvm::interleaveComma(types, printer);
  printer << ")";
}

#define GET_OP_CLASSES
#include "xent/Dialect/Xent/IR/XentOps.cpp.inc"
