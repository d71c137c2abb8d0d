"""Vocabulary-parallel cross-entropy over ``torch.distributed``.

Each rank of ``group`` holds a slice of the classes: logits ``(N, V_r)`` (or
``(N, V_r, d1, ...)``, ``(V_r,)``) for classes ``[offset_r, offset_r + V_r)``
of C. The loss is identical on every rank and each rank gets the gradient of
its own slice, with the semantics of :func:`xent.torch.cross_entropy` (class
weights, ``ignore_index``, label smoothing over all C classes, z-loss,
softcap, the three reductions, probability targets):

    loss = vocab_parallel_cross_entropy(logits_shard, target, group,
                                        label_smoothing=0.1)
    loss.backward()   # logits_shard.grad: this rank's slice of dlogits

The per-row protocol is docs/scale-out.md's (the one the ``shard`` dialect
partitions ``xent.cross_entropy`` with):

1. each rank reduces its slice of every row to ``m`` (max), ``s`` (Σ exp(x -
   m)), ``x_t`` (the target's logit, 0 where another rank holds it) and, for
   label smoothing or probability targets, ``g`` = Σ f_c (m - x_c) and
   ``W`` = Σ f_c (f_c = w_c, or w_c q'_c);
2. one merge over the group: ``merge="all_reduce"`` all-reduces the max and
   then one packed sum of the rescaled (s, x_t, g, W) (Megatron's two
   collectives), ``merge="all_gather"`` gathers the five values of every rank
   and merges them locally (TransformerEngine's one collective);
3. the loss comes from the merged statistics (per row, in float64); the
   gradient of each slice needs nothing more: ``p_c = exp(x_c - M) / S`` with
   the row's global max M and sum S.

No host synchronization (nothing is read back); the backward uses no
collective (the loss is replicated, so is its gradient).

On CUDA, with class-index targets, each step of the slice is one xent
kernel (xent.runtime.slices, in the package's bundle): the statistics
read the slice once (``xent.cross_entropy ... class_offset num_classes
{return_row_stats}``), the gradient reads it once more and writes it
(``xent.cross_entropy_grad ... row_stats class_offset num_classes``); the
offset, C and every scalar are run-time values. Probability targets, CPU
tensors, a differentiated ``z_loss`` output beside the loss (its own
gradient scale) and ``XENT_VOCAB_KERNELS=0`` take the same steps as PyTorch
operations (a few in-place passes over an f32 copy of the slice). The
collectives carry 3 floats per row and rank, 5 with the smoothing sums.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

import torch
import torch.distributed as dist

from ..runtime import slices as _slices
from ._checks import check_loss_scalars, check_targets, validation_on
from .ops import _REDUCTIONS

__all__ = ["vocab_parallel_cross_entropy", "VocabParallelCrossEntropyLoss"]

_MERGES = ("all_reduce", "all_gather")


def _layout(group) -> Tuple[int, int]:
    """(rank, world size) of ``group``; (0, 1) without torch.distributed."""
    if group is None and not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def _rows(x: torch.Tensor, axis: int) -> torch.Tensor:
    """``x`` as rows ``(R, V)`` with the class axis last."""
    x = x.movedim(axis, -1)
    return x.reshape(-1, x.shape[-1])


def _shift(m: torch.Tensor) -> torch.Tensor:
    """The max a slice's sums are taken relative to: m, or 0 where the slice
    has no finite max (every logit -inf: its Σ exp is 0)."""
    return torch.where(torch.isneginf(m), torch.zeros_like(m), m)


def _capped(x: torch.Tensor, softcap: Optional[float]) -> torch.Tensor:
    x = x.float()
    return x if softcap is None else softcap * torch.tanh(x / softcap)


class _Problem:
    """What both passes need: the slice as rows, its place among the classes,
    the targets and the class factors f_c of the smoothing sums."""

    def __init__(self, logits, target, weight, offset, num_classes, ignore_index,
                 label_smoothing, softcap):
        self.axis = 0 if logits.dim() == 1 else 1
        self.probs = target.is_floating_point()
        self.offset, self.num_classes, self.ignore_index = offset, num_classes, ignore_index
        self.eps, self.softcap = label_smoothing, softcap
        self.width = logits.shape[self.axis]
        self.device = logits.device
        if weight is not None:
            # The slice's own class weights.
            self.weight_slice = weight.narrow(0, offset, self.width).float()
        else:
            self.weight_slice = None
        if self.probs:
            self.q = _rows(target, self.axis).float()
        else:
            t = target.reshape(-1).long()
            self.t = t
            self.kept = t != ignore_index
            self.valid = (t >= 0) & (t < num_classes)
            local = (t >= offset) & (t < offset + self.width)
            self.local = local
            self.t_local = torch.where(local, t - offset, torch.zeros_like(t))
            safe = torch.where(self.valid, t, torch.zeros_like(t))
            self.w_t = (weight.float()[safe] if weight is not None
                        else torch.ones_like(t, dtype=torch.float32))

    def use_kernels(self, logits: torch.Tensor) -> bool:
        """Whether the slice's steps run as xent kernels (the module's
        docstring says when)."""
        return (logits.is_cuda and not self.probs
                and logits.dtype in (torch.float32, torch.bfloat16, torch.float16)
                and os.environ.get("XENT_VOCAB_KERNELS", "1") != "0")

    def factors(self) -> Optional[torch.Tensor]:
        """f_c of the smoothing / probability sums ((R, V) or (1, V)), None
        when the loss has no such sum."""
        if self.probs:
            q = self.q * (1.0 - self.eps) + self.eps / self.num_classes
            return q if self.weight_slice is None else q * self.weight_slice
        if self.eps == 0.0:
            return None
        if self.weight_slice is None:
            return torch.ones((1, self.width), device=self.device)
        return self.weight_slice.unsqueeze(0)


def _statistics(x: torch.Tensor, prob: _Problem, scratch: bool) -> torch.Tensor:
    """Per row of this slice: (m, s, x_t, g, W), float32, (R, 5). ``x`` is
    overwritten when ``scratch`` (a copy made for this call)."""
    m = x.amax(dim=1)
    shift = _shift(m)
    zeros = torch.zeros_like(m)
    if prob.probs:
        xt = zeros
    else:
        xt = torch.where(prob.local, x.gather(1, prob.t_local.unsqueeze(1)).squeeze(1), zeros)
    f = prob.factors()
    if f is None:
        gap, mass = zeros, zeros
    else:
        # Σ f (m - x) = m Σ f - Σ f x would cancel; the difference first.
        gap = (f * (shift.unsqueeze(1) - x)).sum(dim=1)
        mass = f.sum(dim=1).expand_as(m)
    e = x.sub_(shift.unsqueeze(1)) if scratch else x - shift.unsqueeze(1)
    s = e.exp_().sum(dim=1)
    return torch.stack([m, s, xt, gap, mass], dim=1)


def _kernel_statistics(raw: torch.Tensor, prob: _Problem):
    """_statistics' (R, 5) from the slice's statistics kernel, which reads
    the slice once in its own dtype. Its x_t is -inf where the slice does
    not hold the target; the protocol's sum takes 0 there."""
    smoothing = prob.eps != 0.0
    weight = None if prob.weight_slice is None else prob.weight_slice.contiguous()
    k = _slices.statistics(raw, prob.t, weight, offset=prob.offset,
                           num_classes=prob.num_classes, ignore_index=prob.ignore_index,
                           label_smoothing=prob.eps if smoothing else None,
                           softcap=prob.softcap)
    owned = prob.local & prob.kept & prob.valid
    xt = torch.where(owned, k[:, 2], torch.zeros_like(k[:, 2]))
    zeros = torch.zeros_like(xt)
    sums = [k[:, -2], k[:, -1]] if smoothing else [zeros, zeros]
    return torch.stack([k[:, 0], k[:, 1], xt] + sums, dim=1)


