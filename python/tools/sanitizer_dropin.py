"""xent.torch under compute-sanitizer (run_on_device.sh: memcheck and racecheck).

Forward + backward of the drop-in on bf16 and f32 logits, V = 4096 (vector
path) and 7 (scalar path), ignored rows, and views: a slice of a padded
vocabulary (aligned and misaligned rows), a transposed buffer, shifted
labels; bf16 per element (the loss in the forward, the gradient with its
grad_output in the backward), with label smoothing and with a softcap on the
resident path. Checks each loss and gradient against float64 PyTorch; exits 1
on a wrong value.
"""

import sys

import torch
import torch.nn.functional as F

from xent import torch as xt


def case(x, t, reduction="mean", label_smoothing=0.0, softcap=None):
    x = x.detach().requires_grad_()
    loss = xt.cross_entropy(x, t, reduction=reduction, label_smoothing=label_smoothing,
                            softcap=softcap)
    g = torch.linspace(-1.0, 2.0, loss.numel(), device="cuda").reshape(loss.shape)
    loss.backward(g.to(loss.dtype))
    x64 = x.detach().double().requires_grad_()
    capped = x64 if softcap is None else softcap * torch.tanh(x64 / softcap)
    ref = F.cross_entropy(capped, t, reduction=reduction, label_smoothing=label_smoothing)
    ref.backward(g.to(loss.dtype).double())
    tol = 1e-5 if x.dtype == torch.float32 else 8e-3
    ok = bool(((loss.double() - ref).abs() <= tol * (1 + ref.abs())).all())
    err = (x.grad.double() - x64.grad).norm() / x64.grad.norm()
    return ok and err.item() <= (1e-5 if x.dtype == torch.float32 else 2.6e-3)


def main():
    gen = torch.Generator(device="cuda").manual_seed(5)
    ok = True
    for dtype in (torch.bfloat16, torch.float32):
        for v in (4096, 7):
            x = (torch.randn(24, v, generator=gen, device="cuda") * 4).to(dtype)
            t = torch.randint(0, v, (24,), generator=gen, device="cuda")
            t[::5] = -100
            ok &= case(x, t)
        for pad in (64, 3):
            full = (torch.randn(16, 4096 + pad, generator=gen, device="cuda") * 4).to(dtype)
            labels = torch.randint(0, 4096, (16, 2), generator=gen, device="cuda")
            ok &= case(full[:, :4096], labels[:, 1])
        xt_ = (torch.randn(300, 9, generator=gen, device="cuda") * 4).to(dtype)
        ok &= case(xt_.t(), torch.randint(0, 300, (9,), generator=gen, device="cuda"))
        if dtype == torch.bfloat16:
            x = (torch.randn(24, 4096, generator=gen, device="cuda") * 4).to(dtype)
            t = torch.randint(0, 4096, (24,), generator=gen, device="cuda")
            t[::5] = -100
            ok &= case(x, t, "none")
            ok &= case(xt_.t(), torch.randint(0, 300, (9,), generator=gen, device="cuda"),
                       "none")
            # Label smoothing on the resident path (clusters of 2 blocks, the
            # second exchange of the class sums).
            x = (torch.randn(8, 65536, generator=gen, device="cuda") * 4).to(dtype)
            t = torch.randint(0, 65536, (8,), generator=gen, device="cuda")
            t[::5] = -100
            ok &= case(x, t, label_smoothing=0.1)
            # The softcap on the resident path (the MUFU tanh).
            ok &= case(x * 4, t, softcap=30.0)
    torch.cuda.synchronize()
    print("sanitizer_dropin:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
