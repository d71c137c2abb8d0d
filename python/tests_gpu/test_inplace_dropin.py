"""xent.torch.cross_entropy(..., inplace=True): the gradient written over the
logits where autograd allows it (the native path; logits that are the dense
result of an operation, or a view of one), with their version bumped so that
another node that saved them refuses its backward instead of reading
gradients (never silently wrong, unlike Liger-Kernel issue #272); ignored
for leaves, strided logits and under torch.compile. Against the out-of-place
call and float64, and the memory it saves.

Runs on the GPU machine with the package's kernels (the in-place variants
are in xent.runtime.bundle.package_configs) or a compiler at hand."""

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt
from xent.torch import ops

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CASES = [dict(), dict(reduction="sum"), dict(reduction="none"), dict(label_smoothing=0.1),
         dict(weight=True, label_smoothing=0.1, reduction="none"),
         dict(softcap=30.0, z_loss_scale=1e-4), dict(probs=True)]


def _problem(dtype, n=96, v=4099, seed=0, probs=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    h = (torch.randn(n, v, device="cuda", generator=g) * 3).to(dtype)
    if probs:
        t = torch.softmax(torch.randn(n, v, device="cuda", generator=g), -1).to(dtype)
    else:
        t = torch.randint(0, v, (n,), device="cuda", generator=g)
        t[::7] = -100
    return h, t


def _run(h, t, case, inplace, dtype):
    """d loss / d h through logits = h * 1 (an operation's result)."""
    case = dict(case)
    case.pop("probs", None)
    if case.pop("weight", False):
        case["weight"] = torch.linspace(0.5, 1.5, h.shape[1], device="cuda")
    x = h.clone().requires_grad_()
    logits = x * 1
    loss = xt.cross_entropy(logits, t, inplace=inplace, **case)
    g = (torch.linspace(0.5, 2, loss.numel(), device="cuda").view(loss.shape).to(loss.dtype)
         if loss.dim() else torch.tensor(1.5, device="cuda", dtype=loss.dtype))
    loss.backward(g)
    return loss.detach(), x.grad, logits.detach(), case, g


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float16])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(sorted(c)) or "plain")
def test_same_results_as_out_of_place(dtype, case):
    h, t = _problem(dtype, probs=case.get("probs", False))
    loss, grad, logits, kw, g = _run(h, t, case, True, dtype)
    ref_loss, ref_grad, ref_logits, _, _ = _run(h, t, case, False, dtype)
    # In place: the logits' memory holds the gradient (for grad_output 1 in
    # a reduced loss's forward, scaled in its backward; per element written
    # by the backward); out of place they are untouched.
    assert torch.equal(ref_logits, h)
    assert torch.equal(logits, grad)
    torch.testing.assert_close(loss, ref_loss)
    # The two-pass kernel against float64 like the resident one.
    hd = h.double().requires_grad_()
    x = hd if kw.get("softcap") is None else kw["softcap"] * torch.tanh(hd / kw["softcap"])
    w = kw.get("weight")
    ref = F.cross_entropy(x, t.double() if t.is_floating_point() else t,
                          None if w is None else w.double(), reduction=kw.get("reduction", "mean"),
                          label_smoothing=kw.get("label_smoothing", 0.0))
    if kw.get("z_loss_scale"):
        kept = (t != -100)
        ref = ref + kw["z_loss_scale"] * (torch.logsumexp(x, -1) ** 2 * kept).sum() / kept.sum()
    ref.backward(g.double())
    err = (grad.double() - hd.grad).norm() / hd.grad.norm()
    ref_err = (ref_grad.double() - hd.grad).norm() / hd.grad.norm()
    assert err <= 2 * ref_err + 1e-6, (err, ref_err)


def test_saves_the_gradient_buffer():
    n, v = 2048, 32768
    h, t = _problem(torch.bfloat16, n, v)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)

    def peak(inplace):
        x = h.clone().requires_grad_()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        logits = x * 1
        xt.cross_entropy(logits, t, inplace=inplace).backward()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    saved = peak(False) - peak(True)
    assert saved >= n * v * 2, saved  # one bf16 N x V buffer


def test_a_node_that_saved_the_logits_refuses_its_backward():
    h, t = _problem(torch.float32)
    x = h.clone().requires_grad_()
    logits = x * 1
    other = (logits * logits).sum()  # saves the logits for its backward
    loss = xt.cross_entropy(logits, t, inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (loss + other).backward()
    # Per element the write happens in the backward: caught the same way.
    x = h.clone().requires_grad_()
    logits = x * 1
    other = (logits * logits).sum()
    loss = xt.cross_entropy(logits, t, reduction="none", inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (loss.sum() + other).backward()


def test_views_and_rank_1():
    h, t = _problem(torch.bfloat16, n=4 * 24)
    # A [B, T, V] result viewed as [B·T, V] is written in place.
    x = h.clone().view(4, 24, -1).requires_grad_()
    y = x * 1
    loss = xt.cross_entropy(y.view(96, -1), t, inplace=True)
    loss.backward()
    assert torch.equal(y.detach().view(96, -1), x.grad.view(96, -1))
    ref = h.clone().requires_grad_()
    xt.cross_entropy(ref * 1, t).backward()
    torch.testing.assert_close(x.grad.view(96, -1), ref.grad, rtol=2e-2, atol=1e-5)
    # One row as rank-1 logits.
    x = h[1].clone().requires_grad_()
    y = x * 1
    loss = xt.cross_entropy(y, t[1], inplace=True)
    loss.backward()
    assert loss.dim() == 0 and torch.equal(y.detach(), x.grad)


def test_ignored_where_not_allowed():
    h, t = _problem(torch.bfloat16)
    # A leaf that requires grad: never written.
    x = h.clone().requires_grad_()
    xt.cross_entropy(x, t, inplace=True).backward()
    assert torch.equal(x.detach(), h) and x.grad is not None
    # Strided logits: their own gradient buffer.
    x = torch.cat([h, h], 1).requires_grad_()
    y = (x * 1)[:, ::2]
    assert not ops.in_place_allowed(y)
    xt.cross_entropy(y, t, inplace=True).backward()
    assert torch.equal(y.detach(), torch.cat([h, h], 1)[:, ::2])
    # Without a gradient nothing is written.
    with torch.no_grad():
        y = h * 1
        xt.cross_entropy(y, t, inplace=True)
        assert torch.equal(y, h)


def test_under_torch_compile_it_is_a_plain_call():
    h, t = _problem(torch.bfloat16)

    def step(x):
        return xt.cross_entropy(x * 1, t, inplace=True)

    x = h.clone().requires_grad_()
    loss = torch.compile(step, fullgraph=True)(x)
    loss.backward()
    ref = h.clone().requires_grad_()
    ref_loss = xt.cross_entropy(ref * 1, t)
    ref_loss.backward()
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(x.grad, ref.grad, rtol=2e-2, atol=1e-5)
