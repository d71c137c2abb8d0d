"""GPU tests of xent.runtime.gpu and the CUDA runtime: they need PyTorch and a CUDA
device, and run on the GPU machine (docs/gpu-runtime.md), never in CI, which
collects only python/tests.

The kernels come from a cache directory filled by ``python/tools/make_bundle.py`` on a
machine with LLVM (``XENT_CACHE_DIR``); where LLVM and the CUDA toolkit are
at hand they are compiled on first use instead.

The ``xent`` package is imported from its installation (``pip install -e
python``, docs/gpu.md); the helpers next to the tests (``kernel_configs``,
``xent_torch_configs``) from this directory, which pytest puts on the path
(and Python, for a script run from here).
"""
