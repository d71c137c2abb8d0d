"""The drop-in's kernels behind :mod:`xent.torch`, as PyTorch operators.

:func:`config_for` checks a call's arguments as ``F.cross_entropy`` does and
names its kernel configuration (dtypes, rank, attributes, with or without
gradient, threads per block; :mod:`xent.runtime.kernels`); the library is
compiled once per configuration into a :class:`xent.runtime.gpu.KernelCache`
directory (``$XENT_CACHE_DIR``) and memoized per process.

Five operators in the ``xent`` namespace (``torch.library.custom_op``), each
with a fake implementation, so that ``torch.compile`` traces them without a
graph break, ``torch.export`` exports them and ``torch.library.opcheck``
checks them:

- ``xent::cross_entropy_with_grad``: one fused kernel writes the loss, the
  z-loss and the gradient for ``grad_output = 1`` (the joint op
  ``xent.cross_entropy_and_grad``). Its autograd formula only scales that
  gradient: in eager mode in place (the gradient output is the formula's
  own; xent.torch never hands it out), in a traced graph as a new value the
  compiler fuses;
- ``xent::cross_entropy``: the loss and z-loss alone, from one read of the
  logits. Differentiable: its autograd formula calls
- ``xent::cross_entropy_backward``: the joint kernel with the backward's
  grad_output, so the gradient is written once, already scaled. Traced graphs
  (torch.compile, torch.export) take this pair, where grad_output is a value
  of the graph (a sum divided by a token count): one read in the forward,
  one read and one write in the backward, against the joint kernel's read
  and write and the graph's scaling of its gradient (another read and
  write);
- ``xent::cross_entropy_rows``: the loss with the per-row outputs (lse,
  argmax, accuracy) and, asked for, the joint kernel's gradient;
- ``xent::scale_grad_``: multiplies a gradient in place by a scalar
  ``grad_output`` on the device; the kernel returns at once when it is 1
  (no pass over the N×V gradient, no device→host read).

Everything runs on PyTorch's current stream without a synchronization, so
calls are CUDA-graph capturable.
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

import torch
from torch._subclasses.fake_tensor import is_fake

from ..runtime import bundle, gpu
from ..runtime import kernels as _kernels
from . import native as _native_ext
from ._checks import check_loss_scalars
from ..runtime.kernels import (entry_name, kernel_config, kernel_module, library_config,
                               pipeline_args)

__all__ = ["config_for", "cross_entropy", "cross_entropy_rows", "cross_entropy_with_grad",
           "eager", "in_place_allowed", "native", "scale_grad_"]

# The per-row outputs a call may ask for, in the entry function's order
# (xent.runtime.kernels.ROW_OUTPUTS): lse, argmax (predicted tokens),
# accuracy.
_NO_ROWS = (False, False, False)

_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
           torch.int64: "i64", torch.int32: "i32"}
_REDUCTIONS = ("mean", "sum", "none")

_CACHE: Optional[gpu.KernelCache] = None


def _cache() -> gpu.KernelCache:
    global _CACHE
    if _CACHE is None:
        # $XENT_CACHE_DIR, then the kernels installed with the package.
        _CACHE = bundle.kernel_cache()
    return _CACHE


_LIBRARIES: Dict[tuple, gpu.GpuLibrary] = {}


def _library(config: Dict) -> gpu.GpuLibrary:
    # Memoized per configuration: the cache's lookup (a hash of the JSON
    # configuration) would otherwise be part of every call's host overhead.
    # A runtime-dispatch configuration is one entry (entry_name) of the
    # library of its dtype, target kind, rank and gradient.
    if config.get("runtime_dispatch"):
        config = library_config(config)
    key = tuple(sorted(config.items()))
    lib = _LIBRARIES.get(key)
    if lib is None:
        opt = os.environ.get("XENT_OPT")
        lib = _LIBRARIES[key] = _cache().get(config, lambda: kernel_module(config),
                                             pipeline_args=pipeline_args(config), opt_tool=opt)
    return lib


def config_for(logits: torch.Tensor, target: torch.Tensor, weight, reduction, ignore_index,
               label_smoothing, z_loss_scale, softcap, with_grad, rows=_NO_ROWS,
               runtime_scalars: bool = False, in_place: bool = False,
               f32_loss: bool = False) -> Dict:
    """The kernel configuration of one call; raises as ``F.cross_entropy`` on
    bad arguments. The kernel writes the loss in the logits' dtype, or in
    f32 with `f32_loss` (_loss_dtype). With `runtime_scalars` (every call
    but those under XENT_RUNTIME_SCALARS=0) the library is the one of the
    call's signature (kernel_config's ``runtime_dispatch``): the values are
    arguments, and the library's host code picks the kernel for the row
    length, the features in use and `in_place` (a gradient written over the
    logits) at run time; otherwise one library per value and per
    `in_place`. The loss's scalars are checked here too
    (:func:`xent.torch._checks.check_loss_scalars`; no tensor data is read,
    so the fake implementations check them as well)."""
    check_loss_scalars(label_smoothing, z_loss_scale, softcap)
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
    if rows[2] and probs:
        raise ValueError("xent: return_token_accuracy needs class-index targets")
    return kernel_config(**attrs, return_lse=rows[0], return_argmax=rows[1],
                         return_accuracy=rows[2], runtime_scalars=runtime_scalars,
                         two_pass=in_place and with_grad, runtime_dispatch=runtime_scalars,
                         loss_dtype=_DTYPES[_loss_dtype(logits, f32_loss)])


def _loss_dtype(logits: torch.Tensor, f32_loss: bool) -> torch.dtype:
    """The loss's dtype: the logits', or float32 with `f32_loss`."""
    return torch.float32 if f32_loss else logits.dtype


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


def _element_shape(logits: torch.Tensor, reduction: str):
    """The shape of the loss: a scalar when reduced, else the logits' without
    the class axis."""
    if reduction != "none":
        return ()
    return logits.shape[:1] + logits.shape[2:] if logits.dim() > 1 else ()


# The library holding xent_scale_grad for each gradient dtype: that of the
# last forward with gradient, or of a canonical configuration.
_SCALE_LIBRARIES: Dict[torch.dtype, gpu.GpuLibrary] = {}


def _scale_library(dtype: torch.dtype) -> gpu.GpuLibrary:
    lib = _SCALE_LIBRARIES.get(dtype)
    if lib is None:
        lib = _SCALE_LIBRARIES[dtype] = _library(kernel_config(
            dtype=_DTYPES[dtype], target="i64", rank=2, weighted=False, reduction="mean",
            ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
            with_grad=True, runtime_scalars=_RUNTIME_SCALARS,
            runtime_dispatch=_RUNTIME_SCALARS))
    return lib


_NATIVE: list = []


def native():
    """``torch.ops.xent_native`` (the C++ launch path, :mod:`xent.torch.native`)
    or None: the ctypes path."""
    if not _NATIVE:
        _NATIVE.append(_native_ext.load())
    return _NATIVE[0]


_HANDLES: Dict[tuple, int] = {}

# XENT_RUNTIME_SCALARS=0: one library per attribute value (and no run-time
# dispatch), for comparisons.
_RUNTIME_SCALARS = os.environ.get("XENT_RUNTIME_SCALARS", "1") != "0"


def _scalar_args(config, ignore_index, label_smoothing, z_loss_scale, softcap):
    """A call's run-time values for `config`: (ignore_index or None, [the
    present f32 values in the order label smoothing, z-loss scale,
    softcap]; 0 for a feature not used, a softcap of 0 is none); (None, [])
    for a library that bakes them in."""
    if not config.get("runtime_scalars"):
        return (None, [])
    floats = [float(v or 0.0) for key, v in (("label_smoothing", label_smoothing),
                                             ("z_loss_scale", z_loss_scale),
                                             ("softcap", softcap))
              if config[key]]
    ii = int(ignore_index) if config["ignore_index"] is not None else None
    return (ii, floats)


def _ctypes_scalars(ignore_index, floats) -> tuple:
    """The run-time values of _scalar_args as the ctypes path passes them
    after the tensors."""
    import ctypes
    head = () if ignore_index is None else (ctypes.c_int64(ignore_index),)
    return head + tuple(ctypes.c_float(v) for v in floats)


def _handle(lib: gpu.GpuLibrary, name: str) -> int:
    """The native path's handle for ``@name`` of `lib`; -1 when the library
    has no such function."""
    key = (lib.path, name)
    handle = _HANDLES.get(key)
    if handle is None:
        handle = (native().register(lib.runtime.path, lib.path, name)
                  if lib.has_function(name) else -1)
        _HANDLES[key] = handle
    return handle


# What a call's signature (shapes, dtypes, attributes) needs: its library,
# the loss's shape and, on the native path, the handles of its entry point
# and of its gradient scaling; checked (config_for) on the first call of a
# signature.
_PLANS: Dict[tuple, tuple] = {}


def _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
               softcap, with_grad, rows=_NO_ROWS, in_place=False, f32_loss=False):
    # The values are run-time arguments of the library of the call's
    # signature (kernels.call_configs), on the native and the ctypes path;
    # XENT_RUNTIME_SCALARS=0 bakes them in, which is part of the key.
    runtime = _RUNTIME_SCALARS
    key = _signature(logits, target, weight, reduction, ignore_index, label_smoothing,
                     z_loss_scale, softcap, with_grad, rows, runtime, in_place, f32_loss)
    plan = _PLANS.get(key)
    if plan is None:
        config = config_for(logits, target, weight, reduction, ignore_index, label_smoothing,
                            z_loss_scale, softcap, with_grad, rows, runtime, in_place, f32_loss)
        lib = _library(config)
        entry = entry_name(config)
        handles = (tuple(_handle(lib, f) for f in (entry, "xent_scale_grad",
                                                    "xent_scale_grad_dt"))
                   if native() is not None else (-1, -1, -1))
        scalars = _scalar_args(config, ignore_index, label_smoothing, z_loss_scale, softcap)
        # (library, loss shape, native handles of the entry and the scaling
        # functions, the two scalar groups, the entry's name)
        plan = _remember(_PLANS, key, (lib, _element_shape(logits, reduction)) + handles
                         + scalars + (entry,))
    return plan


def _signature(logits, target, weight, *attributes) -> tuple:
    """The key of a call's memoized plan or eager call: the tensors' shapes
    and dtypes, the other arguments, and the kernels' resident-rows switch."""
    return (logits.shape, logits.dtype, target.shape, target.dtype,
            None if weight is None else weight.shape, *attributes, _kernels.RESIDENT_ROWS)


