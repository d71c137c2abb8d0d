"""The per-row outputs through xent.torch (return_lse,
return_predicted_tokens, return_token_accuracy, Liger's and Quack's extra
results): against PyTorch in float64 on the same logits, with the loss and
gradient unchanged by asking for them; the operator passes opcheck and
traces under torch.compile(fullgraph=True).

Runs on the GPU machine with the kernels of xent_torch_configs.rows()
precompiled (python/tools/make_xent_bundle.py, XENT_CACHE_DIR); never in CI.
"""

import pytest
import torch
import torch.nn.functional as F

import xent.torch as xt
import xent_torch_configs

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def _inputs(dtype, n=96, v=1000, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(n, v, device="cuda", generator=g) * 3).to(DTYPES[dtype])
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    # Some rows predicted right, some ignored, and ties of the max (the first
    # index wins, as torch.argmax).
    x[:8, 5] = x[:8].max(dim=1).values + 1
    t[:8] = 5
    x[8:12, 7] = x[8:12, 3] = x[8:12].max(dim=1).values + 1
    t[::7] = -100
    return x, t


def _reference(x, t, reduction):
    x64 = x.double()
    lse = torch.logsumexp(x64, dim=1)
    pred = x.argmax(dim=1)
    keep = t != -100
    correct = (pred == t) & keep
    if reduction == "none":
        acc = correct.double()
    elif reduction == "sum":
        acc = correct.double().sum()
    else:
        acc = correct.double().sum() / keep.sum()
    return lse, pred, acc


@pytest.mark.parametrize("case", xent_torch_configs.ROW_CASES,
                         ids=lambda c: f"{c[0]}-{c[1]}-{'grad' if c[2] else 'fwd'}-"
                                       + "".join("lpa"[i] for i in range(3) if c[3][i]))
@pytest.mark.parametrize("v", [1000, 300000])
def test_row_outputs(case, v):
    dtype, reduction, with_grad, (lse_on, pred_on, acc_on) = case
    x, t = _inputs(dtype, v=v)
    x.requires_grad_(with_grad)
    out = xt.cross_entropy(x, t, reduction=reduction, return_lse=lse_on,
                           return_predicted_tokens=pred_on, return_token_accuracy=acc_on)
    assert isinstance(out, xt.CrossEntropyOutput)
    lse, pred, acc = _reference(x.detach(), t, reduction)
    if lse_on:
        assert out.lse.dtype == torch.float32 and out.lse.shape == lse.shape
        torch.testing.assert_close(out.lse.double(), lse, rtol=2e-6, atol=2e-6)
    else:
        assert out.lse is None
    if pred_on:
        assert out.predicted_tokens.dtype == torch.int64
        assert torch.equal(out.predicted_tokens, pred)
    else:
        assert out.predicted_tokens is None
    if acc_on:
        torch.testing.assert_close(out.token_accuracy.double(), acc, rtol=1e-6, atol=0)
    else:
        assert out.token_accuracy is None
    # The loss (and gradient) are those of the plain call (up to the order
    # of the f64 atomics that reduce rows, and one rounding to bf16).
    x2 = x.detach().clone().requires_grad_(with_grad)
    plain = xt.cross_entropy(x2, t, reduction=reduction)
    rtol = 1e-6 if dtype == "f32" else 8e-3
    torch.testing.assert_close(out.loss, plain, rtol=rtol, atol=1e-6)
    if with_grad:
        g = torch.rand_like(plain) + 0.5
        (out.loss * g).sum().backward()
        (plain * g).sum().backward()
        torch.testing.assert_close(x.grad, x2.grad, rtol=rtol, atol=1e-7)


def test_opcheck():
    x, t = _inputs("bf16")
    x.requires_grad_()
    torch.library.opcheck(torch.ops.xent.cross_entropy_rows.default,
                          (x, t, None, "mean", -100, 0.0, 0.0, None, False, True, True, True,
                           True))


def test_compile_fullgraph():
    x, t = _inputs("bf16")
    x.requires_grad_()

    def step(x, t):
        out = xt.cross_entropy(x, t, return_token_accuracy=True, return_predicted_tokens=True,
                               return_lse=True)
        return out.loss, out.token_accuracy, out.predicted_tokens

    loss, acc, pred = torch.compile(step, fullgraph=True)(x, t)
    loss.backward()
    _, want_pred, want_acc = _reference(x.detach(), t, "mean")
    assert torch.equal(pred, want_pred)
    torch.testing.assert_close(acc.double(), want_acc, rtol=1e-6, atol=0)
    x64 = x.detach().double().requires_grad_()
    F.cross_entropy(x64, t).backward()
    assert ((x.grad.double() - x64.grad).norm() / x64.grad.norm()).item() < 2e-2


def test_accuracy_needs_class_indices():
    x, _ = _inputs("f32")
    probs = torch.softmax(x, 1)
    with pytest.raises(ValueError, match="class-index"):
        xt.cross_entropy(x, probs, return_token_accuracy=True)
