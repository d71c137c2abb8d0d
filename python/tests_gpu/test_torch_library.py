"""xent.torch's PyTorch operators (torch.ops.xent.*): torch.library.opcheck,
torch.compile with fullgraph=True and by default, torch._dynamo.explain (no
graph break), torch.export, and CUDA-graph capture of forward + backward,
each against PyTorch's own cross-entropy.

Runs on the GPU machine with the kernels of xent_torch_configs.specials()
precompiled by python/tools/make_xent_bundle.py (XENT_CACHE_DIR); never in CI.
"""

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
LOSS_RTOL = {"f32": 2e-5, "bf16": 8e-3, "f16": 1e-3}
GRAD_RTOL = {"f32": 2e-5, "bf16": 2e-2, "f16": 4e-3}


def _inputs(dtype, n=32, v=1000, seed=0, requires_grad=True):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(n, v, device="cuda", generator=g) * 3).to(DTYPES[dtype])
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    t[::7] = -100
    return x.requires_grad_(requires_grad), t


def _args(x, t, reduction="mean", label_smoothing=0.0, z_loss_scale=0.0):
    return (x, t, None, reduction, -100, label_smoothing, z_loss_scale, None)


def _grad_args(x, t, *rest):
    return _args(x, t, *rest)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_opcheck_with_grad(dtype):
    x, t = _inputs(dtype)
    torch.library.opcheck(torch.ops.xent.cross_entropy_with_grad.default, _grad_args(x, t))


def test_opcheck_with_grad_attributes():
    x, t = _inputs("bf16")
    torch.library.opcheck(torch.ops.xent.cross_entropy_with_grad.default,
                          _grad_args(x, t, "mean", 0.1, 1e-4))
    x, t = _inputs("bf16")
    torch.library.opcheck(torch.ops.xent.cross_entropy_with_grad.default,
                          _grad_args(x, t, "none"))


def test_with_grad_writes_the_gradient():
    x, t = _inputs("f32")
    with torch.no_grad():
        loss, _, dx = torch.ops.xent.cross_entropy_with_grad(*_grad_args(x, t))
    x64 = x.detach().double().requires_grad_()
    expected = F.cross_entropy(x64, t)
    expected.backward()
    torch.testing.assert_close(loss.double(), expected.detach(), rtol=2e-5, atol=1e-6)
    torch.testing.assert_close(dx.double(), x64.grad, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_opcheck_forward(dtype):
    x, t = _inputs(dtype, requires_grad=False)
    torch.library.opcheck(torch.ops.xent.cross_entropy.default, _args(x, t))


def test_opcheck_scale_grad():
    dx = torch.randn(32, 1000, device="cuda", dtype=torch.bfloat16)
    g = torch.tensor(0.5, device="cuda")
    torch.library.opcheck(torch.ops.xent.scale_grad_.default, (dx, g))
    expected = dx * 0.5
    torch.ops.xent.scale_grad_(dx, g)
    torch.testing.assert_close(dx, expected)


class Head(torch.nn.Module):
    """A projection and the loss, as a language model's last layer."""

    def __init__(self, hidden, classes, dtype, loss):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, classes, device="cuda", dtype=dtype)
        self.loss = loss

    def forward(self, h, t):
        return self.loss(self.proj(h), t)


def _heads(dtype, hidden=64, classes=1000):
    torch.manual_seed(1)
    ours = Head(hidden, classes, DTYPES[dtype], xt.cross_entropy)
    theirs = Head(hidden, classes, torch.float64, F.cross_entropy)
    with torch.no_grad():
        theirs.proj.weight.copy_(ours.proj.weight.double())
        theirs.proj.bias.copy_(ours.proj.bias.double())
    h = torch.randn(48, hidden, device="cuda", dtype=DTYPES[dtype])
    t = torch.randint(0, classes, (48,), device="cuda")
    t[::5] = -100
    return ours, theirs, h, t


def _check_step(dtype, model, reference, h, t):
    loss = model(h, t)
    loss.backward()
    expected = reference(h.double(), t)
    expected.backward()
    assert loss.dtype == DTYPES[dtype]
    torch.testing.assert_close(loss.double(), expected.detach(), rtol=LOSS_RTOL[dtype], atol=1e-4)
    for ours, theirs in ((model.proj.weight.grad, reference.proj.weight.grad),
                         (model.proj.bias.grad, reference.proj.bias.grad)):
        err = (ours.double() - theirs).norm() / theirs.norm()
        assert err <= GRAD_RTOL[dtype], err


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_compile_fullgraph(dtype):
    model, reference, h, t = _heads(dtype)
    _check_step(dtype, torch.compile(model, fullgraph=True), reference, h, t)


def test_compile_default():
    model, reference, h, t = _heads("bf16")
    _check_step("bf16", torch.compile(model), reference, h, t)


def test_no_graph_break():
    model, _, h, t = _heads("bf16")
    explanation = torch._dynamo.explain(model)(h, t)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_export_round_trip():
    model, reference, h, t = _heads("f32")
    exported = torch.export.export(model, (h, t))
    # The loss alone; its registered autograd formula gives the gradient
    # (xent::cross_entropy_backward), trained from the exported module too.
    assert "xent.cross_entropy.default" in str(exported.graph), exported.graph
    assert "cross_entropy_with_grad" not in str(exported.graph), exported.graph
    module = exported.module()
    loss = module(h, t)
    expected = reference(h.double(), t)
    torch.testing.assert_close(loss.double(), expected.detach(), rtol=LOSS_RTOL["f32"],
                               atol=1e-4)
    loss.backward()
    expected.backward()
    weight = dict(module.named_parameters())["proj.weight"]
    torch.testing.assert_close(weight.grad.double(), reference.proj.weight.grad,
                               rtol=GRAD_RTOL["f32"], atol=1e-6)
    with torch.no_grad():
        inference = torch.export.export(model, (h, t))
    assert "xent.cross_entropy.default" in str(inference.graph), inference.graph


def test_cuda_graph_forward_backward():
    x, t = _inputs("bf16", n=128, v=4096)
    static_x = x.detach().clone().requires_grad_()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: kernels loaded outside the capture
        for _ in range(2):
            (grad,) = torch.autograd.grad(xt.cross_entropy(static_x, t), static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loss = xt.cross_entropy(static_x, t)
        (grad,) = torch.autograd.grad(loss, static_x)
    for seed in (2, 3):
        fresh, _ = _inputs("bf16", n=128, v=4096, seed=seed)
        with torch.no_grad():
            static_x.copy_(fresh)
        graph.replay()
        x64 = fresh.detach().double().requires_grad_()
        expected = F.cross_entropy(x64, t)
        expected.backward()
        torch.testing.assert_close(loss.double(), expected.detach(), rtol=8e-3, atol=1e-4)
        err = (grad.double() - x64.grad).norm() / x64.grad.norm()
        assert err <= 2.6e-3, err
