//===- memref_descriptor.h - Memref descriptors of xent.torch's calls -*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The memref descriptor the native operators (xent_torch_native.cpp) pass to
// a compiled entry function: the layout of MLIR's StridedMemRefType<T, rank>
// (mlir/ExecutionEngine/CRunnerUtils.h) and of xent.runtime.descriptor's
// ctypes structures, whatever the rank, in one array of 64-bit words. Free of
// PyTorch and MLIR, so that python/tests/test_descriptor.py can compile it
// beside CRunnerUtils.h and check the three layouts against each other.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_TORCH_CSRC_MEMREF_DESCRIPTOR_H
#define XENT_TORCH_CSRC_MEMREF_DESCRIPTOR_H

#include <array>
#include <cstdint>

namespace xent_native {

constexpr int kMaxRank = 8;

/// A memref descriptor of any rank up to kMaxRank: the allocated and the
/// aligned pointer, the offset, `rank` sizes and `rank` strides (in
/// elements), each a word; what follows the strides is unused.
struct Descriptor {
  static constexpr int kAllocated = 0, kAligned = 1, kOffset = 2, kSizes = 3;
  std::array<int64_t, 3 + 2 * kMaxRank> words;

  /// Points the descriptor at `data` (both pointers, offset 0: a tensor's
  /// data pointer already includes its storage offset). `rank` must not
  /// exceed kMaxRank.
  void fill(const void *data, int64_t rank, const int64_t *sizes,
            const int64_t *strides) {
    auto ptr = reinterpret_cast<int64_t>(data);
    words[kAllocated] = ptr;
    words[kAligned] = ptr;
    words[kOffset] = 0;
    for (int64_t i = 0; i < rank; ++i) {
      words[kSizes + i] = sizes[i];
      words[kSizes + rank + i] = strides[i];
    }
  }
};

static_assert(sizeof(void *) == sizeof(int64_t),
              "the descriptor's pointers are 64-bit words");

} // namespace xent_native

#endif // XENT_TORCH_CSRC_MEMREF_DESCRIPTOR_H