def _kernel_gradient(raw, merged, prob, grad, reduction, z_loss_scale):
    """The slice's gradient from the gradient kernel: the merged statistics
    in the kernel's layout (max, Σ relative to it, x_t, [w_t], [Σ f (M - x),
    Σ f]), one read of the slice and one write."""
    smoothing = prob.eps != 0.0
    weighted = prob.weight_slice is not None
    columns = [_shift(merged[:, 0]), merged[:, 1], merged[:, 2]]
    if weighted:
        columns.append(prob.w_t)
    if smoothing:
        columns += [merged[:, 3], merged[:, 4]]
    stats = torch.stack(columns, dim=1).float()
    weight = prob.weight_slice.contiguous() if weighted else None
    return _slices.gradient(grad, raw, prob.t, stats, weight, reduction=reduction,
                            offset=prob.offset, num_classes=prob.num_classes,
                            ignore_index=prob.ignore_index,
                            label_smoothing=prob.eps if smoothing else None,
                            z_loss_scale=z_loss_scale, softcap=prob.softcap)


def _merge(stats: torch.Tensor, group, world: int, merge: str, sums: bool) -> torch.Tensor:
    """The statistics of whole rows, (R, 5): M (the global max), then
    relative to _shift(M): S = Σ exp(x - M), x_t, g = Σ f (M - x), W = Σ f.
    Without the smoothing sums (``sums`` false; g and W are 0) only
    (m, s, x_t) travel: 12 bytes per row and rank, as Megatron's."""
    if world == 1:
        return stats
    if not sums:
        merged = _merge(stats[:, :3].contiguous(), group, world, merge, True)
        return torch.cat([merged, stats.new_zeros((stats.shape[0], 2))], dim=1)
    if merge == "all_reduce":
        big = stats[:, 0].clone()
        dist.all_reduce(big, op=dist.ReduceOp.MAX, group=group)
        part = _rebase(stats, big)
        dist.all_reduce(part, op=dist.ReduceOp.SUM, group=group)
        return torch.cat([big.unsqueeze(1), part], dim=1)
    gathered = stats.new_empty((world,) + tuple(stats.shape))
    if dist.get_backend(group) == "nccl":
        dist.all_gather_into_tensor(gathered, stats.contiguous(), group=group)
    else:
        dist.all_gather(list(gathered.unbind(0)), stats.contiguous(), group=group)
    big = gathered[:, :, 0].amax(dim=0)
    part = sum(_rebase(gathered[r], big) for r in range(world))
    return torch.cat([big.unsqueeze(1), part], dim=1)


