"""xent.torch's torch.compile backend (``backend="xent"``, xent.torch.fx_swap):
small models that call PyTorch's own cross-entropy — F.cross_entropy,
nn.CrossEntropyLoss, a hand-written log_softmax + nll_loss — compile with
their loss swapped for xent's, and their loss and parameter gradients are
PyTorch's; near misses keep PyTorch's loss.

Runs on the GPU machine with the kernels of xent_torch_configs.swapped()
precompiled (python/tools/make_xent_bundle.py, XENT_CACHE_DIR); never in CI.
"""

import pytest
import torch
import torch.nn.functional as F

import xent.torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

V, H, N = 1000, 64, 48


@pytest.fixture(autouse=True)
def _fresh_dynamo(request, monkeypatch):
    # Each test compiles Model.forward anew (its own loss, its own report):
    # without a reset Dynamo's recompile limit would fall back to eager.
    torch._dynamo.reset()
    # Model's logits feed the loss alone, so the backend would swap the
    # projection too; the tests of the loss's swap keep the linear layer
    # (test_projection_* swap it).
    from xent.torch import fx_swap
    monkeypatch.setattr(fx_swap, "SWAP_PROJECTION", "projection" in request.node.name)
    yield


class Model(torch.nn.Module):
    def __init__(self, loss, dtype=torch.float32):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(H, V).to(device="cuda", dtype=dtype)
        self.loss = loss
        self.ce = torch.nn.CrossEntropyLoss()

    def forward(self, h, t):
        return self.loss(self, self.proj(h), t)


LOSSES = {
    "functional": lambda m, x, t: F.cross_entropy(x, t),
    "smoothing": lambda m, x, t: F.cross_entropy(x, t, label_smoothing=0.1, ignore_index=-100),
    "sum": lambda m, x, t: F.cross_entropy(x, t, reduction="sum"),
    "module": lambda m, x, t: m.ce(x, t),
    "chain": lambda m, x, t: F.nll_loss(F.log_softmax(x, dim=-1), t),
    "chain_method": lambda m, x, t: F.nll_loss(x.log_softmax(1), t),
    "chain_torch": lambda m, x, t: F.nll_loss(torch.log_softmax(x, 1), t),
}

NEAR_MISSES = {
    # log_softmax over the batch axis: not a cross entropy over classes.
    "wrong_axis": (lambda m, x, t: F.nll_loss(F.log_softmax(x, dim=0), t),
                   "log_softmax over another axis"),
    # The log-probabilities are used again: the chain must stay.
    "other_user": (lambda m, x, t: (lambda lp: F.nll_loss(lp, t) + lp.mean() * 0.01)(
        F.log_softmax(x, dim=1)), "the log_softmax has other users"),
    # A log-softmax in float64: another dtype than xent's kernels.
    "float64": (lambda m, x, t: F.cross_entropy(x.double(), t), "logits dtype torch.float64"),
}


def _inputs(dtype=torch.float32, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    h = torch.randn(N, H, device="cuda", generator=g).to(dtype)
    t = torch.randint(0, V, (N,), device="cuda", generator=g)
    t[::7] = -100
    return h, t


def _run(model, h, t):
    model.zero_grad(set_to_none=True)
    loss = model(h, t)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_swapped_and_unchanged(name):
    xt.patch()
    h, t = _inputs()
    eager = Model(LOSSES[name])
    compiled = Model(LOSSES[name])
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-6)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=2e-4, atol=2e-6)
    # A second step reuses the compiled graph.
    got2, _ = _run(fn, h, t)
    torch.testing.assert_close(got2, expected, rtol=2e-5, atol=1e-6)


