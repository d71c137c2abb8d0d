"""``libxent_cuda_runtime.so`` from Python, for :mod:`xent.runtime.gpu`.

Finding the runtime library and installing a copy of it beside the compiled
kernels (:func:`find_runtime_library`, :func:`install_runtime`), its ctypes
view (:class:`Runtime`: streams, errors as :class:`CudaError`, PyTorch's
caching allocator as the device allocator) and the stream a call runs on
(PyTorch's current stream, a given one, or :data:`SYNCHRONOUS`).
"""

from __future__ import annotations

import ctypes
import filecmp
import os
import shutil
import sys
import tempfile
import threading
from typing import Any, Dict, Optional, Sequence, Union

from .._checkout import checkout_root
from .driver import DriverError

RUNTIME_NAME = "libxent_cuda_runtime.so"


class CudaError(DriverError):
    """A failure reported by the CUDA runtime library (a driver call, a launch...)."""

    def __init__(self, message: str, code: int = 0):
        self.code = code
        super().__init__(message)


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