def _rebase(stats: torch.Tensor, big: torch.Tensor) -> torch.Tensor:
    """One slice's (s, x_t[, g, W]) relative to the row's max ``big``."""
    m, s, xt = stats[:, 0], stats[:, 1], stats[:, 2]
    shift, big_shift = _shift(m), _shift(big)
    # A slice with nothing finite has s = 0; its scale must not be inf.
    scale = torch.where(torch.isneginf(m), torch.zeros_like(m), torch.exp(shift - big_shift))
    rebased = [s * scale, xt]
    if stats.shape[1] == 5:
        gap, mass = stats[:, 3], stats[:, 4]
        rebased += [gap + mass * (big_shift - shift), mass]
    return torch.stack(rebased, dim=1)


def _row_losses(merged: torch.Tensor, prob: _Problem, z_loss_scale: float):
    """Per row, float64: the cross-entropy part, the z-loss part, the kept
    weight and the kept flag (1/0), and lse."""
    big, s, xt, gap, mass = merged.double().unbind(1)
    big = _shift(big)
    log_s = torch.log(s)
    lse = big + log_s
    if prob.probs:
        ce = gap + log_s * mass
        kept = torch.ones_like(ce)
        weight = kept
    else:
        w_t = prob.w_t.double()
        ce = w_t * ((big - xt) + log_s)
        if prob.eps != 0.0:
            ce = (1.0 - prob.eps) * ce + prob.eps / prob.num_classes * (gap + log_s * mass)
        ce = torch.where(prob.valid, ce, torch.full_like(ce, float("nan")))
        kept = prob.kept.double()
        ce = torch.where(prob.kept, ce, torch.zeros_like(ce))
        weight = torch.where(prob.kept, w_t, torch.zeros_like(w_t))
    z = z_loss_scale * lse * lse if z_loss_scale != 0.0 else torch.zeros_like(ce)
    if not prob.probs:
        # Ignored rows add nothing, even where their lse is not finite.
        z = torch.where(prob.kept, z, torch.zeros_like(z))
    return ce, z, weight, kept, lse


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, weight, group, offset, num_classes, ignore_index,
                reduction, label_smoothing, z_loss_scale, softcap, merge, loss_dtype):
        _, world = _layout(group)
        prob = _Problem(logits, target, weight, offset, num_classes, ignore_index,
                        label_smoothing, softcap)
        raw = _rows(logits, prob.axis)
        kernels = prob.use_kernels(logits)
        if kernels:
            stats = _kernel_statistics(raw, prob)
        else:
            x = _capped(raw, softcap)
            stats = _statistics(x, prob, scratch=x.data_ptr() != raw.data_ptr())
        merged = _merge(stats, group, world, merge, sums=prob.probs or label_smoothing != 0.0)
        ce, z, kept_weight, kept, lse = _row_losses(merged, prob, z_loss_scale)
        element_shape = logits.movedim(prob.axis, -1).shape[:-1]
        if reduction == "none":
            loss, zl = (ce + z).reshape(element_shape), z.reshape(element_shape)
            ce_scale = z_scale = None
        else:
            total, z_total = ce.sum(), z.sum()
            if reduction == "mean":
                ce_scale, z_scale = 1.0 / kept_weight.sum(), 1.0 / kept.sum()
                total, z_total = total * ce_scale, z_total * z_scale
            else:
                ce_scale = z_scale = torch.ones((), dtype=torch.float64, device=logits.device)
            loss, zl = total + z_total, z_total
        ctx.prob, ctx.reduction, ctx.z_loss_scale = prob, reduction, z_loss_scale
        ctx.kernels = kernels
        # An output that the loss does not use gets None, not zeros: the
        # kernel path needs to know that z_loss adds no gradient of its own.
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(logits, merged, lse.float(),
                              *(() if ce_scale is None else (ce_scale, z_scale)))
        return loss.to(loss_dtype), zl.to(loss_dtype)

    @staticmethod
    def backward(ctx, grad_loss, grad_z):
        prob = ctx.prob
        logits, merged, lse, *scales = ctx.saved_tensors
        if grad_loss is None and grad_z is None:
            return (None,) * 13
        raw = _rows(logits, prob.axis)
        moved = logits.movedim(prob.axis, -1)
        if ctx.kernels and grad_loss is not None and (grad_z is None
                                                      or ctx.z_loss_scale == 0.0):
            # One kernel: grad_output scales the loss, z-loss included.
            g = grad_loss.float()
            g = g.reshape(-1) if ctx.reduction == "none" else g.reshape(())
            d = _kernel_gradient(raw, merged, prob, g, ctx.reduction, ctx.z_loss_scale)
            return (d.reshape(moved.shape).movedim(-1, prob.axis),) + (None,) * 12
        if grad_loss is None:
            grad_loss = torch.zeros_like(grad_z)
        x = _capped(raw, prob.softcap)
        big, s = _shift(merged[:, 0]), merged[:, 1]
        rows = x.shape[0]
        # The loss includes the z-loss; z_loss is its z part alone.
        if ctx.reduction == "none":
            g = grad_loss.reshape(-1).float()
            gz = g if grad_z is None else g + grad_z.reshape(-1).float()
            g_ce, g_z = g, gz
        else:
            g = grad_loss.double()
            gz = g if grad_z is None else g + grad_z.double()
            ce_scale, z_scale = scales
            g_ce = (g * ce_scale).float().expand(rows)
            g_z = (gz * z_scale).float().expand(rows)
        # dlogits = (A p - B f - [c = t] T) · softcap', with per-row A, B, T
        # so that the slice is walked by few in-place passes.
        mass = merged[:, 4]
        if prob.probs:
            a, b, f = g_ce * mass, g_ce, prob.factors()
        else:
            keep = (1.0 - prob.eps) * prob.w_t
            a = g_ce * keep
            target_term = torch.where(prob.local, a, torch.zeros_like(a))
            b = f = None
            if prob.eps != 0.0:
                share = g_ce * (prob.eps / prob.num_classes)
                a = a + share * mass
                b, f = share, prob.factors()
        if ctx.z_loss_scale != 0.0:
            a = a + g_z * 2.0 * ctx.z_loss_scale * lse
        if not prob.probs:
            # An out-of-range target makes its row NaN.
            a = torch.where(prob.valid, a, torch.full_like(a, float("nan")))
        d = torch.exp(x - big.unsqueeze(1)).mul_((a / s).unsqueeze(1))
        if b is not None:
            d.addcmul_(b.unsqueeze(1), f, value=-1.0)
        if not prob.probs:
            d.scatter_add_(1, prob.t_local.unsqueeze(1), -target_term.unsqueeze(1))
        if prob.softcap is not None:
            # x is this call's own copy here: 1 - (x / cap)² in place.
            d.mul_(x.div_(prob.softcap).square_().neg_().add_(1.0))
        if not prob.probs:
            # Ignored rows are exact zeros, whatever their logits.
            d.masked_fill_(~prob.kept.unsqueeze(1), 0.0)
        grad = d.to(logits.dtype).reshape(moved.shape).movedim(-1, prob.axis)
        return (grad,) + (None,) * 12


