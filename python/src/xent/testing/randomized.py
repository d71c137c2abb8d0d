"""Seeded random op configurations and adversarial inputs for differential
testing of any xent implementation against :mod:`xent.testing.reference`.

Nothing here knows how the ops are run: :func:`random_configs` draws
:class:`~xent.testing.codegen.OpConfig` values (every attribute, dtype, rank, axis,
static or dynamic shapes), :func:`call_shapes` the shapes to call a compiled
function with, and :func:`adversarial_inputs` the logits and targets of one
adversarial kind. The CPU suite (python/tests/test_differential.py) compiles
the configurations with ``--xent-cpu-pipeline``; a GPU suite can compile the
same ones with its own pipeline and reuse :func:`xent.testing.check_config`.

Everything is a function of a seed: a failure message that names the seed
and the case index reproduces it (``XENT_DIFF_SEED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from .codegen import Inputs, OpConfig, make_inputs

__all__ = [
    "DEFAULT_SEED", "ADVERSARIAL_KINDS", "Case", "random_config", "random_configs",
    "call_shapes", "adversarial_inputs", "supports",
]

DEFAULT_SEED = 20261130

_DTYPES = ("f32", "bf16", "f16")
_CLASS_COUNTS = (1, 2, 3, 5, 8, 16, 37, 130)
_OTHER_DIMS = (1, 2, 3, 4)

#: Adversarial input kinds, each a function of (config, rng); see
#: :func:`adversarial_inputs`.
ADVERSARIAL_KINDS = (
    "equal_logits",        # every logit of a row the same (0, 7.5, -3e4 or 1e30)
    "one_hot_like",        # one class far above the others (gap 20, 80 or 1e4)
    "huge_finite",         # entries of +-1e30 (inf in f16: such rows are loose)
    "denormal",            # logits near the smallest subnormals of their type
    "edge_targets",        # targets only 0 and C-1
    "all_ignored",         # every target equals ignore_index
    "nonfinite_ignored",   # NaN / +inf / -inf in ignored rows: isolated
    "nonfinite_kept",      # NaN / +inf in kept rows: propagate like the reference
    "neg_inf_kept",        # -inf in classes of kept rows that are not the target
)

# Kinds that need class-index targets.
_INDEX_ONLY = {"edge_targets", "all_ignored", "nonfinite_ignored", "neg_inf_kept"}


@dataclass(frozen=True)
class Case:
    """One call: configuration ``index`` of the seeded list, inputs of ``kind``."""

    seed: int
    index: int
    config: OpConfig
    kind: str
    shape: Tuple[int, ...]

    def describe(self) -> str:
        return (f"XENT_DIFF_SEED={self.seed} config #{self.index} kind={self.kind} "
                f"shape={self.shape}")


def random_config(rng: np.random.Generator) -> OpConfig:
    """One valid configuration: every attribute drawn independently."""
    rank = int(rng.choice([1, 2, 2, 3, 4]))
    axis: Optional[int] = None
    if rank > 1 and rng.random() < 0.35:
        axis = int(rng.integers(0, rank))
    elif rank == 1 and rng.random() < 0.2:
        axis = 0
    class_axis = axis if axis is not None else (0 if rank == 1 else 1)
    shape = [int(rng.choice(_OTHER_DIMS)) for _ in range(rank)]
    shape[class_axis] = int(rng.choice(_CLASS_COUNTS))
    if rank > 1 and rng.random() < 0.05:
        shape[0 if class_axis != 0 else 1] = 0  # an empty batch
    dtype = str(rng.choice(_DTYPES))
    target = str(rng.choice(["i64", "i32", "probs"], p=[0.4, 0.3, 0.3]))
    num_classes = shape[class_axis]
    ignore_index = None
    if target != "probs":
        r = rng.random()
        if r < 0.25:
            ignore_index = -100
        elif r < 0.5:
            ignore_index = int(rng.choice([0, num_classes - 1, int(rng.integers(0, num_classes))]))
    r = rng.random()
    # The op contract: results are f32 or the logits' element type.
    loss_dtype = "f32" if r < 0.6 else dtype
    return OpConfig(
        shape=tuple(shape), dtype=dtype, target=target,
        weighted=bool(rng.random() < 0.4),
        reduction=str(rng.choice(["mean", "sum", "none"])),
        ignore_index=ignore_index,
        label_smoothing=float(rng.choice([0.0, 0.0, 0.1, 0.37, 1.0])),
        z_loss_scale=float(rng.choice([0.0, 0.0, 1e-4, 0.05])),
        softcap=rng.choice([None, None, 1.5, 30.0]),
        axis=axis, dynamic=bool(rng.random() < 0.3), loss_dtype=loss_dtype)


def random_configs(seed: int, count: int) -> List[OpConfig]:
    rng = np.random.default_rng(seed)
    return [random_config(rng) for _ in range(count)]


def call_shapes(config: OpConfig, rng: np.random.Generator) -> List[Tuple[int, ...]]:
    """The compiled shape, and for dynamic functions another one (every
    dimension may change, the class count included)."""
    shapes = [config.shape]
    if config.dynamic:
        other = [int(rng.choice(_OTHER_DIMS)) for _ in config.shape]
        other[config.class_axis] = int(rng.choice(_CLASS_COUNTS))
        shapes.append(tuple(other))
    return shapes


def supports(kind: str, config: OpConfig) -> bool:
    """Whether inputs of ``kind`` make sense for ``config``."""
    if kind in _INDEX_ONLY and config.probabilities:
        return False
    if kind in ("nonfinite_ignored", "neg_inf_kept") and (
            config.num_classes < 2 or int(np.prod(config.element_shape)) < 2):
        return False
    if kind == "nonfinite_kept" and int(np.prod(config.element_shape)) < 1:
        return False
    return True


def _rows(config: OpConfig, x: np.ndarray) -> np.ndarray:
    """View with the class axis last."""
    return np.moveaxis(x, config.class_axis, -1)


def _random_targets(config: OpConfig, rng, ignore_fraction=0.25) -> np.ndarray:
    t = rng.integers(0, config.num_classes, size=config.element_shape)
    if ignore_fraction:
        t = np.where(rng.random(config.element_shape) < ignore_fraction,
                     config.effective_ignore_index, t)
    return t


def adversarial_inputs(kind: str, config: OpConfig, rng: np.random.Generator) -> Inputs:
    """Inputs of one adversarial ``kind`` (or ``"random"``) for ``config``."""
    C = config.num_classes
    x = rng.standard_normal(config.shape) * float(rng.choice([0.1, 3.0, 30.0]))
    rows = _rows(config, x)
    target = None
    if kind == "random":
        pass
    elif kind == "equal_logits":
        rows[...] = float(rng.choice([0.0, 7.5, -3.0e4, 1.0e30]))
    elif kind == "one_hot_like":
        rows[...] = 0.0
        hot = rng.integers(0, C, size=rows.shape[:-1])
        np.put_along_axis(rows, hot[..., None], float(rng.choice([20.0, 80.0, 1.0e4])), -1)
        if not config.probabilities:
            # Half the rows target the hot class, half another one.
            other = rng.integers(0, C, size=hot.shape)
            target = np.where(rng.random(hot.shape) < 0.5, hot, other)
    elif kind == "huge_finite":
        rows[...] = rng.choice([1.0e30, -1.0e30, 0.0, 1.0], size=rows.shape)
    elif kind == "denormal":
        tiny = {"f32": 1.0e-40, "bf16": 1.0e-40, "f16": 1.0e-7}[config.dtype]
        rows[...] = rng.integers(-8, 9, size=rows.shape) * tiny
    elif kind == "edge_targets":
        target = np.where(rng.random(config.element_shape) < 0.5, 0, C - 1)
    elif kind == "all_ignored":
        target = np.full(config.element_shape, config.effective_ignore_index)
    elif kind == "nonfinite_ignored":
        target = _random_targets(config, rng, ignore_fraction=0.0)
        flat_t = target.reshape(-1)
        ignored = rng.random(flat_t.shape) < 0.5
        ignored[0] = True
        flat_t[ignored] = config.effective_ignore_index
        flat_x = rows.reshape(-1, C)
        for r in np.flatnonzero(ignored):
            flat_x[r, rng.integers(0, C)] = float(rng.choice([np.nan, np.inf, -np.inf]))
            flat_x[r, rng.integers(0, C)] = float(rng.choice([np.nan, np.inf, -np.inf]))
        rows[...] = flat_x.reshape(rows.shape)
        target = flat_t.reshape(config.element_shape)
    elif kind == "nonfinite_kept":
        flat_x = rows.reshape(-1, C)
        r = int(rng.integers(0, flat_x.shape[0]))
        flat_x[r, rng.integers(0, C)] = float(rng.choice([np.nan, np.inf]))
        if rng.random() < 0.3:
            flat_x[r, :] = -np.inf  # a row of -inf only
        rows[...] = flat_x.reshape(rows.shape)
        if not config.probabilities:
            target = _random_targets(config, rng, ignore_fraction=0.0).reshape(-1)
            target = target.reshape(config.element_shape)
    elif kind == "neg_inf_kept":
        target = _random_targets(config, rng, ignore_fraction=0.0)
        flat_x = rows.reshape(-1, C)
        flat_t = target.reshape(-1)
        for r in range(flat_x.shape[0]):
            if rng.random() < 0.5:
                c = int(rng.integers(0, C))
                if c != flat_t[r]:
                    flat_x[r, c] = -np.inf
        rows[...] = flat_x.reshape(rows.shape)
    else:
        raise ValueError(f"unknown adversarial kind {kind!r}")
    return make_inputs(config, rng, logits64=x, target=target)
