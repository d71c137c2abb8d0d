"""``xent.torch.linear_cross_entropy``: the output projection and the loss as
one call, differentiable with respect to the hidden states, the weight and
the bias (docs/linear-cross-entropy.md).

    loss = linear_cross_entropy(hidden, lm_head.weight, target, lm_head.bias)

is ``F.cross_entropy(F.linear(hidden, weight, bias), target, ...)`` without
the ``N x V`` logits in memory: the compiled ops of xent.runtime.linear
compute by row chunks (cuBLASLt GEMMs and the fused kernels over each
chunk's logits). Two PyTorch operators, each with a fake implementation
(``torch.compile`` traces them without a graph break, ``torch.export``
exports them) and an autograd formula, write their results into tensors of
PyTorch's allocator on its current stream (CUDA-graph capturable):

- ``xent::linear_cross_entropy_with_grad``: ``xent.linear_cross_entropy_and_grad``,
  the loss and the three gradients for a ``grad_output`` (1 when None).
  For a reduced loss that needs a gradient, the forward runs it for
  ``grad_output = 1`` and the backward scales the gradients by the incoming
  one (elementwise, no GEMM; in eager mode in place);
- ``xent::linear_cross_entropy``: ``xent.linear_cross_entropy``, the loss
  alone (the logits' GEMM and the forward kernel per chunk). What the call
  runs when nothing needs a gradient (inference, a frozen model) and, per
  element (``reduction="none"``), in the forward: the weight's gradient
  depends on each row's ``grad_output``, so its backward runs the joint op
  once with it.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch._subclasses.fake_tensor import is_fake

from ..runtime import linear as _linear
from ._checks import check_loss_scalars, check_targets, validation_on
from .ops import _scalar_one

__all__ = ["linear_cross_entropy", "LinearCrossEntropyLoss"]


def _new_losses(hidden, target, reduction, z_loss_scale):
    """The f32 loss and z-loss buffers (0-d, or per row for ``none``; the
    z-loss empty without a z-loss scale), real or fake alike."""
    shape = tuple(target.shape) if reduction == "none" else ()
    return (hidden.new_empty(shape, dtype=torch.float32),
            hidden.new_empty(shape if z_loss_scale else (0,), dtype=torch.float32))


def _new_grads(hidden, weight, bias, frozen):
    """d_hidden, d_weight and d_bias; empty without a bias, and for a
    `frozen` input ("weight": d_weight and d_bias, "hidden": d_hidden),
    whose gradient is not computed."""
    def grad(like, on):
        return torch.empty_like(like) if like is not None and on else hidden.new_empty((0,))
    return (grad(hidden, frozen != "hidden"), grad(weight, frozen != "weight"),
            grad(bias, frozen != "weight"))


def _frozen(hidden_grad: bool, weight_grad: bool) -> str:
    """What a call with a gradient leaves out: "weight" (d_weight and
    d_bias), "hidden" (d_hidden) or nothing ("")."""
    return "" if hidden_grad and weight_grad else "weight" if hidden_grad else "hidden"


def _attrs(reduction, ignore_index, class_weight, label_smoothing, z_loss_scale, softcap,
           chunk_rows):
    return dict(reduction=reduction, ignore_index=ignore_index, class_weight=class_weight,
                label_smoothing=label_smoothing, z_loss_scale=z_loss_scale, softcap=softcap,
                chunk_rows=chunk_rows)


@torch.library.custom_op("xent::linear_cross_entropy_with_grad", mutates_args=(),
                         device_types="cuda")
def linear_cross_entropy_with_grad(
        hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
        bias: Optional[torch.Tensor], class_weight: Optional[torch.Tensor],
        grad_output: Optional[torch.Tensor], reduction: str, ignore_index: int,
        label_smoothing: float, z_loss_scale: float, softcap: Optional[float],
        chunk_rows: int, frozen: str = "") -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                    torch.Tensor, torch.Tensor]:
    """Loss (f32), z-loss (f32; empty without a z-loss scale), d_hidden,
    d_weight and d_bias (empty without a bias) for `grad_output` (f32, 0-d
    or per row for ``none``; None: 1). `frozen` "weight": d_weight and
    d_bias are not computed (empty), "hidden": d_hidden is not."""
    loss, z = _new_losses(hidden, target, reduction, z_loss_scale)
    dh, dw, db = _new_grads(hidden, weight, bias, frozen)
    if grad_output is None:
        grad_output = (_scalar_one(hidden.device) if reduction != "none" else
                       torch.ones_like(loss))
    out = [loss] + ([z] if z_loss_scale else []) + ([dh] if frozen != "hidden" else []) + \
        ([dw] + ([db] if bias is not None else []) if frozen != "weight" else [])
    _linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad_output.contiguous(), out=out,
        frozen=frozen or None,
        **_attrs(reduction, ignore_index, class_weight, label_smoothing, z_loss_scale, softcap,
                 chunk_rows))
    return loss, z, dh, dw, db


@linear_cross_entropy_with_grad.register_fake
def _(hidden, weight, target, bias, class_weight, grad_output, reduction, ignore_index,
      label_smoothing, z_loss_scale, softcap, chunk_rows, frozen=""):
    return (_new_losses(hidden, target, reduction, z_loss_scale)
            + _new_grads(hidden, weight, bias, frozen))


def _with_grad_setup(ctx, inputs, output):
    ctx.has_bias = inputs[3] is not None
    ctx.save_for_backward(*output[2:])
    ctx.mark_non_differentiable(*output[1:])


def _with_grad_backward(ctx, grad_loss, *_):
    dh, dw, db = ctx.saved_tensors
    grads = [dh, dw, db if ctx.has_bias else None]
    if grad_loss is None:
        grads = [None, None, None]
    elif torch.compiler.is_compiling() or is_fake(dh):
        # A graph: the scaled gradients as new values (pointwise ops the
        # compiler fuses and places).
        g = grad_loss.to(torch.float32)
        grads = [None if t is None else (t.to(torch.float32) * g).to(t.dtype) for t in grads]
    else:
        # Eager: the gradients are this formula's own, scaled in place. That
        # bumps their version, so a second backward (retain_graph=True),
        # which would scale them again, is refused by autograd when it
        # unpacks them.
        g = grad_loss.to(torch.float32)
        for t in grads:
            if t is not None:
                t.mul_(g if t.dtype == torch.float32 else g.to(t.dtype))
    needs = ctx.needs_input_grad
    return (grads[0] if needs[0] else None, grads[1] if needs[1] else None, None,
            grads[2] if needs[3] else None) + (None,) * 9


linear_cross_entropy_with_grad.register_autograd(_with_grad_backward,
                                                 setup_context=_with_grad_setup)


@torch.library.custom_op("xent::linear_cross_entropy", mutates_args=(), device_types="cuda")
def linear_cross_entropy_loss(
        hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
        bias: Optional[torch.Tensor], class_weight: Optional[torch.Tensor], reduction: str,
        ignore_index: int, label_smoothing: float, z_loss_scale: float,
        softcap: Optional[float], chunk_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Loss and z-loss (f32; the z-loss empty without a z-loss scale), no
    gradient."""
    loss, z = _new_losses(hidden, target, reduction, z_loss_scale)
    _linear.linear_cross_entropy(
        hidden, weight, target, bias, out=[loss] + ([z] if z_loss_scale else []),
        **_attrs(reduction, ignore_index, class_weight, label_smoothing, z_loss_scale, softcap,
                 chunk_rows))
    return loss, z


