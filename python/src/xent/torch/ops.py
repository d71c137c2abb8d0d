"""The drop-in's kernels behind :mod:`xent.torch`: which compiled library a
call needs, and the autograd function that calls it.

:func:`config_for` checks a call's arguments as ``F.cross_entropy`` does and
names its kernel configuration (dtypes, rank, attributes, with or without
gradient, threads per block; :mod:`xent.runtime.kernels`); the library is
compiled once per configuration into a :class:`xent.runtime.gpu.KernelCache`
directory (``$XENT_CACHE_DIR``) and memoized per process.

:class:`CrossEntropyFunction`: when ``logits.requires_grad``, the forward
launches one fused kernel that writes the loss and the gradient for
``grad_output = 1`` (the joint op ``xent.cross_entropy_and_grad``); backward
then only scales it: a scalar ``grad_output`` is applied by a kernel that
returns at once when it is 1 (no pass over the N×V gradient, no device→host
read), a per-element one (``none``) by one fused multiply. Everything runs
on PyTorch's current stream without a synchronization, so calls are
CUDA-graph capturable.
"""

from __future__ import annotations

import os
from typing import Dict, Optional

import torch

from ..runtime import gpu
from ..runtime.kernels import (has_resident_path, kernel_config, kernel_module, pipeline_args,
                               threads_for)

__all__ = ["CrossEntropyFunction", "config_for"]

_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
           torch.int64: "i64", torch.int32: "i32"}
_REDUCTIONS = ("mean", "sum", "none")

_CACHE: Optional[gpu.KernelCache] = None


def _cache() -> gpu.KernelCache:
    global _CACHE
    if _CACHE is None:
        _CACHE = gpu.KernelCache(os.environ.get("XENT_CACHE_DIR"))
    return _CACHE


_LIBRARIES: Dict[tuple, gpu.GpuLibrary] = {}


def _library(config: Dict) -> gpu.GpuLibrary:
    # Memoized per configuration: the cache's lookup (a hash of the JSON
    # configuration) would otherwise be part of every call's host overhead.
    key = tuple(sorted(config.items()))
    lib = _LIBRARIES.get(key)
    if lib is None:
        opt = os.environ.get("XENT_OPT")
        lib = _LIBRARIES[key] = _cache().get(config, lambda: kernel_module(config),
                                             pipeline_args=pipeline_args(config), opt_tool=opt)
    return lib


def config_for(logits: torch.Tensor, target: torch.Tensor, weight, reduction, ignore_index,
               label_smoothing, z_loss_scale, softcap, with_grad) -> Dict:
    """The kernel configuration of one call; raises as ``F.cross_entropy`` on bad arguments."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise TypeError(f"xent: unsupported logits dtype {logits.dtype}")
    if logits.dim() == 0:
        raise ValueError("xent: logits must have at least one dimension")
    probs = target.is_floating_point()
    if probs:
        if target.shape != logits.shape:
            raise ValueError("xent: probability targets must have the logits' shape")
        tgt = "probs"
    else:
        if target.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"xent: unsupported target dtype {target.dtype}")
        expected = logits.shape[:1] + logits.shape[2:] if logits.dim() > 1 else torch.Size([])
        if target.shape != expected:
            raise ValueError(f"xent: target shape {tuple(target.shape)} does not match "
                             f"{tuple(expected)}")
        tgt = _DTYPES[target.dtype]
    if weight is not None and (weight.dim() != 1 or weight.numel() != logits.shape[
            1 if logits.dim() > 1 else 0]):
        raise ValueError("xent: weight must be a 1-D tensor with one entry per class")
    attrs = dict(dtype=_DTYPES[logits.dtype], target=tgt, rank=logits.dim(),
                 weighted=weight is not None, reduction=reduction, ignore_index=ignore_index,
                 label_smoothing=label_smoothing, z_loss_scale=z_loss_scale, softcap=softcap,
                 with_grad=with_grad)
    classes = logits.shape[1 if logits.dim() > 1 else 0]
    threads = threads_for(attrs["dtype"], classes, has_resident_path(**attrs))
    return kernel_config(**attrs, threads=threads)


_ONES: Dict[torch.device, torch.Tensor] = {}


def _scalar_one(device) -> torch.Tensor:
    """A cached f32 1.0 on `device`: grad_output of the forward's joint call
    (only read by the kernel)."""
    one = _ONES.get(device)
    if one is None:
        one = torch.ones((), device=device, dtype=torch.float32)
        if not torch.cuda.is_current_stream_capturing():  # not from a graph's pool
            _ONES[device] = one
    return one


class CrossEntropyFunction(torch.autograd.Function):
    """Loss and z-loss of ``logits`` in their dtype; differentiable in ``logits``.

    ``apply(logits, target, weight, config, return_z)`` with ``config`` from
    :func:`config_for` (its ``with_grad`` decides whether the forward also
    writes the gradient)."""

    @staticmethod
    def forward(ctx, logits, target, weight, config, return_z):
        # Views are passed as they are (no copy): the kernels read through
        # the strides, with 16-byte loads wherever a row is contiguous and
        # aligned.
        lib = _library(config)
        reduced = config["reduction"] != "none"
        out_shape = () if reduced else (logits.shape[:1] + logits.shape[2:]
                                        if logits.dim() > 1 else ())
        loss = torch.empty(out_shape, device=logits.device, dtype=torch.float32)
        z = torch.empty(out_shape, device=logits.device, dtype=torch.float32)
        args = [logits, target]
        if weight is not None:
            args.append(weight.to(torch.float32))
        if config["with_grad"]:
            ones = (_scalar_one(logits.device) if reduced else
                    torch.ones(out_shape, device=logits.device, dtype=torch.float32))
            # Dense (backward flattens it), whatever the logits' strides.
            dx = torch.empty(logits.shape, device=logits.device, dtype=logits.dtype)
            lib.tensor_call("xent_entry")(*args, ones, loss, z, dx)
            ctx.save_for_backward(dx)
            ctx.reduced = reduced
            ctx.lib = lib
        else:
            lib.tensor_call("xent_entry")(*args, loss, z)
        loss, z = loss.to(logits.dtype), z.to(logits.dtype)
        ctx.mark_non_differentiable(z)
        return loss, z

    @staticmethod
    def backward(ctx, grad_loss, grad_z):
        (dx,) = ctx.saved_tensors
        if ctx.reduced:
            g = grad_loss.to(torch.float32).contiguous()
            ctx.lib.tensor_call("xent_scale_grad")(dx.view(-1), g)
        else:
            g = grad_loss.to(torch.float32)
            if dx.dim() > 1:
                g = g.unsqueeze(1)
            dx.mul_(g.to(dx.dtype) if dx.dtype != torch.float32 else g)
        return dx, None, None, None, None
