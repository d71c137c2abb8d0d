"""Compile MLIR modules to shared libraries and call them from NumPy.

:func:`compile_module` lowers MLIR text with an ``*-opt`` tool and a pass
pipeline, then runs ``mlir-translate``, ``llc`` and the C compiler, caching
the resulting ``.so`` by content.  :class:`Library` loads it with ``ctypes``
and calls functions through MLIR's C interface (``llvm.emit_c_interface``):

* every tensor/memref argument is passed as a pointer to a memref descriptor
  ``{T *allocated, T *aligned, int64 offset, int64 sizes[r], int64 strides[r]}``;
* results come back through a pointer passed as the first argument: to the
  descriptor for one result, to a struct of descriptors for several.

Results are copied into NumPy arrays and their buffers released with libc
``free`` (they must be ``malloc``-owned by the caller, as the deallocation
pipeline in :mod:`xent.runtime.pipelines` guarantees).

Environment variables:

``XENT_LLVM_BIN``      directory of ``mlir-translate``, ``llc``, ``llvm-nm``
                       (default ``/usr/lib/llvm-22/bin``)
``XENT_MLIR_TRANSLATE``, ``XENT_LLC``, ``XENT_LLVM_OPT``  override single tools
``XENT_CC``            C compiler used to link (default ``$CC`` or ``cc``)
``XENT_RUNNER_UTILS``  path of ``libmlir_c_runner_utils.so``
``XENT_OPENMP_LIB``    path of the OpenMP runtime the CPU pipeline's parallel
                       rows call (default ``/usr/lib/llvm-22/lib/libomp.so``,
                       Debian's ``libomp-22-dev``)
``XENT_CACHE_DIR``     cache directory (default ``~/.cache/xent``)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import descriptor
from .bf16 import BF16Array

__all__ = [
    "DriverError", "ToolError", "Toolchain", "ResultSpec", "Library", "compile_module",
    "ELEMENT_TYPES",
]

DEFAULT_LLVM_BIN = "/usr/lib/llvm-22/bin"
DEFAULT_RUNNER_UTILS = "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
DEFAULT_OPENMP_LIB = "/usr/lib/llvm-22/lib/libomp.so"

# Bumped whenever the compilation recipe changes, to invalidate cached objects.
_RECIPE_VERSION = "3"

# MLIR's memref.get_global lowering stores this constant as the allocated
# pointer of descriptors that point into a global: it must never be freed.
_GLOBAL_ALLOCATED_SENTINEL = 0xDEADBEEF

#: MLIR element type name -> NumPy storage dtype (bf16 is stored as raw uint16).
ELEMENT_TYPES: Dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.uint16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
_NUMPY_TO_ELEMENT = {dt: name for name, dt in ELEMENT_TYPES.items() if name != "bf16"}


class DriverError(RuntimeError):
    """Raised for errors in compiling or calling a module."""


class ToolError(DriverError):
    """An external tool failed; carries its command line and stderr."""

    def __init__(self, tool: str, cmd: Sequence[str], returncode: int, stderr: str):
        self.tool, self.cmd, self.returncode, self.stderr = tool, list(cmd), returncode, stderr
        super().__init__(f"{tool} failed with exit code {returncode}\n"
                         f"command: {' '.join(map(str, cmd))}\n{stderr.rstrip()}")


# --------------------------------------------------------------------------- compilation

@dataclass(frozen=True)
class Toolchain:
    """Paths of the tools run after the ``*-opt`` tool."""

    mlir_translate: str
    llc: str
    cc: str
    llvm_nm: str
    runner_utils: str
    openmp: str = DEFAULT_OPENMP_LIB
    opt: str = os.path.join(DEFAULT_LLVM_BIN, "opt")

    @classmethod
    def from_env(cls) -> "Toolchain":
        bin_dir = os.environ.get("XENT_LLVM_BIN", DEFAULT_LLVM_BIN)
        return cls(
            mlir_translate=os.environ.get("XENT_MLIR_TRANSLATE",
                                          os.path.join(bin_dir, "mlir-translate")),
            llc=os.environ.get("XENT_LLC", os.path.join(bin_dir, "llc")),
            cc=os.environ.get("XENT_CC", os.environ.get("CC", "cc")),
            llvm_nm=os.path.join(bin_dir, "llvm-nm"),
            runner_utils=os.environ.get("XENT_RUNNER_UTILS", DEFAULT_RUNNER_UTILS),
            openmp=os.environ.get("XENT_OPENMP_LIB", DEFAULT_OPENMP_LIB),
            opt=os.environ.get("XENT_LLVM_OPT", os.path.join(bin_dir, "opt")),
        )


def _resolve_tool(tool: str) -> str:
    """Absolute path of ``tool`` (a path, or a name looked up in XENT_LLVM_BIN, then PATH)."""
    if os.sep not in tool:
        candidate = os.path.join(os.environ.get("XENT_LLVM_BIN", DEFAULT_LLVM_BIN), tool)
        found = candidate if os.access(candidate, os.X_OK) else shutil.which(tool)
        if found is None:
            raise DriverError(f"tool not found: {tool}")
        tool = found
    if not os.access(tool, os.X_OK):
        raise DriverError(f"tool not found or not executable: {tool}")
    return os.path.abspath(tool)


def _tool_fingerprint(path: str) -> List[Union[str, int]]:
    try:
        st = os.stat(path)
        return [path, st.st_mtime_ns, st.st_size]
    except OSError:
        return [path]


def _cache_dir(out_dir: Optional[str]) -> str:
    d = out_dir or os.environ.get("XENT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "xent")
    os.makedirs(d, exist_ok=True)
    return d


def _run(tool: str, cmd: List[str], stdin: Optional[bytes] = None) -> None:
    try:
        proc = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
    except OSError as e:
        raise ToolError(tool, cmd, -1, str(e)) from e
    if proc.returncode != 0:
        raise ToolError(tool, cmd, proc.returncode,
                        (proc.stderr or proc.stdout).decode(errors="replace"))


@functools.lru_cache(maxsize=None)
def _runner_utils_symbols(llvm_nm: str, library: str) -> Optional[frozenset]:
    """Functions defined by the runner-utils library, or None if unknown."""
    try:
        out = subprocess.run([llvm_nm, "-D", "--defined-only", "--format=just-symbols", library],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return frozenset(out.stdout.decode().split())


_DECLARE_RE = re.compile(r'^declare\b[^@\n]*@"?([^"(\s]+)"?\(', re.MULTILINE)


@functools.lru_cache(maxsize=None)
def _host_cpu(llc: str) -> str:
    """The CPU that ``llc -mcpu=native`` compiles for (LLVM's host detection),
    with a digest of the features the kernel reports (a virtual machine may
    hide some of a CPU's, such as AVX-512, under the same name)."""
    try:
        out = subprocess.run([llc, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    match = re.search(r"Host CPU:\s*(\S+)", out)
    name = match.group(1) if match else "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        flags = ""
    return f"{name}:{hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def _openmp_args(llvm_ir: str, tc: Toolchain) -> List[str]:
    """The OpenMP runtime, if the module calls it (xent-cpu-pipeline's rows)."""
    if "@__kmpc_" not in llvm_ir:
        return []
    if not os.path.exists(tc.openmp):
        raise DriverError(
            f"the module runs its rows through OpenMP but {tc.openmp} does not exist: "
            "install libomp-22-dev, set XENT_OPENMP_LIB, or lower with "
            "xent-cpu-pipeline{threads=1}")
    lib = os.path.realpath(tc.openmp)
    return [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]


def _link_args(llvm_ir: str, tc: Toolchain) -> List[str]:
    """Extra linker arguments: the MLIR runner utils and the OpenMP runtime
    if the module needs them."""
    omp = _openmp_args(llvm_ir, tc)
    if not os.path.exists(tc.runner_utils):
        return omp
    lib = os.path.realpath(tc.runner_utils)
    rpath = [f"-Wl,-rpath,{os.path.dirname(lib)}"]
    provided = _runner_utils_symbols(tc.llvm_nm, tc.runner_utils)
    if provided is None:  # cannot tell: let the linker drop it if unused
        return ["-Wl,--as-needed", lib, "-Wl,--no-as-needed"] + rpath + omp
    declared = set(_DECLARE_RE.findall(llvm_ir))
    return ([lib] + rpath if declared & provided else []) + omp


def compile_module(mlir_text: str, pipeline_args: Sequence[str], opt_tool: str,
                   out_dir: Optional[str] = None, *,
                   toolchain: Optional[Toolchain] = None,
                   link_libraries: Sequence[str] = (),
                   rpath: Sequence[str] = (),
                   target_cpu: Optional[str] = "native") -> str:
    """Lower ``mlir_text`` to a shared library and return its path.

    Runs ``<opt_tool> <pipeline_args>`` on the text, then
    ``mlir-translate --mlir-to-llvmir``, LLVM's ``opt -O3`` (but for a
    ``target_cpu`` of None), ``llc -O2`` and ``cc -shared``.  The
    result is cached under a hash of the text, the pipeline and the tools'
    identities (path, mtime, size) in ``out_dir``, ``$XENT_CACHE_DIR`` or
    ``~/.cache/xent``.  Raises :class:`ToolError` (with the tool's stderr)
    when a step fails.

    ``link_libraries``: shared libraries the module is linked against (e.g.
    the CUDA runtime for GPU host code, see :mod:`xent.runtime.gpu`); ``rpath``:
    run-time search paths recorded in the library (``$ORIGIN`` is the
    library's own directory).  Both are part of the cache key.

    ``target_cpu``: ``llc -mcpu``; ``"native"`` (the default) is this host,
    whose vector registers xent-cpu-pipeline's vector width defaults to, and
    its name is part of the cache key; ``None`` is the generic CPU of the
    target (libraries built to run elsewhere, such as the GPU bundle's host
    code).
    """
    tc = toolchain or Toolchain.from_env()
    opt = _resolve_tool(opt_tool)
    pipeline_args = [str(a) for a in pipeline_args]
    link_libraries = [os.path.abspath(str(p)) for p in link_libraries]
    rpath = [str(p) for p in rpath]
    key_fields = {
        "version": _RECIPE_VERSION,
        "text": mlir_text,
        "pipeline": pipeline_args,
        "opt": _tool_fingerprint(opt),
        "tools": [_tool_fingerprint(p) for p in
                  (tc.mlir_translate, tc.llc, tc.runner_utils)] + [tc.cc],
    }
    if target_cpu is not None:
        key_fields["cpu"] = [_host_cpu(tc.llc) if target_cpu == "native" else target_cpu,
                             _tool_fingerprint(tc.opt)]
    if link_libraries or rpath:
        key_fields["link"] = [_tool_fingerprint(p) for p in link_libraries] + rpath
    key_material = json.dumps(key_fields, sort_keys=True)
    key = hashlib.sha256(key_material.encode()).hexdigest()[:32]
    cache = _cache_dir(out_dir)
    so_path = os.path.join(cache, f"xent_{key}.so")
    if os.path.exists(so_path):
        return so_path

    with tempfile.TemporaryDirectory(prefix=f"xent_{key[:8]}_", dir=cache) as work:
        lowered = os.path.join(work, "lowered.mlir")
        ll = os.path.join(work, "module.ll")
        obj = os.path.join(work, "module.o")
        so_tmp = os.path.join(work, "module.so")
        _run(os.path.basename(opt), [opt, *pipeline_args, "-", "-o", lowered],
             stdin=mlir_text.encode())
        _run("mlir-translate", [tc.mlir_translate, "--mlir-to-llvmir", lowered, "-o", ll])
        cpu = [f"-mcpu={target_cpu}"] if target_cpu is not None else []
        if target_cpu is not None:
            # LLVM's own mid-level optimizations (LICM, instcombine...) on
            # the lowered loops; llc alone runs none of them.
            optimized = os.path.join(work, "module.opt.ll")
            _run("opt", [tc.opt, "-O3", *cpu, ll, "-S", "-o", optimized])
            ll = optimized
        _run("llc", [tc.llc, "-O2", *cpu, "--relocation-model=pic", "-filetype=obj", ll,
                     "-o", obj])
        with open(ll, encoding="utf-8", errors="replace") as f:
            extra = _link_args(f.read(), tc)
        # --no-undefined: a missing runtime symbol (e.g. libgcc < 13 has no
        # __truncsfbf2) fails here, with a message, not later in dlopen.
        extra += link_libraries + [f"-Wl,-rpath,{p}" for p in rpath]
        # -Bsymbolic: calls between the module's own functions bind inside the
        # library, so a function named like a libc/libm symbol (j0, y1, exp...)
        # is not interposed by the process's copy.
        _run("cc", [tc.cc, "-shared", "-Wl,--no-undefined", "-Wl,-Bsymbolic", "-o", so_tmp, obj,
                    *extra, "-lm"])
        os.replace(so_tmp, so_path)  # atomic: concurrent compilations are safe
    return so_path


# --------------------------------------------------------------------------- calling

@dataclass(frozen=True)
class ResultSpec:
    """Element type (``"f32"``, ``"bf16"``, ``"i64"``...) and rank of a memref result."""

    element_type: str
    rank: int

    def __post_init__(self):
        if self.element_type not in ELEMENT_TYPES:
            raise ValueError(f"unsupported element type {self.element_type!r}; "
                             f"expected one of {sorted(ELEMENT_TYPES)}")
        if self.rank < 0:
            raise ValueError(f"rank must be >= 0, got {self.rank}")

    @classmethod
    def parse(cls, spec) -> "ResultSpec":
        """Accept a ResultSpec, ``(element_type, rank)`` or ``"tensor<?x4xf32>"``."""
        if isinstance(spec, ResultSpec):
            return spec
        if isinstance(spec, str):
            m = re.fullmatch(r"\s*(?:tensor|memref)<\s*((?:(?:\?|\d+)x)*)(\w+)\s*>\s*", spec)
            if not m:
                raise ValueError(f"cannot parse result type {spec!r}")
            return cls(m.group(2), m.group(1).count("x"))
        if isinstance(spec, tuple) and len(spec) == 2:
            elem, rank = spec
            if not isinstance(elem, str):
                elem = _NUMPY_TO_ELEMENT.get(np.dtype(elem))
                if elem is None:
                    raise ValueError(f"unsupported result dtype {spec[0]!r}")
            return cls(elem, int(rank))
        raise TypeError(f"invalid result spec {spec!r}")


def _is_single_spec(results) -> bool:
    return (isinstance(results, (ResultSpec, str)) or
            (isinstance(results, tuple) and len(results) == 2 and isinstance(results[1], int)
             and not isinstance(results[0], (tuple, ResultSpec))
             and not (isinstance(results[0], str) and "<" in results[0])))


# The descriptors' C layout (xent.runtime.descriptor), under the names the
# rest of the runtime has used.
_descriptor_type = descriptor.descriptor_type
_result_struct_type = descriptor.results_type


@functools.lru_cache(maxsize=1)
def _libc_free():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    free = libc.free
    free.argtypes, free.restype = [ctypes.c_void_p], None
    return free


def _as_input_array(value, index: int) -> np.ndarray:
    if isinstance(value, BF16Array):
        return np.ascontiguousarray(value.bits)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"input {index}: expected a numpy array or BF16Array, got {type(value).__name__}")
    if value.dtype not in _NUMPY_TO_ELEMENT:
        raise TypeError(f"input {index}: unsupported dtype {value.dtype} "
                        "(use BF16Array for bf16)")
    return np.ascontiguousarray(value)


def _input_descriptor(arr: np.ndarray) -> ctypes.Structure:
    return descriptor.descriptor(arr.ctypes.data, arr.shape,
                                 [stride // arr.itemsize for stride in arr.strides])


def _copy_result(desc: ctypes.Structure, spec: ResultSpec):
    dtype = ELEMENT_TYPES[spec.element_type]
    sizes = tuple(desc.sizes) if spec.rank else ()
    strides = tuple(desc.strides) if spec.rank else ()
    if any(s < 0 for s in sizes):
        raise DriverError(f"result descriptor has negative sizes {sizes}")
    if int(np.prod(sizes, dtype=np.int64)) == 0:
        out = np.empty(sizes, dtype=dtype)
    else:
        if not desc.aligned:
            raise DriverError("non-empty result has a null data pointer")
        lo = sum((n - 1) * s for n, s in zip(sizes, strides) if s < 0)
        hi = sum((n - 1) * s for n, s in zip(sizes, strides) if s > 0)
        start = desc.aligned + (desc.offset + lo) * dtype.itemsize
        nbytes = (hi - lo + 1) * dtype.itemsize
        raw = (ctypes.c_char * nbytes).from_address(start)
        view = np.ndarray(sizes, dtype=dtype, buffer=raw, offset=-lo * dtype.itemsize,
                          strides=tuple(s * dtype.itemsize for s in strides))
        out = np.array(view, order="C", copy=True)
    return BF16Array(out) if spec.element_type == "bf16" else out


class Library:
    """A compiled module loaded with ctypes."""

    def __init__(self, path: str):
        self.path = path
        self._lib = ctypes.CDLL(os.path.abspath(path))

    def has_function(self, name: str) -> bool:
        return hasattr(self._lib, f"_mlir_ciface_{name}")

    def call(self, name: str, inputs: Iterable, results=(), *, copy_inputs: bool = False):
        """Call ``@name`` through its C interface and return copies of its results.

        ``inputs``: NumPy arrays (f16/f32/f64/bool/int8..int64) or
        :class:`BF16Array`, one per memref argument, any rank (0-d included).
        ``results``: one spec per memref result, each a :class:`ResultSpec`,
        ``(element_type, rank)`` or an MLIR type string such as
        ``"tensor<?x?xf32>"``.  A single spec (not in a list) returns a single
        value; a list returns a tuple.  bf16 results come back as
        :class:`BF16Array`.

        One-shot bufferization treats function arguments as writable, so IR
        that updates an argument tensor in place writes into the caller's
        array; ``copy_inputs=True`` passes private copies instead.  Result
        buffers must be malloc'ed and owned by the caller; a result whose
        allocated pointer is MLIR's global marker (0xdeadbeef) or lies inside an
        input buffer is copied but not freed, and each allocation is freed once.
        """
        single = _is_single_spec(results)
        specs = [ResultSpec.parse(results)] if single else [ResultSpec.parse(r) for r in results]
        try:
            fn = getattr(self._lib, f"_mlir_ciface_{name}")
        except AttributeError:
            raise DriverError(f"{self.path} has no _mlir_ciface_{name}; does @{name} carry "
                              "the llvm.emit_c_interface attribute?") from None

        arrays = [_as_input_array(v, i) for i, v in enumerate(inputs)]  # kept alive below
        if copy_inputs:
            arrays = [a.copy() for a in arrays]
        descs = [_input_descriptor(a) for a in arrays]
        if len(specs) == 1:
            out = _descriptor_type(specs[0].rank)()
            out_descs = [out]
        elif specs:
            out = _result_struct_type(tuple(s.rank for s in specs))()
            out_descs = [getattr(out, f"r{i}") for i in range(len(specs))]
        else:
            out, out_descs = None, []

        args = ([ctypes.addressof(out)] if out is not None else []) + \
               [ctypes.addressof(d) for d in descs]
        fn.argtypes = [ctypes.c_void_p] * len(args)
        fn.restype = None
        fn(*args)

        try:
            values = tuple(_copy_result(d, s) for d, s in zip(out_descs, specs))
        finally:
            self._free_results(out_descs, arrays)
        return values[0] if single else values

    @staticmethod
    def _free_results(descs: List[ctypes.Structure], inputs: List[np.ndarray]) -> None:
        """free() each distinct result allocation, skipping globals and input aliases."""
        input_ranges = [(a.ctypes.data, a.ctypes.data + a.nbytes) for a in inputs if a.nbytes]
        freed = set()
        for d in descs:
            ptr = d.allocated
            if not ptr or ptr == _GLOBAL_ALLOCATED_SENTINEL or ptr in freed:
                continue
            if any(lo <= ptr < hi for lo, hi in input_ranges):
                continue  # aliases a caller-owned input buffer
            freed.add(ptr)
            _libc_free()(ptr)
