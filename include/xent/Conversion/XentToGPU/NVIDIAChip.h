//===- NVIDIAChip.h - The NVIDIA chips the xent kernels target --*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What the GPU conversion and pipeline know about the target chip, in one
// place: which `chip` option values name a chip the kernels run on, and what
// that chip has.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_XENTTOGPU_NVIDIACHIP_H
#define XENT_CONVERSION_XENTTOGPU_NVIDIACHIP_H

#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::xent {

/// An NVIDIA chip the kernels target, as a `chip` option names it:
/// `sm_<version>`, optionally with the `a` suffix of the architecture-specific
/// variants (`sm_90a`).
struct NVIDIAChip {
  /// The oldest chip the kernels target.
  static constexpr unsigned kMinVersion = 80;

  /// The compute capability as one number: 80 for sm_80, 90 for sm_90a.
  unsigned version;

  /// The chip `name` names, or std::nullopt when `name` is not of the form
  /// above or names a chip older than kMinVersion.
  static std::optional<NVIDIAChip> parse(StringRef name);

  /// Thread-block clusters and distributed shared memory (sm_90 and newer).
  bool hasClusters() const { return version >= 90; }
};

} // namespace mlir::xent

#endif // XENT_CONVERSION_XENTTOGPU_NVIDIACHIP_H
