"""Compile GPU modules to shared libraries and call them with PyTorch CUDA tensors.

A module with ``gpu.module`` kernels and host functions that
``gpu.launch_func`` them (hand-written, or produced by ``xent-gpu-pipeline``)
is lowered by :func:`compile_gpu_module` -- kernels to a cubin embedded in
the host code, host code to LLVM, then ``mlir-translate``, ``llc`` and
``cc`` as in :func:`xent.runtime.driver.compile_module` -- into a shared library
linked against ``libxent_cuda_runtime.so`` (``lib/Runtime/CUDA``), which
implements the ``mgpu*`` functions the host code calls.  Compiling needs
LLVM 22 and the CUDA toolkit's ``ptxas``, but no GPU.

The library and a copy of the runtime sit side by side in the cache
directory (``$XENT_CACHE_DIR``, default ``~/.cache/xent``); the library finds
the runtime through ``$ORIGIN``.  Running needs only those two files and a
CUDA driver: a cache directory filled on a machine with LLVM can be copied to
a GPU machine without it.  :class:`KernelCache` indexes libraries by a
configuration (any JSON-able dict) so that such a machine finds them without
the compiler.

:class:`GpuLibrary` calls a host function through its C interface
(``llvm.emit_c_interface``).  Tensor arguments are passed as memref
descriptors built from the tensor's ``data_ptr()``, ``shape`` and
``stride()`` -- no copies; any object with ``__cuda_array_interface__``
works too.  Scalars: ``int`` is passed as ``int64`` (``index``/``i64``),
ctypes values as they are.  Memref results (device buffers the host code
allocated with ``gpu.alloc``) come back as CUDA tensors that own their
memory, again without a copy.

Streams: by default a call on CUDA tensors runs on PyTorch's current stream
of the tensors' device (``torch.cuda.current_stream().cuda_stream``): the
runtime (``xentSetStream``) hands that stream to the host code's
``mgpuStreamCreate`` and makes its ``mgpuStreamSynchronize`` a no-op, so a
call enqueues its kernels and returns without a device-to-host
synchronization, exactly like a PyTorch operator.  ``stream=`` takes a
``torch.cuda.Stream``, a raw ``CUstream`` as int, or :data:`SYNCHRONOUS`
(the host code's own streams, synchronized before returning).

Errors of the CUDA driver (module load, launch configuration, ...) raise
:class:`CudaError` with the runtime's messages; they never abort the process.
Kernel faults are asynchronous and surface at a later synchronization, as in
PyTorch.

Environment variables (besides those of :mod:`xent.runtime.driver`):

``XENT_CUDA_RUNTIME``  path of ``libxent_cuda_runtime.so`` to link and load
                       (default: the cache directory's copy, else
                       ``<build>/lib/`` next to ``$XENT_OPT``, else
                       ``$XENT_BUILD_DIR/lib`` or, from a source
                       checkout, ``<checkout>/build/lib``)
``XENT_OPT``           the ``*-opt`` tool (default: LLVM's ``mlir-opt``)
"""

from __future__ import annotations

import ctypes
import filecmp
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import driver
from .._checkout import checkout_root
from .driver import DriverError, Toolchain

__all__ = [
    "RUNTIME_NAME", "GPU_ELEMENT_TYPES", "SYNCHRONOUS", "CudaError", "MemRefType",
    "gpu_pipeline_args", "find_runtime_library", "install_runtime", "compile_gpu_module",
    "KernelCache", "Runtime", "GpuLibrary", "GpuFunction", "DeviceArray",
]

RUNTIME_NAME = "libxent_cuda_runtime.so"

#: Bumped whenever compile_gpu_module's recipe changes (invalidates the index).
_GPU_RECIPE_VERSION = "1"

