"""C memref descriptors: how every call path hands a buffer to compiled code.

A function with ``llvm.emit_c_interface`` takes each memref argument as a
pointer to a descriptor and returns memrefs through one (a struct of them
for several results). Its layout is MLIR's ``StridedMemRefType<T, rank>``
(``mlir/ExecutionEngine/CRunnerUtils.h``; upstream's Python counterpart is
``mlir/runtime/np_to_memref.py``): the allocated and the aligned pointer,
the offset, then ``rank`` sizes and ``rank`` strides, all in elements, each
a 64-bit word. The NumPy driver (:mod:`xent.runtime.driver`) and the CUDA
tensor calls (:mod:`xent.runtime.memref`, :mod:`xent.runtime.library`)
build theirs here; xent.torch's C++ operators fill the same words in
``xent/torch/csrc/memref_descriptor.h``. ``python/tests/test_descriptor.py``
compiles that header beside MLIR's and checks all three layouts against
each other.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Sequence, Tuple

__all__ = ["descriptor_type", "results_type", "descriptor"]


@functools.lru_cache(maxsize=None)
def descriptor_type(rank: int) -> type:
    """The ctypes structure of a rank-`rank` descriptor (no sizes nor
    strides at rank 0)."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank > 0:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


@functools.lru_cache(maxsize=None)
def results_type(ranks: Tuple[int, ...]) -> type:
    """The struct of descriptors several memref results are returned in."""
    fields = [(f"r{i}", descriptor_type(r)) for i, r in enumerate(ranks)]
    return type("MemRefResults", (ctypes.Structure,), {"_fields_": fields})


def descriptor(ptr: int, shape: Sequence[int], strides: Sequence[int]) -> ctypes.Structure:
    """A descriptor of the buffer at `ptr` (both pointers; offset 0) with
    `shape` and `strides` in elements."""
    desc = descriptor_type(len(shape))()
    desc.allocated = desc.aligned = ptr
    desc.offset = 0
    for i, (size, stride) in enumerate(zip(shape, strides)):
        desc.sizes[i] = size
        desc.strides[i] = stride
    return desc