@linear_cross_entropy_loss.register_fake
def _(hidden, weight, target, bias, class_weight, reduction, ignore_index, label_smoothing,
      z_loss_scale, softcap, chunk_rows):
    return _new_losses(hidden, target, reduction, z_loss_scale)


def _loss_setup(ctx, inputs, output):
    hidden, weight, target, bias, class_weight = inputs[:5]
    ctx.attrs = inputs[5:]
    ctx.has_bias = bias is not None
    ctx.save_for_backward(hidden, weight, target, bias, class_weight)
    ctx.mark_non_differentiable(output[1])


def _loss_backward(ctx, grad_loss, _grad_z):
    if grad_loss is None:
        return (None,) * 11
    hidden, weight, target, bias, class_weight = ctx.saved_tensors
    # The joint op with the incoming gradient (per row for `none`): the
    # gradients come out scaled, nothing is kept.
    needs = ctx.needs_input_grad
    _, _, dh, dw, db = torch.ops.xent.linear_cross_entropy_with_grad(
        hidden, weight, target, bias, class_weight, grad_loss.to(torch.float32).contiguous(),
        *ctx.attrs, _frozen(needs[0], needs[1] or needs[3]))
    return (dh if needs[0] else None, dw if needs[1] else None, None,
            db if ctx.has_bias and needs[3] else None) + (None,) * 7


