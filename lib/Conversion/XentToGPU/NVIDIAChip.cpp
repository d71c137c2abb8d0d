//===- NVIDIAChip.cpp - The NVIDIA chips the xent kernels target ----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/XentToGPU/NVIDIAChip.h"

#include "llvm/ADT/StringRef.h"

using namespace mlir;
using namespace mlir::xent;

std::optional<NVIDIAChip> NVIDIAChip::parse(StringRef name) {
  if (!name.consume_front("sm_"))
    return std::nullopt;
  name.consume_back("a");
  unsigned version = 0;
  if (name.getAsInteger(10, version) || version < kMinVersion)
    return std::nullopt;
  return NVIDIAChip{version};
}