def test_swapped_bf16_against_float64():
    xt.patch()
    h, t = _inputs(torch.bfloat16)
    model = Model(LOSSES["functional"], torch.bfloat16)
    fn = torch.compile(model, backend="xent")
    got, grads = _run(fn, h, t)
    assert any(what == "swapped" for _, what in xt.last_report())
    ref = Model(LOSSES["functional"], torch.float64)
    ref.proj.weight.data.copy_(model.proj.weight.double())
    ref.proj.bias.data.copy_(model.proj.bias.double())
    want, want_grads = _run(ref, h.double(), t)
    assert abs(got.double().item() - want.item()) < 1e-2 * abs(want.item())
    for a, b in zip(grads, want_grads):
        assert ((a.double() - b).norm() / b.norm()).item() < 2e-2


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_stay(name):
    xt.patch()
    loss, reason = NEAR_MISSES[name]
    h, t = _inputs()
    eager, compiled = Model(loss), Model(loss)
    fn = torch.compile(compiled, backend="xent")
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert not any(what == "swapped" for _, what in report), report
    assert any(reason in what for _, what in report), report
    torch.testing.assert_close(got.double(), expected.double(), rtol=2e-5, atol=1e-6)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=2e-4, atol=2e-6)


def test_cpu_model_untouched():
    xt.patch()
    model = torch.nn.Linear(8, 5)
    h, t = torch.randn(4, 8), torch.randint(0, 5, (4,))
    fn = torch.compile(lambda h, t: F.cross_entropy(model(h), t), backend="xent")
    torch.testing.assert_close(fn(h, t), F.cross_entropy(model(h), t))
    assert any("CUDA" in what for _, what in xt.last_report())


def test_swapped_under_autocast():
    # Under autocast F.cross_entropy takes bf16 logits and returns a float32
    # loss; the swapped call does the same (loss_dtype=torch.float32).
    xt.patch()
    h, t = _inputs()
    eager, compiled = Model(LOSSES["functional"]), Model(LOSSES["functional"])
    fn = torch.compile(compiled, backend="xent")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        expected, expected_grads = _run(eager, h, t)
        got, grads = _run(fn, h, t)
    assert any(what == "swapped" for _, what in xt.last_report()), xt.last_report()
    assert got.dtype == expected.dtype == torch.float32
    # The compiled projection rounds its bf16 logits a little differently
    # from eager's (1.1e-4 relative in the loss on the H200); a loss rounded
    # to bf16 would be off by up to 2e-3 at this magnitude.
    torch.testing.assert_close(got, expected, rtol=5e-4, atol=1e-6)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=1e-4)


# What real models put around the loss: the swap absorbs it.
def _hf_loss(m, x, t):
    # transformers' ForCausalLMLoss: upcast, flatten, sum / token count.
    logits = x.float()
    logits = logits.view(-1, logits.size(-1))
    return F.cross_entropy(logits, t.view(-1), ignore_index=-100, reduction="sum") / 40.0


def _gemma_loss(m, x, t):
    # Gemma's final-logit softcapping, then the upcast loss.
    x = x / 30.0
    x = torch.tanh(x)
    x = x * 30.0
    return F.cross_entropy(x.float().reshape(-1, V).contiguous(), t)


def _captured_rewrite(fn, *args):
    """The graph Dynamo captured for `fn`, after rewrite: its code."""
    from xent.torch import fx_swap
    codes = []

    def backend(gm, example_inputs):
        fx_swap.rewrite(gm)
        codes.append(gm.code)
        return gm.forward

    torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return codes[0]


@pytest.mark.parametrize("name,absorbed", [("hf", "float to float32"),
                                           ("gemma", "softcap 30")])
def test_absorbs_what_models_put_around_the_loss(name, absorbed):
    xt.patch()
    loss = {"hf": _hf_loss, "gemma": _gemma_loss}[name]
    h, t = _inputs(torch.bfloat16)
    eager, compiled = Model(loss, torch.bfloat16), Model(loss, torch.bfloat16)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert any(what.startswith("absorbed") and absorbed in what for _, what in report), report
    assert got.dtype == expected.dtype == torch.float32
    if name == "hf":
        # The same float32 math on the same bf16 values: equal to rounding.
        torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-5)
        gtol = dict(rtol=2e-2, atol=1e-4)
    else:
        # Eager rounds the capped logits to bf16; xent caps in float32.
        torch.testing.assert_close(got, expected, rtol=5e-3, atol=1e-3)
        gtol = dict(rtol=5e-2, atol=5e-3)
    for a, b in zip(grads, expected_grads):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a.float(), b.float(), **gtol)
    # The FX graph: the loss reads the narrow logits; no float32 copy is left.
    x = torch.randn(N, V, device="cuda", dtype=torch.bfloat16)
    code = _captured_rewrite(lambda x, t: loss(None, x, t), x, t)
    assert "cross_entropy" in code and "loss_dtype = torch.float32" in code, code
    assert ".float()" not in code and "functional.cross_entropy" not in code, code
    if name == "gemma":
        assert "softcap = 30.0" in code and "tanh" not in code, code


