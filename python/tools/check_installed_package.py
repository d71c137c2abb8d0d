"""xent.torch from the installed package alone: a regular
`pip install ./python` of a build whose CMake compiled the kernel bundle
(xent-python-kernels), on a GPU machine without LLVM or a checkout. Every
kernel comes from the package's xent/kernels: these tests fail if one would
be compiled. Run on the H200 with an empty XENT_CACHE_DIR, from outside the
checkout; kept out of python/tests_gpu (which runs from the checkout) and
run by check_package_on_device.sh:

    cd /tmp && PYTHONPATH=SITE XENT_CACHE_DIR=$(mktemp -d) python3 -m pytest \
        -o python_files=check_installed_package.py CHECKOUT/python/tools/check_installed_package.py
"""

import json
import os
import random

import pytest
import torch
import torch.nn.functional as F

import xent
from xent import torch as xt
from xent._checkout import checkout_root
from xent.runtime import bundle, gpu
from xent.torch import ops

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _index(directory):
    d = os.path.join(directory, "index")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


@pytest.fixture(scope="module")
def cache_before():
    cache = os.environ.get("XENT_CACHE_DIR") or os.path.expanduser("~/.cache/xent")
    return cache, _index(cache)


def test_the_package_is_installed_with_its_kernels(cache_before):
    assert checkout_root() is None, f"xent imported from a checkout: {xent.__file__}"
    dirs = bundle.bundle_directories()
    assert dirs == [os.path.join(os.path.dirname(xent.__file__), "kernels")]
    assert len(_index(dirs[0])) == len(bundle.package_configs())
    assert gpu.compiler_identity() is None, "a compiler is at hand: not the machine this checks"
    assert ops.native() is not None, "the native launch path did not build"


class Model(torch.nn.Module):
    def __init__(self, hidden=64, vocab=4096, **loss):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, vocab, bias=False)
        self.loss = loss

    def forward(self, h, t):
        return xt.cross_entropy(self.proj(h), t, **self.loss)


def _attributes(rng):
    return dict(ignore_index=rng.choice([-100, 0, 7]),
                label_smoothing=rng.choice([0.0, round(rng.random() * 0.3, 3)]),
                z_loss_scale=rng.choice([0.0, 1e-4, 3e-3]),
                softcap=rng.choice([None, round(rng.uniform(5, 50), 2)]),
                reduction=rng.choice(["mean", "sum", "none"]))


def _reference(x, t, weight, ignore_index, label_smoothing, z_loss_scale, softcap, reduction,
               dtype=torch.float64):
    """F.cross_entropy (+ z-loss, softcap) in float64, or in `dtype` (what
    PyTorch itself computes in the logits' dtype)."""
    x = x.to(dtype)
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    w = None if weight is None else weight.to(dtype)
    loss = F.cross_entropy(x, t, w, ignore_index=ignore_index, reduction="none",
                           label_smoothing=label_smoothing)
    kept = (t != ignore_index) if not t.is_floating_point() else torch.ones_like(loss, dtype=bool)
    z = z_loss_scale * torch.logsumexp(x, dim=-1) ** 2 * kept
    total = loss + z
    if reduction == "none":
        return total
    if reduction == "sum":
        return total.sum()
    denom = (w[t.clamp(min=0)] * kept).sum() if w is not None and not t.is_floating_point() \
        else kept.sum()
    return loss.sum() / denom + z.sum() / kept.sum()


