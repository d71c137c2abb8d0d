"""Tests of xent.testing.reference: PyTorch oracle cases, finite differences, edge cases."""

import itertools
import json
import os
import zlib

import numpy as np
import pytest

from xent.testing.reference import cross_entropy, cross_entropy_grad

ORACLE = os.path.join(os.path.dirname(__file__), "..", "..", "test", "data", "torch_cases.json")
RTOL, ATOL = 1e-9, 1e-12


def _f64(v) -> np.ndarray:
    """JSON numbers (non-finite ones spelled "nan"/"inf") -> float64 array."""
    return np.array(v, dtype=object).astype(np.float64)


def _load_oracle():
    with open(ORACLE) as f:
        return json.load(f)


_CASES = _load_oracle()


def _case_id(i, c):
    parts = [f"{i:03d}", "x".join(map(str, c["shape"])), c["reduction"]]
    if c["probability_targets"]:
        parts.append("probs")
    if c["special"]:
        parts.append(c["special"])
    return "-".join(parts)


def _oracle_args(c):
    x = _f64(c["logits"])
    t = _f64(c["target"]) if c["probability_targets"] else np.array(c["target"], dtype=np.int64)
    kw = dict(weight=None if c["weight"] is None else _f64(c["weight"]),
              ignore_index=c["ignore_index"], reduction=c["reduction"],
              label_smoothing=c["label_smoothing"], z_loss_scale=c["z_loss_scale"],
              softcap=c["softcap"])
    return x, t, kw


def test_oracle_file_is_complete():
    assert len(_CASES) == 240
    specials = {c["special"] for c in _CASES}
    assert {"all_ignored", "huge", "inf_in_ignored"} <= specials
    assert any(c["probability_targets"] for c in _CASES)


@pytest.mark.parametrize("case", _CASES, ids=[_case_id(i, c) for i, c in enumerate(_CASES)])
def test_matches_pytorch(case):
    x, t, kw = _oracle_args(case)
    loss, _ = cross_entropy(x, t, **kw)
    dlogits = cross_entropy_grad(_f64(case["grad_output"]), x, t, **kw)
    expected_loss, expected_grad = _f64(case["loss"]), _f64(case["dlogits"])
    assert loss.shape == expected_loss.shape
    assert dlogits.shape == expected_grad.shape == x.shape
    np.testing.assert_allclose(loss, expected_loss, rtol=RTOL, atol=ATOL, equal_nan=True)
    np.testing.assert_allclose(dlogits, expected_grad, rtol=RTOL, atol=ATOL, equal_nan=False)


# --------------------------------------------------------------------------- random problems

def _problem(rng, shape, *, probs=False, weighted=False, ignore_index=-100, ignore_frac=0.0,
             scale=3.0):
    x = rng.standard_normal(shape) * scale
    axis = 1 if len(shape) >= 2 else 0
    C = shape[axis]
    if probs:
        e = np.exp(rng.standard_normal(shape))
        t = e / e.sum(axis=axis, keepdims=True)
    else:
        tshape = shape[:1] + shape[2:] if len(shape) >= 2 else ()
        t = rng.integers(0, C, size=tshape)
        if ignore_frac and tshape:
            t = np.where(rng.random(tshape) < ignore_frac, ignore_index, t)
    w = rng.random(C) + 0.25 if weighted else None
    return x, np.asarray(t), w


def _grad_output(rng, loss, reduction):
    return rng.standard_normal(loss.shape) if reduction == "none" else np.float64(rng.choice([1.0, -0.7]))


_FD_CONFIGS = list(itertools.product(
    [(6,), (4, 5), (2, 3, 2, 3)],          # shape
    ["mean", "sum", "none"],               # reduction
    [False, True],                         # probability targets
    [(False, 0.0, 0.0, None), (True, 0.1, 0.01, None), (False, 0.3, 0.0, 5.0),
     (True, 0.0, 0.05, 2.0)],              # weighted, label smoothing, z-loss, softcap
))