def test_upcast_kept_where_the_targets_need_it():
    # Float32 probability targets with upcast bf16 logits: xent wants one
    # dtype for both, so the loss takes the float32 logits as written.
    xt.patch()
    h, _ = _inputs(torch.bfloat16)
    model = Model(lambda m, x, p: F.cross_entropy(x.float(), p), torch.bfloat16)
    eager = Model(lambda m, x, p: F.cross_entropy(x.float(), p), torch.bfloat16)
    p = torch.softmax(torch.randn(N, V, device="cuda"), -1)
    fn = torch.compile(model, backend="xent")
    got, grads = _run(fn, h, p)
    expected, expected_grads = _run(eager, h, p)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert not any(what.startswith("absorbed") for _, what in report), report
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-5)


# The causal-LM shift as older Transformers and many training scripts write
# it: the logits sliced (and copied) to drop the last position, the labels
# sliced to drop the first. B x T = N rows.
B, T = 4, N // 4


def _shift_loss(upcast=False, **kwargs):
    def loss(m, x, t):
        x = x.view(B, T, V)
        if upcast:
            x = x.float()
        shift_logits = x[..., :-1, :].contiguous()
        shift_labels = t.view(B, T)[..., 1:].contiguous()
        return F.cross_entropy(shift_logits.view(-1, V), shift_labels.view(-1), **kwargs)
    return loss


SHIFTS = {  # name: (dtype, ignore_index, loss)
    "mean": (torch.float32, -100, _shift_loss()),
    "sum-smoothing": (torch.float32, -100, _shift_loss(reduction="sum", label_smoothing=0.1)),
    "weighted-ignore7": (torch.float32, 7, lambda m, x, t: _shift_loss(
        weight=torch.linspace(0.5, 2.0, V, device=x.device), ignore_index=7)(m, x, t)),
    "bf16-upcast": (torch.bfloat16, -100, _shift_loss(upcast=True)),
}


@pytest.mark.parametrize("name", sorted(SHIFTS))
def test_absorbs_the_causal_lm_shift(name):
    """logits[..., :-1, :] + labels[..., 1:]: the loss reads the whole
    logits with the targets padded by ignore_index (no sliced copy of the
    logits); loss and gradients as eager's, the last position's gradient 0."""
    xt.patch()
    dtype, ignore_index, loss = SHIFTS[name]
    h, t = _inputs(dtype)
    t[t == ignore_index] = ignore_index + 1
    t[::7] = ignore_index
    eager, compiled = Model(loss, dtype), Model(loss, dtype)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert any(what.startswith("absorbed") and "shift :-1" in what for _, what in report), report
    # The same float32 math on the same values (the bf16 logits upcast).
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-5)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=1e-4)
    x = torch.randn(N, V, device="cuda", dtype=dtype)
    code = _captured_rewrite(lambda x, t: loss(None, x, t), x, t)
    assert "slice(None, -1, None)" not in code, code   # the logits are not sliced
    assert "pad" in code and "functional.cross_entropy" not in code, code


def test_shift_kept_for_per_row_losses():
    # reduction="none" returns one loss per kept position: the slice stays
    # (padding would add rows to the result), the loss is still swapped.
    xt.patch()
    loss = _shift_loss(reduction="none")
    h, t = _inputs()
    eager, compiled = Model(lambda m, x, t: loss(m, x, t).sum(), torch.float32), \
        Model(lambda m, x, t: loss(m, x, t).sum(), torch.float32)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert not any("shift" in what for _, what in report), report
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-5)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=1e-4)


