"""The row kernels of the cases that miss the performance targets (docs/performance.md), one case per
process, for Nsight Compute (docs/performance.md, "What limits each case").

    python3 python/tools/ncu_cases.py --list
    ncu --kernel-name regex:xent_loss --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section Occupancy --section LaunchStats \\
        --section MemoryWorkloadAnalysis \\
        python3 python/tools/ncu_cases.py CASE

Each case runs three forward + backward calls of xent.torch.cross_entropy
(bf16 logits ``randn * 3``, 1 target in 7 ignored); the launch-skip above
profiles the third call's first row kernel (``--launch-count 2`` also takes
the backward's kernel of ``none``). Needs XENT_CACHE_DIR or the package's
kernels, as the GPU suite does.
"""
import sys

import torch

from xent import torch as xt

# name: (rows, classes, keyword arguments, probability targets, with gradient)
CASES = {
    "plain": (4096, 128256, {}, False, True),
    "smoothing": (4096, 128256, {"label_smoothing": 0.1}, False, True),
    "weighted-smoothing": (4096, 128256, {"label_smoothing": 0.1, "weight": True}, False, True),
    "softcap": (4096, 128256, {"softcap": 30.0}, False, True),
    "probs": (4096, 128256, {}, True, True),
    "none": (4096, 128256, {"reduction": "none"}, False, True),
    "rows-256": (256, 128256, {}, False, True),
    "forward-32768": (4096, 32768, {}, False, False),
    "plain-32768": (4096, 32768, {}, False, True),
}


def run(name):
    n, v, kwargs, probs, grad = CASES[name]
    kwargs = dict(kwargs)
    x = (torch.randn(n, v, device="cuda") * 3).to(torch.bfloat16).requires_grad_(grad)
    if probs:
        t = torch.softmax(torch.randn(n, v, device="cuda"), dim=1).to(torch.bfloat16)
    else:
        t = torch.randint(0, v, (n,), device="cuda")
        t[::7] = -100
    if kwargs.pop("weight", False):
        kwargs["weight"] = torch.rand(v, device="cuda") + 0.5
    for _ in range(3):
        x.grad = None
        loss = xt.cross_entropy(x, t, **kwargs)
        if grad:
            (loss.sum() if loss.dim() else loss).backward()
    torch.cuda.synchronize()


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print(" ".join(CASES))
    else:
        run(sys.argv[1])