linear_cross_entropy_loss.register_autograd(_loss_backward, setup_context=_loss_setup)


def _check(hidden, weight, target, bias, reduction, loss_dtype):
    if not hidden.is_cuda:
        raise ValueError("xent.torch.linear_cross_entropy runs on CUDA tensors")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if hidden.dim() not in (2, 3):
        raise ValueError("xent: hidden must be [N, H] or [B, T, H]")
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ValueError(f"xent: weight must be [V, {hidden.shape[-1]}], not "
                         f"{tuple(weight.shape)}")
    if weight.dtype != hidden.dtype or (bias is not None and bias.dtype != hidden.dtype):
        raise TypeError("xent: hidden, weight and bias must have one dtype")
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ValueError(f"xent: bias must be [{weight.shape[0]}]")
    if target.shape != hidden.shape[:-1]:
        raise ValueError(f"xent: target shape {tuple(target.shape)} does not match "
                         f"{tuple(hidden.shape[:-1])}")
    if target.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"xent: unsupported target dtype {target.dtype}")
    if loss_dtype not in (None, hidden.dtype, torch.float32):
        raise ValueError("xent: loss_dtype must be the hidden's dtype or torch.float32")


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                         bias: Optional[torch.Tensor] = None,
                         class_weight: Optional[torch.Tensor] = None,
                         ignore_index: int = -100, reduction: str = "mean",
                         label_smoothing: float = 0.0, z_loss_scale: float = 0.0,
                         softcap: Optional[float] = None, return_z_loss: bool = False,
                         loss_dtype: Optional[torch.dtype] = None, chunk_rows: int = 0,
                         validate: bool = False):
    """``F.cross_entropy(F.linear(hidden, weight, bias), target, weight=class_weight,
    ignore_index=..., reduction=..., label_smoothing=...)`` (plus xent's z-loss
    and softcap) without materializing the logits. `hidden` is ``[N, H]`` or
    ``[B, T, H]`` (bf16, f16 or f32), `weight` ``[V, H]`` and `bias` ``[V]``
    in its dtype, `target` int64 / int32 shaped like `hidden` without its
    last dim. The loss comes back in the hidden's dtype (as PyTorch's), or
    float32 with ``loss_dtype=torch.float32``; with ``return_z_loss`` also
    the z-loss part (not differentiable). `chunk_rows` 0 lets the pipeline
    size the row chunks. When no input needs a gradient the loss alone is
    computed (no gradient GEMMs); a frozen weight (and bias) computes no
    weight gradient (no GEMM, no ``V x H`` accumulator), frozen hidden
    states no hidden gradient.

    Bad scalars (``label_smoothing`` outside [0, 1], a negative or
    non-finite ``z_loss_scale``, a ``softcap`` not None and not finite > 0)
    raise ``ValueError`` before anything else. A target that is neither
    ``ignore_index`` nor in ``[0, V)`` gives its row a NaN loss;
    ``validate=True`` (or ``XENT_VALIDATE=1``) raises ``ValueError`` naming
    the first one instead (one device-to-host read; skipped while tracing
    and during CUDA-graph capture), as :func:`xent.torch.cross_entropy`."""
    check_loss_scalars(label_smoothing, z_loss_scale, softcap)
    _check(hidden, weight, target, bias, reduction, loss_dtype)
    if validation_on(validate):
        check_targets(target, weight.shape[0], ignore_index)
    # [B, T, H] as rows and i32 targets as i64: the package's libraries
    # (xent.runtime.bundle) take [N, H] and i64; both are views or a copy of
    # N indices, next to GEMMs of N x H x V.
    rows_shape = target.shape
    hidden = hidden.reshape(-1, hidden.shape[-1])
    target = target.reshape(-1).to(torch.int64)
    hidden, weight = hidden.contiguous(), weight.contiguous()
    bias = bias.contiguous() if bias is not None else None
    cw = class_weight.to(torch.float32).contiguous() if class_weight is not None else None
    attrs = (reduction, int(ignore_index), float(label_smoothing), float(z_loss_scale),
             None if softcap is None else float(softcap), int(chunk_rows))
    grad_on = torch.is_grad_enabled()
    hidden_grad = grad_on and hidden.requires_grad
    weight_grad = grad_on and (weight.requires_grad or (bias is not None and bias.requires_grad))
    if (hidden_grad or weight_grad) and reduction != "none":
        # A frozen input's gradient is not computed (no GEMM, no buffer).
        loss, z = torch.ops.xent.linear_cross_entropy_with_grad(
            hidden, weight, target.contiguous(), bias, cw, None, *attrs,
            _frozen(hidden_grad, weight_grad))[:2]
    else:
        loss, z = torch.ops.xent.linear_cross_entropy(hidden, weight, target.contiguous(), bias,
                                                      cw, *attrs)
    if reduction == "none":
        loss, z = loss.view(rows_shape), (z.view(rows_shape) if z_loss_scale else z)
    out_dtype = loss_dtype or hidden.dtype
    loss = loss.to(out_dtype)
    if return_z_loss:
        return loss, (z.to(out_dtype) if z_loss_scale else torch.zeros_like(loss))
    return loss