PROJECTIONS = {  # name: (dtype, autocast, loss, what the report names)
    "f32-bias-mean": (torch.float32, False, lambda m, x, t: F.cross_entropy(x, t), ()),
    "f32-weighted-smoothing-sum": (torch.float32, False, lambda m, x, t: F.cross_entropy(
        x, t, weight=torch.linspace(0.5, 2.0, V, device=x.device), label_smoothing=0.1,
        reduction="sum"), ()),
    "bf16-hf": (torch.bfloat16, False, _hf_loss, ("float to float32",)),
    "bf16-gemma": (torch.bfloat16, False, _gemma_loss, ("softcap 30",)),
    "bf16-shift": (torch.bfloat16, False, _shift_loss(upcast=True), ("shift :-1",)),
    "autocast": (torch.float32, True, lambda m, x, t: F.cross_entropy(x.view(-1, V), t), ()),
}


@pytest.mark.parametrize("name", sorted(PROJECTIONS))
def test_projection_swapped(name):
    """A linear layer whose logits feed the loss alone: the projection and
    the loss become xent.torch.linear_cross_entropy (no logits), with what
    was absorbed around them; loss and every parameter's gradient as
    eager's (under autocast, the weight cast to bf16 as autocast casts it)."""
    xt.patch()
    dtype, autocast, loss, names = PROJECTIONS[name]
    h, t = _inputs(dtype)
    eager, compiled = Model(loss, dtype), Model(loss, dtype)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)

    def run(model):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            return _run(model, h, t)
    expected, expected_grads = run(eager)
    got, grads = run(fn)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert any(what.startswith("projection") for _, what in report), report
    for n in names:
        assert any(what.startswith("absorbed") and n in what for _, what in report), report
    assert got.dtype == expected.dtype
    narrow = dtype != torch.float32 or autocast
    # xent's chunk logits are float32 where eager rounds them to bf16 first.
    torch.testing.assert_close(got.float(), expected.float(),
                               **(dict(rtol=2e-2, atol=2e-2) if narrow else
                                  dict(rtol=1e-4, atol=1e-5)))
    for a, b in zip(grads, expected_grads):
        assert a.dtype == b.dtype
        err = ((a.float() - b.float()).norm() / b.float().norm()).item()
        assert err < (3e-2 if narrow else 1e-4), (name, err)
    # The graph: no linear layer and no cross_entropy of logits are left.
    from xent.torch import fx_swap
    codes = []

    def backend(gm, example_inputs):
        fx_swap.rewrite(gm)
        codes.append(gm.code)
        return gm.forward
    torch._dynamo.reset()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        torch.compile(Model(loss, dtype), backend=backend, fullgraph=True)(h, t)
    assert "linear_cross_entropy" in codes[0], codes[0]
    assert "torch._C._nn.linear" not in codes[0] and "functional.cross_entropy" \
        not in codes[0], codes[0]


# A z-loss written beside the loss (PaLM-style: the mean of lse² over the
# kept rows): absorbed as xent's z_loss_scale.
def _z_masked_mean(m, x, t):
    lse = torch.logsumexp(x, dim=-1)
    keep = t != -100
    return F.cross_entropy(x, t) + 1e-3 * ((lse ** 2 * keep).sum() / keep.sum())


def _z_float_mask(m, x, t):
    keep = (t != -100).float()
    z = (keep * torch.square(x.logsumexp(-1))).sum() / keep.sum()
    return F.cross_entropy(x, t, label_smoothing=0.1) + z * 2e-3


def _z_sum_where(m, x, t):
    lse = x.logsumexp(dim=-1)
    z = torch.where(t != -100, lse * lse, 0.0).sum()
    return F.cross_entropy(x, t, reduction="sum") + 1e-2 * z


def _z_hf_upcast(m, x, t):
    # bf16 logits upcast in [B, T, V], the loss over the flattened rows.
    x = x.view(B, T, V).float()
    keep = t.view(B, T) != -100
    z = (x.logsumexp(-1).pow(2) * keep).sum() / keep.sum()
    return F.cross_entropy(x.view(-1, V), t) + 1e-4 * z


