"""xent.torch's native launch path (torch.ops.xent_native, built from
python/src/xent/torch/csrc by xent.torch.native): it loads, it gives the
numbers of the ctypes path and of PyTorch, its autograd formula scales the
gradient by any grad_output, it never synchronizes, a CUDA graph captures
it, and without it xent.torch says so and still works.

Runs on the GPU machine with the drop-in's kernels precompiled
(python/tools/make_xent_bundle.py, XENT_CACHE_DIR); never in CI.
"""

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt
from xent.torch import native, ops

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def nat():
    ops_ = ops.native()
    assert ops_ is not None, f"the native path did not load: {native.reason()}"
    return ops_


def _inputs(dtype=torch.bfloat16, n=64, v=1000, seed=0, shape=None):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(*(shape or (n, v)), device="cuda", generator=g) * 3).to(dtype)
    tshape = x.shape[:1] + x.shape[2:]
    t = torch.randint(0, x.shape[1], tshape, device="cuda", generator=g)
    t.view(-1)[::7] = -100
    return x.requires_grad_(), t


def _ctypes_path(fn):
    """Runs `fn` with the native path switched off (the fallback)."""
    saved = ops._NATIVE[:]
    ops._NATIVE[:] = [None]
    try:
        return fn()
    finally:
        ops._NATIVE[:] = saved


CASES = [
    dict(),
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(label_smoothing=0.1),
    dict(z_loss_scale=1e-4, return_z_loss=True),
    dict(weight=True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(sorted(c)) or "plain")
def test_native_matches_ctypes_and_torch(nat, case):
    case = dict(case)
    x, t = _inputs()
    if case.pop("weight", False):
        case["weight"] = torch.rand(x.shape[1], device="cuda") + 0.5

    def run():
        x.grad = None
        out = xt.cross_entropy(x, t, **case)
        loss = out[0] if isinstance(out, tuple) else out
        gen = torch.Generator(device="cuda").manual_seed(1)
        g = (torch.randn(loss.shape, device="cuda", generator=gen) if loss.dim() else
             torch.tensor(2.5, device="cuda"))
        (loss * g.to(loss.dtype)).sum().backward()
        return [o.detach().clone() for o in (out if isinstance(out, tuple) else (out,))], \
            x.grad.clone(), g

    outs, grad, g = run()
    ref_outs, ref_grad, _ = _ctypes_path(run)
    per_element = case.get("reduction") == "none"
    for a, b in zip(outs, ref_outs):
        if per_element:
            # The forward's library (no gradient) against the fallback's
            # joint kernel: the same loss to the output dtype's rounding.
            torch.testing.assert_close(a, b)
        else:
            assert torch.equal(a, b)
    if not per_element:
        # The same kernels and the same scaling: bit for bit the fallback's.
        assert torch.equal(grad, ref_grad)
    case.pop("return_z_loss", None)
    with_z = case.pop("z_loss_scale", None) is not None
    x64 = x.detach().double().requires_grad_()
    w = case.pop("weight", None)
    expected = F.cross_entropy(x64, t, weight=None if w is None else w.double(), **case)
    (expected * g.double()).sum().backward()
    if per_element:
        # The native path computes the gradient in the backward with the
        # per-row grad_output inside the kernel (rounded once), the fallback
        # scales the forward's rounded gradient: at least as accurate.
        def error(d):
            return ((d.double() - x64.grad).norm() / x64.grad.norm()).item()
        assert error(grad) <= error(ref_grad) * 1.01 + 1e-7, (error(grad), error(ref_grad))
    if not with_z:  # the z-loss term is not F.cross_entropy's
        err = (grad.double() - x64.grad).norm() / x64.grad.norm()
        assert err < 2e-2, err.item()
        loss = outs[0].double()
        assert torch.allclose(loss, expected.detach(), rtol=2e-2, atol=1e-2)


@pytest.mark.parametrize("dtype,shape,attrs", [
    (torch.bfloat16, (256, 4096), dict()),
    (torch.bfloat16, (96, 32000), dict(weight=True, label_smoothing=0.1)),
    (torch.float32, (8, 300, 5), dict(ignore_index=3)),
    (torch.float16, (64, 1000), dict(label_smoothing=0.05)),
], ids=["bf16", "bf16-weight-smoothing", "f32-rank3", "f16-smoothing"])
def test_per_element_gradient_in_backward(nat, dtype, shape, attrs):
    # reduction="none": the forward keeps no gradient (the loss alone), the
    # backward computes it with the per-element grad_output in the kernel.
    attrs = dict(attrs)
    x, t = _inputs(dtype, shape=shape, seed=5)
    if "ignore_index" in attrs:
        t = t.clamp(min=0)
        t.view(-1)[::4] = attrs["ignore_index"]
    if attrs.pop("weight", False):
        attrs["weight"] = torch.rand(shape[1], device="cuda") + 0.5
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    loss = xt.cross_entropy(x, t, reduction="none", **attrs)
    kept = torch.cuda.memory_allocated() - before
    gradient_bytes = x.numel() * x.element_size()
    assert kept < gradient_bytes // 4, (kept, gradient_bytes)
    gen = torch.Generator(device="cuda").manual_seed(9)
    g = torch.randn(loss.shape, device="cuda", generator=gen)
    loss.backward(g.to(loss.dtype))
    x64 = x.detach().double().requires_grad_()
    w = attrs.pop("weight", None)
    ref = F.cross_entropy(x64, t, weight=None if w is None else w.double(), reduction="none",
                          **attrs)
    ref.backward(g.to(loss.dtype).double())
    torch.testing.assert_close(loss.double(), ref.detach(),
                               **({} if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)))
    # PyTorch in the same dtype: xent's gradient is no less accurate.
    xs = x.detach().clone().requires_grad_()
    same = F.cross_entropy(xs, t, weight=None if w is None else w.to(dtype), reduction="none",
                           **attrs)
    same.backward(g.to(same.dtype))

    def error(d):
        return ((d.double() - x64.grad).norm() / x64.grad.norm()).item()
    assert error(x.grad) <= max(2 * error(xs.grad), 1e-6), (error(x.grad), error(xs.grad))
    ignored = (t == attrs.get("ignore_index", -100))
    assert torch.count_nonzero(x.grad.movedim(1, -1)[ignored]) == 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("v", [32768, 65536, 131072, 262144, 50257])