@pytest.mark.parametrize("seed", range(24))
def test_any_values_run_without_compiling(seed, cache_before):
    """Random dtype, target kind, weights, reduction, attribute values and
    size (in place or not) against float64: all from the package."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
    n, v = rng.choice([(1, 7), (33, 1000), (256, 32768), (64, 128256)])
    attrs = _attributes(rng)
    probs = rng.random() < 0.2
    weight = (torch.rand(v, device="cuda") + 0.5) if rng.random() < 0.3 else None
    h = torch.randn(n, v, device="cuda", dtype=dtype) * 3
    x = h.clone().requires_grad_()
    logits = x * 1  # not a leaf: may take the gradient in place
    if probs:
        t = torch.softmax(torch.randn(n, v, device="cuda"), -1).to(dtype)
        attrs["ignore_index"] = -100
    else:
        t = torch.randint(0, v, (n,), device="cuda")
        t[3::7] = attrs["ignore_index"]
    if n == 1 and rng.random() < 0.5:  # one row as rank-1 logits
        logits, t = logits[0], t[0]
    loss = xt.cross_entropy(logits, t, weight, inplace=rng.random() < 0.5, **attrs)
    g = torch.rand_like(loss, dtype=torch.float32).to(loss.dtype) if loss.dim() else None
    loss.backward(g)
    hd = h.double().requires_grad_()
    ref = _reference(hd if logits.dim() == 2 else hd[0], t if not probs else t.double(),
                     weight, **attrs)
    ref.backward(None if g is None else g.double())
    tol = {torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 4e-3}[dtype]
    torch.testing.assert_close(loss.double(), ref.detach(), rtol=tol, atol=tol, equal_nan=True)
    want = hd.grad
    if ref.isnan().all() and want.isnan().all():
        # Every row ignored under mean: the loss is NaN as PyTorch's, the
        # gradient 0 where PyTorch's is 0/0 (the op's contract, DESIGN.md).
        want = torch.zeros_like(want)
        assert (x.grad == 0).all()
    err = (x.grad.double() - want).norm() / want.norm().clamp(min=1e-30)
    if err >= tol:
        # A confident row's gradient is the difference of nearly equal
        # numbers in any dtype: then the bar is PyTorch's own error on the
        # same values in the same dtype (within 2x).
        hp = h.clone().requires_grad_()
        pt = _reference(hp if logits.dim() == 2 else hp[0], t, weight, **attrs, dtype=dtype)
        pt.backward(g)
        err_pt = (hp.grad.double() - want).norm() / want.norm().clamp(min=1e-30)
        assert err <= 2 * err_pt, (err, err_pt)
    assert _index(cache_before[0]) == cache_before[1], "a kernel was compiled"


@pytest.mark.parametrize("seed", range(8))
def test_any_rank_and_the_per_row_outputs(seed, cache_before):
    """Logits of rank 3 and 4 (the class axis at 1) and the per-row outputs
    (lse, predicted tokens, token accuracy) at every rank, from the
    package: the libraries of rank 3 serve higher ranks flattened, those
    with the per-row outputs every subset of them."""
    rng = random.Random(100 + seed)
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
    shape = rng.choice([(4, 1000), (3, 513, 5), (2, 300, 3, 4), (6, 32768)])
    attrs = _attributes(rng)
    n, v = shape[0], shape[1]
    h = torch.randn(*shape, device="cuda", dtype=dtype) * 3
    x = h.clone().requires_grad_()
    t = torch.randint(0, v, shape[:1] + shape[2:], device="cuda")
    t.view(-1)[3::7] = attrs["ignore_index"]
    rows = dict(return_lse=rng.random() < 0.7, return_predicted_tokens=rng.random() < 0.5,
                return_token_accuracy=rng.random() < 0.5)
    out = xt.cross_entropy(x, t, **attrs, **rows)
    loss = out.loss if isinstance(out, xt.CrossEntropyOutput) else out
    g = torch.rand_like(loss, dtype=torch.float32).to(loss.dtype) if loss.dim() else None
    loss.backward(g)
    # The reference on the rows: classes last, elements in row-major order.
    moved = h.double().movedim(1, -1).reshape(-1, v).requires_grad_()
    flat_t = t.reshape(-1)
    ref = _reference(moved, flat_t, None, **attrs)
    ref.backward(None if g is None else g.double().reshape(-1))
    tol = {torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 4e-3}[dtype]
    torch.testing.assert_close(loss.double().reshape(-1), ref.detach().reshape(-1), rtol=tol,
                               atol=tol, equal_nan=True)
    ref_grad = moved.grad.reshape(h.movedim(1, -1).shape).movedim(-1, 1)
    err = (x.grad.double() - ref_grad).norm() / ref_grad.norm().clamp(min=1e-30)
    assert err < tol, err
    if isinstance(out, xt.CrossEntropyOutput):
        z = moved.detach()
        if attrs["softcap"] is not None:
            z = attrs["softcap"] * torch.tanh(z / attrs["softcap"])
        element = shape[:1] + shape[2:]
        if rows["return_lse"]:
            torch.testing.assert_close(out.lse.double(), torch.logsumexp(z, -1).reshape(element),
                                       rtol=1e-5, atol=1e-5)
        argmax = z.argmax(-1)
        if rows["return_predicted_tokens"]:
            same = (out.predicted_tokens.reshape(-1) == argmax)
            # A tie in the rounded logits may pick another index of the same value.
            assert same.float().mean() > 0.99
        if rows["return_token_accuracy"]:
            kept = flat_t != attrs["ignore_index"]
            hit = ((argmax == flat_t) & kept).double()
            if attrs["reduction"] == "none":
                assert out.token_accuracy.numel() == hit.numel()
            else:
                want = hit.sum() / kept.sum() if attrs["reduction"] == "mean" else hit.sum()
                torch.testing.assert_close(out.token_accuracy.double(), want, rtol=2e-2,
                                           atol=2e-2)
    assert _index(cache_before[0]) == cache_before[1], "a kernel was compiled"


def test_ctypes_fallback(tmp_path):
    """XENT_TORCH_NATIVE=0 (no C++ extension): the ctypes path passes the
    values as run-time arguments and runs the package's libraries too."""
    import subprocess
    import sys
    code = (
        "import torch, torch.nn.functional as F\n"
        "from xent import torch as xt\n"
        "from xent.torch import ops\n"
        "assert ops.native() is None\n"
        "torch.manual_seed(0)\n"
        "for dt in (torch.float32, torch.bfloat16):\n"
        "  x = (torch.randn(64, 4096, device='cuda') * 3).to(dt).requires_grad_()\n"
        "  t = torch.randint(0, 4096, (64,), device='cuda'); t[::5] = -100\n"
        "  l = xt.cross_entropy(x, t, label_smoothing=0.1, softcap=20.0)\n"
        "  l.backward()\n"
        "  xd = x.detach().double().requires_grad_()\n"
        "  r = F.cross_entropy(20.0 * torch.tanh(xd / 20.0), t, label_smoothing=0.1)\n"
        "  r.backward()\n"
        "  tol = 2e-5 if dt == torch.float32 else 2e-2\n"
        "  torch.testing.assert_close(l.double(), r.detach(), rtol=tol, atol=tol)\n"
        "  assert (x.grad.double() - xd.grad).norm() / xd.grad.norm() < tol\n"
        "print('ctypes ok')\n")
    env = dict(os.environ, XENT_TORCH_NATIVE="0", XENT_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "ctypes ok" in out.stdout, out.stderr[-3000:]
    assert _index(str(tmp_path)) == [], "a kernel was compiled"


def test_compile_export_and_graph(cache_before):
    torch.manual_seed(0)
    model = Model(label_smoothing=0.1, z_loss_scale=1e-4, softcap=30.0).cuda()
    h = torch.randn(512, 64, device="cuda")
    t = torch.randint(0, 4096, (512,), device="cuda")
    eager = model(h, t)
    eager.backward()
    expected = model.proj.weight.grad.clone()
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True)
    loss = compiled(h, t)
    loss.backward()
    torch.testing.assert_close(loss, eager)
    torch.testing.assert_close(model.proj.weight.grad, expected, rtol=1e-4, atol=1e-6)
    exported = torch.export.export(model, (h, t))
    assert any("xent" in str(node.target) for node in exported.graph.nodes)
    torch.testing.assert_close(exported.module()(h, t), eager)
    # A CUDA graph of forward + backward replays the same loss and gradient
    # (a fresh module: the graphs above keep the weight's AccumulateGrad
    # node, made on the default stream, which a capture must not touch).
    del eager, loss
    model = Model(label_smoothing=0.1, z_loss_scale=1e-4, softcap=30.0).cuda()
    static_h = h.clone()
    weight = model.proj.weight
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture
        for _ in range(2):
            torch.autograd.grad(model(static_h, t), [weight])
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = model(static_h, t)
        (static_grad,) = torch.autograd.grad(static_loss, [weight])
    static_h.copy_(torch.randn_like(h))
    graph.replay()
    fresh_loss = model(static_h, t)
    (fresh_grad,) = torch.autograd.grad(fresh_loss, [weight])
    torch.cuda.synchronize()
    torch.testing.assert_close(static_loss, fresh_loss)
    torch.testing.assert_close(static_grad, fresh_grad, rtol=1e-4, atol=1e-6)
    assert _index(cache_before[0]) == cache_before[1], "a kernel was compiled"


