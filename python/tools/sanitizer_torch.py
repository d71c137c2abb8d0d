"""A small PyTorch program through xent.runtime.gpu, for compute-sanitizer (run_on_device.sh).

Vector add on the current and on a side stream, the dynamic-shared-memory
row sum (100 KiB variant, strided input) and an allocated result; exits 1
on a wrong value.
"""

import os
import sys

import torch

from xent.runtime import gpu

# The suite's configurations stay beside the GPU tests (python/tools/README.md).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests_gpu"))
import kernel_configs  # noqa: E402


def main():
    lib = gpu.KernelCache().get(kernel_configs.suite_config())
    vadd = lib.function("vadd_f32", ["memref<?xf32>"] * 3)
    a, b = torch.randn(10_000, device="cuda"), torch.randn(10_000, device="cuda")
    c = torch.empty_like(a)
    vadd(a, b, c)
    ok = torch.equal(c, a + b)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        d = torch.empty_like(a)
        vadd(a, b, d)
    s.synchronize()
    ok &= torch.equal(d, a + b)
    x = torch.randn(40, 700, device="cuda")
    out = torch.empty(40, device="cuda")
    lib.function("rowsum_big_f32", ["memref<?x?xf32>", "memref<?xf32>"])(x, out)
    ok &= torch.allclose(out, x.sum(1), rtol=1e-4, atol=1e-3)
    view = x[1:, ::3]
    out2 = torch.empty(view.shape[0], device="cuda")
    lib.function("rowsum_strided_f32",
                 ["memref<?x?xf32, strided<[?, ?], offset: ?>>", "memref<?xf32>"])(view, out2)
    ok &= torch.allclose(out2, view.sum(1), rtol=1e-4, atol=1e-3)
    y = lib.function("scale_alloc_f32", ["memref<?xf32>"], ["memref<?xf32>"])(a)
    ok &= torch.equal(y, 2 * a)
    del y
    torch.cuda.synchronize()
    print("sanitizer_torch:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
