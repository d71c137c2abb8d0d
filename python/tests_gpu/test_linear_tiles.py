"""The loss alone of xent.linear_cross_entropy on Hopper's tile kernels.

On sm_90a the package's loss-only entries take the tile path
(docs/linear-cross-entropy.md, "The tile path"): a warpgroup-MMA kernel
reduces tiles of hidden · weightᵀ (soft-capped where the call has a softcap)
to per-row statistics over groups of class tiles (with label smoothing, the
sum Σ (m - x) too), a merge kernel makes the loss; no logits are written.
Where a call's values or buffers do not allow it (label smoothing other than
0 with class weights, a depth whose rows TMA cannot read: H·2 bytes not a
multiple of 16) the same entry takes the row chunks.

Each loss is compared with float64 on the same rounded inputs and, as
xent's error, with PyTorch's own (F.linear + F.cross_entropy in the same
dtype): never worse, up to a floor at f32 accumulation noise. Shapes cover
partial row and class tiles (N, V not multiples of 128 / 256), depths not a
multiple of 64 (TMA's zero fill), one row and one class tile.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import torch.nn.functional as F  # noqa: E402

from xent.runtime import gpu, linear  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# (N, H, V): partial row tiles (300 = 2·128 + 44), partial class tiles
# (1000, 32001), one row, one class tile (V = 7), a depth of 72 (64 + 8,
# the last step half zero-filled), a long depth.
SHAPES = [(300, 64, 1000), (1, 128, 7), (130, 72, 32001), (1024, 1024, 4096),
          (257, 4096, 50000)]


def call(hidden, weight, target, reduction, **kw):
    out = [torch.empty((target.numel(),) if reduction == "none" else (),
                       device="cuda", dtype=torch.float32)]
    if kw.get("z_loss_scale"):
        out.append(torch.empty_like(out[0]))
    try:
        return linear.linear_cross_entropy(hidden, weight, target, reduction=reduction,
                                           out=out, **kw)
    except gpu.DriverError as e:
        pytest.skip(f"no compiled linear module: {e}")


def reference(hidden, weight, target, reduction, dtype, ignore_index=-100,
              class_weight=None, z_loss_scale=0.0, label_smoothing=0.0, softcap=None):
    logits = F.linear(hidden.to(dtype), weight.to(dtype))
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    loss = F.cross_entropy(logits.to(dtype), target.long(), reduction=reduction,
                           ignore_index=ignore_index,
                           weight=None if class_weight is None else class_weight.to(
                               dtype if dtype == torch.float64 else torch.float32).to(dtype),
                           label_smoothing=label_smoothing)
    if not z_loss_scale:
        return loss, None
    kept = target.long() != ignore_index
    lse = torch.logsumexp(logits.double() if dtype == torch.float64 else logits.float(), -1)
    z = z_loss_scale * lse ** 2 * kept
    if reduction == "sum":
        z = z.sum()
    elif reduction == "mean":
        z = z.sum() / kept.sum()
    return loss + z.to(loss.dtype), z


def inputs(n, h, v, dtype, seed=0, ignore_index=-100):
    gen = torch.Generator(device="cuda").manual_seed(seed + 31 * n + v)
    hidden = torch.randn(n, h, device="cuda", generator=gen).to(dtype)
    weight = (torch.randn(v, h, device="cuda", generator=gen) * h ** -0.5 * 3).to(dtype)
    target = torch.randint(0, v, (n,), device="cuda", generator=gen)
    target[3::7] = ignore_index
    return hidden, weight, target


def err(x, ref):
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / max(ref.norm().item(), 1e-30)).item()


def check(dtype_name, n, h, v, reduction, *, class_weight=False, z=0.0, ignore_index=-100,
          seed=0, **features):
    dtype = DTYPES[dtype_name]
    hidden, weight, target = inputs(n, h, v, dtype, seed, ignore_index)
    cw = torch.rand(v, device="cuda") + 0.5 if class_weight else None
    got = call(hidden, weight, target, reduction, class_weight=cw, z_loss_scale=z,
               ignore_index=ignore_index, **features)
    ref, ref_z = reference(hidden, weight, target, reduction, torch.float64,
                           ignore_index, cw, z, **features)
    own, _ = reference(hidden, weight, target, reduction, dtype, ignore_index, cw, z, **features)
    e, e_torch = err(got[0], ref), err(own, ref)
    assert e <= max(e_torch, 2e-6), (e, e_torch)
    if z:
        # The z-loss from f32 logits: PyTorch has no z-loss to compare with.
        assert err(got[1], ref_z) <= 1e-4
    return e, e_torch


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_against_float64_and_torch(shape, reduction, dtype):
    check(dtype, *shape, reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_weights_z_loss_ignore_index(reduction):
    check("bf16", 300, 128, 1000, reduction, class_weight=True, z=1e-4, ignore_index=5)
    check("bf16", 130, 72, 32001, reduction, class_weight=True)


def test_all_rows_ignored_mean_is_nan():
    hidden, weight, target = inputs(64, 64, 300, torch.bfloat16)
    target[:] = -100
    (loss,) = call(hidden, weight, target, "mean")
    assert torch.isnan(loss)
    (loss,) = call(hidden, weight, target, "sum")
    assert loss.item() == 0.0


def test_out_of_range_target_is_nan_row():
    hidden, weight, target = inputs(20, 64, 300, torch.bfloat16)
    target[3] = 300
    (loss,) = call(hidden, weight, target, "none")
    assert torch.isnan(loss[3]) and torch.isfinite(loss[torch.arange(20) != 3]).all()


def test_nan_hidden_row_is_nan():
    hidden, weight, target = inputs(300, 64, 1000, torch.bfloat16)
    target[5] = 1
    hidden[5, 10] = float("nan")
    (loss,) = call(hidden, weight, target, "none")
    assert torch.isnan(loss[5]) and torch.isfinite(loss[6:]).all()


FEATURES = {"smoothing": {"label_smoothing": 0.1}, "softcap": {"softcap": 30.0},
            "softcap5": {"softcap": 5.0},
            "both": {"label_smoothing": 0.25, "softcap": 15.0}}


@pytest.mark.parametrize("shape", [(300, 64, 1000), (1, 128, 7), (130, 72, 32001),
                                   (257, 4096, 50000)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("features", FEATURES, ids=str)
def test_softcap_and_smoothing(features, reduction, shape):
    check("bf16", *shape, reduction, **FEATURES[features])


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_features_f16_z_loss_ignore_index(reduction):
    check("f16", 300, 128, 1000, reduction, z=1e-4, ignore_index=5,
          label_smoothing=0.1, softcap=20.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_weights_with_softcap_and_smoothing(reduction):
    # The softcap with class weights is on the tiles; weighted label
    # smoothing takes the chunks; both are checked the same way.
    check("bf16", 300, 128, 1000, reduction, class_weight=True, softcap=30.0, z=1e-4)
    check("bf16", 300, 128, 1000, reduction, class_weight=True, label_smoothing=0.1)


def test_smoothing_sums_large_logits():
    # Logits around 1024 with a spread of a few units: PyTorch's bf16 logits
    # (spacing 8 there) lose the spread; xent's f32 tiles and Σ (m - x) (no
    # cancellation) keep the loss to the f32 products' rounding.
    hidden, weight, target = inputs(300, 128, 5000, torch.bfloat16)
    hidden[:, 0] = 64.0
    weight[:, 0] = 16.0
    check_inputs = (hidden, weight, target)
    got = call(*check_inputs, "none", label_smoothing=0.3)
    ref, _ = reference(*check_inputs, "none", torch.float64, label_smoothing=0.3)
    own, _ = reference(*check_inputs, "none", torch.bfloat16, label_smoothing=0.3)
    e, e_torch = err(got[0], ref), err(own, ref)
    assert e <= min(e_torch, 5e-4), (e, e_torch)


def test_rows_tma_cannot_read_take_the_chunks():
    # A depth of 73: rows of 146 bytes, not a multiple of 16 (TMA's rule).
    check("bf16", 300, 73, 1000, "none")
    check("bf16", 300, 73, 1000, "mean")


def kernels_run(fn):
    """The CUDA kernels `fn` launches (torch.profiler's names)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type.name == "CUDA"}


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_the_tile_path_is_taken(dtype):
    hidden, weight, target = inputs(300, 128, 1000, DTYPES[dtype])
    names = kernels_run(lambda: call(hidden, weight, target, "mean"))
    assert any(n.startswith("xent_linear_tiles") for n in names), names
    assert not any(n.startswith("xent_loss") for n in names), names
    for features in FEATURES.values():
        names = kernels_run(lambda: call(hidden, weight, target, "mean", **features))
        assert any(n.startswith("xent_linear_tiles") for n in names), (features, names)
        assert not any(n.startswith("xent_loss") for n in names), (features, names)
    cw = torch.rand(1000, device="cuda") + 0.5
    names = kernels_run(lambda: call(hidden, weight, target, "mean", class_weight=cw,
                                     label_smoothing=0.1))
    assert not any(n.startswith("xent_linear_tiles") for n in names), names
    names = kernels_run(lambda: call(hidden, weight, target, "mean", class_weight=cw,
                                     softcap=30.0))
    assert any(n.startswith("xent_linear_tiles") for n in names), names
    hidden, weight, target = inputs(300, 73, 1000, DTYPES[dtype])
    names = kernels_run(lambda: call(hidden, weight, target, "mean"))
    assert not any(n.startswith("xent_linear_tiles") for n in names), names
