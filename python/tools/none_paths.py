"""reduction="none", forward + backward on the GPU machine: xent.torch's path
(the forward's loss kernel, then the joint kernel with the per-row
grad_output, which walks the row for its statistics again) beside the
class-slice kernels of xent.runtime.slices over the whole row (one slice:
offset 0, all classes): the statistics kernel's one read, then the gradient
from those statistics (one read, one write, no statistics walk). bf16,
N = 4096, 1 target in 7 ignored, do_bench wall clock, % of a copy measured
in the same run; the two gradients' largest difference.

    python3 python/tools/none_paths.py

docs/performance.md, "reduction none from saved row statistics".
"""
import torch, triton.testing as tt
import xent.torch as xt
from xent.runtime import slices
torch.manual_seed(0)
for v in (32768, 128256, 262144):
    n = 4096
    x = (torch.randn(n, v, device="cuda") * 3).to(torch.bfloat16).requires_grad_()
    t = torch.randint(0, v, (n,), device="cuda"); t[::7] = -100
    g = torch.rand(n, device="cuda")
    def a():
        x.grad = None
        xt.cross_entropy(x, t, reduction="none").backward(g)
    def b():
        st = slices.statistics(x.detach(), t, offset=0, num_classes=v)
        return slices.gradient(g, x.detach(), t, st, reduction="none", offset=0, num_classes=v)
    a(); da = x.grad.clone(); db = b()
    src = torch.empty_like(x.detach()); dst = torch.empty_like(src)
    cp = tt.do_bench(lambda: dst.copy_(src), rep=100)
    ta = min(tt.do_bench(a, rep=100) for _ in range(2)); tb = min(tt.do_bench(b, rep=100) for _ in range(2))
    print(f"none V={v}: xent.torch {ta:.3f} ms ({cp/ta*100:.1f}% of copy), slices {tb:.3f} ms ({cp/tb*100:.1f}%), "
          f"ratio {tb/ta:.3f}; max|da-db| {(da.float()-db.float()).abs().max().item():.3e}")