@pytest.mark.parametrize("shape,reduction,probs,opts", _FD_CONFIGS)
def test_gradient_matches_finite_differences(shape, reduction, probs, opts):
    """Analytic gradient vs. 4th-order central differences of cross_entropy."""
    weighted, ls, zs, cap = opts
    rng = np.random.default_rng(zlib.crc32(repr((shape, reduction, probs, opts)).encode()))
    ii = 1
    x, t, w = _problem(rng, shape, probs=probs, weighted=weighted, ignore_index=ii,
                       ignore_frac=0.3)
    if not probs and np.all(t == ii):
        t.flat[0] = 0  # keep one row so that the mean is defined
    kw = dict(weight=w, ignore_index=ii, reduction=reduction, label_smoothing=ls,
              z_loss_scale=zs, softcap=cap)
    g = _grad_output(rng, cross_entropy(x, t, **kw)[0], reduction)

    def f(xv):
        return float(np.sum(cross_entropy(xv, t, **kw)[0] * g))

    h = 1e-4
    fd = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        def shifted(k):
            xs = x.copy()
            xs[idx] += k * h
            return f(xs)
        fd[idx] = (8 * (shifted(1) - shifted(-1)) - (shifted(2) - shifted(-2))) / (12 * h)
    analytic = cross_entropy_grad(g, x, t, **kw)
    np.testing.assert_allclose(analytic, fd, rtol=1e-7, atol=1e-9)


def test_z_loss_output_is_the_z_part():
    rng = np.random.default_rng(0)
    x, t, w = _problem(rng, (5, 7), weighted=True, ignore_index=0, ignore_frac=0.4)
    for red in ("mean", "sum", "none"):
        kw = dict(weight=w, ignore_index=0, reduction=red, label_smoothing=0.1)
        base, z0 = cross_entropy(x, t, **kw)
        loss, z = cross_entropy(x, t, z_loss_scale=0.02, **kw)
        np.testing.assert_allclose(loss - base, z, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(z0, 0.0)
    # mean divides the z part by the count of kept rows, not the weight sum
    kept = t != 0
    lse = np.log(np.exp(x).sum(axis=1))
    _, z = cross_entropy(x, t, weight=w, ignore_index=0, z_loss_scale=0.02)
    np.testing.assert_allclose(z, 0.02 * np.sum(lse[kept] ** 2) / kept.sum(), rtol=1e-12)


def test_plain_cross_entropy_closed_form():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    t = np.array([2, 0])
    lse = np.log(np.exp(x).sum(axis=1))
    per_row = lse - x[[0, 1], t]
    np.testing.assert_allclose(cross_entropy(x, t, reduction="none")[0], per_row, rtol=1e-14)
    np.testing.assert_allclose(cross_entropy(x, t)[0], per_row.mean(), rtol=1e-14)
    p = np.exp(x - lse[:, None])
    np.testing.assert_allclose(cross_entropy_grad(1.0, x, t), (p - np.eye(3)[t]) / 2, rtol=1e-14)


def test_nonfinite_logits_in_ignored_rows_are_isolated():
    rng = np.random.default_rng(1)
    x, t, w = _problem(rng, (4, 6), weighted=True)
    t[1] = t[3] = -100
    dirty = x.copy()
    dirty[1, :] = np.nan
    dirty[3, 0], dirty[3, 2] = np.inf, -np.inf
    for red in ("mean", "sum", "none"):
        for opts in (dict(), dict(label_smoothing=0.2, z_loss_scale=0.01, softcap=4.0)):
            kw = dict(weight=w, reduction=red, **opts)
            clean_loss, clean_z = cross_entropy(x, t, **kw)
            loss, z = cross_entropy(dirty, t, **kw)
            np.testing.assert_array_equal(loss, clean_loss)
            np.testing.assert_array_equal(z, clean_z)
            g = _grad_output(rng, loss, red)
            grad = cross_entropy_grad(g, dirty, t, **kw)
            assert np.all(np.isfinite(grad))
            np.testing.assert_array_equal(grad[[1, 3]], 0.0)
            np.testing.assert_array_equal(grad, cross_entropy_grad(g, x, t, **kw))


def test_all_ignored_mean_is_nan_with_zero_gradient():
    x = np.random.default_rng(2).standard_normal((3, 4, 2))
    x[0, 0, 0] = np.inf
    t = np.full((3, 2), 2)
    for opts in (dict(), dict(weight=np.arange(1.0, 5.0), label_smoothing=0.1, z_loss_scale=0.1)):
        loss, z = cross_entropy(x, t, ignore_index=2, **opts)
        assert np.isnan(loss) and np.isnan(z)
        np.testing.assert_array_equal(cross_entropy_grad(1.0, x, t, ignore_index=2, **opts), 0.0)
        assert cross_entropy(x, t, ignore_index=2, reduction="sum", **opts)[0] == 0.0
        np.testing.assert_array_equal(
            cross_entropy(x, t, ignore_index=2, reduction="none", **opts)[0], np.zeros((3, 2)))


def test_huge_logits_are_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [-800.0, -800.0, -801.0]])
    t = np.array([1, 2])
    loss, _ = cross_entropy(x, t, reduction="none")
    np.testing.assert_allclose(loss, [1000.0, 1.0 + np.log(2.0 + np.exp(-1.0))], rtol=1e-12)
    assert np.all(np.isfinite(cross_entropy_grad(np.ones(2), x, t, reduction="none")))