Z_LOSSES = {  # name: (dtype, loss)
    "masked-mean": (torch.float32, _z_masked_mean),
    "float-mask-smoothing": (torch.float32, _z_float_mask),
    "sum-where": (torch.float32, _z_sum_where),
    "bf16-upcast-3d": (torch.bfloat16, _z_hf_upcast),
}

Z_NEAR_MISSES = {
    # Over every row: the ignored rows' lse² counts, xent's z-loss would not.
    "all-rows": lambda m, x, t: F.cross_entropy(x, t) + 1e-3 * x.logsumexp(-1).pow(2).mean(),
    # Another mask than the loss's ignore_index.
    "other-mask": lambda m, x, t: F.cross_entropy(x, t) + 1e-3 * (
        (x.logsumexp(-1) ** 2 * (t != 5)).sum() / (t != 5).sum()),
    # A weighted mean divides by the kept weight, the z-term by the count.
    "weighted": lambda m, x, t: F.cross_entropy(
        x, t, weight=torch.linspace(0.5, 2.0, V, device=x.device)) + 1e-3 * (
        (x.logsumexp(-1) ** 2 * (t != -100)).sum() / (t != -100).sum()),
}


def _check_z_loss(name, dtype, loss, projection):
    h, t = _inputs(dtype)
    eager, compiled = Model(loss, dtype), Model(loss, dtype)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert any(what.startswith("absorbed") and "z-loss" in what for _, what in report), report
    assert any(what.startswith("projection") for _, what in report) == projection, report
    if projection:
        tol, gtol = (dict(rtol=2e-2, atol=2e-2), 3e-2) if dtype != torch.float32 else \
            (dict(rtol=1e-4, atol=1e-5), 1e-4)
    else:
        tol, gtol = dict(rtol=2e-5, atol=1e-5), 2e-2 if dtype != torch.float32 else 1e-4
    torch.testing.assert_close(got.float(), expected.float(), **tol)
    for a, b in zip(grads, expected_grads):
        err = ((a.float() - b.float()).norm() / b.float().norm()).item()
        assert err < gtol, (name, err)
    x = torch.randn(N, V, device="cuda", dtype=dtype)
    code = _captured_rewrite(lambda x, t: loss(None, x, t), x, t)
    assert "logsumexp" not in code and "z_loss_scale" in code, code


@pytest.mark.parametrize("name", sorted(Z_LOSSES))
def test_absorbs_the_z_loss(name):
    """loss + c · Σ_kept lse² / K: one xent call with z_loss_scale = c (no
    logsumexp left), loss and gradients as eager's."""
    xt.patch()
    _check_z_loss(name, *Z_LOSSES[name], projection=False)


def test_projection_swapped_with_the_z_loss():
    # The logsumexp was the logits' second reader: once it is absorbed the
    # projection goes too.
    xt.patch()
    _check_z_loss("masked-mean", torch.float32, _z_masked_mean, projection=True)


@pytest.mark.parametrize("name", sorted(Z_NEAR_MISSES))
def test_z_loss_near_misses_stay(name):
    xt.patch()
    loss = Z_NEAR_MISSES[name]
    h, t = _inputs()
    eager, compiled = Model(loss), Model(loss)
    fn = torch.compile(compiled, backend="xent", fullgraph=True)
    expected, expected_grads = _run(eager, h, t)
    got, grads = _run(fn, h, t)
    report = xt.last_report()
    assert not any("z-loss" in what for _, what in report), report
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=1e-5)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=1e-4)
    x = torch.randn(N, V, device="cuda")
    assert "logsumexp" in _captured_rewrite(lambda x, t: loss(None, x, t), x, t)


def test_projection_kept_where_the_logits_are_read_again():
    # The logits are returned beside the loss: the projection stays, the
    # loss alone is swapped.
    xt.patch()
    h, t = _inputs()

    class Both(Model):
        def forward(self, h, t):
            x = self.proj(h)
            return F.cross_entropy(x, t), x

    fn = torch.compile(Both(None), backend="xent", fullgraph=True)
    loss, logits = fn(h, t)
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert not any(what.startswith("projection") for _, what in report), report
    torch.testing.assert_close(loss, F.cross_entropy(logits, t), rtol=1e-5, atol=1e-6)


