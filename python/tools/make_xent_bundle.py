"""Compiles the kernels of the xent.torch GPU tests (xent_torch_configs.py,
accuracy_configs.py for test_accuracy.py, runtime_scalar_configs.py for
test_runtime_scalars_gpu.py) into a cache directory (no GPU needed):

    XENT_OPT=build/bin/xent-opt build/venv/bin/python \\
        python/tools/make_xent_bundle.py OUT_DIR

On the GPU machine, point ``XENT_CACHE_DIR`` at OUT_DIR (make_bundle.py's
bundle directory may be the same one).
"""

import os
import sys
import time

from xent.runtime.kernels import precompile, with_loss_dtype

# The suite's configurations stay beside the GPU tests (python/tools/README.md).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests_gpu"))
import accuracy_configs  # noqa: E402
import runtime_scalar_configs  # noqa: E402
import xent_torch_configs  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    start = time.time()
    # xent.torch's native path asks for the run-time scalar variant of each
    # configuration, the ctypes path for the static one: both.
    # Each with the loss in f32 and in the logits' dtype (the drop-in's
    # default).
    configs = (xent_torch_configs.with_runtime_variants(
        xent_torch_configs.STATIC_CONFIGS + accuracy_configs.CONFIGS)
        + runtime_scalar_configs.CONFIGS
        + [with_loss_dtype(c) for c in runtime_scalar_configs.CONFIGS])
    precompile(configs, argv[1], jobs=os.cpu_count() or 1,
               progress=lambda done, total: done % 100 == 0 and print(
                   f"{done}/{total}", flush=True))
    print(f"compiled {len(configs)} xent.torch configurations into "
          f"{argv[1]} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