class LinearCrossEntropyLoss(torch.nn.Module):
    """:func:`linear_cross_entropy` as a module: the attributes at
    construction, ``forward(hidden, weight, target, bias=None)`` (for example
    ``loss_fn(h, model.lm_head.weight, labels, model.lm_head.bias)``); bad
    scalars raise at construction already."""

    def __init__(self, class_weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0,
                 z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                 return_z_loss: bool = False, loss_dtype: Optional[torch.dtype] = None,
                 chunk_rows: int = 0, validate: bool = False):
        check_loss_scalars(label_smoothing, z_loss_scale, softcap)
        super().__init__()
        self.register_buffer("class_weight", class_weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing, self.z_loss_scale, self.softcap = (label_smoothing, z_loss_scale,
                                                                 softcap)
        self.return_z_loss, self.loss_dtype, self.chunk_rows = (return_z_loss, loss_dtype,
                                                                chunk_rows)
        self.validate = validate

    def forward(self, hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                bias: Optional[torch.Tensor] = None):
        return linear_cross_entropy(hidden, weight, target, bias, class_weight=self.class_weight,
                                    ignore_index=self.ignore_index, reduction=self.reduction,
                                    label_smoothing=self.label_smoothing,
                                    z_loss_scale=self.z_loss_scale, softcap=self.softcap,
                                    return_z_loss=self.return_z_loss, loss_dtype=self.loss_dtype,
                                    chunk_rows=self.chunk_rows, validate=self.validate)