def test_hf_llama_swapped_and_absorbed():
    """An unmodified transformers LlamaForCausalLM (small random config):
    its ForCausalLMLoss (upcast, view, cross_entropy) is swapped with the
    upcast absorbed; loss as eager's, lm_head gradient as close to eager's
    as inductor's."""
    transformers = pytest.importorskip("transformers")
    xt.patch()
    config = transformers.LlamaConfig(vocab_size=V, hidden_size=128, intermediate_size=256,
                                      num_hidden_layers=1, num_attention_heads=2,
                                      num_key_value_heads=2)

    def run(mode):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(config).cuda()
        fn = {"eager": model, "inductor": torch.compile(model),
              "xent": torch.compile(model, backend="xent")}[mode]
        g = torch.Generator(device="cuda").manual_seed(3)
        ids = torch.randint(0, V, (2, 64), device="cuda", generator=g)
        labels = ids.clone()
        labels[:, ::5] = -100
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fn(input_ids=ids, labels=labels).loss
        loss.backward()
        return loss.detach(), model.lm_head.weight.grad.clone()

    eager, ind, xent = run("eager"), run("inductor"), run("xent")
    report = xt.last_report()
    assert any(what == "swapped" for _, what in report), report
    assert any(what.startswith("absorbed") and "float32" in what for _, what in report), report
    # The model returns its logits: their gradient has the output's term too.
    assert any(what.startswith("joint kernel") for _, what in report), report
    torch.testing.assert_close(xent[0], eager[0], rtol=1e-3, atol=1e-4)
    err_x = ((xent[1] - eager[1]).norm() / eager[1].norm()).item()
    err_i = ((ind[1] - eager[1]).norm() / eager[1].norm()).item()
    assert err_x <= 2 * err_i + 1e-3, (err_x, err_i)


def _run_with_output_term(f, x, t, w):
    """(loss, the returned logits, x's gradient) of `f`, whose logits output
    also takes part in the backward (a term w · logits beside the loss)."""
    xs = x.detach().clone().requires_grad_()
    loss, logits = f(xs, t)
    (loss + (logits.float() * w).sum() * 1e-3).backward()
    return loss.detach(), logits.detach(), xs.grad


def test_backward_by_the_logits_other_users():
    """The loss alone reads the logits: its backward writes their gradient
    with the graph's grad_output (xent.torch.cross_entropy). The logits also
    returned (a model output, another term): the joint kernel, whose kept
    gradient the graph scales and adds to the other term in one pass
    (_cross_entropy_joint); both against eager with both terms used."""
    xt.patch()
    _, t = _inputs(torch.bfloat16)
    x = torch.randn(N, V, device="cuda", dtype=torch.bfloat16)

    def loss_only(x, t):
        return F.cross_entropy(x.float(), t, reduction="sum") / 7.0

    def loss_and_logits(x, t):
        # Logits computed in the graph and returned (an input returned as
        # it is stays outside Dynamo's graph: autograd sums its terms).
        logits = x * 0.5
        return F.cross_entropy(logits.float(), t, reduction="sum") / 7.0, logits

    from xent.torch import _cross_entropy_joint, fx_swap

    def targets(fn):
        seen = []

        def backend(gm, example_inputs):
            fx_swap.rewrite(gm)
            seen.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
            return gm.forward
        torch._dynamo.reset()
        torch.compile(fn, backend=backend, fullgraph=True)(x, t)
        return seen
    seen = targets(loss_only)
    assert xt.cross_entropy in seen and _cross_entropy_joint not in seen, seen
    seen = targets(loss_and_logits)
    assert _cross_entropy_joint in seen and xt.cross_entropy not in seen, seen
    torch._dynamo.reset()
    fn = torch.compile(loss_and_logits, backend="xent", fullgraph=True)
    w = torch.randn(N, V, device="cuda")
    got, expected = _run_with_output_term(fn, x, t, w), _run_with_output_term(
        loss_and_logits, x, t, w)
    report = xt.last_report()
    assert any(what.startswith("joint kernel") for _, what in report), report
    torch.testing.assert_close(got[0], expected[0], rtol=2e-5, atol=1e-5)
    torch.testing.assert_close(got[2].float(), expected[2].float(), rtol=2e-2, atol=1e-4)


