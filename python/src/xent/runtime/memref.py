"""Memref types and descriptors of :mod:`xent.runtime.gpu`'s calls.

The element types a GPU host function's memrefs may have (their storage,
``__cuda_array_interface__`` typestr and torch dtype), the parser of the
memref/tensor and scalar types of a signature (:class:`MemRefType`), what
a call reads of a tensor argument (a torch tensor or any object with
``__cuda_array_interface__``; no copies), the checks against the declared
type, and the C memref descriptors (:mod:`xent.runtime.descriptor`) built from it.
"""

from __future__ import annotations

import ctypes
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import descriptor


# --------------------------------------------------------------------------- element types

@dataclass(frozen=True)
class _Element:
    name: str        # MLIR name
    itemsize: int
    typestr: str     # __cuda_array_interface__ typestr of the storage
    torch_name: str  # torch dtype attribute name


#: MLIR element type -> storage description. bf16 travels as raw 16-bit words
#: through ``__cuda_array_interface__`` (which has no bf16) and is viewed back.
GPU_ELEMENT_TYPES: Dict[str, _Element] = {e.name: e for e in (
    _Element("f64", 8, "<f8", "float64"),
    _Element("f32", 4, "<f4", "float32"),
    _Element("f16", 2, "<f2", "float16"),
    _Element("bf16", 2, "<i2", "bfloat16"),
    _Element("i64", 8, "<i8", "int64"),
    _Element("i32", 4, "<i4", "int32"),
    _Element("i16", 2, "<i2", "int16"),
    _Element("i8", 1, "|i1", "int8"),
    _Element("ui8", 1, "|u1", "uint8"),
    _Element("i1", 1, "|b1", "bool"),
)}
_TORCH_TO_ELEMENT = {f"torch.{e.torch_name}": e.name for e in GPU_ELEMENT_TYPES.values()}
_TYPESTR_TO_ELEMENT = {"<f8": "f64", "<f4": "f32", "<f2": "f16", "<i8": "i64", "<i4": "i32",
                       "<i2": "i16", "|i1": "i8", "|u1": "ui8", "|b1": "i1"}
_SCALAR_CTYPES = {"index": ctypes.c_int64, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
                  "i16": ctypes.c_int16, "i8": ctypes.c_int8, "i1": ctypes.c_bool,
                  "f64": ctypes.c_double, "f32": ctypes.c_float}


@dataclass(frozen=True)
class MemRefType:
    """A memref (or tensor) type of a host function's signature.

    ``shape`` holds None for dynamic sizes; ``identity`` is False when the
    type carries a ``strided<...>`` layout (any strides accepted).
    """

    element_type: str
    shape: Tuple[Optional[int], ...]
    identity: bool = True

    @property
    def rank(self) -> int:
        return len(self.shape)

    @classmethod
    def parse(cls, text: str) -> "MemRefType":
        m = re.fullmatch(r"\s*(?:memref|tensor)<\s*((?:(?:\?|\d+)x)*)(\w+)\s*(,\s*.+)?>\s*", text)
        if not m:
            raise ValueError(f"cannot parse memref type {text!r}")
        elem, layout = m.group(2), m.group(3)
        if elem not in GPU_ELEMENT_TYPES:
            raise ValueError(f"unsupported element type {elem!r} in {text!r}")
        dims = tuple(None if d == "?" else int(d) for d in m.group(1).split("x")[:-1])
        if layout and not re.fullmatch(r",\s*strided<.*>\s*", layout):
            raise ValueError(f"unsupported layout in {text!r}; use strided<...> or none")
        return cls(elem, dims, identity=not layout)


def _parse_arg_type(spec) -> Union[MemRefType, str]:
    if isinstance(spec, MemRefType):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"invalid argument type {spec!r}")
    s = spec.strip()
    if s in _SCALAR_CTYPES:
        return s
    return MemRefType.parse(s)


# --------------------------------------------------------------------------- descriptors

# The C layout of a memref descriptor and of a struct of several
# (xent.runtime.descriptor, the NumPy driver's too).
_descriptor_type = descriptor.descriptor_type
_results_type = descriptor.results_type


