"""Argument checks shared by xent.torch's three loss families
(:func:`~xent.torch.cross_entropy`, :func:`~xent.torch.linear_cross_entropy`,
:func:`~xent.torch.vocab_parallel_cross_entropy`) and their modules, so that
bad input gets a clear ``ValueError`` instead of a silently wrong loss.

- :func:`check_loss_scalars`: label smoothing in [0, 1], a finite z-loss
  scale >= 0, a finite softcap > 0 (or None); NaN fails each. Plain Python
  comparisons, no tensor is touched: it runs before any kernel is looked up,
  on any device, and in fake implementations under ``torch.compile``.
- :func:`check_targets`: with ``validate=True`` or ``XENT_VALIDATE=1``
  (:func:`validation_on`), the class-index targets against ``[0, C)`` and
  ``ignore_index``: one device-side reduction and one host read per call;
  the first bad element (row-major) is found only on the failure path.
  Skipped while tracing (``torch.compile``, ``torch.export``, fake or meta
  tensors) and while a CUDA graph is being captured, where no value can be
  read back; the kernels then give the bad element a NaN loss as without
  validation.
"""

from __future__ import annotations

import math
import os

import torch
from torch._subclasses.fake_tensor import is_fake

__all__ = ["VALIDATE_ENV", "check_loss_scalars", "check_targets", "validation_on"]

# XENT_VALIDATE=1 (any value but empty or "0") validates the targets of every
# call, as validate=True does.
VALIDATE_ENV = "XENT_VALIDATE"

_INDEX_DTYPES = (torch.int32, torch.int64)


def check_loss_scalars(label_smoothing, z_loss_scale, softcap) -> None:
    """Raises ``ValueError`` unless ``0 <= label_smoothing <= 1``,
    ``0 <= z_loss_scale < inf`` and `softcap` is None or ``0 < softcap <
    inf``. The comparisons are written so that NaN fails them."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"xent: label_smoothing must be in [0, 1], got {label_smoothing}")
    if not 0.0 <= z_loss_scale < math.inf:
        raise ValueError(f"xent: z_loss_scale must be finite and >= 0, got {z_loss_scale}")
    if softcap is not None and not 0.0 < softcap < math.inf:
        raise ValueError(f"xent: softcap must be finite and > 0 (or None), got {softcap}")


def validation_on(validate: bool) -> bool:
    """Whether a call validates its targets: `validate`, or ``$XENT_VALIDATE``
    set to anything but empty or ``0`` (read per call). Never while
    ``torch.compile`` traces (the environment is not read there either, so
    tracing sees no Python it would break the graph on)."""
    if torch.compiler.is_compiling():
        return False
    return bool(validate) or os.environ.get(VALIDATE_ENV, "") not in ("", "0")


def _where(index) -> str:
    return "" if not index else "[" + ", ".join(str(i) for i in index) + "]"


def check_targets(target: torch.Tensor, num_classes: int, ignore_index: int) -> None:
    """Raises ``ValueError`` naming the first element of the class-index
    `target` (row-major order) that is neither `ignore_index` nor in ``[0,
    num_classes)``: its index, its value and the valid range. One reduction
    on the target's device and one host read when every element is good;
    nothing for probability (floating-point) targets, nor while tracing or
    capturing a CUDA graph (see the module's docstring)."""
    if torch.compiler.is_compiling() or is_fake(target) or target.is_meta:
        return
    if target.dtype not in _INDEX_DTYPES or target.numel() == 0:
        return
    if target.is_cuda and torch.cuda.is_current_stream_capturing():
        return
    bad = (target != ignore_index) & ((target < 0) | (target >= num_classes))
    if not bad.any().item():  # the one host read
        return
    # The failure path: nonzero lists the bad elements in row-major order.
    index = tuple(int(i) for i in bad.nonzero()[0].tolist())
    value = int(target[index].item())
    raise ValueError(f"xent: target{_where(index)} = {value} is out of range for "
                     f"{num_classes} classes (ignore_index {ignore_index})")
