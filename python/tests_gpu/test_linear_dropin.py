"""xent.torch.linear_cross_entropy (docs/linear-cross-entropy.md): the
projection and the loss as one autograd call, against F.linear +
F.cross_entropy in float64 on the same (rounded) inputs, each result no
worse than twice PyTorch's own error in the same dtype (or the type's
accumulation noise, test_linear_gpu.FLOOR): bf16 and f32, mean, sum and
none (the per-row grad_output, which the backward passes to the op), with
and without a bias, a grad_output other than 1, a frozen weight, [B, T, H]
rows, the loss in the hidden's dtype by default.

Runs where PyTorch sees a GPU, the libraries from ``$XENT_CACHE_DIR``
(make_bundle.py: kernel_configs.linear_configs, the automatic chunks).
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from xent import torch as xt  # noqa: E402

from test_linear_gpu import DTYPES, FLOOR, rel, torch_grads  # noqa: E402


def inputs(dtype, n, h, v, bias, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed + n + v)
    t = DTYPES[dtype]
    hidden = torch.randn(n, h, device="cuda", generator=gen).to(t)
    weight = (torch.randn(v, h, device="cuda", generator=gen) * h ** -0.5 * 2).to(t)
    b = (torch.randn(v, device="cuda", generator=gen) * 0.5).to(t) if bias else None
    target = torch.randint(0, v, (n,), device="cuda", generator=gen)
    target[::7] = -100
    return hidden, weight, b, target


def run(hidden, weight, bias, target, reduction, g, **kw):
    params = [hidden.clone().requires_grad_(), weight.clone().requires_grad_()]
    if bias is not None:
        params.append(bias.clone().requires_grad_())
    loss = xt.linear_cross_entropy(params[0], params[1], target,
                                   params[2] if bias is not None else None,
                                   reduction=reduction, **kw)
    loss.backward(g.to(loss.dtype) if reduction != "none" else g.to(loss.dtype))
    return [loss.detach()] + [p.grad for p in params]


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_against_float64_and_torch(dtype, reduction, bias):
    hidden, weight, b, target = inputs(dtype, 300, 64, 1000, bias)
    gen = torch.Generator(device="cuda").manual_seed(3)
    g = (torch.randn(300, device="cuda", generator=gen) if reduction == "none"
         else torch.tensor(0.75, device="cuda"))
    ours = run(hidden, weight, b, target, reduction, g, loss_dtype=torch.float32)
    config = {"reduction": reduction, "ignore_index": -100}
    ref = torch_grads(config, hidden, weight, b, target, g, torch.float64)
    same = torch_grads(config, hidden, weight, b, target, g, DTYPES[dtype])
    names = ["loss", "d_hidden", "d_weight"] + (["d_bias"] if bias else [])
    for name, out, r, s in zip(names, ours, ref, same):
        assert out.shape == r.shape, (name, out.shape, r.shape)
        assert torch.isfinite(out).all(), name
        err, torch_err = rel(out, r), rel(s, r)
        assert err <= max(2 * torch_err, FLOOR[dtype]), (name, err, torch_err)
    # The default loss dtype is the hidden's: the f32 loss rounded once.
    default = xt.linear_cross_entropy(hidden, weight, target, b, reduction=reduction)
    assert default.dtype == hidden.dtype
    torch.testing.assert_close(default.float(), ours[0],
                               rtol=8e-3 if dtype == "bf16" else 1e-5, atol=1e-6)


def test_frozen_weight_and_rank3():
    hidden, weight, _, target = inputs("bf16", 2 * 150, 64, 1000, False, seed=4)
    h3 = hidden.view(2, 150, 64).clone().requires_grad_()
    loss = xt.linear_cross_entropy(h3, weight, target.view(2, 150), loss_dtype=torch.float32)
    (loss * 2.0).backward()
    assert weight.grad is None
    ref = torch_grads({"reduction": "mean", "ignore_index": -100}, hidden, weight, None, target,
                      torch.tensor(2.0, device="cuda"), torch.float64)
    same = torch_grads({"reduction": "mean", "ignore_index": -100}, hidden, weight, None,
                       target, torch.tensor(2.0, device="cuda"), torch.bfloat16)
    err, torch_err = rel(h3.grad.view(300, 64), ref[1]), rel(same[1], ref[1])
    assert err <= max(2 * torch_err, FLOOR["bf16"]), (err, torch_err)
    assert rel(loss, ref[0]) <= max(2 * rel(same[0], ref[0]), FLOOR["bf16"])


def test_errors():
    hidden, weight, _, target = inputs("bf16", 8, 64, 100, False)
    with pytest.raises(ValueError):
        xt.linear_cross_entropy(hidden, weight[:, :32], target)
    with pytest.raises(TypeError):
        xt.linear_cross_entropy(hidden, weight.float(), target)
    with pytest.raises(ValueError):
        xt.linear_cross_entropy(hidden, weight, target[:4])
    with pytest.raises(ValueError):
        xt.linear_cross_entropy(hidden, weight, target, reduction="avg")
