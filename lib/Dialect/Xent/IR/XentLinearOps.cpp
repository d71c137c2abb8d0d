//===- XentLinearOps.cpp - Verification of the linear family --------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The verifier of the linear + cross-entropy ops (XentLinearOps.td), through
// LinearCrossEntropyOpInterface.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "Verification.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::detail;

//===----------------------------------------------------------------------===//
// Verification of the linear family (LinearCrossEntropyOpInterface)
