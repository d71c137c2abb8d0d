"""xent.linear_cross_entropy_and_grad under compute-sanitizer (run_on_device.sh:
memcheck and racecheck).

The chunked GPU path (kernel_configs.linear_configs(), 128-row chunks) at N =
300 (two full chunks and one of 44 rows), H = 64, V = 1000 (padded chunk
rows): bf16 with a bias and a mean, f32 per row, results returned and
written into destinations; N = 0. Checks loss and gradients against float64
PyTorch; exits 1 on a wrong value.
"""

import os
import sys

import torch
import torch.nn.functional as F

from xent.runtime import linear

# The suite's configurations stay beside the GPU tests (python/tools/README.md).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests_gpu"))
import kernel_configs  # noqa: E402

TOL = {"bf16": 1.5e-2, "f32": 1e-5}
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def case(config, n, h=64, v=1000):
    gen = torch.Generator(device="cuda").manual_seed(n + v)
    dtype = DTYPES[config["dtype"]]
    hidden = torch.randn(n, h, device="cuda", generator=gen).to(dtype)
    weight = (torch.randn(v, h, device="cuda", generator=gen) * 0.25).to(dtype)
    bias = torch.randn(v, device="cuda", generator=gen).to(dtype) if config["bias"] else None
    target = torch.randint(0, v, (n,), device="cuda", generator=gen)
    target[::7] = -100
    per_row = config["reduction"] == "none"
    grad = torch.randn(n, device="cuda", generator=gen) if per_row \
        else torch.tensor(0.5, device="cuda")
    out = None
    if config["destinations"]:
        out = [torch.empty((n,) if per_row else (), device="cuda"),
               torch.empty(n, h, device="cuda", dtype=dtype),
               torch.empty(v, h, device="cuda", dtype=dtype)]
        if bias is not None:
            out.append(torch.empty(v, device="cuda", dtype=dtype))
    results = linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        chunk_rows=config["chunk_rows"], out=out)
    params = [hidden.double().requires_grad_(), weight.double().requires_grad_()]
    if bias is not None:
        params.append(bias.double().requires_grad_())
    loss = F.cross_entropy(F.linear(*params), target, reduction=config["reduction"])
    refs = [loss.detach()] + list(torch.autograd.grad(loss, params, grad.double()))
    ok = True
    for got, ref in zip(results, refs):
        norm = ref.norm().item()
        err = (got.double() - ref).norm().item() / (norm if norm > 0 else 1)
        ok &= err <= TOL[config["dtype"]]
    return ok


def main():
    configs = [c for c in kernel_configs.linear_configs()
               if c["chunk_rows"] and c["target"] == "i64"
               and ((c["dtype"], c["reduction"], c["bias"]) in
                    {("bf16", "mean", True), ("f32", "none", False)})]
    ok = True
    for config in configs:
        ok &= case(config, 300)
    ok &= case(next(c for c in configs if not c["destinations"] and c["reduction"] == "none"), 0)
    torch.cuda.synchronize()
    print("sanitizer_linear:", "PASSED" if ok else "FAILED", f"({len(configs) + 1} calls)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