def test_rank1_logits_and_scalar_target():
    x = np.array([0.3, -1.2, 2.0, 0.1])
    loss, _ = cross_entropy(x, np.array(2), reduction="none")
    assert loss.shape == ()
    np.testing.assert_allclose(loss, np.log(np.exp(x).sum()) - 2.0, rtol=1e-14)
    loss, _ = cross_entropy(x, np.array(2), ignore_index=2)
    assert np.isnan(loss)
    np.testing.assert_array_equal(cross_entropy_grad(1.0, x, np.array(2), ignore_index=2), 0.0)


def test_class_axis_argument():
    rng = np.random.default_rng(3)
    x, t, w = _problem(rng, (2, 5, 3), weighted=True, ignore_frac=0.2)
    kw = dict(weight=w, reduction="none", label_smoothing=0.1, z_loss_scale=0.01)
    xl = np.moveaxis(x, 1, -1)
    np.testing.assert_array_equal(cross_entropy(xl, t, axis=-1, **kw)[0], cross_entropy(x, t, **kw)[0])
    g = rng.standard_normal(t.shape)
    np.testing.assert_array_equal(cross_entropy_grad(g, xl, t, axis=2, **kw),
                                  np.moveaxis(cross_entropy_grad(g, x, t, **kw), 1, -1))


def test_probability_targets_mean_divides_by_rows():
    rng = np.random.default_rng(4)
    x, q, w = _problem(rng, (3, 4, 2), probs=True, weighted=True)
    per = cross_entropy(x, q, weight=w, reduction="none")[0]
    assert per.shape == (3, 2)
    np.testing.assert_allclose(cross_entropy(x, q, weight=w)[0], per.sum() / per.size, rtol=1e-14)


def test_invalid_arguments():
    x, t = np.zeros((2, 3)), np.array([0, 1])
    with pytest.raises(ValueError):
        cross_entropy(x, t, reduction="avg")
    with pytest.raises(ValueError):
        cross_entropy(x, np.array([0, 3]))
    with pytest.raises(ValueError):
        cross_entropy(x, t, weight=np.ones(2))
    with pytest.raises(ValueError):
        cross_entropy(x, np.array([0, 1, 2]))
    with pytest.raises(ValueError):
        cross_entropy(x, t, softcap=0.0)
    with pytest.raises(ValueError):
        cross_entropy_grad(np.ones(2), x, t, reduction="mean")
    with pytest.raises(ValueError):
        cross_entropy_grad(np.ones(3), x, t, reduction="none")