def test_resident_label_smoothing(nat, dtype, v):
    # Label smoothing on the resident path: clusters of 1 to 8 blocks (the
    # class sums in a second exchange), 50257 (not a multiple of the vector:
    # the two-pass walk in the same kernel); loss and gradient against
    # float64, no worse than twice PyTorch's own error in the same dtype.
    x, t = _inputs(dtype, n=24, v=v, seed=v % 97)
    g = torch.tensor(1.5, device="cuda")
    loss = xt.cross_entropy(x, t, label_smoothing=0.1)
    loss.backward(g.to(loss.dtype))
    x64 = x.detach().double().requires_grad_()
    ref = F.cross_entropy(x64, t, label_smoothing=0.1)
    ref.backward(g.double())
    xs = x.detach().clone().requires_grad_()
    same = F.cross_entropy(xs, t, label_smoothing=0.1)
    same.backward(g.to(same.dtype))
    unit = 2 ** -8 if dtype == torch.bfloat16 else 2 ** -24
    loss_err = abs(loss.double().item() - ref.item())
    assert loss_err <= max(2 * abs(same.double().item() - ref.item()), unit * abs(ref.item())), \
        (loss.item(), same.item(), ref.item())

    def error(d):
        return ((d.double() - x64.grad).norm() / x64.grad.norm()).item()
    assert error(x.grad) <= max(2 * error(xs.grad), 1e-6), (error(x.grad), error(xs.grad))
    assert torch.count_nonzero(x.grad[t == -100]) == 0


def test_grad_output_of_one_and_of_other_values(nat):
    x, t = _inputs(torch.float32)
    xt.cross_entropy(x, t).backward()
    g1 = x.grad.clone()
    x.grad = None
    (xt.cross_entropy(x, t) * -3.0).backward()
    torch.testing.assert_close(x.grad, g1 * -3.0, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("path", ["native", "ctypes"])
def test_second_backward_is_refused_not_wrong(nat, path, reduction):
    # The reduced loss keeps its gradient and scales it in place in
    # backward: a second backward (retain_graph=True) is refused with a
    # message, and the first gradient stays as it was. The native per-element
    # loss runs the joint kernel in backward: a second one is simply right.
    x, t = _inputs(torch.float32)

    def run():
        x.grad = None
        loss = xt.cross_entropy(x, t, reduction=reduction)
        g = torch.full_like(loss, 0.5)
        loss.backward(g, retain_graph=True)
        first = x.grad.clone()
        if path == "native" and reduction == "none":
            loss.backward(g)
            torch.testing.assert_close(x.grad, 2 * first, rtol=1e-6, atol=0)
            return first
        with pytest.raises(RuntimeError, match="second backward|modified by an inplace"):
            loss.backward(g)
        assert torch.equal(x.grad, first)
        return first

    first = run() if path == "native" else _ctypes_path(run)
    x64 = x.detach().double().requires_grad_()
    F.cross_entropy(x64, t, reduction=reduction).backward(
        torch.full(t.shape if reduction == "none" else (), 0.5, dtype=torch.float64,
                   device="cuda"))
    torch.testing.assert_close(first.double(), x64.grad, rtol=1e-5, atol=1e-7)


def test_rank3_and_views(nat):
    x, t = _inputs(torch.float32, shape=(4, 300, 5))
    out = xt.cross_entropy(x, t, reduction="none")
    out.sum().backward()
    x64 = x.detach().double().requires_grad_()
    ref = F.cross_entropy(x64, t, reduction="none")
    ref.sum().backward()
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x.grad.double(), x64.grad, rtol=1e-5, atol=1e-7)
    # A strided view of the logits (every other row).
    base, t2 = _inputs(torch.float32, n=128)
    view = base[::2]
    loss = xt.cross_entropy(view, t2[::2])
    torch.testing.assert_close(loss.double(), F.cross_entropy(view.double(), t2[::2]),
                               rtol=1e-5, atol=1e-6)


