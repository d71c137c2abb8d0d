"""A drop-in for ``torch.nn.functional.cross_entropy`` on CUDA, backed by
kernels that ``xent-gpu-pipeline`` compiles from ``xent.cross_entropy``.

    from xent.torch import cross_entropy, CrossEntropyLoss
    loss = cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.1,
                         z_loss_scale=1e-4, softcap=30.0)

Semantics are PyTorch's (class weights, ``ignore_index``, label smoothing,
``mean``/``sum``/``none``, N-D inputs with the class axis at 1, probability
targets) plus Liger's z-loss and a logit softcap; see docs/user-guide.md.
Bad scalars raise ValueError; ``validate=True`` (or ``XENT_VALIDATE=1``)
names an out-of-range class index instead of giving it a NaN loss
(:mod:`xent.torch._checks`).

This module is the API; :mod:`xent.torch.ops` holds the kernel calls as
PyTorch operators (``torch.ops.xent.*``: eagerly one fused forward + gradient
kernel and a backward that only scales the saved gradient; in a traced graph
the loss in the forward and the gradient, already scaled by the graph's
grad_output, in the backward; no host synchronization, CUDA-graph
capturable; ``torch.compile(fullgraph=True)`` and ``torch.export`` trace
them as single ops).

Kernels are compiled per configuration (dtypes, rank, attributes) into a
:class:`xent.runtime.gpu.KernelCache` directory (``$XENT_CACHE_DIR``);
compiling needs ``xent-opt`` and LLVM (:func:`precompile` fills a cache on
such a machine), running needs only the cache and the CUDA driver.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, NamedTuple, Optional

import torch

from ..runtime.kernels import kernel_config, kernel_module, precompile
from . import ops
from ._checks import check_loss_scalars, check_targets, validation_on
from .fx_swap import backend, last_report, patch
from .linear import LinearCrossEntropyLoss, linear_cross_entropy
from .vocab_parallel import VocabParallelCrossEntropyLoss, vocab_parallel_cross_entropy

# What the eager native path takes; anything else (fake tensors while
# tracing, functional or subclass tensors) goes through torch.ops.xent.
_PLAIN = (torch.Tensor, torch.nn.Parameter)

# XENT_GRAPH_JOINT=1: traced graphs (torch.compile, torch.export) call the
# joint kernel in the forward and scale its gradient in the backward, as
# eager calls do, instead of the loss in the forward and the scaled gradient
# in the backward (for comparisons; docs/performance.md).
_GRAPH_DEFERRED = os.environ.get("XENT_GRAPH_JOINT", "0") != "1"

__all__ = ["backend", "cross_entropy", "CrossEntropyLoss", "CrossEntropyOutput", "last_report",
           "linear_cross_entropy", "LinearCrossEntropyLoss", "patch",
           "vocab_parallel_cross_entropy", "VocabParallelCrossEntropyLoss", "kernel_config", "kernel_module", "precompile"]


class CrossEntropyOutput(NamedTuple):
    """What :func:`cross_entropy` returns when a per-row output is asked for
    (None for each one that is not)."""
    loss: torch.Tensor
    z_loss: Optional[torch.Tensor]
    lse: Optional[torch.Tensor]
    predicted_tokens: Optional[torch.Tensor]
    token_accuracy: Optional[torch.Tensor]


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None,
                  ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0,
                  z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                  return_z_loss: bool = False, loss_dtype: Optional[torch.dtype] = None,
                  return_lse: bool = False, return_predicted_tokens: bool = False,
                  return_token_accuracy: bool = False, inplace: bool = False,
                  validate: bool = False):
    """``torch.nn.functional.cross_entropy`` with xent's fused CUDA kernels.

    Returns the loss (in the logits' dtype, like PyTorch, or in float32 with
    ``loss_dtype=torch.float32``: what F.cross_entropy returns under autocast;
    it is computed in float32 either way), and the z-loss part too when
    ``return_z_loss``. Differentiable with respect to ``logits``.

    The per-row outputs come from the same kernel (no extra pass over the
    logits): ``return_lse`` the log-sum-exp of each element's (soft-capped)
    logits (float32), ``return_predicted_tokens`` the argmax per element
    (int64, the first index on ties as ``torch.argmax``),
    ``return_token_accuracy`` the share of kept elements whose argmax is the
    target, reduced like the loss (float32; per element for ``none``). With
    any of them the result is a :class:`CrossEntropyOutput`; they are not
    differentiable.

    ``inplace=True`` writes the gradient over the logits (Liger's default;
    it saves the N × C gradient buffer) where autograd allows an in-place
    write: eager calls on the native path, dense logits that need a
    gradient and are the result of an operation (or a view of one; not a
    leaf that requires grad, nor a view of one). The
    logits' version is bumped, so an operation that saved them for its own
    backward raises there instead of reading gradients. Elsewhere (a leaf,
    a strided tensor, torch.compile, the ctypes fallback) it is
    ignored and the gradient has its own memory. The in-place kernel is the
    two-pass one (the logits are read twice).

    ``label_smoothing`` outside [0, 1], a negative or non-finite
    ``z_loss_scale`` and a ``softcap`` that is not None and not a finite
    value > 0 raise ``ValueError`` (NaN included), on any device. A class
    index that is neither ``ignore_index`` nor in ``[0, C)`` gives that
    element a NaN loss; ``validate=True`` (or ``XENT_VALIDATE=1`` for every
    call) raises ``ValueError`` naming the first such element instead, at
    the cost of one device-to-host read per call (not while
    ``torch.compile`` traces, on fake tensors or while a CUDA graph is
    captured)."""
    check_loss_scalars(label_smoothing, z_loss_scale, softcap)
    if not logits.is_cuda:
        raise ValueError("xent.torch.cross_entropy runs on CUDA tensors")
    if loss_dtype not in (None, logits.dtype, torch.float32):
        raise ValueError(f"xent: loss_dtype must be the logits' dtype or torch.float32, "
                         f"not {loss_dtype}")
    if validation_on(validate) and logits.dim() > 0:
        check_targets(target, logits.shape[1 if logits.dim() > 1 else 0], ignore_index)
    return _cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing,
                          z_loss_scale, softcap, return_z_loss, loss_dtype, return_lse,
                          return_predicted_tokens, return_token_accuracy, inplace)


def _cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing,
                   z_loss_scale, softcap, return_z_loss, loss_dtype, return_lse,
                   return_predicted_tokens, return_token_accuracy, inplace):
    """:func:`cross_entropy` after its checks."""
    f32_loss = loss_dtype == torch.float32 and logits.dtype != torch.float32
    if logits.dim() == 1:
        # One row: called as a batch of one (the rank-2 kernels, which the
        # package's bundle holds), the per-element results viewed back.
        out = _cross_entropy(logits.unsqueeze(0), target.unsqueeze(0), weight, ignore_index,
                             reduction, label_smoothing, z_loss_scale, softcap, return_z_loss,
                             loss_dtype, return_lse, return_predicted_tokens,
                             return_token_accuracy, inplace)
        if reduction != "none":
            return out

        def row(t):
            return None if t is None else t.squeeze(0)
        if isinstance(out, CrossEntropyOutput):
            return CrossEntropyOutput(*map(row, out))
        return tuple(map(row, out)) if isinstance(out, tuple) else row(out)
    if logits.dim() > 3 and _flattens(logits, target):
        # (N, C, d1..dk) as (N, C, d1·…·dk): the rank-3 kernels (views where
        # the trailing dims collapse), the per-element results viewed back.
        out = _cross_entropy(logits.flatten(2), target.flatten(2 if target.is_floating_point()
                                                                else 1),
                             weight, ignore_index, reduction, label_smoothing, z_loss_scale,
                             softcap, return_z_loss, loss_dtype, return_lse,
                             return_predicted_tokens, return_token_accuracy, inplace)
        if reduction != "none" and not (return_lse or return_predicted_tokens):
            return out
        shape = logits.shape[:1] + logits.shape[2:]

        def element(t):
            return t if t is None or t.dim() != 2 else t.view(shape)
        if isinstance(out, CrossEntropyOutput):
            return CrossEntropyOutput(*map(element, out))
        return tuple(map(element, out)) if isinstance(out, tuple) else element(out)
    if target.dtype == torch.int32:
        # int64 class indices, as the package's libraries take them
        # (kernels.CALL_TARGETS): one cast of N indices beside N x C logits.
        target = target.long()
    args = (logits, target, weight, reduction, int(ignore_index), float(label_smoothing),
            float(z_loss_scale), None if softcap is None else float(softcap))
    with_grad = torch.is_grad_enabled() and logits.requires_grad
    if (type(logits) in _PLAIN and not (return_lse or return_predicted_tokens
                                        or return_token_accuracy)
            and not torch.compiler.is_compiling() and ops.native() is not None):
        # Eager on plain tensors (not fake, functional or a subclass): one C++
        # operator does the call and carries the autograd formula
        # (xent.torch.native).
        in_place = with_grad and inplace and ops.in_place_allowed(logits)
        loss, z = ops.eager(*args, with_grad, return_z_loss, f32_loss, in_place)
        return (loss, z) if return_z_loss else loss
    rows = (bool(return_lse), bool(return_predicted_tokens), bool(return_token_accuracy))
    if any(rows):
        loss, z, lse, predicted, accuracy, _ = torch.ops.xent.cross_entropy_rows(
            *args, f32_loss, *rows, with_grad)
        return CrossEntropyOutput(loss, z if return_z_loss else None,
                                  lse if rows[0] else None, predicted if rows[1] else None,
                                  accuracy if rows[2] else None)
    if with_grad and not (_GRAPH_DEFERRED and ops._tracing(logits)):
        loss, z, _ = torch.ops.xent.cross_entropy_with_grad(*args, f32_loss)
    else:
        # In a graph the backward's grad_output is a value (a model's sum
        # divided by its token count): the forward reads the logits once for
        # the loss and the backward writes the gradient once, already scaled
        # (xent::cross_entropy_backward), instead of the joint kernel's
        # gradient for 1 read and written again by the graph's scaling.
        loss, z = torch.ops.xent.cross_entropy(*args, f32_loss)
    return (loss, z) if return_z_loss else loss


@contextlib.contextmanager
def _graph_deferred(deferred: bool) -> Iterator[None]:
    """Within it, traced graphs use the deferred backward (`deferred`) or the
    joint kernel (as ``XENT_GRAPH_JOINT=1``); the setting before is restored
    after."""
    global _GRAPH_DEFERRED
    saved, _GRAPH_DEFERRED = _GRAPH_DEFERRED, deferred
    try:
        yield
    finally:
        _GRAPH_DEFERRED = saved


def _cross_entropy_joint(logits, target, *args, **kwargs):
    """:func:`cross_entropy` with the joint kernel in a traced graph, as
    ``XENT_GRAPH_JOINT=1`` (what ``backend="xent"`` calls where the logits'
    gradient has other terms, such as a model output's: Inductor fuses the
    scaling of the kept gradient into their sum)."""
    with _graph_deferred(False):
        return cross_entropy(logits, target, *args, **kwargs)


def _flattens(logits: torch.Tensor, target: torch.Tensor) -> bool:
    """Whether `target` fits `logits` of rank > 3 (else config_for says why
    with the shapes as given)."""
    if target.is_floating_point():
        return target.shape == logits.shape
    return target.shape == logits.shape[:1] + logits.shape[2:]


class CrossEntropyLoss(torch.nn.Module):
    """``torch.nn.CrossEntropyLoss`` with xent's kernels (and z-loss, softcap);
    bad scalars raise at construction already."""

    def __init__(self, weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0,
                 z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                 inplace: bool = False, validate: bool = False):
        check_loss_scalars(label_smoothing, z_loss_scale, softcap)
        super().__init__()
        self.register_buffer("weight", weight)
        self.inplace, self.validate = inplace, validate
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing, self.z_loss_scale, self.softcap = (label_smoothing, z_loss_scale,
                                                                  softcap)

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return cross_entropy(logits, target, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing, self.z_loss_scale, self.softcap,
                             inplace=self.inplace, validate=self.validate)
