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

This module holds the pipeline, :func:`compile_gpu_module` and the kernel
cache; the rest is split by concern and re-exported here:
:mod:`xent.runtime.memref` (element types, :class:`MemRefType`, tensor
views, memref descriptors), :mod:`xent.runtime.cuda_runtime` (finding and
installing the runtime library, :class:`Runtime`, the allocator hooks,
streams) and :mod:`xent.runtime.library` (:class:`GpuLibrary`,
:class:`GpuFunction`, :class:`TensorCall`, :class:`DeviceArray`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import driver, pipelines
from .driver import DriverError, Toolchain
from .library import GpuLibrary

# The rest of the runtime's Python side lives in memref, cuda_runtime and
# library; every name this module had before they were split off stays
# importable from here (xent.runtime.gpu.X, private names included).
from .cuda_runtime import (  # noqa: F401 - re-exported
    _ALLOCATE_FN, _ALLOCATION_FAILURE, _CUDA_ERROR_OUT_OF_MEMORY, _RELEASE_FN, _TORCH_ALLOCATOR,
    RUNTIME_NAME, SYNCHRONOUS, CudaError, Runtime, _install_lock, _stream_handle, _StreamArg,
    _torch, _torch_allocate, _torch_release, find_runtime_library, install_runtime)
from .library import DeviceArray, GpuFunction, TensorCall, _Allocation  # noqa: F401
from .memref import (  # noqa: F401 - re-exported
    _SCALAR_CTYPES, _TORCH_TENSOR_TYPE, _TORCH_TO_ELEMENT, _TYPESTR_TO_ELEMENT, GPU_ELEMENT_TYPES,
    MemRefType, _check_view, _descriptor, _descriptor_type, _Element, _is_contiguous,
    _parse_arg_type, _results_type, _tensor_view, _TensorView)

__all__ = [
    "RUNTIME_NAME", "GPU_ELEMENT_TYPES", "SYNCHRONOUS", "CudaError", "MemRefType",
    "gpu_pipeline_args", "find_runtime_library", "install_runtime", "compile_gpu_module",
    "KernelCache", "Runtime", "GpuLibrary", "GpuFunction", "DeviceArray",
]

#: Bumped whenever compile_gpu_module's recipe changes (invalidates the index).
_GPU_RECIPE_VERSION = "1"

def gpu_pipeline_args(chip: str = "sm_90", features: str = "+ptx80", format: str = "bin",
                      opt_level: int = 3) -> List[str]:
    """``mlir-opt`` arguments lowering a gpu-dialect module to LLVM + an embedded binary
    (:func:`xent.runtime.pipelines.gpu_lowering_pipeline_args`).

    ``format``: ``bin`` (cubin from ptxas: no JIT at load, needs the CUDA
    toolkit to compile), ``isa`` (PTX, JIT-compiled by the driver at the
    first launch) or ``fatbin``.
    """
    return pipelines.gpu_lowering_pipeline_args(chip, features, format, opt_level)


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
    :func:`xent.runtime.pipelines.xent_gpu_pipeline_args` with ``opt_tool``
    = ``xent-opt``.  The library and a copy of the runtime are written to
    ``out_dir`` / ``$XENT_CACHE_DIR``; no GPU is needed.  Host code must need nothing but
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
