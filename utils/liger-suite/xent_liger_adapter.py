"""A pytest plugin that runs Liger-Kernel's own public-API tests of cross
entropy and fused linear cross entropy against xent.torch.

Loaded with ``-p xent_liger_adapter`` from a Liger-Kernel checkout (see
run.sh beside it), it replaces, before the test modules import them:

* ``liger_kernel.transformers.cross_entropy.LigerCrossEntropyLoss`` and
  ``liger_kernel.transformers.functional.liger_cross_entropy`` by
  :func:`xent.torch.cross_entropy`;
* ``liger_kernel.transformers.fused_linear_cross_entropy.
  LigerFusedLinearCrossEntropyLoss`` and
  ``liger_kernel.transformers.functional.liger_fused_linear_cross_entropy``
  by :func:`xent.torch.linear_cross_entropy`.

The mapping is Liger's contract, not xent's: its ``lse_square_scale`` is
xent's ``z_loss_scale``; its gradient is written over the logits
(``inplace=True``); an out-of-range target raises ``AssertionError`` naming
"out of bounds" (xent's ``validate=True``, whose ``ValueError`` becomes that);
its token accuracy under ``sum`` is the mean over kept rows, as under
``mean``; ignored rows predict -1; the fused linear loss comes back in
float32 whatever the inputs' dtype (xent's ``loss_dtype=torch.float32``),
its z-loss in the inputs' dtype. What xent does not offer raises
``NotImplementedError``, so the test fails rather than passes by accident:
Liger's ``use_token_scaling``, and per-row outputs of the fused linear loss.

A test that calls Liger's Triton kernel alone tests Liger, not xent: it is
deselected (pytest's summary counts it). The functional tests compare the
replaced function with Liger's own autograd Function: they run, xent
against Liger."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

import xent.torch as xt

# Test functions that call Liger's kernels or Function objects directly.
LIGER_INTERNALS = ("test_float32_internal",)


def _validating(fn):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            if "class index" in str(e) or "target" in str(e):
                raise AssertionError(f"out of bounds: {e}") from e
            raise
    return call


def _output_class():
    from liger_kernel.transformers.functional import CrossEntropyOutput
    return CrossEntropyOutput


@_validating
def xent_cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                       reduce=None, reduction="mean", label_smoothing=0.0,
                       lse_square_scale=0.0, softcap=None, return_z_loss=False,
                       return_token_accuracy=False, return_predicted_tokens=False):
    assert size_average is None and reduce is None, "deprecated arguments"
    per_row = return_token_accuracy or return_predicted_tokens
    out = xt.cross_entropy(input, target, weight=weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing,
                           z_loss_scale=lse_square_scale, softcap=softcap,
                           return_z_loss=return_z_loss,
                           return_token_accuracy=return_token_accuracy,
                           return_predicted_tokens=return_predicted_tokens,
                           inplace=True, validate=True)
    if not (return_z_loss or per_row):
        return out
    if not per_row:
        loss, z = out
        return _output_class()(loss=loss, z_loss=z)
    acc, pred = out.token_accuracy, out.predicted_tokens
    kept = target != ignore_index
    if acc is not None and reduction == "sum":
        acc = acc / kept.sum().clamp(min=1)
    if pred is not None:
        pred = torch.where(kept, pred, -1)
    return _output_class()(loss=out.loss, z_loss=out.z_loss if return_z_loss else None,
                           token_accuracy=acc, predicted_tokens=pred)


class XentCrossEntropyLoss(torch.nn.Module):
    def __init__(self, weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
                 lse_square_scale: float = 0.0, label_smoothing: float = 0.0,
                 reduction: str = "mean", softcap: Optional[float] = None,
                 return_z_loss: bool = False, return_token_accuracy: bool = False,
                 return_predicted_tokens: bool = False):
        super().__init__()
        assert 0 <= label_smoothing <= 1, f"label_smoothing must be between 0.0 and 1.0"
        assert reduction in {"mean", "sum", "none"}
        assert softcap is None or softcap > 0
        self.kwargs = dict(weight=weight, ignore_index=ignore_index,
                           lse_square_scale=lse_square_scale, label_smoothing=label_smoothing,
                           reduction=reduction, softcap=softcap, return_z_loss=return_z_loss,
                           return_token_accuracy=return_token_accuracy,
                           return_predicted_tokens=return_predicted_tokens)

    def forward(self, _input, target):
        return xent_cross_entropy(_input, target, **self.kwargs)


@_validating
def xent_fused_linear_cross_entropy(input, weight, target, bias=None, ce_weight=None,
                                    ignore_index=-100, lse_square_scale=0.0,
                                    label_smoothing=0.0, reduction="mean", softcap=None,
                                    return_z_loss=False, accum_dtype=None,
                                    use_token_scaling=False, return_token_accuracy=False,
                                    return_predicted_tokens=False):
    if use_token_scaling:
        raise NotImplementedError("xent has no token scaling")
    if return_token_accuracy or return_predicted_tokens:
        raise NotImplementedError("xent.torch.linear_cross_entropy has no per-row outputs")
    # accum_dtype: xent accumulates the weight gradient in float32 always.
    out = xt.linear_cross_entropy(input, weight, target, bias, class_weight=ce_weight,
                                  ignore_index=ignore_index, reduction=reduction,
                                  label_smoothing=label_smoothing,
                                  z_loss_scale=lse_square_scale, softcap=softcap,
                                  return_z_loss=return_z_loss, loss_dtype=torch.float32,
                                  validate=True)
    if not return_z_loss:
        return out
    loss, z = out
    # Liger's fused linear z-loss comes back in the inputs' dtype.
    return _output_class()(loss=loss, z_loss=z.to(input.dtype))


class XentFusedLinearCrossEntropyLoss(torch.nn.Module):
    def __init__(self, ce_weight=None, ignore_index=-100, lse_square_scale=0.0,
                 label_smoothing=0.0, reduction="mean", softcap=None, return_z_loss=False,
                 accum_dtype=None, use_token_scaling=False, return_token_accuracy=False,
                 return_predicted_tokens=False):
        super().__init__()
        assert 0 <= label_smoothing <= 1
        assert reduction in {"mean", "sum", "none"}
        assert softcap is None or softcap > 0
        self.kwargs = dict(ce_weight=ce_weight, ignore_index=ignore_index,
                           lse_square_scale=lse_square_scale, label_smoothing=label_smoothing,
                           reduction=reduction, softcap=softcap, return_z_loss=return_z_loss,
                           accum_dtype=accum_dtype, use_token_scaling=use_token_scaling,
                           return_token_accuracy=return_token_accuracy,
                           return_predicted_tokens=return_predicted_tokens)

    def forward(self, lin_weight, _input, target, bias=None):
        return xent_fused_linear_cross_entropy(_input, lin_weight, target, bias, **self.kwargs)


def _install():
    import liger_kernel.transformers.cross_entropy as ce
    import liger_kernel.transformers.functional as fn
    import liger_kernel.transformers.fused_linear_cross_entropy as flce
    ce.LigerCrossEntropyLoss = XentCrossEntropyLoss
    fn.liger_cross_entropy = xent_cross_entropy
    flce.LigerFusedLinearCrossEntropyLoss = XentFusedLinearCrossEntropyLoss
    fn.liger_fused_linear_cross_entropy = xent_fused_linear_cross_entropy


_install()


def pytest_collection_modifyitems(config, items):
    keep, dropped = [], []
    for item in items:
        (dropped if item.originalname in LIGER_INTERNALS else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
