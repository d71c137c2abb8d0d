//===- LossScalars.cpp - The loss's features given at run time ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentOps.h"

using namespace mlir;
using namespace mlir::xent;

SmallVector<Value> LossScalars::getValues() const {
  SmallVector<Value> values;
  for (Value v : {ignoreIndex, labelSmoothing, zLossScale, softcap})
    if (v)
      values.push_back(v);
  return values;
}

LossScalars LossScalars::remap(ValueRange values) const {
  LossScalars result;
  unsigned next = 0;
  auto take = [&](Value &slot, Value present) {
    if (present)
      slot = values[next++];
  };
  take(result.ignoreIndex, ignoreIndex);
  take(result.labelSmoothing, labelSmoothing);
  take(result.zLossScale, zLossScale);
  take(result.softcap, softcap);
  return result;
}

CrossEntropyConfig
CrossEntropyConfig::withOperands(ValueRange operands) const {
  CrossEntropyConfig c = *this;
  unsigned numScalars = scalars.getValues().size();
  c.scalars = scalars.remap(operands.take_back(numScalars));
  // The class offset and a run-time num_classes come right before the
  // run-time scalars.
  unsigned last = operands.size() - numScalars;
  if (dynamicNumClasses)
    c.dynamicNumClasses = operands[--last];
  if (classOffset)
    c.classOffset = operands[--last];
  return c;
}
