"""Where the host time of one xent.torch forward + backward goes (cProfile),
for docs/performance.md. Run on the GPU machine with XENT_CACHE_DIR set."""
import cProfile
import pstats
import sys

import torch

from xent import torch as xt


def main(n=256, v=128256, iters=200):
    x = torch.randn(n, v, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    t = torch.randint(0, v, (n,), device="cuda")

    def step():
        x.grad = None
        xt.cross_entropy(x, t).backward()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(iters):
        step()
    torch.cuda.synchronize()
    prof.disable()
    stats = pstats.Stats(prof, stream=sys.stdout)
    print(f"per step: {stats.total_tt / iters * 1e6:.0f} us of host time")
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
