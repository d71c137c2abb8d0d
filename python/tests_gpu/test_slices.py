"""The class-slice kernels (xent.runtime.slices: the statistics of a slice,
the slice's gradient from merged statistics), on random configurations:
logits split into 1-4 uneven slices, each slice's statistics checked
against float64, merged in float64 here, and the slices' gradients put back
together checked against PyTorch's float64 gradient of the whole logits and
against PyTorch's own gradient in the logits' dtype (xent is never less
accurate than PyTorch). Runs on the GPU machine; never in CI.
"""

import math
import random

import pytest
import torch
import torch.nn.functional as F

from xent.runtime import slices

DEVICE = "cuda"
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def _random_config(seed):
    r = random.Random(seed)
    classes = r.choice([1, 2, 7, 64, 1000, 4097, 32768 + 5, 50257])
    return dict(
        seed=seed, dtype=r.choice(list(DTYPES)), rows=r.choice([1, 3, 64, 257]),
        classes=classes, parts=min(classes, r.choice([1, 2, 3, 4])),
        weighted=r.random() < 0.4, smoothing=r.choice([0.0, 0.0, 0.1, 0.3]),
        z=r.choice([0.0, 0.0, 1e-3]), softcap=r.choice([None, None, 15.0]),
        reduction=r.choice(["mean", "sum", "none"]),
        ignore=r.choice([-100, 0, 3]) if classes > 3 else -100,
        scale=r.choice([1.0, 4.0, 30.0]))


CONFIGS = [_random_config(s) for s in range(48)]


def _bounds(classes, parts, seed):
    r = random.Random(seed + 1000)
    cuts = sorted(r.sample(range(1, classes), parts - 1)) if parts > 1 else []
    return [0] + cuts + [classes]


def _inputs(c):
    gen = torch.Generator().manual_seed(c["seed"])
    x = (torch.randn(c["rows"], c["classes"], generator=gen) * c["scale"]).to(DTYPES[c["dtype"]])
    t = torch.randint(0, c["classes"], (c["rows"],), generator=gen)
    t[torch.rand(c["rows"], generator=gen) < 0.2] = c["ignore"]
    t[0] = 1 if c["ignore"] == 0 else 0  # a kept row: a mean is defined
    w = torch.rand(c["classes"], generator=gen) + 0.5 if c["weighted"] else None
    g = torch.randn(c["rows"], generator=gen) if c["reduction"] == "none" else \
        torch.tensor(1.3)
    to = lambda v: None if v is None else v.to(DEVICE)
    return to(x), to(t), to(w), to(g)


def _loss(x, t, w, c):
    """The op's loss of the whole logits in x's dtype (the z-loss over kept
    rows, reduced like the loss)."""
    xx = c["softcap"] * torch.tanh(x / c["softcap"]) if c["softcap"] else x
    ce = F.cross_entropy(xx, t, w if w is None else w.to(x.dtype), ignore_index=c["ignore"],
                         reduction="none", label_smoothing=c["smoothing"])
    kept = (t != c["ignore"]).to(x.dtype)
    lse = torch.logsumexp(xx, dim=1)
    z = c["z"] * lse * lse * kept
    if c["reduction"] == "none":
        return ce + z
    if c["reduction"] == "sum":
        return ce.sum() + z.sum()
    wt = kept if w is None else kept * w.to(x.dtype)[t.clamp(0, x.shape[1] - 1)]
    return ce.sum() / wt.sum() + z.sum() / kept.sum()


def _grad(x, t, w, g, c, dtype):
    xd = x.detach().to(dtype).requires_grad_()
    loss = _loss(xd, t, None if w is None else w.to(dtype), c)
    loss.backward(g.to(dtype).reshape(loss.shape))
    return xd.grad


def _merge(parts, weighted, smoothing):
    """Statistics of the slices (float64) merged into those of the rows."""
    m = torch.stack([p[:, 0] for p in parts]).amax(0)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    merged = [safe, sum(torch.where(torch.isneginf(p[:, 0]), torch.zeros_like(m),
                                    p[:, 1] * torch.exp(p[:, 0] - safe)) for p in parts),
              torch.stack([p[:, 2] for p in parts]).amax(0)]
    if weighted:
        merged.append(sum(p[:, 3] for p in parts))
    if smoothing:
        merged.append(sum(p[:, -2] + p[:, -1] * (safe - p[:, 0]) for p in parts))
        merged.append(sum(p[:, -1] for p in parts))
    return torch.stack(merged, dim=1)