def _linear_reference(h, w, b, t, cw, ignore_index, label_smoothing, z_loss_scale, softcap,
                      reduction):
    """F.linear then the loss, in float64."""
    x = h.double() @ w.double().T + (b.double() if b is not None else 0)
    x = x.reshape(-1, x.shape[-1])
    ref = _reference(x, t.reshape(-1).long(), cw, ignore_index, label_smoothing, z_loss_scale,
                     softcap, reduction)
    return ref.reshape(t.shape) if reduction == "none" else ref


@pytest.mark.parametrize("seed", range(16))
def test_linear_cross_entropy_from_the_package(seed, cache_before):
    """xent.torch.linear_cross_entropy: random dtype, rank 2 or 3, i32 / i64
    targets, bias, class weights, reduction, attribute values, frozen weight
    or hidden, with and without gradient, against float64: all from the
    package (the values are run-time arguments of its libraries)."""
    rng = random.Random(300 + seed)
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
    v, hdim = rng.choice([(1000, 64), (4096, 128), (32000, 256)])
    shape = rng.choice([(200,), (3, 77)])
    attrs = _attributes(rng)
    bias = rng.random() < 0.5
    cw = (torch.rand(v, device="cuda") + 0.5) if rng.random() < 0.3 else None
    torch.manual_seed(seed)
    h = (torch.randn(*shape, hdim, device="cuda") * 0.5).to(dtype)
    w = (torch.randn(v, hdim, device="cuda") * 0.1).to(dtype)
    b = (torch.randn(v, device="cuda") * 0.1).to(dtype) if bias else None
    t = torch.randint(0, v, shape, device="cuda",
                      dtype=rng.choice([torch.int64, torch.int32]))
    t.view(-1)[3::7] = attrs["ignore_index"]
    mode = rng.choice(["both", "frozen weight", "frozen hidden", "no grad"])
    hx = h.clone().requires_grad_(mode in ("both", "frozen weight"))
    wx = w.clone().requires_grad_(mode in ("both", "frozen hidden"))
    loss = xt.linear_cross_entropy(hx, wx, t, b, class_weight=cw, **attrs)
    ref_h = h.double().requires_grad_()
    ref_w = w.double().requires_grad_()
    ref = _linear_reference(ref_h, ref_w, b, t, cw, **attrs)
    tol = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 5e-3}[dtype]
    torch.testing.assert_close(loss.double(), ref.detach(), rtol=tol, atol=tol, equal_nan=True)
    if mode != "no grad":
        g = torch.rand_like(loss, dtype=torch.float32) if loss.dim() else None
        loss.backward(None if g is None else g.to(loss.dtype))
        ref.backward(None if g is None else g.double())
        for mine, want, on in ((hx, ref_h, hx.requires_grad), (wx, ref_w, wx.requires_grad)):
            if not on:
                assert mine.grad is None
                continue
            err = (mine.grad.double() - want.grad).norm() / want.grad.norm().clamp(min=1e-30)
            assert err < 3 * tol, (mode, err)
    assert _index(cache_before[0]) == cache_before[1], "a kernel was compiled"
