"""Checks shared by the test suites that run the xent ops: compile a module of
generated functions, call one, and compare its results with the float64
reference (:mod:`xent.testing.reference`) within the documented tolerances.

Used by ``python/tests/test_cpu_semantics.py`` (the attribute matrix, the
PyTorch oracle, edge cases) and ``python/tests/test_differential.py``
(randomized configurations and adversarial values); a GPU suite can reuse
:func:`check_config` with any object whose ``call(name, args, result_types)``
runs the function.

Tolerances (docs/testing.md): losses in f32 to ~1e-5 relative; gradients
elementwise within the unit roundoff of their type (rounded once from f32)
and in relative L2 norm within the same bound.

Non-finite values:

* rows whose target is ignored are isolated: their logits may be NaN or inf
  and everything must still match the reference (which zeroes them);
* a *kept* row whose logits hold NaN or +inf (or only -inf) has no finite
  answer; where the reference's value is NaN or inf the result must be NaN or
  inf too, and nothing else of that row is compared ("loose" rows). Other
  rows are compared as usual, so a NaN that leaks out of its row fails;
* a value beyond the largest finite number of its result type (an f32 z-loss
  of logits near 1e30, an f16 loss above 65504) must overflow: inf, NaN or
  at least 0.98 of that maximum.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

from . import reference
from .._checkout import checkout_root
from .codegen import Inputs, OpConfig, cross_entropy_function, module, to_float64
from ..runtime.driver import Library, compile_module
from ..runtime.pipelines import xent_cpu_pipeline_args

__all__ = [
    "UNIT_ROUNDOFF", "ROUNDING", "SUBNORMAL_SPACING", "FINITE_MAX", "default_xent_opt", "build_library",
    "expect_close", "relative_l2", "loose_rows", "check_config",
]

# Unit roundoff of each element type: rounding an f32 result once is off by at
# most this much, relatively, per element (and so in relative L2 norm).
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# Per-element tolerance: the rounding plus f32 accumulation.
ROUNDING = {k: 2 * u for k, u in UNIT_ROUNDOFF.items()}
# Spacing of the subnormals of each element type (its smallest positive value):
# the absolute rounding error of a result near zero.
SUBNORMAL_SPACING = {"f32": 2.0 ** -149, "f16": 2.0 ** -24, "bf16": 2.0 ** -133}
# Largest finite value of each element type.
FINITE_MAX = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0,
              "bf16": 3.3895313892515355e38}


def default_xent_opt() -> str:
    """``$XENT_OPT``, or the xent-opt of the source checkout's default build."""
    root = checkout_root()
    return os.environ.get("XENT_OPT") or (os.path.join(root, "build", "bin", "xent-opt") if root
                                          else "xent-opt")


def build_library(functions, cache_dir: Optional[str] = None,
                  xent_opt: Optional[str] = None,
                  pipeline=tuple(xent_cpu_pipeline_args())) -> Library:
    """Compiles the generated functions into one module and loads it."""
    xent_opt = xent_opt or default_xent_opt()
    assert os.access(xent_opt, os.X_OK), f"xent-opt not built at {xent_opt} (set XENT_OPT)"
    return Library(compile_module(module(list(functions)), list(pipeline), xent_opt,
                                  out_dir=cache_dir))


def expect_close(actual, expected, *, rtol, atol, what, loose=None, overflow_at=None):
    """``actual`` matches ``expected``: same shape, NaN at the same places,
    the rest within ``rtol``/``atol``.

    ``loose``: boolean mask of positions where only non-finiteness is
    compared (the result is NaN or inf wherever the expected value is).
    ``overflow_at``: the largest finite value of the result type; expected
    values beyond it only need the result to overflow.
    """
    actual = to_float64(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    loose = (np.zeros(expected.shape, dtype=bool) if loose is None
             else np.broadcast_to(np.asarray(loose, dtype=bool), expected.shape))
    if loose.any():
        bad = loose & ~np.isfinite(expected) & np.isfinite(actual)
        assert not bad.any(), (f"{what}: finite result where the reference is not, at "
                               f"{np.argwhere(bad)[:5].tolist()}")
    strict = ~loose
    if overflow_at is not None:
        over = strict & np.isfinite(expected) & (np.abs(expected) > overflow_at)
        if over.any():
            ok = ~np.isfinite(actual[over]) | (np.abs(actual[over]) >= 0.98 * overflow_at)
            assert ok.all(), (f"{what}: expected values beyond the type's range "
                              f"{expected[over][~ok][:3]} came back as {actual[over][~ok][:3]}")
        strict = strict & ~over
    if np.ndim(atol):
        atol = np.broadcast_to(atol, expected.shape)[strict]
    a, e = actual[strict], expected[strict]
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), (
        f"{what}: NaN at {np.argwhere(strict)[nan_a != nan_e][:5].tolist()} "
        f"(result NaN: {int(nan_a.sum())}, reference NaN: {int(nan_e.sum())})")
    ok = ~nan_e
    if np.ndim(atol):
        atol = atol[ok]
        bad = ~(np.abs(a[ok] - e[ok]) <= atol + rtol * np.abs(e[ok]))
        bad &= ~(a[ok] == e[ok])  # equal infinities
        assert not bad.any(), (
            f"{what}: not within rtol={rtol:.3g} and the elementwise atol at "
            f"{np.argwhere(ok)[bad][:5].tolist()}: result {a[ok][bad][:5]} vs "
            f"reference {e[ok][bad][:5]}, atol {atol[bad][:5]}")
        return
    np.testing.assert_allclose(a[ok], e[ok], rtol=rtol, atol=atol, err_msg=what)


