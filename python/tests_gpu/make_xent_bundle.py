"""Compiles the kernels of the xent.torch GPU tests into a cache directory
(no GPU needed):

    XENT_OPT=build/bin/xent-opt PYTHONPATH=python /usr/bin/python3 \\
        python/tests_gpu/make_xent_bundle.py OUT_DIR

On the GPU machine, point ``XENT_CACHE_DIR`` at OUT_DIR (make_bundle.py's
bundle directory may be the same one).
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from xent.kernels import precompile  # noqa: E402

import xent_torch_configs  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    start = time.time()
    precompile(xent_torch_configs.CONFIGS, argv[1])
    print(f"compiled {len(xent_torch_configs.CONFIGS)} xent.torch configurations into "
          f"{argv[1]} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