#: Host-code pass pipeline for the stock ``mlir-opt`` of LLVM 22, for modules
#: whose kernels are already written in the gpu dialect (``gpu.module`` +
#: ``gpu.launch_func``, or ``gpu.launch`` regions, which are outlined).
#: ``gpu-async-region`` turns synchronous ``gpu.alloc``/``gpu.dealloc`` into
#: stream-ordered ones, which ``gpu-to-llvm`` needs; the rest is upstream's
#: ``gpu-lower-to-nvvm-pipeline`` (kernels through ``convert-gpu-to-nvvm``
#: and ptxas, host code through ``gpu-to-llvm``).
_GPU_PIPELINE = ("builtin.module(gpu-kernel-outlining,func.func(gpu-async-region),"
                 "gpu-lower-to-nvvm-pipeline{{cubin-chip={chip} cubin-features={features} "
                 "cubin-format={format} opt-level={opt}}})")


def gpu_pipeline_args(chip: str = "sm_90", features: str = "+ptx80", format: str = "bin",
                      opt_level: int = 3) -> List[str]:
    """``mlir-opt`` arguments lowering a gpu-dialect module to LLVM + an embedded binary.

    ``format``: ``bin`` (cubin from ptxas: no JIT at load, needs the CUDA
    toolkit to compile), ``isa`` (PTX, JIT-compiled by the driver at the
    first launch) or ``fatbin``.
    """
    if not re.fullmatch(r"sm_\d+[af]?", chip):
        raise ValueError(f"invalid chip {chip!r}; expected e.g. 'sm_90'")
    if format not in ("bin", "isa", "fatbin"):
        raise ValueError(f"invalid format {format!r}; expected 'bin', 'isa' or 'fatbin'")
    return ["--pass-pipeline=" + _GPU_PIPELINE.format(
        chip=chip, features=features, format=format, opt=int(opt_level))]


class CudaError(DriverError):
    """A failure reported by the CUDA runtime library (a driver call, a launch...)."""

    def __init__(self, message: str, code: int = 0):
        self.code = code
        super().__init__(message)


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

# The C layout of a memref descriptor and of a struct of several: the CPU
# driver's, shared.
_descriptor_type = driver._descriptor_type
_results_type = driver._result_struct_type


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
    desc = _descriptor_type(len(view.shape))()
    desc.allocated = desc.aligned = view.ptr
    desc.offset = 0
    for i, (n, st) in enumerate(zip(view.shape, view.strides)):
        desc.sizes[i] = n
        desc.strides[i] = st
    return desc


# --------------------------------------------------------------------------- runtime

def find_runtime_library(cache_dir: Optional[str] = None) -> Optional[str]:
    """Path of ``libxent_cuda_runtime.so``, or None.

    Looks at ``$XENT_CUDA_RUNTIME``, the cache directory's copy, the build
    directory of ``$XENT_OPT`` (``bin/../lib``), ``$XENT_BUILD_DIR/lib`` and,
    when the package runs from a source checkout, ``<checkout>/build/lib``, in
    that order.
    """
    env = os.environ.get("XENT_CUDA_RUNTIME")
    if env:
        return env if os.path.exists(env) else None
    candidates = []
    if cache_dir:
        candidates.append(os.path.join(cache_dir, RUNTIME_NAME))
    opt = os.environ.get("XENT_OPT")
    if opt:
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(opt))),
                                       "lib", RUNTIME_NAME))
    build = os.environ.get("XENT_BUILD_DIR")
    if build:
        candidates.append(os.path.join(build, "lib", RUNTIME_NAME))
    root = checkout_root()
    if root:
        candidates.append(os.path.join(root, "build", "lib", RUNTIME_NAME))
    for c in candidates:
        if os.path.exists(c):
            return os.path.abspath(c)
    return None


_install_lock = threading.Lock()


def install_runtime(cache_dir: str, runtime: Optional[str] = None) -> str:
    """Copies the runtime library into ``cache_dir`` (unless identical) and returns the copy."""
    src = runtime or find_runtime_library()
    dst = os.path.join(cache_dir, RUNTIME_NAME)
    if src is None:
        if os.path.exists(dst):
            return dst
        raise DriverError(f"{RUNTIME_NAME} not found: build the project with the CUDA toolkit "
                          "(lib/Runtime/CUDA) or set XENT_CUDA_RUNTIME")
    if os.path.abspath(src) == os.path.abspath(dst):
        return dst
    with _install_lock:
        if not (os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False)):
            fd, tmp = tempfile.mkstemp(prefix=".runtime_", dir=cache_dir)
            os.close(fd)
            shutil.copyfile(src, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dst)  # atomic; a process that mapped the old copy keeps it
    return dst


