"""Host time of one forward + backward through xent.torch beside
F.cross_entropy, in one process, on problems small enough that the GPU is
idle most of the time (the loop is bound by the host). For
docs/performance.md; run on the GPU machine with XENT_CACHE_DIR set:

    python3 python/tests_gpu/host_time.py
"""
import time

import torch
import torch.nn.functional as F

from xent import torch as xt


def per_call_us(fn, x, t, iters=2000):
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


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for n, v in ((8, 128), (256, 4096)):
        x = torch.randn(n, v, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        t = torch.randint(0, v, (n,), device="cuda")
        ours = per_call_us(xt.cross_entropy, x, t)
        theirs = per_call_us(F.cross_entropy, x, t)
        print(f"N={n} V={v} bf16 mean fwd+bwd: xent.torch {ours:.0f} us/call, "
              f"F.cross_entropy {theirs:.0f} us/call, ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