def _expected_statistics(x, t, w, lo, hi, c):
    xs = x[:, lo:hi].double()
    if c["softcap"]:
        xs = c["softcap"] * torch.tanh(xs / c["softcap"])
    m = xs.amax(1)
    s = torch.exp(xs - m[:, None]).sum(1)
    owned = (t != c["ignore"]) & (t >= lo) & (t < hi)
    local = torch.where(owned, t - lo, torch.zeros_like(t))
    xt = torch.where(owned, xs.gather(1, local[:, None])[:, 0],
                     torch.full_like(m, -math.inf))
    cols = [m, s, xt]
    ws = None if w is None else w[lo:hi].double()
    if w is not None:
        cols.append(torch.where(owned, ws[local], torch.zeros_like(m)))
    if c["smoothing"]:
        f = torch.ones_like(xs) if ws is None else ws.expand_as(xs)
        cols += [(f * (m[:, None] - xs)).sum(1), f.sum(1)]
    return torch.stack(cols, dim=1)


@pytest.mark.parametrize("c", CONFIGS, ids=[f"{c['seed']}-{c['dtype']}-{c['classes']}-"
                                            f"{c['parts']}-{c['reduction']}" for c in CONFIGS])
def test_slices_against_float64_and_torch(c):
    x, t, w, g = _inputs(c)
    bounds = _bounds(c["classes"], c["parts"], c["seed"])
    eps = c["smoothing"] if c["smoothing"] else None
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        stats = slices.statistics(x[:, lo:hi], t, None if w is None else w[lo:hi].contiguous(),
                                  offset=lo, num_classes=c["classes"], ignore_index=c["ignore"],
                                  label_smoothing=eps, softcap=c["softcap"])
        exp = _expected_statistics(x, t, w, lo, hi, c)
        finite = torch.isfinite(exp)
        assert torch.equal(torch.isfinite(stats), finite), "where x_t is -inf"
        # bf16 / f16 logits take the hardware tanh under a softcap (relative
        # error below 2^-10.9, finer than the logits' own spacing: a capped
        # logit is off by up to cap * 2^-10.9, and so is each exp(x - m)).
        narrow_cap = c["dtype"] != "f32" and c["softcap"]
        rtol = 2e-2 if narrow_cap else 2e-5
        atol = 2e-2 if narrow_cap else 1e-5 * (hi - lo)
        torch.testing.assert_close(stats.double()[finite], exp[finite], rtol=rtol, atol=atol)
        parts.append(stats.double())
    merged = _merge(parts, c["weighted"], bool(eps)).float()

    grads = [slices.gradient(g.float(), x[:, lo:hi], t, merged,
                             None if w is None else w[lo:hi].contiguous(),
                             reduction=c["reduction"], offset=lo, num_classes=c["classes"],
                             ignore_index=c["ignore"], label_smoothing=eps,
                             z_loss_scale=c["z"], softcap=c["softcap"])
             for lo, hi in zip(bounds[:-1], bounds[1:])]
    got = torch.cat(grads, dim=1)
    assert got.dtype == x.dtype
    ref = _grad(x, t, w, g, c, torch.float64)
    torch_same = _grad(x, t, w, g, c, x.dtype)
    scale = ref.abs().max().item() or 1.0
    err = (got.double() - ref).abs().max().item() / scale
    torch_err = (torch_same.double() - ref).abs().max().item() / scale
    # No less accurate than PyTorch in the same dtype (its error, twice
    # over, or the f32 floor of the f64 reference's rounding).
    floor = {"f32": 2e-6, "bf16": 8e-3, "f16": 1e-3}[c["dtype"]]
    assert err <= max(2 * torch_err, floor), (err, torch_err, c)


def test_out_of_range_and_ignored_targets():
    """A target outside [0, C) makes its row NaN in every slice; an ignored
    row is exactly 0; the statistics of a slice that does not hold the
    target have x_t = -inf, w_t = 0."""
    x = torch.randn(4, 10, device=DEVICE)
    t = torch.tensor([12, 3, -100, 7], device=DEVICE)
    w = torch.rand(10, device=DEVICE) + 0.5
    parts = [slices.statistics(x[:, lo:hi], t, w[lo:hi].contiguous(), offset=lo, num_classes=10)
             for lo, hi in ((0, 5), (5, 10))]
    assert torch.isneginf(parts[0][0, 2]) and parts[0][0, 3] == 0  # t = 12: nowhere
    assert parts[0][1, 2] == x[1, 3] and parts[0][1, 3] == w[3]
    assert torch.isneginf(parts[1][1, 2]) and parts[1][1, 3] == 0
    merged = _merge([p.double() for p in parts], True, False).float()
    g = torch.ones(4, device=DEVICE)
    d = torch.cat([slices.gradient(g, x[:, lo:hi], t, merged, w[lo:hi].contiguous(),
                                   reduction="none", offset=lo, num_classes=10)
                   for lo, hi in ((0, 5), (5, 10))], dim=1)
    assert torch.isnan(d[0]).all()
    assert (d[2] == 0).all()
    assert torch.isfinite(d[[1, 3]]).all()