@pytest.mark.parametrize("form", ["cross_entropy", "chain"])
def test_softcap_absorbed_where_only_the_loss_reads_it(form):
    """The capped logits read by the loss alone (F.cross_entropy, or the
    log_softmax of an nll_loss chain): the softcap becomes the attribute."""
    xt.patch()
    _, t = _inputs(torch.bfloat16)
    x = torch.randn(N, V, device="cuda", dtype=torch.bfloat16) * 8

    def gemma(x, t):
        capped = (torch.tanh(x / 30.0) * 30.0).float()
        if form == "chain":
            return F.nll_loss(F.log_softmax(capped, dim=-1), t)
        return F.cross_entropy(capped, t)

    codes = [_captured_rewrite(gemma, x, t)]
    report = xt.last_report()
    assert any("softcap 30" in what for _, what in report), report
    assert "softcap = 30.0" in codes[0] and "tanh" not in codes[0], codes[0]
    torch._dynamo.reset()
    fn = torch.compile(gemma, backend="xent", fullgraph=True)

    def run(f):
        xs = x.detach().clone().requires_grad_()
        loss = f(xs, t)
        loss.backward()
        return loss.detach(), xs.grad
    got, expected = run(fn), run(gemma)
    # Eager rounds the capped logits to bf16; xent caps in float32.
    torch.testing.assert_close(got[0], expected[0], rtol=5e-3, atol=1e-3)
    torch.testing.assert_close(got[1].float(), expected[1].float(), rtol=5e-2, atol=5e-3)


@pytest.mark.parametrize("swap_shared", [False, True])
def test_softcap_where_the_capped_logits_are_returned(monkeypatch, swap_shared):
    """Gemma 2 returns its capped logits beside the loss: Inductor's loss,
    fused with the cap, stays (the report says why). SWAP_SHARED_SOFTCAP:
    swapped still, the cap kept in the graph and the plain joint kernel
    reading the capped logits. Loss, capped logits and the raw logits'
    gradient, with a term through the returned capped logits, against
    eager."""
    from xent.torch import fx_swap
    monkeypatch.setattr(fx_swap, "SWAP_SHARED_SOFTCAP", swap_shared)
    xt.patch()
    _, t = _inputs(torch.bfloat16)
    x = torch.randn(N, V, device="cuda", dtype=torch.bfloat16) * 8

    def gemma(x, t):
        capped = torch.tanh(x / 30.0) * 30.0
        loss = F.cross_entropy(capped.float().view(-1, V), t, reduction="sum") / 7.0
        return loss, capped

    codes = [_captured_rewrite(gemma, x, t)]
    report = xt.last_report()
    assert "tanh" in codes[0] and "softcap" not in codes[0], codes[0]
    assert not any("softcap 30" in what for _, what in report), report
    if swap_shared:
        assert "_cross_entropy_joint" in codes[0], codes[0]
        assert any("softcap kept" in what for _, what in report), report
    else:
        assert "functional.cross_entropy" in codes[0] and "xent" not in codes[0], codes[0]
        assert any("capped logits are returned" in what for _, what in report), report
        # The views moved for the swap are gone again: one upcast, one view.
        assert codes[0].count(".float()") == 1 and codes[0].count(".view(") == 1, codes[0]
    torch._dynamo.reset()
    fn = torch.compile(gemma, backend="xent", fullgraph=True)
    w = torch.randn(N, V, device="cuda")
    got, expected = _run_with_output_term(fn, x, t, w), _run_with_output_term(gemma, x, t, w)
    # Inductor caps in float32 and rounds once, eager rounds x / 30 and the
    # tanh to bf16 too: the capped logits differ by an ulp of bf16.
    torch.testing.assert_close(got[1].float(), expected[1].float(), rtol=1e-2, atol=0.25)
    torch.testing.assert_close(got[0], expected[0], rtol=5e-3, atol=1e-3)
    torch.testing.assert_close(got[2].float(), expected[2].float(), rtol=5e-2, atol=5e-3)
