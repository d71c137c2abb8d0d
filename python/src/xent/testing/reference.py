"""Float64 NumPy reference for softmax cross-entropy with PyTorch's semantics.

This module is the numerical specification that ``xent.cross_entropy`` and
``xent.cross_entropy_grad`` are tested against.  It reproduces
``torch.nn.functional.cross_entropy`` (class-index and probability targets,
class weights, ``ignore_index``, label smoothing, the three reductions) and
adds two extensions that PyTorch lacks:

* ``softcap``: logits are first mapped through ``s * tanh(x / s)``;
* ``z_loss_scale``: Liger's z-loss, ``z * lse**2`` added on kept rows; with
  ``reduction="mean"`` the z part is divided by the *count* of kept rows (not
  the weight sum).

Conventions where PyTorch is silent or leaky:

* ignored rows never influence anything: their logits may be NaN/inf, their
  loss is exactly 0 and their gradient is exactly 0;
* ``reduction="mean"`` with every row ignored gives a NaN loss (as PyTorch:
  0/0) and a zero gradient.

Everything is computed in float64, independently of the compiler stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

__all__ = ["cross_entropy", "cross_entropy_grad", "linear_cross_entropy",
           "linear_cross_entropy_grad", "row_outputs", "REDUCTIONS"]

REDUCTIONS = ("mean", "sum", "none")


@dataclass
class _Problem:
    """Inputs normalised to float64 with the class axis moved last."""

    x_raw: np.ndarray          # (..., C) logits as given (ignored rows zeroed)
    x: np.ndarray              # (..., C) logits after softcap
    kept: np.ndarray           # (...) bool, rows that contribute
    onehot_or_probs: np.ndarray  # (..., C) one-hot of the target, or q'
    w_row: np.ndarray          # (...) w[target] on kept rows (indices), else 0
    weight: np.ndarray         # (C,) class weights (ones when absent)
    probabilities: bool
    axis: int                  # class axis of the caller's layout
    num_classes: int


def _class_axis(ndim: int, axis: Optional[int]) -> int:
    if ndim == 0:
        raise ValueError("logits must have rank >= 1")
    if axis is None:
        return 1 if ndim >= 2 else 0
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} out of range for rank-{ndim} logits")
    return axis % ndim


def _prepare(logits, target, weight, ignore_index, reduction, label_smoothing,
             softcap, axis) -> _Problem:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if softcap is not None and not softcap > 0.0:
        raise ValueError(f"softcap must be positive, got {softcap}")

    logits = np.asarray(logits, dtype=np.float64)
    ax = _class_axis(logits.ndim, axis)
    x_raw = np.moveaxis(logits, ax, -1)
    C = x_raw.shape[-1]
    row_shape = x_raw.shape[:-1]

    if weight is None:
        w = np.ones(C, dtype=np.float64)
    else:
        w = np.asarray(weight, dtype=np.float64)
        if w.shape != (C,):
            raise ValueError(f"weight must have shape ({C},), got {w.shape}")

    target = np.asarray(target)
    probabilities = target.dtype.kind == "f"
    if probabilities:
        if target.shape != logits.shape:
            raise ValueError(f"probability target shape {target.shape} != logits shape {logits.shape}")
        q = np.moveaxis(target.astype(np.float64), ax, -1)
        kept = np.ones(row_shape, dtype=bool)
        dist = q * (1.0 - label_smoothing) + label_smoothing / C
        w_row = np.zeros(row_shape, dtype=np.float64)
    else:
        if target.dtype.kind not in "iu":
            raise TypeError(f"class-index target must be integer, got {target.dtype}")
        if target.shape != row_shape:
            raise ValueError(f"target shape {target.shape} != logits shape without class axis {row_shape}")
        t = target.astype(np.int64)
        kept = t != ignore_index
        if np.any(kept & ((t < 0) | (t >= C))):
            raise ValueError(f"target class index out of range [0, {C})")
        t_safe = np.where(kept, t, 0)
        dist = (np.arange(C) == t_safe[..., None]).astype(np.float64)
        w_row = np.where(kept, w[t_safe], 0.0)

    # Ignored rows are replaced by zeros so that NaN/inf there cannot leak.
    x_raw = np.where(kept[..., None], x_raw, 0.0)
    x = x_raw if softcap is None else softcap * np.tanh(x_raw / softcap)
    return _Problem(x_raw, x, kept, dist, w_row, w, probabilities, ax, C)


def _shifted_logsumexp(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(m, log_s)`` with ``logsumexp(x) = m + log_s`` over the last axis:
    ``m`` the row maximum (0 where it is not finite, like torch.logsumexp)
    and ``log_s = log sum exp(x - m)``. Kept apart, so that ``lse - x_c`` is
    computed as ``(m - x_c) + log_s``: with logits near 1e30 the sum
    ``m + log_s`` would round ``log_s`` away."""
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_s = np.log(np.sum(np.exp(x - m), axis=-1))
    return m[..., 0], log_s


