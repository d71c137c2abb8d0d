"""Host time of one forward + backward through xent.torch beside
F.cross_entropy, in one process, on problems small enough that the GPU is
idle most of the time (the loop is bound by the host). For
docs/performance.md; run on the GPU machine with XENT_CACHE_DIR set (or
from the installed package, whose bundle has no ctypes-path kernels:
``--native-only``):

    python3 python/tools/host_time.py [--native-only]
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from xent import torch as xt
from xent.torch import ops


def per_call_us(fn, x, t, iters=1000):
    def step():
        x.grad = None
        fn(x, t).backward()
    for _ in range(50):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e6


def ctypes_path(x, t):
    """xent.torch with the native path switched off (the fallback)."""
    saved = ops._NATIVE[:]
    ops._NATIVE[:] = [None]
    try:
        return xt.cross_entropy(x, t)
    finally:
        ops._NATIVE[:] = saved


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    native = ops.native() is not None
    print(f"native launch path: {'loaded' if native else 'unavailable'}")
    for n, v in ((8, 128), (256, 4096), (256, 128256)):
        x = torch.randn(n, v, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        t = torch.randint(0, v, (n,), device="cuda")
        # Five rounds, the three interleaved; the median of each.
        callers = (xt.cross_entropy, ctypes_path, F.cross_entropy)
        if "--native-only" in sys.argv:
            callers = (xt.cross_entropy, xt.cross_entropy, F.cross_entropy)
        rounds = [[per_call_us(f, x, t) for f in callers] for _ in range(5)]
        ours, slow, theirs = (statistics.median(r[i] for r in rounds) for i in range(3))
        print(f"N={n} V={v} bf16 mean fwd+bwd: xent.torch {ours:.0f} us/call "
              f"({'native' if native else 'ctypes'}), "
              f"{'(again)' if '--native-only' in sys.argv else 'ctypes path'} {slow:.0f}, "
              f"F.cross_entropy {theirs:.0f} us/call, ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