def _default_opt_tool() -> str:
    return os.environ.get("XENT_OPT") or os.path.join(
        os.environ.get("XENT_LLVM_BIN", driver.DEFAULT_LLVM_BIN), "mlir-opt")


def compile_gpu_module(mlir_text: str, pipeline_args: Optional[Sequence[str]] = None,
                       opt_tool: Optional[str] = None, out_dir: Optional[str] = None, *,
                       runtime: Optional[str] = None,
                       toolchain: Optional[Toolchain] = None) -> str:
    """Lower a GPU module to a shared library linked against the CUDA runtime.

    ``pipeline_args`` default to :func:`gpu_pipeline_args` (for a module
    already in the gpu dialect); for xent ops pass e.g.
    ``["--xent-gpu-pipeline"]`` with ``opt_tool`` = ``xent-opt``.  The
    library and a copy of the runtime are written to ``out_dir`` /
    ``$XENT_CACHE_DIR``; no GPU is needed.  Host code must need nothing but
    the runtime and libc/libm (no MLIR runner utils: they would not exist on
    a GPU machine without LLVM).
    """
    cache = driver._cache_dir(out_dir)
    rt = install_runtime(cache, runtime)
    tc = toolchain or Toolchain.from_env()
    tc = Toolchain(mlir_translate=tc.mlir_translate, llc=tc.llc, cc=tc.cc, llvm_nm=tc.llvm_nm,
                   runner_utils=os.path.join(cache, "no-runner-utils-for-gpu-modules"))
    return driver.compile_module(
        mlir_text, list(pipeline_args) if pipeline_args is not None else gpu_pipeline_args(),
        opt_tool or _default_opt_tool(), out_dir=cache, toolchain=tc,
        link_libraries=[rt], rpath=["$ORIGIN"], target_cpu=None)


# xentSetDeviceAllocator's functions.
_ALLOCATE_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32,
                                ctypes.c_void_p, ctypes.c_void_p)
_RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                               ctypes.c_void_p)


def _torch_allocate(nbytes, device, stream, _user):
    """PyTorch's caching allocator for the runtime (xentSetDeviceAllocator);
    None (no memory) when it refuses, which the runtime records."""
    try:
        return sys.modules["torch"].cuda.caching_allocator_alloc(nbytes, device, stream or 0)
    except Exception as e:  # noqa: BLE001 - a C callback must not raise
        _ALLOCATION_FAILURE.message = f"{type(e).__name__}: {e}"
        return None


def _torch_release(ptr, _device, _stream, _user):
    try:
        sys.modules["torch"].cuda.caching_allocator_delete(ptr)
    except Exception:  # noqa: BLE001 - a C callback must not raise
        pass


_ALLOCATION_FAILURE = threading.local()
_CUDA_ERROR_OUT_OF_MEMORY = 2
# Kept alive for as long as the runtime may call them.
_TORCH_ALLOCATOR = (_ALLOCATE_FN(_torch_allocate), _RELEASE_FN(_torch_release))


