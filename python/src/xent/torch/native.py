"""xent.torch's native launch path: ``csrc/xent_torch_native.cpp`` built
against the installed PyTorch and loaded as the operators
``torch.ops.xent_native.*``.

The C++ operators call a compiled kernel library's entry point with memref
descriptors filled from the tensors, on PyTorch's current stream, and carry
the eager autograd formula, so that a training call costs no Python beyond
:func:`xent.torch.cross_entropy` itself. The extension is compiled on first
use with the C++ compiler PyTorch's own extensions use (``$CXX``, else
``c++``), against ``torch.utils.cpp_extension``'s include paths, into
``$XENT_CACHE_DIR/native`` (else ``~/.cache/xent/native``), one file per
source, PyTorch and CUDA version; later processes only load it.

Where it cannot be built or loaded (no compiler, no CUDA headers), or with
``XENT_TORCH_NATIVE=0``, :func:`load` returns None, xent.torch warns once and
calls the kernels through ctypes (:mod:`xent.runtime.gpu`), which works the
same at several hundred microseconds of host time per call.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from typing import List, Optional

import torch

__all__ = ["load", "reason", "source_path", "build"]

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc",
                       "xent_torch_native.cpp")
# The header the source includes (the memref descriptor's layout): part of
# the build's key.
_HEADER = os.path.join(os.path.dirname(_SOURCE), "memref_descriptor.h")
_LOCK = threading.Lock()
_STATE: dict = {}


def source_path() -> str:
    return _SOURCE


def _cache_dir() -> str:
    base = os.environ.get("XENT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "xent")
    return os.path.join(base, "native")


def _cuda_include_dirs() -> List[str]:
    from torch.utils import cpp_extension
    dirs = []
    home = cpp_extension.CUDA_HOME
    if home:
        dirs.append(os.path.join(home, "include"))
    # The CUDA runtime headers of pip-installed wheels (nvidia-cuda-runtime).
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        nvidia = os.path.join(site, "nvidia")
        for sub in ("cuda_runtime", "cu13", "cuda_nvcc"):
            inc = os.path.join(nvidia, sub, "include")
            if os.path.exists(os.path.join(inc, "cuda_runtime_api.h")):
                dirs.append(inc)
    return [d for d in dirs if os.path.exists(os.path.join(d, "cuda_runtime_api.h"))]


def _build_command(output: str) -> List[str]:
    from torch.utils import cpp_extension
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    try:
        includes = cpp_extension.include_paths(device_type="cuda")
    except TypeError:  # PyTorch before 2.6: include_paths(cuda=...)
        includes = cpp_extension.include_paths(cuda=True)
    includes = list(includes) + _cuda_include_dirs()
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", 1))
    cxx = os.environ.get("CXX", "c++")
    # Default visibility: hidden copies of libstdc++'s template statics
    # (the locale facets' ids) make a stream insertion crash.
    return ([cxx, "-O2", "-std=c++17", "-shared", "-fPIC",
             f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w"]
            + [f"-I{d}" for d in includes]
            + [_SOURCE, "-o", output, f"-L{torch_lib}", "-lc10", "-lc10_cuda", "-ltorch_cpu",
               "-ltorch", f"-Wl,-rpath,{torch_lib}", "-ldl"])


def _key() -> str:
    sources = []
    for path in (_SOURCE, _HEADER):
        with open(path, "rb") as f:
            sources.append(f.read())
    ident = b"\0".join(sources + [torch.__version__.encode(), str(torch.version.cuda).encode(),
                                   sys.platform.encode()])
    return hashlib.sha256(ident).hexdigest()[:16]


def build(directory: Optional[str] = None) -> str:
    """Compiles the extension (once per source and PyTorch version) and
    returns the path of the shared library."""
    directory = directory or _cache_dir()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"xent_torch_native-{_key()}.so")
    if os.path.exists(path):
        return path
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        cmd = _build_command(tmp)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building {_SOURCE} failed ({' '.join(cmd[:1])} exit "
                               f"{done.returncode}):\n{done.stderr[-4000:]}")
        os.replace(tmp, path)  # atomic: concurrent builders agree
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load():
    """``torch.ops.xent_native`` when the extension builds and loads, else
    None (see :func:`reason`)."""
    if "ops" in _STATE:
        return _STATE["ops"]
    with _LOCK:
        if "ops" in _STATE:
            return _STATE["ops"]
        ops = None
        if os.environ.get("XENT_TORCH_NATIVE", "1") == "0":
            _STATE["reason"] = "XENT_TORCH_NATIVE=0"
        else:
            try:
                torch.ops.load_library(build())
                ops = torch.ops.xent_native
            except Exception as e:  # noqa: BLE001 - any failure means the fallback
                _STATE["reason"] = str(e)
        _STATE["ops"] = ops
        if ops is None:
            warnings.warn("xent.torch: the native launch path is unavailable "
                          f"({_STATE['reason'].splitlines()[0] if _STATE['reason'] else ''}); "
                          "calls go through ctypes (xent.runtime.gpu), several hundred "
                          "microseconds of host time each", RuntimeWarning, stacklevel=3)
        return ops


def reason() -> Optional[str]:
    """Why :func:`load` returned None (None when it did not)."""
    return _STATE.get("reason")