def _remember(cache: Dict, key: tuple, value):
    """`value` memoized in `cache` under `key` (at most 256 entries: a
    program that keeps changing shapes starts over rather than grows)."""
    if len(cache) >= 256:
        cache.clear()
    cache[key] = value
    return value


def _call_entry(plan, args) -> None:
    """The entry point of a call plan (_call_plan) on `args`, tensors the
    caller allocated, and the plan's run-time values: through the native
    path, else ctypes."""
    nat = native()
    if nat is not None:
        nat.call(plan[2], args, plan[5], plan[6])
    else:
        plan[0].tensor_call(plan[7])(*args, scalars=_ctypes_scalars(plan[5], plan[6]))


def _launch(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
            softcap, dlogits, f32_loss=False):
    """Runs the configuration's kernel; the loss (in the logits' dtype, or
    f32 with `f32_loss`, as the kernel writes it) and the z-loss in the
    logits' dtype, and, when `dlogits` is given, the gradient for
    grad_output = 1 written into it."""
    with_grad = dlogits is not None
    plan = _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing,
                      z_loss_scale, softcap, with_grad, f32_loss=f32_loss)
    lib, shape, scalars = plan[0], plan[1], _ctypes_scalars(plan[5], plan[6])
    loss = torch.empty(shape, device=logits.device, dtype=_loss_dtype(logits, f32_loss))
    z = torch.empty(shape, device=logits.device, dtype=torch.float32)
    # Views are passed as they are (no copy): the kernels read through the
    # strides, with 16-byte loads wherever a row is contiguous and aligned.
    args = [logits, target]
    if weight is not None:
        args.append(weight.to(torch.float32))
    if with_grad:
        ones = (_scalar_one(logits.device) if reduction != "none" else
                torch.ones(shape, device=logits.device, dtype=torch.float32))
        lib.tensor_call(plan[7])(*args, ones, loss, z, dlogits, scalars=scalars)
        _SCALE_LIBRARIES[logits.dtype] = lib
    else:
        lib.tensor_call(plan[7])(*args, loss, z, scalars=scalars)
    return loss, z.to(logits.dtype)


