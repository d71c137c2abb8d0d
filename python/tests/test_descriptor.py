"""One memref descriptor layout: xent.runtime.descriptor's ctypes
structures (the NumPy driver's and the CUDA calls'), the C++ operators'
``Descriptor`` (xent/torch/csrc/memref_descriptor.h) and MLIR's
``StridedMemRefType`` (mlir/ExecutionEngine/CRunnerUtils.h), which the
compiled entry functions' C interface takes. A probe compiled from both
headers prints each field's byte offset per rank, after checking that the
header's words read as a StridedMemRefType; the ctypes offsets must match."""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

from xent.runtime import descriptor, driver, memref

HEADER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(driver.__file__))),
                          "torch", "csrc")
MLIR_INCLUDE = os.path.join(os.path.dirname(os.environ.get("XENT_LLVM_BIN",
                                                           driver.DEFAULT_LLVM_BIN)), "include")
CXX = os.environ.get("CXX") or shutil.which("c++")
MAX_RANK = 8

PROBE = r"""
#include "memref_descriptor.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

using xent_native::Descriptor;

// The header's words, filled for a rank-N buffer, read as MLIR's descriptor.
template <int N> static bool sameAsMLIR() {
  static_assert(sizeof(StridedMemRefType<float, N>) <= sizeof(Descriptor),
                "a Descriptor holds every rank up to kMaxRank");
  int64_t sizes[N > 0 ? N : 1], strides[N > 0 ? N : 1];
  for (int i = 0; i < N; ++i) {
    sizes[i] = 2 + i;
    strides[i] = 100 + i;
  }
  float data = 0;
  Descriptor d{};
  d.fill(&data, N, sizes, strides);
  StridedMemRefType<float, N> m;
  std::memcpy(&m, d.words.data(), sizeof(m));
  bool same = m.basePtr == &data && m.data == &data && m.offset == 0;
  if constexpr (N > 0)
    for (int i = 0; i < N; ++i)
      same = same && m.sizes[i] == sizes[i] && m.strides[i] == strides[i];
  return same;
}

// "rank sizeof allocated aligned offset [sizes strides]" of MLIR's type.
template <int N> static void print() {
  using M = StridedMemRefType<float, N>;
  std::printf("%d %zu %zu %zu %zu", N, sizeof(M), offsetof(M, basePtr),
              offsetof(M, data), offsetof(M, offset));
  if constexpr (N > 0)
    std::printf(" %zu %zu", offsetof(M, sizes), offsetof(M, strides));
  std::printf(" %d\n", sameAsMLIR<N>() ? 1 : 0);
}

template <int... N> static void printAll(std::integer_sequence<int, N...>) {
  (print<N>(), ...);
}

int main() {
  static_assert(xent_native::kMaxRank == 8, "the test's MAX_RANK");
  printAll(std::make_integer_sequence<int, xent_native::kMaxRank + 1>());
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    if not CXX or not os.path.exists(
            os.path.join(MLIR_INCLUDE, "mlir", "ExecutionEngine", "CRunnerUtils.h")):
        pytest.skip("needs a C++ compiler and MLIR's CRunnerUtils.h")
    d = tmp_path_factory.mktemp("descriptor-probe")
    src, exe = d / "probe.cpp", d / "probe"
    src.write_text(PROBE)
    subprocess.run([CXX, "-std=c++17", "-O0", f"-I{HEADER_DIR}", f"-I{MLIR_INCLUDE}", str(src),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {int(line.split()[0]): [int(v) for v in line.split()[1:]]
            for line in out.splitlines()}


def test_header_is_strided_memref_type(probe):
    assert sorted(probe) == list(range(MAX_RANK + 1))
    assert all(row[-1] == 1 for row in probe.values())


@pytest.mark.parametrize("rank", range(MAX_RANK + 1))
def test_ctypes_layout_matches(probe, rank):
    t = descriptor.descriptor_type(rank)
    layout = [ctypes.sizeof(t), t.allocated.offset, t.aligned.offset, t.offset.offset]
    if rank:
        layout += [t.sizes.offset, t.strides.offset]
    assert layout == probe[rank][:-1]


def test_one_layout_for_every_path():
    assert driver._descriptor_type is descriptor.descriptor_type
    assert memref._descriptor_type is descriptor.descriptor_type
    assert memref._results_type is driver._result_struct_type is descriptor.results_type


def test_descriptor_of_an_array():
    a = np.zeros((3, 5), dtype=np.float32)
    d = driver._input_descriptor(a)
    assert (d.allocated, d.aligned, d.offset) == (a.ctypes.data, a.ctypes.data, 0)
    assert list(d.sizes) == [3, 5] and list(d.strides) == [5, 1]
    v = descriptor.descriptor(0x1000, (4, 2), (1, 8))
    assert (v.allocated, v.aligned, v.offset) == (0x1000, 0x1000, 0)
    assert list(v.sizes) == [4, 2] and list(v.strides) == [1, 8]
    assert ctypes.sizeof(descriptor.descriptor_type(0)) == 24
