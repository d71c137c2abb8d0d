"""``xent.torch.linear_cross_entropy``: the output projection and the loss as
one call, differentiable with respect to the hidden states, the weight and
the bias (docs/linear-cross-entropy.md).

    loss = linear_cross_entropy(hidden, lm_head.weight, target, lm_head.bias)

is ``F.cross_entropy(F.linear(hidden, weight, bias), target, ...)`` without
the ``N x V`` logits in memory: the compiled ``xent.linear_cross_entropy_and_grad``
(xent.runtime.linear) computes the loss and all three gradients by row chunks
(cuBLASLt GEMMs and the fused kernels over each chunk's logits). For a
reduced loss the forward computes them for ``grad_output = 1`` and the
backward scales them by the incoming gradient (three small elementwise
passes, no GEMM); per element (``reduction="none"``) the weight's gradient
depends on each row's ``grad_output``, so the backward runs the op again with
it (the forward's gradients are dropped: twice the GEMMs of the reduced
case).
"""
from __future__ import annotations

from typing import Optional

import torch

from ..runtime import linear as _linear
from .ops import _scalar_one

__all__ = ["linear_cross_entropy"]


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, target, bias, class_weight, reduction, ignore_index,
                label_smoothing, z_loss_scale, softcap, chunk_rows):
        attrs = dict(reduction=reduction, ignore_index=ignore_index,
                     class_weight=class_weight, label_smoothing=label_smoothing,
                     z_loss_scale=z_loss_scale, softcap=softcap, chunk_rows=chunk_rows)
        per_row = reduction == "none"
        g = (torch.ones(target.shape, device=hidden.device, dtype=torch.float32) if per_row
             else _scalar_one(hidden.device))
        out = _linear.linear_cross_entropy_and_grad(hidden, weight, target, bias,
                                                    grad_output=g, **attrs)
        loss = out[0]
        z = out[1] if z_loss_scale else None
        grads = out[2:] if z_loss_scale else out[1:]
        ctx.per_row = per_row
        ctx.attrs = attrs
        ctx.has_bias = bias is not None
        if per_row:
            ctx.save_for_backward(hidden, weight, target, bias)
        else:
            ctx.save_for_backward(*grads)
        if z is None:
            z = torch.empty(0, device=hidden.device)
        ctx.mark_non_differentiable(z)
        return loss, z

    @staticmethod
    def backward(ctx, grad_loss, _grad_z):
        none = (None,) * 9
        if grad_loss is None:
            return (None, None) + none
        g = grad_loss.to(torch.float32)
        if ctx.per_row:
            hidden, weight, target, bias = ctx.saved_tensors
            out = _linear.linear_cross_entropy_and_grad(
                hidden, weight, target, bias, grad_output=g.contiguous(), **ctx.attrs)
            grads = list(out[2:] if ctx.attrs["z_loss_scale"] else out[1:])
        else:
            # The gradients are this node's own: scaled in place.
            grads = list(ctx.saved_tensors)
            for t in grads:
                t.mul_(g.to(t.dtype) if t.dtype != torch.float32 else g)
        d_hidden, d_weight = grads[0], grads[1]
        d_bias = grads[2] if ctx.has_bias else None
        return (d_hidden if ctx.needs_input_grad[0] else None,
                d_weight if ctx.needs_input_grad[1] else None, None,
                d_bias if ctx.needs_input_grad[3] else None) + (None,) * 7


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                         bias: Optional[torch.Tensor] = None,
                         class_weight: Optional[torch.Tensor] = None,
                         ignore_index: int = -100, reduction: str = "mean",
                         label_smoothing: float = 0.0, z_loss_scale: float = 0.0,
                         softcap: Optional[float] = None, return_z_loss: bool = False,
                         loss_dtype: Optional[torch.dtype] = None, chunk_rows: int = 0):
    """``F.cross_entropy(F.linear(hidden, weight, bias), target, weight=class_weight,
    ignore_index=..., reduction=..., label_smoothing=...)`` (plus xent's z-loss
    and softcap) without materializing the logits. `hidden` is ``[N, H]`` or
    ``[B, T, H]`` (bf16, f16 or f32, contiguous), `weight` ``[V, H]`` and
    `bias` ``[V]`` in its dtype, `target` int64 / int32 shaped like `hidden`
    without its last dim. The loss comes back in the hidden's dtype (as
    PyTorch's), or float32 with ``loss_dtype=torch.float32``; with
    ``return_z_loss`` also the z-loss part (not differentiable).
    `chunk_rows` 0 lets the pipeline size the row chunks."""
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
    hidden, weight = hidden.contiguous(), weight.contiguous()
    bias = bias.contiguous() if bias is not None else None
    cw = class_weight.to(torch.float32).contiguous() if class_weight is not None else None
    loss, z = _LinearCrossEntropy.apply(
        hidden, weight, target.contiguous(), bias, cw, reduction, int(ignore_index),
        float(label_smoothing), float(z_loss_scale), None if softcap is None else float(softcap),
        int(chunk_rows))
    out_dtype = loss_dtype or hidden.dtype
    loss = loss.to(out_dtype)
    if return_z_loss:
        return loss, (z.to(out_dtype) if z_loss_scale else torch.zeros_like(loss))
    return loss
