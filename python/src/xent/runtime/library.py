"""Calling a compiled GPU module's host functions, for :mod:`xent.runtime.gpu`.

:class:`GpuLibrary` loads a library :func:`xent.runtime.gpu.compile_gpu_module`
built, with its runtime; :class:`GpuFunction` calls one host function
through its C interface with CUDA tensors (checked against the declared
types) and wraps its memref results as tensors that own their memory
(:class:`DeviceArray` where PyTorch is absent); :class:`TensorCall` is the
lean caller for framework code (descriptors kept per argument layout).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .cuda_runtime import RUNTIME_NAME, Runtime, _stream_handle, _StreamArg, _torch
from .driver import DriverError
from .memref import (GPU_ELEMENT_TYPES, _SCALAR_CTYPES, MemRefType, _check_view, _descriptor,
                     _descriptor_type, _parse_arg_type, _results_type, _tensor_view, _TensorView)


# --------------------------------------------------------------------------- results

class _Allocation:
    """A device buffer the host code allocated (mgpuMemAlloc), freed with the last view."""

    __slots__ = ("runtime", "ptr", "stream", "device")

    def __init__(self, runtime: Runtime, ptr: int, stream: Optional[int], device: int):
        self.runtime, self.ptr, self.stream, self.device = runtime, ptr, stream, device

    def __del__(self):
        try:
            self.runtime.mgpuSetDefaultDevice(self.device)
            # Stream-ordered: after every kernel enqueued on the call's stream.
            self.runtime.mgpuMemFree(ctypes.c_void_p(self.ptr), ctypes.c_void_p(self.stream or 0))
        except Exception:  # interpreter shutdown
            pass


class DeviceArray:
    """A result buffer on the device: ``__cuda_array_interface__`` plus ownership.

    Returned when PyTorch is not available, and used to build the zero-copy
    tensors otherwise (``torch.as_tensor`` keeps this object alive).
    """

    def __init__(self, ptr: int, shape: Tuple[int, ...], strides: Tuple[int, ...],
                 element_type: str, owner: Any = None):
        self.ptr, self.shape, self.strides = ptr, shape, strides
        self.element_type, self.owner = element_type, owner

    @property
    def __cuda_array_interface__(self):
        e = GPU_ELEMENT_TYPES[self.element_type]
        return {"shape": self.shape, "typestr": e.typestr, "data": (self.ptr, False),
                "strides": tuple(s * e.itemsize for s in self.strides), "version": 2}


# --------------------------------------------------------------------------- calling

class GpuLibrary:
    """A compiled GPU module loaded with ctypes, with its runtime."""

    def __init__(self, path: str, runtime: Optional[str] = None):
        self.path = os.path.abspath(path)
        beside = os.path.join(os.path.dirname(self.path), RUNTIME_NAME)
        self.runtime = Runtime.load(runtime or (beside if os.path.exists(beside) else None))
        # Loading runs the module's constructor (mgpuModuleLoad), which only
        # registers the image: no GPU work until the first launch.
        self._lib = ctypes.CDLL(self.path)
        self._functions: Dict[Tuple, "GpuFunction"] = {}

    def has_function(self, name: str) -> bool:
        return hasattr(self._lib, f"_mlir_ciface_{name}")

    def function(self, name: str, args: Optional[Sequence] = None,
                 results: Sequence = ()) -> "GpuFunction":
        """A callable for ``@name``; ``args``/``results`` are MLIR types used to check calls.

        ``args``: one entry per argument, a memref/tensor type (``"memref<?x?xbf16>"``)
        or a scalar type (``"index"``, ``"i64"``, ``"i32"``, ``"f32"``, ``"f64"``);
        None leaves arguments unchecked (ints are then passed as int64).
        ``results``: one memref/tensor type per memref result.
        """
        key = (name, tuple(args) if args is not None else None, tuple(results))
        fn = self._functions.get(key)
        if fn is None:
            fn = self._functions[key] = GpuFunction(self, name, args, results)
        return fn

    def call(self, name: str, *args, results: Sequence = (), stream: _StreamArg = None):
        """Calls ``@name`` once; see :meth:`function` and :meth:`GpuFunction.__call__`."""
        return self.function(name, None, results)(*args, stream=stream)

    def tensor_call(self, name: str) -> "TensorCall":
        """A lean caller of ``@name`` (no memref results) for framework code
        that calls it many times with torch CUDA tensors on one device: the
        descriptors are built once per argument layout and only their data
        pointers change between calls (see :class:`TensorCall`)."""
        key = ("tensor_call", name)
        fn = self._functions.get(key)
        if fn is None:
            fn = self._functions[key] = TensorCall(self.function(name))
        return fn


class GpuFunction:
    """One host function of a :class:`GpuLibrary`, called through its C interface."""

    def __init__(self, library: GpuLibrary, name: str, args: Optional[Sequence],
                 results: Sequence):
        self.library, self.name = library, name
        try:
            self._fn = getattr(library._lib, f"_mlir_ciface_{name}")
        except AttributeError:
            raise DriverError(f"{library.path} has no _mlir_ciface_{name}; does @{name} carry "
                              "the llvm.emit_c_interface attribute?") from None
        self._fn.restype = None
        self.arg_types = [_parse_arg_type(a) for a in args] if args is not None else None
        self.result_types = [MemRefType.parse(r) if isinstance(r, str) else r for r in results]

    def _marshal(self, values: Sequence) -> Tuple[List, List[_TensorView]]:
        if self.arg_types is not None and len(values) != len(self.arg_types):
            raise TypeError(f"@{self.name} takes {len(self.arg_types)} arguments, "
                            f"got {len(values)}")
        c_args, views = [], []
        for i, v in enumerate(values):
            spec = self.arg_types[i] if self.arg_types is not None else None
            if isinstance(spec, str) or (spec is None and isinstance(
                    v, (int, ctypes._SimpleCData)) and not isinstance(v, bool)):
                ctype = _SCALAR_CTYPES[spec] if spec else ctypes.c_int64
                if isinstance(v, ctypes._SimpleCData):
                    if spec and not isinstance(v, ctype):
                        raise TypeError(f"argument {i}: expected {spec}, got {type(v).__name__}")
                    c_args.append(v)
                else:
                    if isinstance(v, float) and ctype not in (ctypes.c_float, ctypes.c_double):
                        raise TypeError(f"argument {i}: expected an integer for {spec}")
                    c_args.append(ctype(v))
                continue
            if isinstance(v, float):
                raise TypeError(f"argument {i}: pass floats as ctypes.c_float / c_double, "
                                "or declare the argument types")
            view = _tensor_view(v, i)
            _check_view(view, spec, i)
            views.append(view)
            c_args.append(ctypes.pointer(_descriptor(view)))
        return c_args, views

    def __call__(self, *values, stream: _StreamArg = None):
        """Runs the function; returns its memref results (one value, a tuple, or None).

        Tensor arguments must live on one CUDA device; the call runs on that
        device and, by default, on PyTorch's current stream there (see the
        module's docstring for ``stream=``).
        """
        rt = self.library.runtime
        c_args, views = self._marshal(values)
        devices = {v.device for v in views if v.device is not None}
        if len(devices) > 1:
            raise ValueError(f"@{self.name}: tensors on several devices {sorted(devices)}")
        device = devices.pop() if devices else None
        handle = _stream_handle(stream, device)

        out = None
        if len(self.result_types) == 1:
            out = _descriptor_type(self.result_types[0].rank)()
            out_descs = [out]
        elif self.result_types:
            out = _results_type(tuple(r.rank for r in self.result_types))()
            out_descs = [getattr(out, f"r{i}") for i in range(len(self.result_types))]
        else:
            out_descs = []
        argv = ([ctypes.byref(out)] if out is not None else []) + c_args

        rt.call_on_stream(self._fn, argv, device or 0, handle)
        results = self._wrap_results(out_descs, views, handle, device or 0)
        rt.raise_if_error(f"@{self.name}")
        if not self.result_types:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def _wrap_results(self, descs, views: List[_TensorView], stream: Optional[int],
                      device: int) -> List:
        rt = self.library.runtime
        torch = _torch()
        owners: Dict[int, Any] = {}
        wrapped = []
        for desc, spec in zip(descs, self.result_types):
            shape = tuple(desc.sizes) if spec.rank else ()
            strides = tuple(desc.strides) if spec.rank else ()
            allocated, aligned = desc.allocated or 0, desc.aligned or 0
            e = GPU_ELEMENT_TYPES[spec.element_type]
            base = aligned + desc.offset * e.itemsize
            owner = owners.get(allocated)
            if owner is None and allocated:
                # A result aliasing an argument keeps the argument alive;
                # a fresh buffer is freed when its last view goes.
                aliased = next((v for v in views
                                if v.ptr <= allocated < v.ptr + max(v.nbytes_span, 1)), None)
                owner = aliased if aliased is not None else _Allocation(rt, allocated, stream,
                                                                        device)
                owners[allocated] = owner
            array = DeviceArray(base, shape, strides, spec.element_type, owner)
            if torch is None:
                wrapped.append(array)
                continue
            if any(n == 0 for n in shape) or not aligned:
                t = torch.empty(shape, dtype=getattr(torch, e.torch_name),
                                device=f"cuda:{device}")
            else:
                t = torch.as_tensor(array, device=f"cuda:{device}")
                if spec.element_type == "bf16":
                    t = t.view(torch.bfloat16)
            wrapped.append(t)
        return wrapped


class TensorCall:
    """Calls a :class:`GpuFunction` with torch CUDA tensors, on PyTorch's
    current stream, for the per-call host overhead of a training loop: the
    first call with an argument layout (dtypes, shapes, strides, device) goes
    through the checked path of :class:`GpuFunction` and keeps its ctypes
    descriptors; later calls with that layout only write the tensors' data
    pointers into them. Per-thread caches: the descriptors are read by the
    C function during the call only, so a thread may reuse its own."""

    _MAX_LAYOUTS = 64

    def __init__(self, fn: "GpuFunction"):
        self.fn = fn
        self._local = threading.local()

    def __call__(self, *tensors, scalars: Sequence = ()) -> None:
        """`scalars`: ctypes values (``c_int64``, ``c_float``) of the
        function's scalar arguments, which follow the tensors."""
        layouts = getattr(self._local, "layouts", None)
        if layouts is None:
            layouts = self._local.layouts = {}
        key = tuple((t.dtype, t.shape, t.stride(), t.device) for t in tensors)
        entry = layouts.get(key)
        if entry is None:
            c_args, views = self.fn._marshal(tensors)
            for view in views:
                _check_view(view, None, 0)
            devices = {v.device for v in views}
            if len(devices) != 1:
                raise ValueError(f"@{self.fn.name}: tensors on several devices or none")
            descs = [p.contents for p in c_args]
            if len(layouts) >= self._MAX_LAYOUTS:
                layouts.clear()
            entry = layouts[key] = (descs, c_args, devices.pop())
        descs, c_args, device = entry
        for desc, t in zip(descs, tensors):
            ptr = t.data_ptr()
            desc.allocated = ptr
            desc.aligned = ptr
        handle = _torch().cuda.current_stream(device).cuda_stream
        rt = self.fn.library.runtime
        rt.call_on_stream(self.fn._fn, list(c_args) + list(scalars) if scalars else c_args,
                          device, handle)
        rt.raise_if_error(f"@{self.fn.name}")