class _TensorView:
    """What a call needs of a tensor argument."""

    __slots__ = ("ptr", "shape", "strides", "element_type", "device", "is_cuda")

    def __init__(self, ptr: int, shape: Tuple[int, ...], strides: Tuple[int, ...],
                 element_type: str, device: Optional[int], is_cuda: bool):
        self.ptr, self.shape, self.strides = ptr, shape, strides  # strides in elements
        self.element_type = element_type
        self.device = device  # CUDA device index, None if unknown
        self.is_cuda = is_cuda

    @property
    def nbytes_span(self) -> int:
        """Bytes from the first to one past the last element (only results need it)."""
        if any(s == 0 for s in self.shape):
            return 0
        itemsize = GPU_ELEMENT_TYPES[self.element_type].itemsize
        return (sum((n - 1) * abs(st) for n, st in zip(self.shape, self.strides)) + 1) * itemsize


_TORCH_TENSOR_TYPE: List[Any] = []  # torch.Tensor once torch is imported


def _tensor_view(value, index: int) -> _TensorView:
    """Reads a torch tensor (duck-typed) or a __cuda_array_interface__ object."""
    if not _TORCH_TENSOR_TYPE and "torch" in sys.modules:
        _TORCH_TENSOR_TYPE.append(sys.modules["torch"].Tensor)
    if _TORCH_TENSOR_TYPE and isinstance(value, _TORCH_TENSOR_TYPE[0]):
        # The common case, without the duck-typing probes (per-call overhead).
        elem = _TORCH_TO_ELEMENT.get(str(value.dtype))
        if elem is None:
            raise TypeError(f"argument {index}: unsupported dtype {value.dtype}")
        device = value.device
        is_cuda = device.type == "cuda"
        return _TensorView(value.data_ptr(), tuple(value.shape), value.stride(), elem,
                           device.index if is_cuda else None, is_cuda)
    if hasattr(value, "data_ptr") and hasattr(value, "stride") and hasattr(value, "dtype"):
        elem = _TORCH_TO_ELEMENT.get(str(value.dtype))
        if elem is None:
            raise TypeError(f"argument {index}: unsupported dtype {value.dtype}")
        device = getattr(value, "device", None)
        is_cuda = getattr(device, "type", None) == "cuda"
        dev_index = getattr(device, "index", None) if is_cuda else None
        shape = tuple(int(s) for s in value.shape)
        strides = tuple(int(s) for s in value.stride())
        ptr = int(value.data_ptr())
    elif hasattr(value, "__cuda_array_interface__"):
        cai = value.__cuda_array_interface__
        elem = _TYPESTR_TO_ELEMENT.get(cai["typestr"])
        if elem is None:
            raise TypeError(f"argument {index}: unsupported typestr {cai['typestr']!r}")
        itemsize = GPU_ELEMENT_TYPES[elem].itemsize
        shape = tuple(int(s) for s in cai["shape"])
        if cai.get("strides") is None:
            strides, acc = [], 1
            for s in reversed(shape):
                strides.append(acc)
                acc *= s
            strides = tuple(reversed(strides))
        else:
            strides = tuple(int(s) // itemsize for s in cai["strides"])
        ptr = int(cai["data"][0] or 0)
        is_cuda, dev_index = True, None
    else:
        raise TypeError(f"argument {index}: expected a CUDA tensor (torch.Tensor or an object "
                        f"with __cuda_array_interface__), got {type(value).__name__}")
    return _TensorView(ptr, shape, strides, elem, dev_index, is_cuda)


def _is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    expected = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != expected:
            return False
        expected *= n
    return True


def _check_view(view: _TensorView, spec: Optional[MemRefType], index: int) -> None:
    if not view.is_cuda:
        raise TypeError(f"argument {index}: expected a CUDA tensor, got one on the CPU "
                        "(a kernel would fault on a host pointer)")
    if spec is None:
        return
    if view.element_type != spec.element_type:
        raise TypeError(f"argument {index}: expected element type {spec.element_type}, "
                        f"got {view.element_type}")
    if len(view.shape) != spec.rank:
        raise ValueError(f"argument {index}: expected rank {spec.rank}, got shape {view.shape}")
    for d, (n, want) in enumerate(zip(view.shape, spec.shape)):
        if want is not None and n != want:
            raise ValueError(f"argument {index}: dimension {d} must be {want}, got {n}")
    if spec.identity and not _is_contiguous(view.shape, view.strides):
        raise ValueError(f"argument {index}: {spec.element_type} memref with identity layout "
                         f"needs a contiguous tensor, got strides {view.strides} "
                         "(call .contiguous(), or declare a strided<...> layout)")


def _descriptor(view: _TensorView) -> ctypes.Structure:
    return descriptor.descriptor(view.ptr, view.shape, view.strides)