class Runtime:
    """ctypes view of ``libxent_cuda_runtime.so`` (one per path and process)."""

    _instances: Dict[str, "Runtime"] = {}
    _lock = threading.Lock()

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        # RTLD_GLOBAL and the unversioned soname: the kernel libraries'
        # DT_NEEDED entry resolves to this very copy.
        lib = ctypes.CDLL(self.path, mode=ctypes.RTLD_GLOBAL)
        self._lib = lib
        vp, i32 = ctypes.c_void_p, ctypes.c_int32
        for name, args, res in (
                ("xentSetStream", [vp], None), ("xentResetStream", [], None),
                ("xentGetStream", [ctypes.POINTER(vp)], ctypes.c_int),
                ("xentGetLastError", [], ctypes.c_int),
                ("xentGetLastErrorMessage", [], ctypes.c_char_p),
                ("xentGetErrorLog", [], ctypes.c_char_p),
                ("xentClearLastError", [], None), ("xentGetErrorCount", [], ctypes.c_uint64),
                ("xentSetErrorReporting", [ctypes.c_int], ctypes.c_int),
                ("xentDeviceCount", [], ctypes.c_int),
                ("xentStreamSynchronize", [vp], ctypes.c_int),
                ("xentRuntimeVersion", [], ctypes.c_char_p),
                ("mgpuSetDefaultDevice", [i32], None),
                ("xentSetDeviceAllocator", [_ALLOCATE_FN, _RELEASE_FN, vp], None),
                ("xentHasDeviceAllocator", [], ctypes.c_int),
                ("mgpuMemAlloc", [ctypes.c_uint64, vp, ctypes.c_int8], vp),
                ("mgpuMemFree", [vp, vp], None),
                ("mgpuMemcpy", [vp, vp, ctypes.c_size_t, vp], None),
                ("mgpuMemset32", [vp, ctypes.c_uint32, ctypes.c_size_t, vp], None)):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res

    @classmethod
    def load(cls, path: Optional[str] = None, cache_dir: Optional[str] = None) -> "Runtime":
        path = path or find_runtime_library(cache_dir)
        if path is None:
            raise DriverError(f"{RUNTIME_NAME} not found (set XENT_CUDA_RUNTIME or build "
                              "lib/Runtime/CUDA)")
        key = os.path.realpath(path)
        with cls._lock:
            if key not in cls._instances:
                # A copy of a runtime already loaded (one per cache or bundle
                # directory) is that runtime: the libraries resolve their
                # DT_NEEDED entry by soname to the first copy loaded, so
                # the stream must be set there.
                same = next((rt for rt in cls._instances.values()
                             if filecmp.cmp(rt.path, key, shallow=False)), None)
                cls._instances[key] = same or cls(path)
            return cls._instances[key]

    def __getattr__(self, name):
        return getattr(self._lib, name)

    @property
    def version(self) -> str:
        return self._lib.xentRuntimeVersion().decode()

    def device_count(self) -> int:
        return int(self._lib.xentDeviceCount())

    def clear_errors(self) -> None:
        self._lib.xentClearLastError()

    _allocator_set = False

    def use_torch_allocator(self) -> bool:
        """Makes PyTorch's caching allocator the runtime's device allocator
        (xentSetDeviceAllocator), so that the memory a call needs (kernel
        scratch, the linear ops' chunk buffers, the cuBLASLt workspace) is
        PyTorch's: its statistics and limits see it, and it reuses it. Done
        at the first call on a stream in a process that imported torch;
        nothing when xent.torch's C++ extension installed its own, which
        does the same without Python. Returns whether one is installed."""
        if not self._lib.xentHasDeviceAllocator() and "torch" in sys.modules:
            self._lib.xentSetDeviceAllocator(_TORCH_ALLOCATOR[0], _TORCH_ALLOCATOR[1], None)
        self._allocator_set = bool(self._lib.xentHasDeviceAllocator())
        return self._allocator_set

    def call_on_stream(self, fn, argv: Sequence, device: int, handle: Optional[int]) -> None:
        """Calls the C function `fn(*argv)` with the runtime's errors cleared,
        on `device` and on the CUstream `handle` (None: the runtime's own
        synchronous mode), restoring the thread's previous stream after. The
        caller checks the errors (raise_if_error)."""
        self.clear_errors()
        if handle is not None and not self._allocator_set:
            self.use_torch_allocator()
        previous = ctypes.c_void_p()
        had_stream = self._lib.xentGetStream(ctypes.byref(previous))
        self._lib.mgpuSetDefaultDevice(device)
        if handle is not None:
            self._lib.xentSetStream(ctypes.c_void_p(handle))
        else:
            self._lib.xentResetStream()
        try:
            fn(*argv)
        finally:
            if had_stream:
                self._lib.xentSetStream(previous)
            else:
                self._lib.xentResetStream()

    def raise_if_error(self, what: str) -> None:
        refused = getattr(_ALLOCATION_FAILURE, "message", None)
        _ALLOCATION_FAILURE.message = None
        code = self._lib.xentGetLastError()
        if code:
            log = (self._lib.xentGetErrorLog() or b"").decode(errors="replace")
            self._lib.xentClearLastError()
            torch = sys.modules.get("torch")
            if code == _CUDA_ERROR_OUT_OF_MEMORY and hasattr(torch, "OutOfMemoryError"):
                # As PyTorch reports its allocator's refusal.
                raise torch.OutOfMemoryError(f"{what}: {refused or log}")
            raise CudaError(f"{what}: CUDA error {code}\n{log}", code)

    def synchronize(self, stream: Optional[int] = 0) -> None:
        """Waits for ``stream`` (a raw CUstream; 0: legacy stream) and raises on failure."""
        self.clear_errors()
        self._lib.xentStreamSynchronize(ctypes.c_void_p(stream or 0))
        self.raise_if_error("synchronize")


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