def vocab_parallel_cross_entropy(logits: torch.Tensor, target: torch.Tensor, group=None,
                                 weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
                                 reduction: str = "mean", label_smoothing: float = 0.0,
                                 z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                                 return_z_loss: bool = False,
                                 loss_dtype: Optional[torch.dtype] = None,
                                 class_offset: Optional[int] = None,
                                 num_classes: Optional[int] = None, merge: str = "all_reduce",
                                 validate: bool = False):
    """Cross-entropy of logits whose classes are split over the ranks of
    ``group`` (the default group when None; one process without
    torch.distributed).

    ``logits`` is this rank's slice, classes on axis 1 (0 for 1-D);
    ``class_offset`` is the first class it holds and ``num_classes`` C
    (default: equal slices in rank order, ``rank · V_r`` and ``world · V_r``).
    ``target`` holds global class indices (shaped like the logits without
    the class axis), or this rank's slice of class probabilities (shaped
    like the logits). ``weight`` holds all C class weights (replicated).
    Every other argument is :func:`xent.torch.cross_entropy`'s; the result
    is the same on every rank, in the logits' dtype (float32 with
    ``loss_dtype=torch.float32``), and differentiable with respect to
    ``logits``.

    Bad scalars raise ``ValueError`` first, as in :func:`xent.torch.cross_entropy`.
    A class index that is neither ``ignore_index`` nor in the global ``[0,
    num_classes)`` gives its element a NaN loss; ``validate=True`` (or
    ``XENT_VALIDATE=1``) raises ``ValueError`` naming the first one instead
    (one device-to-host read on each rank; the targets are the same on
    every rank, so every rank raises, before any collective)."""
    check_loss_scalars(label_smoothing, z_loss_scale, softcap)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"xent: reduction must be one of {_REDUCTIONS}, not {reduction!r}")
    if merge not in _MERGES:
        raise ValueError(f"xent: merge must be one of {_MERGES}, not {merge!r}")
    if not logits.is_floating_point() or logits.dim() == 0:
        raise ValueError("xent: logits must be a floating-point tensor with a class axis")
    if loss_dtype not in (None, logits.dtype, torch.float32):
        raise ValueError(f"xent: loss_dtype must be the logits' dtype or torch.float32, "
                         f"not {loss_dtype}")
    rank, world = _layout(group)
    axis = 0 if logits.dim() == 1 else 1
    width = logits.shape[axis]
    offset = rank * width if class_offset is None else int(class_offset)
    classes = world * width if num_classes is None else int(num_classes)
    if not 0 <= offset <= classes - width:
        raise ValueError(f"xent: the slice [{offset}, {offset + width}) is not within the "
                         f"{classes} classes")
    if target.is_floating_point():
        if tuple(target.shape) != tuple(logits.shape):
            raise ValueError(f"xent: probability targets {tuple(target.shape)} must be shaped "
                             f"like the logits' slice {tuple(logits.shape)}")
    else:
        expected = tuple(logits.shape[:axis]) + tuple(logits.shape[axis + 1:])
        if tuple(target.shape) != expected:
            raise ValueError(f"xent: class-index targets {tuple(target.shape)} must be shaped "
                             f"like the logits without the class axis {expected}")
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ValueError(f"xent: weight must hold all {classes} class weights, "
                         f"got shape {tuple(weight.shape)}")
    if validation_on(validate):
        check_targets(target, classes, ignore_index)
    out_dtype = loss_dtype or logits.dtype
    loss, z = _VocabParallelCrossEntropy.apply(
        logits, target, weight, group, offset, classes, int(ignore_index), reduction,
        float(label_smoothing), float(z_loss_scale), None if softcap is None else float(softcap),
        merge, out_dtype)
    return (loss, z) if return_z_loss else loss


class VocabParallelCrossEntropyLoss(torch.nn.Module):
    """:func:`vocab_parallel_cross_entropy` as a module (like
    :class:`xent.torch.CrossEntropyLoss`; bad scalars raise at construction
    already)."""

    def __init__(self, group=None, weight: Optional[torch.Tensor] = None,
                 ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0, z_loss_scale: float = 0.0,
                 softcap: Optional[float] = None, class_offset: Optional[int] = None,
                 num_classes: Optional[int] = None, merge: str = "all_reduce",
                 validate: bool = False):
        check_loss_scalars(label_smoothing, z_loss_scale, softcap)
        super().__init__()
        self.group = group
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing, self.z_loss_scale, self.softcap = (label_smoothing, z_loss_scale,
                                                                  softcap)
        self.class_offset, self.num_classes, self.merge = class_offset, num_classes, merge
        self.validate = validate

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return vocab_parallel_cross_entropy(
            logits, target, self.group, self.weight, self.ignore_index, self.reduction,
            self.label_smoothing, self.z_loss_scale, self.softcap,
            class_offset=self.class_offset, num_classes=self.num_classes, merge=self.merge,
            validate=self.validate)