@torch.library.custom_op("xent::cross_entropy_with_grad", mutates_args=(), device_types="cuda")
def cross_entropy_with_grad(logits: torch.Tensor, target: torch.Tensor,
                            weight: Optional[torch.Tensor], reduction: str, ignore_index: int,
                            label_smoothing: float, z_loss_scale: float,
                            softcap: Optional[float], f32_loss: bool = False
                            ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss, z-loss and the gradient of the loss for grad_output = 1 (dense,
    the logits' shape and dtype); the loss in float32 with `f32_loss`, else
    in the logits' dtype."""
    nat = native()
    if nat is not None:
        plan = _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing,
                          z_loss_scale, softcap, True, f32_loss=f32_loss)
        return nat.forward_with_grad(plan[2], logits, target, weight, reduction != "none", True,
                                     f32_loss, plan[5], plan[6])
    # Dense, whatever the logits' strides (backward flattens it).
    dlogits = torch.empty(logits.shape, device=logits.device, dtype=logits.dtype)
    loss, z = _launch(logits, target, weight, reduction, ignore_index, label_smoothing,
                      z_loss_scale, softcap, dlogits, f32_loss)
    return loss, z, dlogits


@cross_entropy_with_grad.register_fake
def _(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale, softcap,
      f32_loss=False):
    config_for(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
               softcap, True, f32_loss=f32_loss)
    shape = _element_shape(logits, reduction)
    return (logits.new_empty(shape, dtype=torch.float32 if f32_loss else logits.dtype),
            logits.new_empty(shape),
            torch.empty_like(logits, memory_format=torch.contiguous_format))


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(output[2])
    ctx.reduced = inputs[3] != "none"
    ctx.mark_non_differentiable(output[1], output[2])


_SECOND_BACKWARD = ("xent: a second backward through the same xent cross-entropy loss "
                    "(retain_graph=True) is not supported: the first one scaled the "
                    "gradient it kept in place. Call the loss again for another backward.")


def _tracing(t: torch.Tensor) -> bool:
    return torch.compiler.is_compiling() or is_fake(t)


def _backward(ctx, grad_loss, grad_z, grad_dlogits):
    (dx,) = ctx.saved_tensors
    g = grad_loss.to(torch.float32)
    if not ctx.reduced and dx.dim() > 1:
        g = g.unsqueeze(1)
    if _tracing(dx):
        # A graph (torch.compile, export): the scaled gradient as a new value,
        # which the compiler fuses and places like any pointwise op.
        return ((dx.to(torch.float32) * g).to(dx.dtype), None, None, None, None, None, None,
                None, None)
    # Eager: the gradient is this formula's own (xent.torch never hands it
    # out), so it is scaled in place; a scalar grad_output of 1 costs no pass
    # over it. A second backward (retain_graph=True) would scale it again,
    # and with it the gradient the first one returned: refused.
    if getattr(ctx, "consumed", False):
        raise RuntimeError(_SECOND_BACKWARD)
    ctx.consumed = True
    if ctx.reduced:
        # The operator's implementation, without a second dispatch.
        _scale_grad(dx, g.contiguous())
    else:
        dx.mul_(g.to(dx.dtype) if dx.dtype != torch.float32 else g)
    return dx, None, None, None, None, None, None, None, None


cross_entropy_with_grad.register_autograd(_backward, setup_context=_setup_context)


@torch.library.custom_op("xent::cross_entropy", mutates_args=(), device_types="cuda")
def cross_entropy(logits: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor],
                  reduction: str, ignore_index: int, label_smoothing: float,
                  z_loss_scale: float, softcap: Optional[float],
                  f32_loss: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Loss and z-loss, no gradient (the loss in float32 with `f32_loss`)."""
    nat = native()
    if nat is not None:
        plan = _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing,
                          z_loss_scale, softcap, False, f32_loss=f32_loss)
        return nat.forward(plan[2], logits, target, weight, reduction != "none", True, f32_loss,
                           plan[5], plan[6])
    return _launch(logits, target, weight, reduction, ignore_index, label_smoothing,
                   z_loss_scale, softcap, None, f32_loss)


@cross_entropy.register_fake
def _(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale, softcap,
      f32_loss=False):
    config_for(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
               softcap, False, f32_loss=f32_loss)
    shape = _element_shape(logits, reduction)
    return (logits.new_empty(shape, dtype=torch.float32 if f32_loss else logits.dtype),
            logits.new_empty(shape))


def _forward_setup_context(ctx, inputs, output):
    logits, target, weight = inputs[:3]
    ctx.save_for_backward(logits, target, weight)
    ctx.attributes = inputs[3:]
    ctx.mark_non_differentiable(output[1])


def _forward_backward(ctx, grad_loss, grad_z):
    logits, target, weight = ctx.saved_tensors
    dx = None
    if grad_loss is not None and ctx.needs_input_grad[0]:
        dx = torch.ops.xent.cross_entropy_backward(grad_loss, logits, target, weight,
                                                   *ctx.attributes)
    return dx, None, None, None, None, None, None, None, None


# Differentiable where a graph calls it (xent.torch.cross_entropy under
# torch.compile or torch.export): the backward is the joint kernel with the
# graph's grad_output, cross_entropy_backward.
cross_entropy.register_autograd(_forward_backward, setup_context=_forward_setup_context)


@torch.library.custom_op("xent::cross_entropy_backward", mutates_args=(), device_types="cuda")
def cross_entropy_backward(grad_loss: torch.Tensor, logits: torch.Tensor, target: torch.Tensor,
                           weight: Optional[torch.Tensor], reduction: str, ignore_index: int,
                           label_smoothing: float, z_loss_scale: float,
                           softcap: Optional[float], f32_loss: bool = False) -> torch.Tensor:
    """The gradient of ``xent::cross_entropy``'s loss for `grad_loss` (the
    loss's shape; dense, the logits' shape and dtype): the joint kernel with
    grad_output = `grad_loss` (one read of the logits, one write of the
    gradient, already scaled; the loss it also writes is dropped)."""
    plan = _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing,
                      z_loss_scale, softcap, True, f32_loss=f32_loss)
    shape = plan[1]
    dev = logits.device
    g = grad_loss.to(torch.float32).expand(shape).contiguous()
    loss = torch.empty(shape, device=dev, dtype=_loss_dtype(logits, f32_loss))
    z = torch.empty(shape, device=dev, dtype=torch.float32)
    dlogits = torch.empty(logits.shape, device=dev, dtype=logits.dtype)
    args = [logits, target] + ([] if weight is None else [weight.to(torch.float32)])
    _call_entry(plan, args + [g, loss, z, dlogits])
    return dlogits


@cross_entropy_backward.register_fake
def _(grad_loss, logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
      softcap, f32_loss=False):
    config_for(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
               softcap, True, f32_loss=f32_loss)
    return torch.empty_like(logits, memory_format=torch.contiguous_format)


def _scale_grad(dlogits: torch.Tensor, grad_output: torch.Tensor) -> None:
    lib = _scale_library(dlogits.dtype)
    nat = native()
    if nat is not None:
        nat.scale_grad_(_handle(lib, "xent_scale_grad"), dlogits, grad_output)
    else:
        lib.tensor_call("xent_scale_grad")(dlogits.view(-1), grad_output)


def _rows_layout(logits, reduction, rows):
    """The buffers of the per-row outputs asked for: lse (f32) and argmax
    (i64) per element, accuracy (f32) reduced like the loss."""
    per_element = _element_shape(logits, "none")
    reduced = _element_shape(logits, reduction)
    return [(per_element, torch.float32), (per_element, torch.int64),
            (reduced, torch.float32)], [r for r in rows]


@torch.library.custom_op("xent::cross_entropy_rows", mutates_args=(), device_types="cuda")
def cross_entropy_rows(logits: torch.Tensor, target: torch.Tensor,
                       weight: Optional[torch.Tensor], reduction: str, ignore_index: int,
                       label_smoothing: float, z_loss_scale: float, softcap: Optional[float],
                       f32_loss: bool, return_lse: bool, return_argmax: bool,
                       return_accuracy: bool, with_grad: bool
                       ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                  torch.Tensor, torch.Tensor]:
    """Loss, z-loss, the per-row outputs (lse, argmax, accuracy; an empty
    tensor for each not asked for) and, with `with_grad`, the gradient for
    grad_output = 1 (else an empty tensor), in one kernel call."""
    rows = (return_lse, return_argmax, return_accuracy)
    if return_accuracy and target.is_floating_point():
        raise ValueError("xent: return_token_accuracy needs class-index targets")
    # The libraries of the package compute every per-row output (accuracy
    # with class indices); the ones not asked for are dropped.
    computed = rows
    if _RUNTIME_SCALARS and any(rows):
        computed = (True, True, not target.is_floating_point())
    plan = _call_plan(logits, target, weight, reduction, ignore_index, label_smoothing,
                      z_loss_scale, softcap, with_grad, computed, f32_loss=f32_loss)
    shape = plan[1]
    dev = logits.device
    loss = torch.empty(shape, device=dev, dtype=_loss_dtype(logits, f32_loss))
    z = torch.empty(shape, device=dev, dtype=torch.float32)
    layout, wanted = _rows_layout(logits, reduction, computed)
    extras = [torch.empty(s_, device=dev, dtype=d_) if w_ else torch.empty(0, device=dev, dtype=d_)
              for (s_, d_), w_ in zip(layout, wanted)]
    dlogits = (torch.empty(logits.shape, device=dev, dtype=logits.dtype) if with_grad
               else torch.empty(0, device=dev, dtype=logits.dtype))
    args = [logits, target]
    if weight is not None:
        args.append(weight.to(torch.float32))
    if with_grad:
        args.append(_scalar_one(dev) if reduction != "none" else
                    torch.ones(shape, device=dev, dtype=torch.float32))
    args += [loss, z] + [e for e, w_ in zip(extras, wanted) if w_]
    if with_grad:
        args.append(dlogits)
    _call_entry(plan, args)
    extras = [e if asked else e.new_empty(0) for e, asked in zip(extras, rows)]
    return loss, z.to(logits.dtype), extras[0], extras[1], extras[2], dlogits


@cross_entropy_rows.register_fake
def _(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale, softcap,
      f32_loss, return_lse, return_argmax, return_accuracy, with_grad):
    rows = (return_lse, return_argmax, return_accuracy)
    config_for(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
               softcap, with_grad, rows, f32_loss=f32_loss)
    shape = _element_shape(logits, reduction)
    layout, wanted = _rows_layout(logits, reduction, rows)
    extras = [logits.new_empty(s_ if w_ else (0,), dtype=d_)
              for (s_, d_), w_ in zip(layout, wanted)]
    dlogits = (torch.empty_like(logits, memory_format=torch.contiguous_format) if with_grad
               else logits.new_empty((0,)))
    return (logits.new_empty(shape, dtype=torch.float32 if f32_loss else logits.dtype),
            logits.new_empty(shape), *extras, dlogits)


def _rows_setup_context(ctx, inputs, output):
    ctx.save_for_backward(output[5])
    ctx.reduced = inputs[3] != "none"
    ctx.with_grad = inputs[12]
    ctx.mark_non_differentiable(*output[1:])


def _rows_backward(ctx, grad_loss, *_):
    if not ctx.with_grad:
        dx = None
    else:
        dx = _backward(ctx, grad_loss, None, None)[0]
    return (dx,) + (None,) * 12


cross_entropy_rows.register_autograd(_rows_backward, setup_context=_rows_setup_context)


# The eager calls by signature: a function of (logits, target, weight)
# that calls the C++ operator's overload with everything else bound. The
# plan, the per-element forward's library and the overload are looked up
# once per signature, not per call (the Python layers in front of the C++
# operator cost more host time than the operator's own work).
_EAGER: Dict[tuple, object] = {}


def eager(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
          softcap, with_grad, want_z, f32_loss=False, in_place=False):
    """An eager call on the native path (``native()`` is not None): loss and
    z-loss (in f32 unless `want_z`), differentiable through the C++ autograd
    formula when `with_grad`; with `in_place` (the caller checked
    :func:`in_place_allowed`) the gradient is written over the logits."""
    in_place = in_place and with_grad
    key = _signature(logits, target, weight, reduction, ignore_index, label_smoothing,
                     z_loss_scale, softcap, with_grad, want_z, f32_loss, in_place)
    call = _EAGER.get(key)
    if call is None:
        call = _remember(_EAGER, key, _eager_call(
            logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
            softcap, with_grad, want_z, f32_loss, in_place))
    return call(logits, target, weight)


def _eager_call(logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
                softcap, with_grad, want_z, f32_loss, in_place):
    _, _, fn, scale_fn, scale_dt_fn, ii, floats, _ = _call_plan(
        logits, target, weight, reduction, ignore_index, label_smoothing, z_loss_scale,
        softcap, with_grad, in_place=in_place, f32_loss=f32_loss)
    reduced = reduction != "none"
    ops_ = torch.ops.xent_native
    if with_grad:
        # Per element the forward computes the loss alone (the library
        # without gradient) and the backward the gradient with its per-row
        # grad_output in one pass: no kept gradient to scale.
        forward_fn = -1
        if not reduced:
            forward_fn = _call_plan(logits, target, weight, reduction, ignore_index,
                                    label_smoothing, z_loss_scale, softcap, False,
                                    f32_loss=f32_loss)[2]
        op = ops_.loss.default
        return lambda x, t, w: op(fn, scale_fn, scale_dt_fn, x, t, w, reduced, want_z, f32_loss,
                                  ii, floats, forward_fn, in_place)
    op = ops_.forward.default
    return lambda x, t, w: op(fn, x, t, w, reduced, want_z, f32_loss, ii, floats)


def in_place_allowed(logits: torch.Tensor) -> bool:
    """Whether the gradient may be written over `logits`: dense logits that
    need a gradient and whose memory belongs to the result of an operation
    (themselves or the base of their view), never to a leaf that requires
    grad (autograd forbids writing those in place). The write is not a
    differentiable step (nothing is rebased: the logits' new contents are
    the gradient, not a value of the graph), and every node that saved the
    logits or their base is protected by the version counter the call
    bumps."""
    if not (logits.requires_grad and logits.is_contiguous()):
        return False
    base = logits._base if logits._is_view() else logits
    return not base.is_leaf


@torch.library.custom_op("xent::scale_grad_", mutates_args=("dlogits",), device_types="cuda")
def scale_grad_(dlogits: torch.Tensor, grad_output: torch.Tensor) -> None:
    """``dlogits *= grad_output`` for a dense gradient and a 0-d f32 factor."""
    if grad_output.dim() != 0 or grad_output.dtype != torch.float32:
        raise ValueError("xent::scale_grad_ takes a 0-d float32 grad_output")
    if not dlogits.is_contiguous():
        raise ValueError("xent::scale_grad_ takes a contiguous dlogits")
    _scale_grad(dlogits, grad_output.contiguous())


@scale_grad_.register_fake
def _(dlogits, grad_output):
    return None