def _logsumexp(x: np.ndarray) -> np.ndarray:
    """Max-shifted logsumexp over the last axis (inf-safe like torch.logsumexp)."""
    m, log_s = _shifted_logsumexp(x)
    return m + log_s


def _softmax(x: np.ndarray) -> np.ndarray:
    """exp(x - m) / sum exp(x - m) over the last axis."""
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        e = np.exp(x - m)
        return e / np.sum(e, axis=-1, keepdims=True)


def _normalisers(p: _Problem) -> Tuple[float, float]:
    """Divisors of the cross-entropy and z-loss parts for reduction="mean"."""
    rows = float(p.kept.sum())
    if p.probabilities:
        return float(p.kept.size), float(p.kept.size)
    return float(p.w_row.sum()), rows


def cross_entropy(logits, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0,
                  z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                  axis: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``(loss, z_loss)`` in float64.

    ``loss`` includes the z-loss term; ``z_loss`` is that term alone, reduced
    the same way.  Both are 0-d arrays for ``mean``/``sum`` and shaped like the
    logits without the class axis for ``none``.  ``target`` holds class
    indices (integer dtype, logits' shape without the class axis) or class
    probabilities (float dtype, logits' shape).
    """
    p = _prepare(logits, target, weight, ignore_index, reduction, label_smoothing,
                 softcap, axis)
    eps, C = label_smoothing, p.num_classes
    with np.errstate(invalid="ignore", over="ignore"):
        m, log_s = _shifted_logsumexp(p.x)
        lse = m + log_s
        gap = (m[..., None] - p.x) + log_s[..., None]  # lse - x_c
        if p.probabilities:
            # -sum_c w_c q'_c (x_c - lse)
            ce = np.sum(p.weight * p.onehot_or_probs * gap, axis=-1)
        else:
            # x_t picked, not summed as onehot * x: 0 * -inf would turn a
            # -inf logit of another class into NaN (PyTorch gives lse - x_t).
            x_t = np.sum(np.where(p.onehot_or_probs > 0, p.x, 0.0), axis=-1)
            nll = (m - x_t) + log_s
            ce = (1.0 - eps) * p.w_row * nll
            if eps > 0.0:
                smooth = np.sum(p.weight * gap, axis=-1)
                ce = ce + (eps / C) * smooth
        ce = np.where(p.kept, ce, 0.0)
        if z_loss_scale != 0.0:
            z = np.where(p.kept, z_loss_scale * lse * lse, 0.0)
        else:
            z = np.zeros_like(ce)

    if reduction == "none":
        return ce + z, z
    if reduction == "sum":
        return np.asarray(ce.sum() + z.sum()), np.asarray(z.sum())
    w_total, rows = _normalisers(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        ce_mean = np.float64(ce.sum()) / w_total if w_total != 0 else np.float64(np.nan)
        z_mean = np.float64(z.sum()) / rows if rows != 0 else np.float64(np.nan)
    return np.asarray(ce_mean + z_mean), np.asarray(z_mean)


def cross_entropy_grad(grad_output, logits, target, weight=None, ignore_index: int = -100,
                       reduction: str = "mean", label_smoothing: float = 0.0,
                       z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                       axis: Optional[int] = None) -> np.ndarray:
    """Return ``d(sum(loss * grad_output)) / d(logits)`` in float64.

    ``grad_output`` is a scalar for ``mean``/``sum`` and shaped like the
    per-element loss for ``none``.  Ignored rows get exactly zero gradient;
    an all-ignored ``mean`` gives a zero gradient.
    """
    p = _prepare(logits, target, weight, ignore_index, reduction, label_smoothing,
                 softcap, axis)
    eps, C = label_smoothing, p.num_classes
    g = np.asarray(grad_output, dtype=np.float64)
    row_shape = p.kept.shape

    if reduction == "none":
        if g.shape != row_shape:
            raise ValueError(f"grad_output shape {g.shape} != per-element loss shape {row_shape}")
        g_ce = g_z = g
    else:
        if g.size != 1:
            raise ValueError(f"grad_output must be a scalar for reduction={reduction!r}")
        g = g.reshape(())
        if reduction == "sum":
            g_ce = g_z = g
        else:
            w_total, rows = _normalisers(p)
            # When nothing is kept the factors are never used (rows are masked).
            g_ce = g / w_total if w_total != 0 else np.float64(0.0)
            g_z = g / rows if rows != 0 else np.float64(0.0)
        g_ce = np.broadcast_to(g_ce, row_shape)
        g_z = np.broadcast_to(g_z, row_shape)

    with np.errstate(invalid="ignore", over="ignore"):
        lse = _logsumexp(p.x)
        prob = _softmax(p.x)
        if p.probabilities:
            wq = p.weight * p.onehot_or_probs
            d = np.sum(wq, axis=-1, keepdims=True) * prob - wq
        else:
            d = (1.0 - eps) * p.w_row[..., None] * (prob - p.onehot_or_probs)
            if eps > 0.0:
                d = d + (eps / C) * (np.sum(p.weight) * prob - p.weight)
        d = g_ce[..., None] * d
        if z_loss_scale != 0.0:
            d = d + (g_z * 2.0 * z_loss_scale * lse)[..., None] * prob
        if softcap is not None:
            th = np.tanh(p.x_raw / softcap)
            d = d * (1.0 - th * th)
        d = np.where(p.kept[..., None], d, 0.0)
    return np.ascontiguousarray(np.moveaxis(d, -1, p.axis))


def _project(hidden, weight, bias):
    """Rows ``[N, H]`` of ``hidden`` and their logits ``[N, V]`` in float64."""
    h = np.asarray(hidden, dtype=np.float64)
    rows = h.reshape(-1, h.shape[-1])
    logits = rows @ np.asarray(weight, dtype=np.float64).T
    if bias is not None:
        logits = logits + np.asarray(bias, dtype=np.float64)
    return rows, logits


def linear_cross_entropy(hidden, weight, target, bias=None, class_weight=None,
                         **kwargs) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``(loss, z_loss)`` of ``cross_entropy(hidden @ weight.T + bias)``.

    ``hidden`` is ``[N, H]`` or ``[B, T, H]``, ``weight`` ``[V, H]``,
    ``target`` class indices shaped like ``hidden`` without its last axis;
    ``kwargs`` are :func:`cross_entropy`'s attributes (no ``axis``: the
    classes are last).  Per-row results (``none``) are shaped like ``target``.
    """
    t = np.asarray(target)
    _, logits = _project(hidden, weight, bias)
    loss, z = cross_entropy(logits, t.reshape(-1), weight=class_weight, **kwargs)
    if kwargs.get("reduction", "mean") == "none":
        loss, z = loss.reshape(t.shape), z.reshape(t.shape)
    return loss, z


def linear_cross_entropy_grad(grad_output, hidden, weight, target, bias=None,
                              class_weight=None, **kwargs):
    """Return ``(d_hidden, d_weight, d_bias)`` of ``sum(loss * grad_output)``
    for :func:`linear_cross_entropy` in float64 (``d_bias`` is None without a
    bias)."""
    h = np.asarray(hidden, dtype=np.float64)
    t = np.asarray(target)
    rows, logits = _project(hidden, weight, bias)
    g = np.asarray(grad_output, dtype=np.float64)
    if kwargs.get("reduction", "mean") == "none":
        g = g.reshape(-1)
    dlogits = cross_entropy_grad(g, logits, t.reshape(-1), weight=class_weight, **kwargs)
    d_hidden = (dlogits @ np.asarray(weight, dtype=np.float64)).reshape(h.shape)
    d_weight = dlogits.T @ rows
    d_bias = dlogits.sum(axis=0) if bias is not None else None
    return d_hidden, d_weight, d_bias


def row_outputs(logits, target, ignore_index: int = -100, reduction: str = "mean",
                softcap: Optional[float] = None,
                axis: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(lse, argmax, accuracy)``, the per-row outputs, in float64 (argmax int64).

    ``lse`` and ``argmax`` are per element and computed on every row, ignored
    or not: the log-sum-exp of the soft-capped logits (like torch.logsumexp)
    and the first index of their maximum, a NaN counting as the maximum (like
    torch.argmax). ``accuracy`` is 1 for a kept element whose class-index
    target is its argmax, else 0, reduced like the loss: per element for
    ``none``, the count for ``sum``, the count over the number of kept
    elements for ``mean`` (unweighted; NaN when every target is ignored);
    None for probability targets.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    logits = np.asarray(logits, dtype=np.float64)
    x = np.moveaxis(logits, _class_axis(logits.ndim, axis), -1)
    if softcap is not None:
        x = softcap * np.tanh(x / softcap)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lse = _logsumexp(x)
    # numpy's argmax, like torch's, returns the first maximum and the first NaN.
    argmax = np.argmax(x, axis=-1) if x.shape[-1] else np.zeros(x.shape[:-1], np.int64)
    argmax = argmax.astype(np.int64)
    target = np.asarray(target)
    if target.dtype.kind == "f":  # probability targets: no accuracy
        return lse, argmax, None
    t = target.astype(np.int64)
    kept = t != ignore_index
    correct = np.where(kept & (t == argmax), 1.0, 0.0)
    if reduction == "none":
        accuracy = correct
    elif reduction == "sum":
        accuracy = np.asarray(correct.sum())
    else:
        n = float(kept.sum())
        accuracy = np.asarray(correct.sum() / n if n else np.nan)
    return lse, argmax, accuracy