def test_no_host_synchronization(nat):
    x, t = _inputs()
    xt.cross_entropy(x, t).backward()  # warm: compiled, registered, cached
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        x.grad = None
        xt.cross_entropy(x, t).backward()
        with torch.no_grad():
            xt.cross_entropy(x, t, reduction="sum")
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_cuda_graph_capture(nat):
    x, t = _inputs()
    x.grad = torch.zeros_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            x.grad = None
            xt.cross_entropy(x, t).backward()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    x.grad = None
    with torch.cuda.graph(graph):
        loss = xt.cross_entropy(x, t)
        loss.backward()
    with torch.no_grad():
        x.copy_(x * 0.5)
    graph.replay()
    torch.cuda.synchronize()
    x64 = x.detach().double().requires_grad_()
    ref = F.cross_entropy(x64, t)
    ref.backward()
    assert abs(loss.double().item() - ref.item()) < 2e-2 * abs(ref.item())
    err = (x.grad.double() - x64.grad).norm() / x64.grad.norm()
    assert err < 2e-2, err.item()


def test_inference_mode(nat):
    x, t = _inputs()
    with torch.inference_mode():
        loss = xt.cross_entropy(x.detach(), t)
    ref = F.cross_entropy(x.detach().double(), t)
    assert abs(loss.double().item() - ref.item()) < 1e-2 * abs(ref.item())


def test_errors_are_raised(nat):
    x, t = _inputs()
    with pytest.raises(ValueError):
        xt.cross_entropy(x, t[:-1])
    with pytest.raises(RuntimeError, match="xent_native"):
        nat.forward(12345678, x, t, None, True)


def test_fallback_says_so():
    env = dict(os.environ, XENT_TORCH_NATIVE="0")
    code = ("import warnings, torch\n"
            "from xent import torch as xt\n"
            "x = torch.randn(8, 100, device='cuda', requires_grad=True)\n"
            "t = torch.randint(0, 100, (8,), device='cuda')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    xt.cross_entropy(x, t).backward()\n"
            "assert any('native launch path is unavailable' in str(m.message) for m in w), w\n"
            "assert x.grad is not None\n"
            "print('fallback ok')\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fallback ok" in done.stdout


def test_loss_dtype_float32(nat):
    # The loss computed in f32 from bf16 logits, returned without rounding:
    # F.cross_entropy under autocast, to f32 precision.
    x, t = _inputs()
    loss = xt.cross_entropy(x, t, loss_dtype=torch.float32)
    assert loss.dtype == torch.float32
    ref = F.cross_entropy(x.detach().float(), t)
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    loss.backward()
    x64 = x.detach().double().requires_grad_()
    F.cross_entropy(x64, t).backward()
    assert ((x.grad.double() - x64.grad).norm() / x64.grad.norm()).item() < 2e-2
    with pytest.raises(ValueError):
        xt.cross_entropy(x, t, loss_dtype=torch.float16)


def test_one_library_serves_every_value(nat):
    # Run-time scalars (the default on the native path): every value of
    # ignore_index, label smoothing, z-loss scale and softcap goes to one
    # library per feature set, and gives PyTorch's numbers.
    if not ops._RUNTIME_SCALARS:
        pytest.skip("XENT_RUNTIME_SCALARS=0")
    x, t = _inputs(torch.float32)
    libraries = set()
    for eps, ii in ((0.05, -100), (0.1, 3), (0.3, -100)):
        t2 = t.clamp(min=0)  # no -100 where another value is ignored
        t2[::5] = ii
        x.grad = None
        loss = xt.cross_entropy(x, t2, ignore_index=ii, label_smoothing=eps)
        loss.backward()
        x64 = x.detach().double().requires_grad_()
        ref = F.cross_entropy(x64, t2, ignore_index=ii, label_smoothing=eps)
        ref.backward()
        torch.testing.assert_close(loss.double(), ref.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x.grad.double(), x64.grad, rtol=1e-4, atol=1e-7)
        plan = ops._call_plan(x, t2, None, "mean", ii, eps, 0.0, None, True)
        # The package's libraries take every float scalar at run time
        # (smoothing, z-loss scale, softcap; 0 turns a feature off).
        assert plan[5] == ii and plan[6] == [eps, 0.0, 0.0], plan[5:7]
        libraries.add(plan[0].path)
    assert len(libraries) == 1, libraries
    for cap in (10.0, 30.0):
        x.grad = None
        loss = xt.cross_entropy(x, t, softcap=cap)
        x64 = x.detach().double()
        ref = F.cross_entropy(cap * torch.tanh(x64 / cap), t)
        torch.testing.assert_close(loss.double(), ref, rtol=1e-5, atol=1e-6)
