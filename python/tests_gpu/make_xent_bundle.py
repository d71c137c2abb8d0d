"""Compiles the kernels of the xent.torch GPU tests (xent_torch_configs.py,
accuracy_configs.py for test_accuracy.py, runtime_scalar_configs.py for
test_runtime_scalars_gpu.py) into a cache directory (no GPU needed):

    XENT_OPT=build/bin/xent-opt build/venv/bin/python \\
        python/tests_gpu/make_xent_bundle.py OUT_DIR

On the GPU machine, point ``XENT_CACHE_DIR`` at OUT_DIR (make_bundle.py's
bundle directory may be the same one).
"""

import sys
import time

from xent.runtime.kernels import precompile

import accuracy_configs
import runtime_scalar_configs
import xent_torch_configs


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    start = time.time()
    # xent.torch's native path asks for the run-time scalar variant of each
    # configuration, the ctypes path for the static one: both.
    configs = (xent_torch_configs.with_runtime_variants(
        xent_torch_configs.STATIC_CONFIGS + accuracy_configs.CONFIGS)
        + runtime_scalar_configs.CONFIGS)
    precompile(configs, argv[1])
    print(f"compiled {len(configs)} xent.torch configurations into "
          f"{argv[1]} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