def relative_l2(actual, expected, mask=None):
    actual, expected = to_float64(actual), np.asarray(expected, dtype=np.float64)
    if mask is not None:
        actual, expected = actual[mask], expected[mask]
    denom = np.linalg.norm(expected)
    return np.linalg.norm(actual - expected) / denom if denom > 0 else np.linalg.norm(actual)


def loose_rows(config: OpConfig, inputs: Inputs) -> np.ndarray:
    """Per-element mask (the loss shape of ``none``) of kept rows without a
    finite answer: their logits hold NaN or +inf, or are all -inf."""
    x = np.moveaxis(np.asarray(inputs.logits, dtype=np.float64), config.class_axis, -1)
    if config.probabilities:
        kept = np.ones(x.shape[:-1], dtype=bool)
    else:
        kept = np.asarray(inputs.target) != config.effective_ignore_index
    bad = np.isnan(x).any(-1) | np.isposinf(x).any(-1)
    if x.shape[-1]:
        bad |= np.isneginf(x).all(-1)
    return kept & bad


def _masked_max_abs(a) -> float:
    a = np.abs(np.asarray(a, dtype=np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def _gradient_term_magnitude(config: OpConfig, inputs: Inputs) -> np.ndarray:
    """Per dlogits element, the sum of the magnitudes of the terms that the
    gradient adds up (xent.testing.reference's formula with every term made
    positive), in the logits' layout; 0 on ignored rows and where a term is
    not finite."""
    kwargs = config.reference_kwargs()
    eps, z = kwargs["label_smoothing"], kwargs["z_loss_scale"]
    with np.errstate(all="ignore"):
        p = reference._prepare(inputs.logits, inputs.target, inputs.weight,
                               kwargs["ignore_index"], config.reduction, eps,
                               kwargs["softcap"], kwargs["axis"])
        prob = reference._softmax(p.x)
        if p.probabilities:
            wq = p.weight * p.onehot_or_probs
            m = np.sum(wq, axis=-1, keepdims=True) * prob + wq
        else:
            m = (1.0 - eps) * np.abs(p.w_row)[..., None] * (prob + p.onehot_or_probs)
            if eps > 0.0:
                m = m + (eps / p.num_classes) * (np.sum(np.abs(p.weight)) * prob
                                                 + np.abs(p.weight))
        g = np.abs(np.asarray(inputs.grad_output, dtype=np.float64))
        rows = p.kept.shape
        if config.reduction == "mean":
            w_total, count = reference._normalisers(p)
            g_ce = np.broadcast_to(g / abs(w_total) if w_total else 0.0, rows)
            g_z = np.broadcast_to(g / count if count else 0.0, rows)
        else:
            g_ce = g_z = np.broadcast_to(g, rows)
        m = g_ce[..., None] * m
        if z:
            lse = np.abs(reference._logsumexp(p.x))
            m = m + (g_z * 2.0 * z * lse)[..., None] * prob
        m = np.where(p.kept[..., None] & np.isfinite(m), m, 0.0)
    return np.moveaxis(m, -1, p.axis)


def _raw_gradient(config: OpConfig, inputs: Inputs) -> np.ndarray:
    """The gradient with respect to the soft-capped logits (before the chain
    rule's tanh derivative), from the reference."""
    cap = float(np.float32(config.softcap))
    kwargs = dict(config.reference_kwargs(), softcap=None)
    with np.errstate(all="ignore"):
        capped = cap * np.tanh(np.asarray(inputs.logits, dtype=np.float64) / cap)
        raw = reference.cross_entropy_grad(inputs.grad_output, capped, inputs.target,
                                           weight=inputs.weight, **kwargs)
    return np.where(np.isfinite(raw), raw, 0.0)


def check_config(lib, name: str, config: OpConfig, inputs: Inputs, *, context: str = ""):
    """Calls ``name`` and compares loss, z-loss and dlogits with the reference.

    ``lib.call(name, args, result_types)`` runs the function (a compiled
    :class:`~xent.runtime.driver.Library`, or any runner with that method).
    ``context`` is prefixed to every failure message (a seed, a case name).
    Returns the results.
    """
    _, result_types = cross_entropy_function(name, config)
    results = lib.call(name, inputs.args, result_types)
    loss, z, dlogits = results
    kwargs = config.reference_kwargs()
    with np.errstate(all="ignore"):
        exp_loss, exp_z = reference.cross_entropy(inputs.logits, inputs.target,
                                                  weight=inputs.weight, **kwargs)
        exp_grad = reference.cross_entropy_grad(inputs.grad_output, inputs.logits,
                                                inputs.target, weight=inputs.weight, **kwargs)
    what = f"{context}{': ' if context else ''}{name}: {config}"

    rows = loose_rows(config, inputs)
    reduced = config.reduction != "none"
    loss_loose = np.asarray(rows.any()) if reduced else rows
    grad_loose = np.expand_dims(rows, config.class_axis)

    finite_loss = np.asarray(exp_loss)[~np.broadcast_to(loss_loose, np.shape(exp_loss))]
    scale = _masked_max_abs(finite_loss) if finite_loss.size else 0.0
    scale = scale if np.size(finite_loss) and np.isfinite(finite_loss).any() else 1.0
    loss_rtol = max(ROUNDING[config.loss_dtype], 1e-5)
    expect_close(loss, exp_loss, rtol=loss_rtol, atol=2e-6 * (1 + scale), what=f"loss {what}",
                 loose=loss_loose, overflow_at=FINITE_MAX[config.loss_dtype])
    expect_close(z, exp_z, rtol=1e-5, atol=1e-7, what=f"z_loss {what}", loose=loss_loose,
                 overflow_at=FINITE_MAX["f32"])

    strict_grad = ~np.broadcast_to(grad_loose, np.shape(exp_grad))
    gscale = _masked_max_abs(np.asarray(exp_grad)[strict_grad])
    grad_rtol = max(ROUNDING[config.dtype], 1e-5)
    grad_atol = 1e-6 * gscale + SUBNORMAL_SPACING[config.dtype] + 1e-12
    # With a softcap the chain rule multiplies by 1 - t^2, t = tanh(x / cap),
    # computed in f32 (as PyTorch's tanh backward does): its absolute error is
    # a few f32 ulps of 1 whatever its size, so where the tanh saturates the
    # gradient is only good to 4 u |g_raw| (g_raw: before that factor).
    # f32 evaluation: each gradient element is a sum of terms (p_c - 1,
    # sum_k w_k p_c - w_c, ...) that may cancel, from row sums over C classes
    # (relative error up to C u). Its absolute error is bounded by
    # (C + 4) u times the sum of the terms' magnitudes, not by its own size.
    magnitude = _gradient_term_magnitude(config, inputs)
    grad_atol = grad_atol + (config.num_classes + 4) * UNIT_ROUNDOFF["f32"] * magnitude
    raw = _raw_gradient(config, inputs) if config.softcap is not None else None
    if raw is not None:
        grad_atol = grad_atol + 4 * UNIT_ROUNDOFF["f32"] * np.abs(raw)
    expect_close(dlogits, exp_grad, rtol=grad_rtol, atol=grad_atol, what=f"dlogits {what}",
                 loose=grad_loose, overflow_at=FINITE_MAX[config.dtype])
    finite_grad = strict_grad & np.isfinite(exp_grad) & (np.abs(exp_grad) <= FINITE_MAX[config.dtype])
    if finite_grad.any() and gscale > 0:
        norm = float(np.linalg.norm(np.asarray(exp_grad)[finite_grad]))
        bound = UNIT_ROUNDOFF[config.dtype] + 2e-6
        # Subnormal results carry an absolute, not a relative, rounding error.
        bound += SUBNORMAL_SPACING[config.dtype] * np.sqrt(finite_grad.sum()) / norm
        if raw is not None:
            bound += 4 * UNIT_ROUNDOFF["f32"] * float(np.linalg.norm(raw[finite_grad])) / norm
        bound += ((config.num_classes + 4) * UNIT_ROUNDOFF["f32"] *
                  float(np.linalg.norm(magnitude[finite_grad])) / norm)
        err = relative_l2(dlogits, exp_grad, mask=finite_grad)
        assert err <= bound, f"relative L2 of dlogits {err:.3g} > {bound:.3g}: {what}"
    return results