def _torch():
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return torch


# --------------------------------------------------------------------------- calling

SYNCHRONOUS = "synchronous"

_StreamArg = Union[None, int, str, Any]


def _stream_handle(stream: _StreamArg, device: Optional[int]) -> Optional[int]:
    """The raw CUstream a call runs on, or None for the standalone (synchronous) mode."""
    if isinstance(stream, str):
        if stream != SYNCHRONOUS:
            raise ValueError(f"invalid stream {stream!r}")
        return None
    if stream is None:
        torch = _torch()
        if torch is None or device is None:
            return None
        return int(torch.cuda.current_stream(device).cuda_stream)
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise TypeError(f"invalid stream {stream!r}: expected a torch.cuda.Stream, an int "
                        "CUstream or xent.runtime.gpu.SYNCHRONOUS")
    return int(handle)


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


# --------------------------------------------------------------------------- kernel cache

_COMPILERS: Dict[tuple, str] = {}


def compiler_identity(opt_tool: Optional[str] = None) -> Optional[str]:
    """A hash of the compiler executable that would build a kernel here
    (``opt_tool``, else ``$XENT_OPT``, else LLVM's ``mlir-opt``), or None
    where there is none (a GPU machine running a copied cache). Memoized per
    path, size and modification time."""
    try:
        path = driver._resolve_tool(opt_tool or _default_opt_tool())
        st = os.stat(path)
    except (DriverError, OSError):
        return None
    memo = (path, st.st_size, st.st_mtime_ns)
    identity = _COMPILERS.get(memo)
    if identity is None:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        identity = _COMPILERS[memo] = digest.hexdigest()[:16]
    return identity


