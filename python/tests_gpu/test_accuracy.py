"""Accuracy of xent.torch.cross_entropy against PyTorch's own.

For each case of accuracy_configs.py (dtype f32 / bf16 / f16; V = 1, 127,
4096, 32768; |logits| up to ~200 · 3; every reduction, weights, label
smoothing, ignore_index, z-loss, softcap, probability targets), every output
of the drop-in — the loss (per element or reduced), the z-loss and the
gradient — is compared with float64 and must be within twice the error of
PyTorch computing the same thing in the same dtype (F.cross_entropy, softcap
and z-loss written with torch ops in that dtype), plus a tiny floor:

* per element (reduction none): every element i must satisfy
  |xent_i - ref_i| <= 2 E |ref_i| + 2^-20, E the largest relative error of
  PyTorch's elements. The absolute floor 2^-20 (16 units of f32 at 1): a
  loss is (m - x_t) + log Σ with Σ >= 1 an f32 sum, whose spacing near 1
  is 2^-23, and a block-wide sum rounds a dozen times near 1 whatever its
  order, so no f32 implementation resolves log Σ below that (PyTorch's
  neither: its error there is the same order, but at other rows).
* reduced (mean / sum): |xent - ref| <= 2 |torch - ref| + sqrt(N) 2^-24 S,
  S = Σ|ℓ_i| / divisor: each row's share is an f32 value (its terms and
  the mean's division each rounded once, errors of either sign, ~ sqrt(N) u
  S over the rows) that the kernels sum in f64 in any order, where PyTorch
  sums pairwise and may be exact by luck.
* gradient: ||xent - ref||₂ <= 2 ||torch - ref||₂ + 2^-23 (||ref||₂ + ||c||₂),
  c the per-row size of the gradient's terms (|grad_output| · max weight,
  over the divisor for mean): an element is a difference of terms that big
  (A p_c - T), so one rounding of a term moves it by that much; where
  PyTorch's gradient is exact by construction (V = 1: its softmax is exactly
  1) another order of the same f32 operations is not.

Where PyTorch's own value overflows (f16 z-loss: lse² > 65504) its error
is taken as one unit of the dtype instead.

A quarter of the rows are made confident (the target's logit above the
row's maximum by 2..14): losses from ~1e-6 to ~0.1 at |m| in the hundreds,
which the old (m + log Σ) - x_t rounded to the spacing of m.

Runs on the GPU machine with the kernels precompiled by python/tools/make_xent_bundle.py
(XENT_CACHE_DIR); never in CI.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt

import accuracy_configs

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
ELEMENT_FLOOR = 2.0 ** -20
F32_UNIT = 2.0 ** -24
# Where PyTorch's own result overflows (f16 z-loss: lse² > 65504 at logits
# of a few hundred) there is no error of its to double: the bound is then
# two roundings to the output's dtype.
UNIT = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}


def make_inputs(case, gen):
    c, (rows, classes), scale = case["config"], case["shape"], case["scale"]
    dtype = TORCH_DTYPES[c["dtype"]]
    dev = "cuda"
    x = torch.randn(rows, classes, generator=gen, device=dev) * scale
    weight = None
    if c["weighted"]:
        # Multiples of 1/64 in [0.25, 1.25]: the same weights in every dtype.
        weight = (torch.randint(16, 81, (classes,), generator=gen, device=dev) / 64.0)
    if c["target"] == "probs":
        target = torch.softmax(torch.randn(rows, classes, generator=gen, device=dev) * 2, dim=1)
        target = target.to(dtype)
        return x.to(dtype), target, weight
    target = torch.randint(0, classes, (rows,), generator=gen, device=dev)
    # Confident rows: the target's logit 2..14 above the row's maximum.
    confident = torch.rand(rows, generator=gen, device=dev) < 0.25
    margin = 2.0 + 12.0 * torch.rand(rows, generator=gen, device=dev)
    top = x.max(dim=1).values + margin
    picked = x.gather(1, target[:, None])[:, 0]
    x.scatter_(1, target[:, None], torch.where(confident, top, picked)[:, None])
    ignored = torch.rand(rows, generator=gen, device=dev) < 0.15
    target = torch.where(ignored, torch.full_like(target, c["ignore_index"]), target)
    target = target.to(torch.int32 if c["target"] == "i32" else torch.int64)
    return x.to(dtype), target, weight


def torch_loss(c, x, target, weight, grad_output, dtype):
    """PyTorch's loss, z-loss and gradient with every tensor in `dtype`
    (float64 for the reference): softcap and z-loss with torch ops on top
    of F.cross_entropy."""
    x = x.detach().to(dtype).requires_grad_(c["with_grad"])
    probs = c["target"] == "probs"
    t = target.to(dtype) if probs else target.to(torch.int64)
    w = weight.to(dtype) if weight is not None else None
    ii = -100 if probs else c["ignore_index"]
    xx = c["softcap"] * torch.tanh(x / c["softcap"]) if c["softcap"] else x
    loss = F.cross_entropy(xx, t, weight=w, ignore_index=ii, reduction=c["reduction"],
                           label_smoothing=c["label_smoothing"])
    keep = torch.ones(x.shape[0], device=x.device, dtype=dtype) if probs else (t != ii).to(dtype)
    lse = torch.logsumexp(xx, dim=1)
    z = c["z_loss_scale"] * torch.where(keep > 0, lse, torch.zeros_like(lse)) ** 2 * keep
    if c["reduction"] == "mean":
        z = z.sum() / keep.sum()
    elif c["reduction"] == "sum":
        z = z.sum()
    if c["z_loss_scale"]:
        loss = loss + z
    grad = None
    if c["with_grad"]:
        (loss * grad_output.to(dtype)).sum().backward()
        grad = x.grad.detach()
        if not probs:
            grad = torch.where((t == ii)[:, None], torch.zeros_like(grad), grad)
    return loss.detach(), z.detach(), grad


def xent_loss(c, x, target, weight, grad_output):
    x = x.detach().requires_grad_(c["with_grad"])
    loss, z = xt.cross_entropy(x, target, weight, ignore_index=c["ignore_index"]
                               if c["target"] != "probs" else -100,
                               reduction=c["reduction"], label_smoothing=c["label_smoothing"],
                               z_loss_scale=c["z_loss_scale"], softcap=c["softcap"],
                               return_z_loss=True)
    grad = None
    if c["with_grad"]:
        loss.backward(grad_output.to(loss.dtype))
        grad = x.grad.detach()
    return loss.detach(), z.detach(), grad


def f64(t):
    return t.to(torch.float64)


def check_elements(name, ours, theirs, ref, what):
    unit = UNIT[ours.dtype]
    ours, theirs, ref = f64(ours), f64(theirs), f64(ref)
    big = ref.abs() >= ELEMENT_FLOOR
    rel = ((theirs - ref).abs() / ref.abs().clamp_min(ELEMENT_FLOOR))[big]
    e = rel.max().item() if rel.numel() else 0.0
    if not math.isfinite(e):
        e = unit
    bound = 2 * e * ref.abs() + ELEMENT_FLOOR
    err = (ours - ref).abs()
    worst = torch.argmax(err - bound).item()
    assert bool((err <= bound).all()), (
        f"{name}: element {worst} off by {err[worst].item():.3e} (ref {ref[worst].item():.6e}, "
        f"ours {ours[worst].item():.6e}, torch {theirs[worst].item():.6e}), bound "
        f"{bound[worst].item():.3e} (torch's relative error {e:.3e}): {what}")


def check_scalar(name, ours, theirs, ref, scale, rows, what):
    unit = UNIT[ours.dtype]
    rounded = ref.to(ours.dtype).item()
    ours, theirs, ref = f64(ours).item(), f64(theirs).item(), f64(ref).item()
    if math.isinf(rounded) and not math.isinf(ref):
        # Beyond the type's range: the loss in that type is the infinity
        # the reference rounds to (PyTorch's too).
        assert ours == rounded, f"{name}: {ours!r} where {ref!r} rounds to {rounded}: {what}"
        return
    if math.isnan(ref):
        assert math.isnan(ours), f"{name}: {ours} where the reference is NaN: {what}"
        return
    off = abs(theirs - ref) if math.isfinite(theirs) else unit * abs(ref)
    bound = 2 * off + math.sqrt(rows) * F32_UNIT * scale
    assert abs(ours - ref) <= bound, (
        f"{name}: {ours!r} vs {ref!r} (off by {abs(ours - ref):.3e}; torch {theirs!r}, "
        f"off by {abs(theirs - ref):.3e}), bound {bound:.3e}: {what}")


def divisor(c, target, weight, rows, zloss=False):
    """What a mean divides by: the kept weight (the kept count for the
    z-loss), the rows for probability targets; 1 for sum."""
    if c["reduction"] != "mean":
        return 1.0
    if c["target"] == "probs":
        return float(rows)
    kept = (target != c["ignore_index"]).to(torch.float64)
    if weight is None or zloss:
        return max(kept.sum().item(), 1.0)
    w = weight[target.clamp(0, weight.numel() - 1).long()].to(torch.float64)
    return max((w * kept).sum().item(), 1e-30)


def term_scale(c, target, weight, grad_output, rows):
    """||c||₂: per row |grad_output| · max weight (over the divisor for
    mean), the size of the terms an element of the gradient is made of."""
    wmax = weight.max().item() if weight is not None else 1.0
    g = grad_output.abs().to(torch.float64) * wmax
    per_row = g.expand(rows) if g.dim() == 0 else g
    return torch.linalg.vector_norm(per_row).item() / divisor(c, target, weight, rows)


@pytest.mark.parametrize("index", range(len(accuracy_configs.CASES)))
def test_accuracy(index):
    case = accuracy_configs.CASES[index]
    c, shape = case["config"], case["shape"]
    what = f"case {index}: {c} shape {shape} scale {case['scale']}"
    gen = torch.Generator(device="cuda").manual_seed(1100 + index)
    x, target, weight = make_inputs(case, gen)
    dtype = TORCH_DTYPES[c["dtype"]]
    rows = shape[0]
    if c["reduction"] == "none":
        grad_output = torch.randn(rows, generator=gen, device="cuda").to(dtype).float()
    else:
        grad_output = torch.tensor(1.0, device="cuda")

    ours = xent_loss(c, x, target, weight, grad_output)
    theirs = torch_loss(c, x, target, weight, grad_output, dtype)
    ref = torch_loss(c, x, target, weight, grad_output, torch.float64)

    for name, k in (("loss", 0), ("z-loss", 1)):
        if name == "z-loss" and not c["z_loss_scale"]:
            continue
        if c["reduction"] == "none":
            check_elements(name, ours[k], theirs[k], ref[k], what)
        else:
            # S = Σ |ℓ_i| / divisor, from the per-element reference.
            per = torch_loss({**c, "reduction": "none", "with_grad": False}, x, target, weight,
                             grad_output, torch.float64)[k].abs().sum().item()
            scale = per / divisor(c, target, weight, rows, zloss=k == 1)
            check_scalar(name, ours[k], theirs[k], ref[k], scale, rows, what)

    if c["with_grad"]:
        og, tg, rg = f64(ours[2]), f64(theirs[2]), f64(ref[2])
        assert torch.isfinite(og).all(), what
        norm = torch.linalg.vector_norm
        floor = 2.0 ** -23 * (norm(rg).item() + term_scale(c, target, weight, grad_output, rows))
        err, terr = norm(og - rg).item(), norm(tg - rg).item()
        if not math.isfinite(terr):
            terr = UNIT[ours[2].dtype] * norm(rg).item()
        assert err <= 2 * terr + floor, (
            f"gradient: L2 error {err:.3e} (relative {err / max(norm(rg).item(), 1e-300):.3e}) "
            f"> 2 x torch's {terr:.3e} + {floor:.3e}: {what}")


def test_cases_cover_the_matrix():
    """The drawn cases meet every dtype × V, |logits| ~ 200, and every
    attribute at least once."""
    cases = accuracy_configs.CASES
    for dtype in accuracy_configs.DTYPES:
        for classes in accuracy_configs.CLASSES:
            assert any(k["config"]["dtype"] == dtype and k["shape"][1] == classes
                       and k["scale"] == 200.0 for k in cases)
    configs = [k["config"] for k in cases]
    for key, value in (("reduction", "none"), ("reduction", "mean"), ("reduction", "sum"),
                       ("weighted", True), ("target", "probs"), ("with_grad", False)):
        assert any(k[key] == value for k in configs), (key, value)
    for key in ("label_smoothing", "z_loss_scale", "softcap"):
        assert any(k[key] for k in configs), key
