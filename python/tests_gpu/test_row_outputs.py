"""The per-row outputs (lse, argmax, accuracy) computed by the kernels, on the GPU.

The functions of kernel_configs.ROW_OUTPUTS_MLIR, compiled at both settings
of ``resident-rows``, against the float64 reference of xent.testing
(``reference.row_outputs``, and ``cross_entropy`` / ``cross_entropy_grad``
for the loss and gradient beside them): ties in the argmax (the row's max at
several classes, across threads, warps and the blocks of a cluster), a NaN
(the first NaN wins), ignored rows (lse and argmax still computed, accuracy
excludes them), bf16 and f32, rows that take the resident path (V = 65536 to
262144 bf16 at 512 threads: clusters of 1 to 4 blocks) and the two-pass walk (short rows,
rows longer than a cluster holds, rows not a multiple of 8 classes, and
everything with resident-rows off).

Runs where PyTorch sees a GPU; the libraries come from ``$XENT_CACHE_DIR``
(python/tools/make_bundle.py) or are compiled on first use.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from xent.runtime import gpu  # noqa: E402
from xent.testing import reference  # noqa: E402

import kernel_configs  # noqa: E402

# At 512 threads one block holds 65536 bf16 classes: V = 65536, 131072 and
# 262144 take the resident path on clusters of 1, 2 and 4 blocks; 4096 and 7
# are short rows (two-pass); 600000 is more than 8 blocks hold (two-pass);
# 50257 is not a multiple of 8 (block 0 of the cluster walks it with the
# two-pass code).
JOINT_SHAPES = [(64, 65536), (16, 131072), (4, 262144), (33, 4096), (5, 7), (3, 600000),
                (9, 50257)]


def library(resident: bool):
    try:
        return gpu.KernelCache().get(kernel_configs.row_outputs_config(resident),
                                     lambda: kernel_configs.ROW_OUTPUTS_MLIR,
                                     kernel_configs.row_outputs_pipeline(resident))
    except gpu.DriverError as e:
        pytest.skip(f"no compiled row-outputs module: {e}")


def logits_with_ties(n, v, dtype, gen, ignore_index):
    """Random logits where most rows have their max at several classes
    (spread over the row: other threads, warps, blocks), one row has a NaN
    after a tie of the max, and some targets are the argmax (so accuracy is
    not trivially 0), some ignored."""
    x = torch.randn(n, v, device="cuda", generator=gen) * 3
    t = torch.randint(0, v, (n,), device="cuda", generator=gen)
    for r in range(n):
        if r % 4 != 3 and v > 1:
            copies = torch.randint(0, v, (3,), device="cuda", generator=gen)
            x[r, copies] = x[r].max() + 1.0
            if r % 2 == 0:
                t[r] = copies.min()  # the first of the tied classes: correct
            elif r % 3 == 0:
                t[r] = copies.max()  # a later tied class: wrong unless the same
    if n > 2 and v > 2:
        x[2, v // 2] = float("nan")
        x[2, v // 3] = float("nan")
    x = x.to(dtype)
    drop = torch.rand(n, device="cuda", generator=gen) < 0.2
    t = torch.where(drop, torch.full_like(t, ignore_index), t)
    if n > 1:
        t[1] = ignore_index
    return x, t


def as_numpy(t):
    return t.detach().float().cpu().numpy() if t.is_floating_point() else t.cpu().numpy()


def check_row_outputs(x, t, lse, argmax, accuracy, ignore_index, reduction, softcap=None,
                      lse_rtol=2e-6):
    """lse, argmax and accuracy against reference.row_outputs of the same
    logits (as rounded to their dtype). Rows with a NaN: argmax the first
    NaN, lse NaN."""
    xn = x.double().cpu().numpy()
    ref_lse, ref_am, ref_acc = reference.row_outputs(xn, t.cpu().numpy(),
                                                     ignore_index=ignore_index,
                                                     reduction=reduction, softcap=softcap)
    np.testing.assert_array_equal(argmax.cpu().numpy().astype(np.int64), ref_am)
    got = lse.double().cpu().numpy()
    nan = np.isnan(ref_lse)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_allclose(got[~nan], ref_lse[~nan], rtol=lse_rtol, atol=1e-6)
    acc = accuracy.double().cpu().numpy()
    if reduction == "none":
        np.testing.assert_array_equal(acc, ref_acc)
    elif math.isnan(float(ref_acc)):
        assert math.isnan(float(acc))
    else:
        # Σ correct (exact in f32) or Σ correct / kept count added row by row.
        tol = 0.0 if reduction == "sum" else 4e-7 * max(1.0, float(ref_acc))
        if accuracy.dtype == torch.bfloat16:
            tol = 2.0 ** -8 * abs(float(ref_acc))
        assert abs(float(acc) - float(ref_acc)) <= tol, (float(acc), float(ref_acc))


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "two-pass"])
@pytest.mark.parametrize("n,v", JOINT_SHAPES)
def test_joint_mean_bf16(resident, n, v):
    gen = torch.Generator(device="cuda").manual_seed(n * 7 + v)
    x, t = logits_with_ties(n, v, torch.bfloat16, gen, -100)
    g = torch.tensor(0.5, device="cuda")
    fn = library(resident).function(
        "joint_mean", ["memref<f32>", "memref<?x?xbf16>", "memref<?xi64>"],
        ["memref<f32>", "memref<?xf32>", "memref<?xi64>", "memref<f32>", "memref<?x?xbf16>"])
    # The in-place pipeline may write the gradient over the logits (the
    # two-pass kernel does): the references read a copy.
    given = x.clone()
    loss, lse, argmax, accuracy, d = fn(g, given, t)
    torch.cuda.synchronize()
    check_row_outputs(x, t, lse, argmax, accuracy, -100, "mean")
    # The loss and gradient beside them are the op's as ever (NaN rows are
    # ignored or give NaN alike).
    xn, tn = x.double().cpu().numpy(), t.cpu().numpy()
    ref_loss, _ = reference.cross_entropy(xn, tn, reduction="mean")
    if math.isnan(float(ref_loss)):
        assert math.isnan(loss.item())
    else:
        assert abs(loss.item() - float(ref_loss)) <= 1e-5 * max(1.0, abs(float(ref_loss)))
    ref_d = reference.cross_entropy_grad(np.float64(0.5), xn, tn, reduction="mean")
    finite = np.isfinite(ref_d).all(axis=1)
    dn = d.double().cpu().numpy()
    err = np.linalg.norm(dn[finite] - ref_d[finite]) / max(np.linalg.norm(ref_d[finite]), 1e-30)
    assert err <= 4e-3, err


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "two-pass"])
@pytest.mark.parametrize("n,v", [(257, 127), (16, 4096), (4, 1), (8, 40000)])
def test_forward_none_f32(resident, n, v):
    gen = torch.Generator(device="cuda").manual_seed(n + 3 * v)
    x, t = logits_with_ties(n, v, torch.float32, gen, 0)
    t = t.to(torch.int32)
    fn = library(resident).function(
        "forward_none", ["memref<?x?xf32>", "memref<?xi32>"],
        ["memref<?xf32>", "memref<?xf32>", "memref<?xi32>", "memref<?xf32>"])
    loss, lse, argmax, accuracy = fn(x, t)
    torch.cuda.synchronize()
    assert argmax.dtype == torch.int32
    check_row_outputs(x, t, lse, argmax, accuracy, 0, "none")
    ref_loss, _ = reference.cross_entropy(x.double().cpu().numpy(), t.cpu().numpy(),
                                          ignore_index=0, reduction="none")
    got = loss.double().cpu().numpy()
    ok = np.isfinite(ref_loss)
    np.testing.assert_allclose(got[ok], ref_loss[ok], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("n,v", [(64, 4096), (7, 32000), (3, 5)])
def test_smoothed_sum_bf16(n, v):
    gen = torch.Generator(device="cuda").manual_seed(n * v)
    x, t = logits_with_ties(n, v, torch.bfloat16, gen, -100)
    fn = library(True).function(
        "smoothed_sum", ["memref<?x?xbf16>", "memref<?xi64>"],
        ["memref<f32>", "memref<?xf32>", "memref<?xi64>", "memref<bf16>"])
    loss, lse, argmax, accuracy = fn(x, t)
    torch.cuda.synchronize()
    assert accuracy.dtype == torch.bfloat16
    # Softcap 30 on logits of a few units: distinct bf16 logits stay far
    # apart after the cap, equal ones stay equal, so the argmax is exact.
    check_row_outputs(x, t, lse, argmax, accuracy, -100, "sum", softcap=30.0, lse_rtol=1e-5)
    xn, tn = x.double().cpu().numpy(), t.cpu().numpy()
    if (np.isnan(xn).any(axis=1) & (tn != -100)).any():
        assert math.isnan(loss.item())  # a kept row with a NaN logit
    else:
        ref_loss, _ = reference.cross_entropy(xn, tn, reduction="sum", label_smoothing=0.1,
                                              softcap=30.0)
        assert abs(loss.item() - float(ref_loss)) <= 1e-5 * max(1.0, abs(float(ref_loss)))


def test_all_ignored_mean_accuracy_is_nan():
    x = torch.randn(6, 4096, device="cuda").to(torch.bfloat16)
    t = torch.full((6,), -100, device="cuda", dtype=torch.int64)
    g = torch.tensor(1.0, device="cuda")
    fn = library(True).function(
        "joint_mean", ["memref<f32>", "memref<?x?xbf16>", "memref<?xi64>"],
        ["memref<f32>", "memref<?xf32>", "memref<?xi64>", "memref<f32>", "memref<?x?xbf16>"])
    loss, lse, argmax, accuracy, d = fn(g, x, t)
    torch.cuda.synchronize()
    assert math.isnan(loss.item()) and math.isnan(accuracy.item())
    assert (d == 0).all().item()
    # lse and argmax are there for ignored rows too.
    ref_lse, ref_am, _ = reference.row_outputs(x.double().cpu().numpy(), t.cpu().numpy())
    np.testing.assert_array_equal(argmax.cpu().numpy(), ref_am)
    np.testing.assert_allclose(lse.double().cpu().numpy(), ref_lse, rtol=2e-6)
