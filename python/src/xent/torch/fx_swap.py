"""Unmodified models: a ``torch.compile`` backend that swaps PyTorch's
cross-entropy for xent's before Inductor compiles the graph.

    import xent.torch
    xent.torch.patch()                       # registers the backend "xent"
    model = torch.compile(model, backend="xent")

The backend rewrites the graph Dynamo captured (torch-level calls, before
aot_autograd), then hands it to Inductor (``compile_fx``). Two forms are
swapped for :func:`xent.torch.cross_entropy`, and only where the semantics
match exactly:

- ``F.cross_entropy(x, target, weight, ignore_index=…, reduction=…,
  label_smoothing=…)`` (also what ``nn.CrossEntropyLoss`` becomes) on a CUDA
  tensor of dtype float32, bfloat16 or float16, with class-index targets of
  the right shape or probability targets of the logits' shape;
- ``F.nll_loss(log_softmax(x, dim=C), target, weight, ignore_index=…,
  reduction=…)`` written by hand (``F.log_softmax``, ``torch.log_softmax``
  or ``x.log_softmax``), where ``C`` is the class axis (1, or the last axis
  of 2-D logits, or 0 of 1-D logits), the log-softmax keeps the dtype and
  has no other user.

Because the swap happens before aot_autograd, the backward is xent's too
(the gradient its forward kernel wrote). Anything else — a log-softmax
over another axis or used elsewhere, CPU tensors, legacy ``size_average``
/ ``reduce`` arguments, float64 — stays as it was. ``last_report()`` says
what the last compiled graph swapped and what it left, with the reason.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

__all__ = ["backend", "patch", "last_report", "rewrite"]

_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# The parameters after (input, target), in order.
_CE_PARAMS = ("weight", "size_average", "ignore_index", "reduce", "reduction",
              "label_smoothing")
_NLL_PARAMS = ("weight", "size_average", "ignore_index", "reduce", "reduction")
_CE_KWARGS = ("weight", "ignore_index", "reduction", "label_smoothing")

_REPORT: List[Tuple[str, str]] = []


def last_report() -> List[Tuple[str, str]]:
    """(node name, what happened) for each candidate of the last rewritten
    graph: ``"swapped"`` or why not."""
    return list(_REPORT)


def _value(node):
    if isinstance(node, torch.fx.Node):
        return node.meta.get("example_value", node.meta.get("val"))
    return node


def _is_log_softmax(node) -> bool:
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "call_function":
        return node.target in (F.log_softmax, torch.log_softmax,
                               torch.ops.aten.log_softmax.int, torch.special.log_softmax)
    return node.op == "call_method" and node.target == "log_softmax"


def _bind(node, names) -> Optional[Dict]:
    """The call's arguments by name (input, target, then `names` in order).
    None when a legacy or unknown argument is present."""
    positional = ("input", "target") + names
    if len(node.args) > len(positional):
        return None
    bound = dict(zip(positional, node.args))
    for k, v in node.kwargs.items():
        if k not in positional:
            return None
        bound[k] = v
    if bound.get("size_average") is not None or bound.get("reduce") is not None:
        return None
    return bound


def _check_operands(x, t, weight) -> Optional[str]:
    if not isinstance(x, torch.Tensor) or not isinstance(t, torch.Tensor):
        return "no shape information"
    if x.device.type != "cuda":
        return "logits not on a CUDA device"
    if x.dtype not in _DTYPES:
        return f"logits dtype {x.dtype}"
    if x.dim() == 0:
        return "0-d logits"
    if t.is_floating_point():
        if t.shape != x.shape or t.dtype != x.dtype:
            return "probability targets of another shape or dtype"
    else:
        expected = x.shape[:1] + x.shape[2:] if x.dim() > 1 else torch.Size([])
        if t.dtype not in (torch.int64, torch.int32) or t.shape != expected:
            return "targets of another shape or dtype"
    if weight is not None:
        w = _value(weight)
        classes = x.shape[1] if x.dim() > 1 else x.shape[0]
        if not isinstance(w, torch.Tensor) or w.dim() != 1 or w.shape[0] != classes:
            return "class weights of another shape"
    return None


def _class_axis_matches(x: torch.Tensor, dim) -> bool:
    if not isinstance(dim, int):
        return False
    dim = dim % x.dim() if x.dim() else dim
    return dim == (1 if x.dim() > 1 else 0)


def rewrite(gm: torch.fx.GraphModule) -> int:
    """Swaps the matching cross-entropy calls of `gm` in place; returns how
    many (see :func:`last_report`)."""
    from . import cross_entropy as xent_cross_entropy
    _REPORT.clear()
    swapped = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        params = {F.cross_entropy: _CE_PARAMS, F.nll_loss: _NLL_PARAMS}.get(node.target)
        if params is None:
            continue
        bound = _bind(node, params)
        if bound is None:
            _REPORT.append((node.name, "legacy or unknown arguments"))
            continue
        if node.target is F.cross_entropy:
            logits = bound["input"]
        else:
            logp = bound["input"]
            if not _is_log_softmax(logp):
                _REPORT.append((node.name, "nll_loss of something that is not a log_softmax"))
                continue
            if len(logp.users) != 1:
                _REPORT.append((node.name, "the log_softmax has other users"))
                continue
            ls_params = (("input", "dim", "_stacklevel", "dtype")
                         if logp.target is F.log_softmax else ("input", "dim", "dtype"))
            ls_args = dict(zip(ls_params, logp.args))
            ls_args.update(logp.kwargs)
            if ls_args.get("dtype") is not None:
                _REPORT.append((node.name, "log_softmax with a dtype"))
                continue
            logits = ls_args["input"]
            x = _value(logits)
            if not isinstance(x, torch.Tensor) or not _class_axis_matches(x, ls_args.get("dim")):
                _REPORT.append((node.name, "log_softmax over another axis"))
                continue
        x, t = _value(logits), _value(bound["target"])
        why = _check_operands(x, t, bound.get("weight"))
        if why is None and not isinstance(bound.get("ignore_index", -100), int):
            why = "a traced ignore_index"
        if why is None and not isinstance(bound.get("label_smoothing", 0.0), (int, float)):
            why = "a traced label_smoothing"
        if why is None and bound.get("reduction", "mean") not in ("mean", "sum", "none"):
            why = f"reduction {bound.get('reduction')!r}"
        if why is not None:
            _REPORT.append((node.name, why))
            continue
        kwargs = {k: bound[k] for k in _CE_KWARGS if k in bound}
        out = _value(node)
        if isinstance(out, torch.Tensor) and out.dtype != x.dtype:
            if out.dtype != torch.float32:
                _REPORT.append((node.name, f"a loss of dtype {out.dtype}"))
                continue
            # Under autocast PyTorch computes the loss of bf16/f16 logits in
            # float32 and returns it so; xent too, given loss_dtype.
            kwargs["loss_dtype"] = torch.float32
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(xent_cross_entropy, (logits, bound["target"]), kwargs)
        new.meta = dict(node.meta)
        old_input = node.args[0] if node.args else None
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        if node.target is F.nll_loss and isinstance(old_input, torch.fx.Node) \
                and not old_input.users:
            gm.graph.erase_node(old_input)
        _REPORT.append((new.name, "swapped"))
        swapped += 1
    if swapped:
        gm.graph.lint()
        gm.recompile()
    return swapped


def backend(gm: torch.fx.GraphModule, example_inputs):
    """The ``torch.compile`` backend: :func:`rewrite`, then Inductor."""
    rewrite(gm)
    from torch._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs)


_REGISTERED: List[bool] = []


def patch() -> str:
    """Registers :func:`backend` as ``torch.compile(..., backend="xent")``
    (once); returns the name."""
    if not _REGISTERED:
        from torch._dynamo import list_backends, register_backend
        if "xent" not in list_backends(exclude_tags=()):
            register_backend(compiler_fn=backend, name="xent")
        _REGISTERED.append(True)
    return "xent"

