"""xent.torch.linear_cross_entropy (docs/linear-cross-entropy.md): the
projection and the loss as one autograd call, against F.linear +
F.cross_entropy in float64 on the same (rounded) inputs, each result no
worse than twice PyTorch's own error in the same dtype (or the type's
accumulation noise, test_linear_gpu.FLOOR): bf16 and f32, mean, sum and
none (the per-row grad_output, which the backward passes to the op), with
and without a bias, a grad_output other than 1, a frozen weight, [B, T, H]
rows, the loss in the hidden's dtype by default; the loss alone when nothing
needs a gradient (no gradient GEMMs, no gradient buffers), every attribute on
[B, T, H], torch.compile with fullgraph=True, torch.export, torch.library.opcheck of both
operators, CUDA-graph capture, the module, and a refused second backward.

Runs where PyTorch sees a GPU, the libraries from ``$XENT_CACHE_DIR``
(python/tools/make_bundle.py: kernel_configs.linear_configs, the automatic chunks).
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


# The cuBLASLt workspace each call takes from PyTorch's allocator
# (test_memory.py).
WORKSPACE = 32 << 20


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("frozen", ["weight", "hidden"])
def test_frozen_input_computes_no_gradient_for_it(frozen, reduction):
    """A frozen weight (and bias) or frozen hidden states: the other
    gradients as accurate as PyTorch's, and the call's extra memory (in
    PyTorch's allocator) what the computed gradients need: for a frozen
    weight no d_weight and no f32 accumulator (6 bytes per weight element,
    more than the whole bound)."""
    n, h, v = 256, 1024, 8192
    hidden, weight, b, target = inputs("bf16", n, h, v, True, seed=8)
    g = (torch.randn(n, device="cuda") if reduction == "none" else
         torch.tensor(0.5, device="cuda"))

    def leaves():
        return (hidden.clone().requires_grad_(frozen != "hidden"),
                weight.clone().requires_grad_(frozen != "weight"),
                b.clone().requires_grad_(frozen != "weight"))

    def step(hx, wx, bx):
        loss = xt.linear_cross_entropy(hx, wx, target, bx, reduction=reduction,
                                       loss_dtype=torch.float32)
        loss.backward(g)
        return loss.detach()

    step(*leaves())  # the library loaded, the allocator warm
    hx, wx, bx = leaves()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    loss = step(hx, wx, bx)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    config = {"reduction": reduction, "ignore_index": -100}
    ref = torch_grads(config, hidden, weight, b, target, g, torch.float64)
    same = torch_grads(config, hidden, weight, b, target, g, torch.bfloat16)
    assert rel(loss, ref[0]) <= max(2 * rel(same[0], ref[0]), FLOOR["bf16"])
    # The chunk's f32 logits and bf16 dlogits, the bias in f32, the losses,
    # the workspace, 1 MiB of rounding.
    common = n * v * (4 + 2) + v * 4 + 4 * n * 4 + WORKSPACE + (1 << 20)
    if frozen == "weight":
        assert wx.grad is None and bx.grad is None
        pairs = [(hx.grad, ref[1], same[1])]
        bound = common + hidden.numel() * 2
    else:
        assert hx.grad is None
        pairs = [(wx.grad, ref[2], same[2]), (bx.grad, ref[3], same[3])]
        # d_weight, its f32 accumulator, d_bias, its accumulator and ones.
        bound = common + weight.numel() * 6 + v * 6 + n * 2
    for out, r, s in pairs:
        assert out is not None and torch.isfinite(out).all()
        assert rel(out, r) <= max(2 * rel(s, r), FLOOR["bf16"]), (frozen, rel(out, r))
    assert extra <= bound, (frozen, reduction, extra, bound)


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


def test_inference_computes_the_loss_alone():
    # No gradient needed: xent::linear_cross_entropy, whose results are the
    # loss alone: beyond the chunk's f32 logits and the cuBLASLt workspace,
    # nothing of the size of the weight is allocated.
    hidden, weight, b, target = inputs("bf16", 512, 2048, 4096, True, seed=6)
    for reduction in ("mean", "none"):
        with torch.no_grad():
            xt.linear_cross_entropy(hidden, weight, target, b, reduction=reduction)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            loss = xt.linear_cross_entropy(hidden, weight, target, b, reduction=reduction,
                                           loss_dtype=torch.float32)
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - before
        logits = 512 * 4096 * 4
        assert extra - logits - WORKSPACE < weight.numel() * weight.element_size() // 4, \
            (reduction, extra)
        g = torch.ones(target.shape if reduction == "none" else (), device="cuda")
        config = {"reduction": reduction, "ignore_index": -100}
        ref = torch_grads(config, hidden, weight, b, target, g, torch.float64)[0]
        same = torch_grads(config, hidden, weight, b, target, g, torch.bfloat16)[0]
        assert rel(loss, ref) <= max(2 * rel(same, ref), FLOOR["bf16"]), reduction
        # The same numbers as the training call's forward.
        trained = xt.linear_cross_entropy(hidden, weight.clone().requires_grad_(), target, b,
                                          reduction=reduction, loss_dtype=torch.float32)
        torch.testing.assert_close(loss, trained.detach(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_every_attribute_rank3(reduction):
    """Class weights, label smoothing, z-loss, softcap and ignore_index = 0 on
    [B, T, H] with a bias, the z-loss returned, against F.linear +
    F.cross_entropy of the soft-capped logits in float64."""
    import torch.nn.functional as F
    from kernel_configs import LINEAR_ATTRIBUTES as A
    hidden, weight, b, target = inputs("bf16", 2 * 96, 64, 1000, True, seed=8)
    target[target == -100] = 0
    cw = torch.rand(1000, device="cuda") + 0.5
    h3 = hidden.view(2, 96, 64).clone().requires_grad_()
    w, bb = weight.clone().requires_grad_(), b.clone().requires_grad_()
    loss, z = xt.linear_cross_entropy(h3, w, target.view(2, 96), bb, class_weight=cw,
                                      ignore_index=0, reduction=reduction,
                                      label_smoothing=A["label_smoothing"],
                                      z_loss_scale=A["z_loss_scale"], softcap=A["softcap"],
                                      return_z_loss=True, loss_dtype=torch.float32)
    g = (torch.rand(2, 96, device="cuda") if reduction == "none"
         else torch.tensor(1.25, device="cuda"))
    loss.backward(g)

    def reference(dtype):
        hh, ww, b_ = (hidden.to(dtype).requires_grad_(), weight.to(dtype).requires_grad_(),
                      b.to(dtype).requires_grad_())
        x = F.linear(hh, ww, b_)
        x = A["softcap"] * torch.tanh(x / A["softcap"])
        per = F.cross_entropy(x, target, weight=cw.to(dtype), ignore_index=0, reduction="none",
                              label_smoothing=A["label_smoothing"])
        keep = (target != 0).to(dtype)
        zl = A["z_loss_scale"] * torch.logsumexp(x, -1) ** 2 * keep
        if reduction == "mean":
            total = (per.sum() / (cw.to(dtype)[target] * keep).sum() + zl.sum() / keep.sum())
            zr = zl.sum() / keep.sum()
        else:
            total, zr = per + zl, zl
        grads = torch.autograd.grad(total, [hh, ww, b_], g.view(total.shape).to(dtype))
        return [total.detach().view(loss.shape), zr.detach().view(loss.shape)] + list(grads)

    ref, same = reference(torch.float64), reference(torch.bfloat16)
    ours = [loss.detach(), z, h3.grad.view(-1, 64), w.grad, bb.grad]
    for name, out, r, s_ in zip(["loss", "z", "d_hidden", "d_weight", "d_bias"], ours, ref, same):
        err, torch_err = rel(out, r), rel(s_, r)
        assert err <= max(2 * torch_err, FLOOR["bf16"]), (name, err, torch_err)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_torch_compile_fullgraph(reduction):
    # The operators trace with no graph break; the compiled loss and
    # gradients are eager xent's.
    hidden, weight, b, target = inputs("bf16", 256, 64, 1000, True, seed=9)
    g = torch.rand(256, device="cuda") if reduction == "none" else torch.tensor(
        0.5, device="cuda")

    def loss_fn(h, w, bias):
        return xt.linear_cross_entropy(h, w, target, bias, reduction=reduction,
                                       loss_dtype=torch.float32)

    def step(fn):
        args = [t.clone().requires_grad_() for t in (hidden, weight, b)]
        loss = fn(*args)
        loss.backward(g)  # the compiled backward (aot_autograd) for the compiled loss
        return [loss.detach()] + [a.grad for a in args]

    got = step(torch.compile(loss_fn, fullgraph=True))
    want = step(loss_fn)
    torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)
    for x, y in zip(got[1:], want[1:]):
        torch.testing.assert_close(x, y, rtol=1e-2, atol=1e-3)
    torch._dynamo.reset()


class _Head(torch.nn.Module):
    def __init__(self, weight, bias):
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())
        self.bias = torch.nn.Parameter(bias.clone())

    def forward(self, h, t):
        return xt.linear_cross_entropy(h, self.weight, t, self.bias, loss_dtype=torch.float32)


def test_torch_export():
    # torch.export takes the operators as single nodes (training IR with the
    # joint operator, inference IR with the forward-only one) and the
    # exported program gives eager xent's loss.
    hidden, weight, b, target = inputs("bf16", 256, 64, 1000, True, seed=11)
    model = _Head(weight, b)
    eager = model(hidden, target)
    exported = torch.export.export(model, (hidden, target))
    assert "xent.linear_cross_entropy_with_grad" in str(exported.graph), exported.graph
    torch.testing.assert_close(exported.module()(hidden, target), eager.detach(),
                               rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        inference = torch.export.export(model, (hidden, target))
    assert "xent.linear_cross_entropy.default" in str(inference.graph), inference.graph
    torch.testing.assert_close(inference.module()(hidden, target), eager.detach(),
                               rtol=1e-6, atol=1e-6)


def test_opcheck():
    hidden, weight, b, target = inputs("f32", 64, 32, 300, True, seed=10)
    h, w, bb = (t.clone().requires_grad_() for t in (hidden, weight, b))
    attrs = ("mean", -100, 0.0, 0.0, None, 0)
    torch.library.opcheck(torch.ops.xent.linear_cross_entropy_with_grad.default,
                          (h, w, target, bb, None, None) + attrs)
    torch.library.opcheck(torch.ops.xent.linear_cross_entropy.default,
                          (h, w, target, bb, None) + attrs)
    torch.library.opcheck(torch.ops.xent.linear_cross_entropy.default,
                          (h, w, target, None, None, "none", -100, 0.0, 0.0, None, 0))


def test_cuda_graph_capture():
    # Results in PyTorch's allocator, the scratch stream-ordered: the loss
    # and its gradients replay from a graph with new inputs.
    hidden, weight, b, target = inputs("bf16", 256, 64, 1000, False, seed=11)
    h = hidden.clone().requires_grad_()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # the runtime's per-stream setup, then a clean call
            loss = xt.linear_cross_entropy(h, weight, target, loss_dtype=torch.float32)
            (dh,) = torch.autograd.grad(loss, [h])
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        loss = xt.linear_cross_entropy(h, weight, target, loss_dtype=torch.float32)
        (dh,) = torch.autograd.grad(loss, [h])
    with torch.no_grad():
        h.copy_(hidden * 0.5)
    graph.replay()
    torch.cuda.synchronize()
    fresh = h.detach().clone().requires_grad_()
    want = xt.linear_cross_entropy(fresh, weight, target, loss_dtype=torch.float32)
    (want_dh,) = torch.autograd.grad(want, [fresh])
    torch.testing.assert_close(loss, want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(dh, want_dh, rtol=0, atol=0)


def test_module_and_second_backward():
    hidden, weight, b, target = inputs("bf16", 128, 64, 1000, True, seed=12)
    fn = xt.LinearCrossEntropyLoss(reduction="sum", loss_dtype=torch.float32)
    h = hidden.clone().requires_grad_()
    loss = fn(h, weight, target, b)
    want = xt.linear_cross_entropy(hidden, weight, target, b, reduction="sum",
                                   loss_dtype=torch.float32)
    torch.testing.assert_close(loss.detach(), want, rtol=1e-6, atol=0)  # atomic sums
    loss.backward(retain_graph=True)
    first = h.grad.clone()
    # The gradients kept for the backward were scaled in place: autograd's
    # version check refuses a second backward.
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        loss.backward()
    assert torch.equal(h.grad, first)
