"""Compiles everything the GPU tests run into one directory (no GPU needed).

    XENT_OPT=build/bin/xent-opt build/venv/bin/python python/tools/make_bundle.py OUT_DIR

OUT_DIR receives, next to each other:

* the KernelCache entries of python/tests_gpu/kernel_configs.py (the test
  kernels, xent.cross_entropy mean through the xent GPU pipeline, and the
  in-place and per-row-output modules at both resident-rows settings, the
  linear cross-entropy configurations of test_linear_gpu.py and the
  benchmark) with
  their ``index/`` and a copy of libxent_cuda_runtime.so;
* ``vector-add.so``, ``shared-memory.so``, ``host-ops.so``: the modules of
  test/Integration/GPU, and ``runner``, the C program that runs them (and
  that compute-sanitizer checks).

Point ``XENT_CACHE_DIR`` at OUT_DIR on the GPU machine: it needs neither LLVM
nor the CUDA toolkit there.  Environment: ``XENT_OPT`` (xent-opt, for the
cross-entropy kernel; skipped when absent), ``XENT_CUDA_RUNTIME``.
"""

import os
import shutil
import subprocess
import sys

from xent.runtime import gpu
from xent.runtime.driver import DriverError

# The suite's configurations stay beside the GPU tests (python/tools/README.md).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests_gpu"))
import kernel_configs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

INTEGRATION = os.path.join(ROOT, "test", "Integration", "GPU")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[1])
    os.makedirs(out, exist_ok=True)
    cache = gpu.KernelCache(out)

    print("test kernels:", cache.path(kernel_configs.suite_config(), kernel_configs.kernels_text))

    xent_opt = os.environ.get("XENT_OPT")
    if xent_opt and os.path.exists(xent_opt):
        text = kernel_configs.CROSS_ENTROPY_MEAN_MLIR
        config = kernel_configs.cross_entropy_config()
        for args in (["--xent-gpu-pipeline"], kernel_configs.CROSS_ENTROPY_FALLBACK_PIPELINE):
            try:
                path = cache.path(config, lambda: text, args, xent_opt)
                print("cross_entropy mean:", path, "with", args)
                break
            except DriverError as e:
                print(f"cross_entropy mean with {args} failed:\n{str(e)[-600:]}")
        for resident in (True, False):
            path = cache.path(kernel_configs.in_place_config(resident),
                              lambda: kernel_configs.IN_PLACE_MLIR,
                              kernel_configs.in_place_pipeline(resident), xent_opt)
            print(f"in-place (resident rows {resident}):", path)
        for resident in (True, False):
            path = cache.path(kernel_configs.row_outputs_config(resident),
                              lambda: kernel_configs.ROW_OUTPUTS_MLIR,
                              kernel_configs.row_outputs_pipeline(resident), xent_opt)
            print(f"row outputs (resident rows {resident}):", path)
        from xent.runtime import linear
        configs = kernel_configs.linear_configs() + kernel_configs.linear_dropin_configs()
        linear.precompile(configs, out)
        print(f"linear cross-entropy: {len(configs)} configurations")
    else:
        print("XENT_OPT not set: no cross_entropy kernel")

    for name in ("vector-add", "shared-memory", "host-ops"):
        with open(os.path.join(INTEGRATION, f"{name}.mlir")) as f:
            so = gpu.compile_gpu_module(f.read(), out_dir=out)
        target = os.path.join(out, f"{name}.so")
        shutil.copyfile(so, target)
        print(f"{name}:", target)
    subprocess.run([os.environ.get("CC", "cc"), "-O1", "-g",
                    os.path.join(INTEGRATION, "Inputs", "runner.c"), "-ldl", "-lm",
                    "-o", os.path.join(out, "runner")], check=True)
    print("runner:", os.path.join(out, "runner"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