class KernelCache:
    """Compiled GPU libraries indexed by a configuration, in a directory.

    ``get(config, build)`` returns the library compiled for ``config`` (a
    JSON-able dict, e.g. ``{"op": "cross_entropy", "dtype": "bf16",
    "reduction": "mean", "chip": "sm_90"}``), compiling ``build()`` (the MLIR
    text) with ``pipeline_args`` only the first time.  The index entry
    (``index/<hash>.json``) names the library file and the compiler that
    built it (:func:`compiler_identity`): where a compiler is at hand, an
    entry another compiler built (an older xent-opt: other kernels under the
    same configuration) is rebuilt, not served. A copy of the directory
    serves a machine without LLVM: there ``get`` never compiles, and a
    missing configuration raises :class:`DriverError` naming it.
    """

    def __init__(self, directory: Optional[str] = None, fallbacks: Sequence[str] = ()):
        self.directory = driver._cache_dir(directory)
        # Read-only directories looked at after this one, before compiling:
        # the package's bundle (xent.runtime.bundle). Their entries follow
        # the same compiler rule; compiling writes here, never there.
        self.fallbacks = [KernelCache._readonly(d) for d in fallbacks
                          if os.path.abspath(d) != os.path.abspath(self.directory)]
        self._libraries: Dict[str, GpuLibrary] = {}
        self._lock = threading.Lock()

    @classmethod
    def _readonly(cls, directory: str) -> "KernelCache":
        cache = cls.__new__(cls)
        cache.directory, cache.fallbacks = os.path.abspath(directory), []
        cache._libraries, cache._lock = {}, threading.Lock()
        return cache

    @staticmethod
    def key(config: Dict[str, Any]) -> str:
        text = json.dumps({"recipe": _GPU_RECIPE_VERSION, "config": config}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _index_path(self, key: str) -> str:
        return os.path.join(self.directory, "index", f"{key}.json")

    def lookup(self, config: Dict[str, Any], compiler: Optional[str] = None) -> Optional[str]:
        """Path of the library compiled for ``config``, or None; with
        ``compiler`` (an identity), None too for an entry another compiler
        built."""
        try:
            with open(self._index_path(self.key(config))) as f:
                entry = json.load(f)
        except (OSError, ValueError):
            return None
        if compiler is not None and entry.get("compiler") != compiler:
            return None
        path = os.path.join(self.directory, entry.get("library", ""))
        return path if entry.get("library") and os.path.exists(path) else None

    def path(self, config: Dict[str, Any], build: Optional[Callable[[], str]] = None,
             pipeline_args: Optional[Sequence[str]] = None,
             opt_tool: Optional[str] = None) -> str:
        """Path of the library for ``config``, compiled from ``build()`` if not indexed yet.

        Needs no GPU (it does not load the library): this is how a cache is
        filled on a machine with LLVM for a GPU machine without it.
        """
        compiler = compiler_identity(opt_tool) if build is not None else None
        for cache in [self, *self.fallbacks]:
            path = cache.lookup(config, compiler)
            if path is not None:
                return path
        if build is None:
            raise DriverError(f"no compiled kernel for {json.dumps(config, sort_keys=True)} "
                              f"in {self.directory}")
        try:
            path = compile_gpu_module(build(), pipeline_args, opt_tool, out_dir=self.directory)
        except DriverError as e:
            stale = next((p for p in (c.lookup(config) for c in [self, *self.fallbacks]) if p),
                         None)
            if stale is not None:
                # Built by another compiler, and this one cannot rebuild it
                # (e.g. LLVM's mlir-opt beside a copied xent bundle).
                warnings.warn(f"xent: serving {stale} for {json.dumps(config, sort_keys=True)}, "
                              f"built by another compiler; rebuilding it failed: {e}",
                              RuntimeWarning, stacklevel=3)
                return stale
            raise DriverError(
                f"no compiled kernel for {json.dumps(config, sort_keys=True)} in "
                f"{self.directory}, and compiling it failed (compile on a machine with "
                f"LLVM 22 and the CUDA toolkit, then copy the directory):\n{e}") from e
        key = self.key(config)
        os.makedirs(os.path.dirname(self._index_path(key)), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".index_", dir=self.directory)
        with os.fdopen(fd, "w") as f:
            json.dump({"config": config, "library": os.path.basename(path),
                       "compiler": compiler,
                       "pipeline": list(pipeline_args if pipeline_args is not None
                                        else gpu_pipeline_args())}, f,
                      sort_keys=True, indent=1)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self._index_path(key))
        return path

    def get(self, config: Dict[str, Any], build: Optional[Callable[[], str]] = None,
            pipeline_args: Optional[Sequence[str]] = None,
            opt_tool: Optional[str] = None) -> GpuLibrary:
        """The loaded library for ``config`` (see :meth:`path`), one per configuration."""
        key = self.key(config)
        with self._lock:
            lib = self._libraries.get(key)
            if lib is None:
                lib = self._libraries[key] = GpuLibrary(
                    self.path(config, build, pipeline_args, opt_tool))
            return lib
