"""One class and a handful: xent.torch.cross_entropy's loss and gradient
within PyTorch's own error in the same dtype, against float64, with and
without z-loss, label smoothing and class weights. With one class p = 1
exactly, so the cross-entropy gradient is 0 and a z-loss gradient is
2 z lse alone: the kernel must not form it as the difference of two sums
of order 1 (it did, 1e-5 to 2e-4 relative error in f32 where PyTorch's is
1e-7)."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _loss(x, t, w, eps, z, reduction):
    """F.cross_entropy plus the z-loss (Liger's convention), in x's dtype."""
    ce = F.cross_entropy(x, t, w, reduction="none", label_smoothing=eps)
    zl = z * torch.logsumexp(x.float(), -1) ** 2
    total = ce.float() + zl
    if reduction == "none":
        return total
    if reduction == "sum":
        return total.sum()
    denom = w[t].sum() if w is not None else torch.tensor(float(t.numel()), device=x.device)
    return ce.float().sum() / denom + zl.sum() / t.numel()


def _rel(a, ref):
    n = ref.norm()
    return ((a.double() - ref).norm() / n).item() if n > 0 else (a.double() - ref).norm().item()


CASES = list(itertools.product((torch.float32, torch.bfloat16), (1, 2, 3, 5), (0.0, 1e-4, 3e-3),
                               (0.0, 0.1), ("mean", "none"), (False, True)))


@pytest.mark.parametrize("dtype,v,z,eps,reduction,weighted", CASES)
def test_within_pytorch_error(dtype, v, z, eps, reduction, weighted):
    g = torch.Generator(device="cuda").manual_seed(v * 7 + int(z * 1e4) + int(eps * 10))
    n = 64
    x64 = torch.randn(n, v, device="cuda", dtype=torch.float64, generator=g) * 4
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    w = (torch.rand(v, device="cuda", generator=g) + 0.5) if weighted else None
    gout = torch.rand(n if reduction == "none" else (), device="cuda", generator=g) + 0.5

    def run(fn, x, **kw):
        x = x.detach().requires_grad_()
        loss = fn(x, **kw)
        loss.backward(gout.to(loss.dtype))
        return loss.detach(), x.grad
    x = x64.to(dtype)
    pt_l, pt_g = run(lambda x: _loss(x, t, None if w is None else w.to(dtype), eps, z,
                                     reduction), x)
    xe_l, xe_g = run(lambda x: xt.cross_entropy(x, t, w, reduction=reduction,
                                                label_smoothing=eps, z_loss_scale=z,
                                                loss_dtype=torch.float32), x)
    # The inputs as the dtype holds them: both are measured from them.
    ref_l, ref_g = run(lambda x: _loss(x, t, None if w is None else w.double(), eps, z,
                                       reduction), x.double())
    slack = 1e-6 if dtype == torch.float32 else 1e-3
    assert _rel(xe_l, ref_l) <= 2 * _rel(pt_l, ref_l) + slack, (_rel(xe_l, ref_l),
                                                                 _rel(pt_l, ref_l))
    assert _rel(xe_g, ref_g) <= 2 * _rel(pt_g, ref_g) + slack, (_rel(xe_g, ref_g),
                                                                 _rel(pt_g, ref_g))
