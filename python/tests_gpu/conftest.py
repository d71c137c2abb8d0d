"""GPU tests of xent.gpu and the CUDA runtime: they need PyTorch and a CUDA
device, and run on the GPU machine (docs/gpu-runtime.md), never in CI, which
collects only python/tests.

The kernels come from a cache directory filled by ``make_bundle.py`` on a
machine with LLVM (``XENT_CACHE_DIR``); where LLVM and the CUDA toolkit are
at hand they are compiled on first use instead.
"""

import os
import sys

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)
