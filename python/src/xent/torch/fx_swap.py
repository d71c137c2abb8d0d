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

What real models put between the projection and the loss is absorbed
where the loss can take the tensor before it exactly (``_absorb``):

- one upcast of bf16 / f16 logits to float32 (``.float()``,
  ``.to(torch.float32)``, ``.type(torch.float32)``): xent reads the narrow
  logits, computes in float32 as PyTorch does on the upcast copy and
  returns the float32 loss (``loss_dtype=torch.float32``); the gradient is
  written once, in the logits' dtype, where PyTorch writes a float32 one
  and casts it back. Hugging Face's ``ForCausalLMLoss`` upcasts this way;
- ``view`` / ``reshape`` / ``contiguous`` / ``flatten`` between them,
  moved onto the absorbed tensor;
- Gemma's final-logit softcapping ``tanh(x / c) * c`` with one Python
  number c: the ``softcap`` attribute, where nothing else reads the capped
  logits. Where something does (a model that returns them) the loss stays
  PyTorch's, which Inductor fuses with the cap (``SWAP_SHARED_SOFTCAP``).

- the causal-LM shift ``logits[..., :-k, :]`` (a slice dropping the last
  k positions of the axis before the classes, then flattened to
  ``[rows, C]``) with class-index targets and a ``mean`` or ``sum``: the
  loss reads the whole logits (no sliced copy) and the targets are padded
  with ``ignore_index`` at the dropped positions, which then add nothing to
  the loss, the count of a mean or the gradient (0 there, as the slice's
  backward gives).

A z-loss added beside the loss, ``loss + c · (lse² · keep).sum() /
keep.sum()`` with ``lse = logsumexp(logits, -1)`` and ``keep = target !=
ignore_index`` (or its ``sum`` form), becomes the loss's ``z_loss_scale``
(xent.torch.fx_zloss): one kernel, no logsumexp pass over the logits.

Where the logits are a linear layer's output (``F.linear`` / ``nn.Linear``)
that nothing but the loss reads (not a graph output, no other user), the
projection and the loss become one :func:`xent.torch.linear_cross_entropy`
(the logits are never materialized), with what was absorbed above: the
hidden states flattened to ``[rows, H]``, and under autocast the weight,
bias and hidden cast to the projection's dtype as autocast casts them
(``XENT_SWAP_PROJECTION=0``: the loss alone).

Label shifting on the labels alone (their slice, or Transformers' padding
of the labels) and a ``sum`` divided by a token count need nothing: the
targets may be any tensor, and the division stays a graph op.

Because the swap happens before aot_autograd, the backward is xent's too:
the joint kernel with the graph's grad_output (xent::cross_entropy_backward)
or, where the logits have other users (a model that returns them), the
joint kernel in the forward, whose gradient the graph scales and adds to the
logits' other gradient terms in one fused pass. Anything else — a log-softmax
over another axis or used elsewhere, CPU tensors, legacy ``size_average``
/ ``reduce`` arguments, float64 — stays as it was. ``last_report()`` says
what the last compiled graph swapped and what it left, with the reason.
"""

from __future__ import annotations

import math
import operator
import os
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from . import fx_zloss

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
    graph: ``"swapped"`` or why not, and for a swap that absorbed ops
    before the loss a second entry ``"absorbed …"`` naming them."""
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


# Ops between the projection and the loss that change the logits' shape or
# layout, not their values: the swap moves them onto the absorbed source.
_SHAPE_METHODS = ("view", "reshape", "contiguous", "flatten")
_SHAPE_FUNCTIONS = (torch.reshape, torch.flatten)
_NARROW = (torch.bfloat16, torch.float16)


def _is_shape_op(node) -> bool:
    if not isinstance(node, torch.fx.Node) or not node.args:
        return False
    if node.op == "call_method":
        return node.target in _SHAPE_METHODS
    return node.op == "call_function" and node.target in _SHAPE_FUNCTIONS


def _view_or_upcast(node) -> bool:
    """A shape op or an upcast to float32 (:func:`_upcast_source`): the same
    values, as the loss reads them."""
    return _is_shape_op(node) or _upcast_source(node) is not None


def _upcast_source(node):
    """The bf16 / f16 tensor that `node` casts to float32 (``x.float()``,
    ``x.to(torch.float32)``, ``x.to(dtype=torch.float32)``,
    ``x.type(torch.float32)``), or None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_method" or not node.args:
        return None
    src, rest = node.args[0], node.args[1:]
    if node.target == "float" and not rest and not node.kwargs:
        pass
    elif node.target in ("to", "type"):
        dtype = rest[0] if len(rest) == 1 and not node.kwargs else \
            node.kwargs.get("dtype") if not rest and set(node.kwargs) == {"dtype"} else None
        if dtype is not torch.float32:
            return None
    else:
        return None
    x, out = _value(src), _value(node)
    if not isinstance(x, torch.Tensor) or not isinstance(out, torch.Tensor):
        return None
    if x.dtype not in _NARROW or out.dtype != torch.float32:
        return None
    return src


def _is_mul(node):
    return isinstance(node, torch.fx.Node) and (
        (node.op == "call_function" and node.target in (operator.mul, torch.mul))
        or (node.op == "call_method" and node.target == "mul"))


def _is_div(node):
    return isinstance(node, torch.fx.Node) and (
        (node.op == "call_function" and node.target in (operator.truediv, torch.div))
        or (node.op == "call_method" and node.target in ("div", "__truediv__")))


def _is_tanh(node):
    return isinstance(node, torch.fx.Node) and (
        (node.op == "call_function" and node.target in (torch.tanh, F.tanh))
        or (node.op == "call_method" and node.target == "tanh"))


def _softcap_source(node):
    """(source, c) where `node` is ``tanh(source / c) * c`` with the same
    positive Python number c (Gemma's final-logit softcapping), else None."""
    if not _is_mul(node) or len(node.args) != 2 or node.kwargs:
        return None
    a, b = node.args
    tanh_node, c = (a, b) if _is_tanh(a) else (b, a)
    if not _is_tanh(tanh_node) or len(tanh_node.args) != 1 or tanh_node.kwargs:
        return None
    div = tanh_node.args[0]
    if not _is_div(div) or len(div.args) != 2 or div.kwargs:
        return None
    source, c2 = div.args
    if not isinstance(c, (int, float)) or isinstance(c, bool) or c != c2 or not c > 0:
        return None
    if not isinstance(_value(source), torch.Tensor):
        return None
    return source, float(c)


def _full_slice(index) -> bool:
    return isinstance(index, slice) and index == slice(None, None, None)


def _row_shift(node):
    """(source, k) where `node` is ``source[..., :-k, :]`` (or ``source[...,
    0:T-k, :]``; any index form with the other axes whole) on a tensor of
    rank >= 2: the causal-LM shift of the logits. Else None."""
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function"
            and node.target is operator.getitem and len(node.args) == 2 and not node.kwargs):
        return None
    src, index = node.args
    x, out = _value(src), _value(node)
    if not isinstance(x, torch.Tensor) or not isinstance(out, torch.Tensor) or x.dim() < 2:
        return None
    index = list(index) if isinstance(index, tuple) else [index]
    if index.count(Ellipsis) > 1 or any(i is None for i in index):
        return None
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index[at:at + 1] = [slice(None)] * (x.dim() - len(index) + 1)
    index += [slice(None)] * (x.dim() - len(index))
    if len(index) != x.dim() or not all(_full_slice(i) for j, i in enumerate(index)
                                        if j != x.dim() - 2):
        return None
    cut = index[x.dim() - 2]
    if not isinstance(cut, slice) or cut.start not in (None, 0) or cut.step not in (None, 1):
        return None
    stop, length = cut.stop, x.shape[-2]
    if not isinstance(stop, int) or isinstance(stop, bool) or not isinstance(length, int):
        return None
    k = -stop if stop < 0 else length - stop
    if not 0 < k < length or tuple(out.shape) != tuple(x.shape[:-2]) + (length - k,
                                                                         x.shape[-1]):
        return None
    return src, k


def _shift_targets(gm, before, target, shape, k, ignore_index):
    """Nodes before `before` giving `target` (the flat targets of the sliced
    rows, `shape` their un-flattened shape) padded with `ignore_index` at
    the k dropped positions and flattened: the targets of the whole logits.
    None where the shapes do not work out."""
    t = _value(target)
    if not isinstance(t, torch.Tensor) or t.is_floating_point() or t.numel() != \
            math.prod(shape):
        return None
    graph = gm.graph
    with graph.inserting_before(before):
        rows = graph.call_method("reshape", (target, tuple(shape)))
        padded = graph.call_function(F.pad, (rows, (0, k)), {"value": ignore_index})
        flat = graph.call_method("reshape", (padded, (-1,)))
    try:
        rows.meta["example_value"] = t.reshape(tuple(shape))
        padded.meta["example_value"] = F.pad(rows.meta["example_value"], (0, k),
                                             value=ignore_index)
        flat.meta["example_value"] = padded.meta["example_value"].reshape(-1)
    except Exception:  # noqa: BLE001 - no meta: the swap keeps the slice
        for node in (flat, padded, rows):
            graph.erase_node(node)
        return None
    return flat


def _absorb(gm: torch.fx.GraphModule, logits, before, shift_ok: bool = False, ignore=(),
            reader=None):
    """What real models put between the projection and the loss, where the
    loss may take the tensor before it: shape ops (moved onto the source),
    one upcast of bf16 / f16 logits to float32 (the loss then reads the
    narrow logits and computes in float32 as PyTorch's does on the upcast;
    the gradient is rounded once, into the narrow dtype), one softcap
    ``tanh(x / c) * c`` and, with `shift_ok`, one causal-LM shift
    ``x[..., :-k, :]`` followed by a flattening to ``[rows, C]``
    (:func:`_row_shift`); the softcap where the capped logits have no
    other reader than the chain to the loss and the nodes in `ignore` (a
    z-loss's, which goes). `reader` is the node that reads `logits` for
    the loss (the log_softmax of an nll_loss chain; default `before`, the
    loss). Returns (the logits for xent, upcast, softcap,
    what was absorbed, (k, the sliced rows' shape) or None, the tensor the
    walk stopped at: the absorbed source, or below unabsorbed shape ops)."""
    views, cur, upcast, cap, absorbed, shift = [], logits, False, None, [], None
    prev = reader or before  # the node that reads `cur` on the way to the loss
    while True:
        if _is_shape_op(cur):
            views.append(cur)
            prev, cur = cur, cur.args[0]
            continue
        sliced = None if shift is not None or not shift_ok else _row_shift(cur)
        if sliced is not None:
            x_in, x_out = _value(logits), _value(cur)
            rows = tuple(x_out.shape[:-1])
            if isinstance(x_in, torch.Tensor) and x_in.dim() == 2 and all(
                    type(d) is int for d in rows) and \
                    tuple(x_in.shape) == (math.prod(rows), x_out.shape[-1]):
                # The ops above the slice only flatten it: they are
                # replaced by one flattening of the whole logits.
                shift, views = (sliced[1], rows), []
                absorbed.append(f"shift :-{sliced[1]} (targets padded with ignore_index)")
                prev, cur = cur, sliced[0]
                continue
        src = None if upcast else _upcast_source(cur)
        if src is not None:
            upcast = True
            absorbed.append(f"{cur.target} to float32")
            prev, cur = cur, src
            continue
        # Capped logits that something else reads (a model that returns
        # them) are written anyway: the softcap stays (see
        # SWAP_SHARED_SOFTCAP).
        capped = None if cap is not None or _read_elsewhere(cur, prev, ignore) \
            else _softcap_source(cur)
        if capped is not None:
            cur, cap = capped
            absorbed.append(f"softcap {cap:g}")
            continue
        break
    if not absorbed:
        return logits, False, None, [], None, cur
    source, x = cur, _value(cur)
    # The shape ops again, now on the absorbed source (same shapes).
    for view in reversed(views):
        with gm.graph.inserting_before(before):
            node = gm.graph.create_node(view.op, view.target, (cur,) + tuple(view.args[1:]),
                                        dict(view.kwargs))
        value = _value(view)
        if isinstance(value, torch.Tensor) and isinstance(x, torch.Tensor):
            try:
                node.meta["example_value"] = value.to(x.dtype)
            except Exception:  # noqa: BLE001 - no meta: the checks then refuse it
                pass
        absorbed.append(f"{view.target}")
        cur, x = node, _value(node)
    if shift is not None:
        with gm.graph.inserting_before(before):
            node = gm.graph.call_method("reshape", (cur, (-1, x.shape[-1])))
        try:
            node.meta["example_value"] = x.reshape(-1, x.shape[-1])
        except Exception:  # noqa: BLE001 - no meta: the checks then refuse it
            pass
        cur = node
    return cur, upcast, cap, absorbed, shift, source


def _read_elsewhere(node, user, ignore=()) -> bool:
    """Whether a node other than `user`, those in `ignore` (and the views
    and casts only they read) and what nothing reads, reads `node`: the
    graph's output, say."""
    for u in node.users:
        if u is user or u in ignore or _unread(u):
            continue
        if _view_or_upcast(u) and not _read_elsewhere(u, None, ignore):
            continue
        return True
    return False


# Capped logits that the model also returns (Gemma 2 and 3 in Transformers)
# are written and get a tangent anyway. Inductor then computes the cap, the
# loss and its gradient through the cap in two kernels over the raw logits;
# xent's loss, beside the cap Inductor still writes and the sum of the two
# gradients through it, costs more passes (docs/performance.md), so by
# default that loss stays PyTorch's. XENT_SWAP_SHARED_SOFTCAP=1 swaps it
# still: the plain joint kernel reads the capped logits (less memory).
SWAP_SHARED_SOFTCAP = os.environ.get("XENT_SWAP_SHARED_SOFTCAP", "0") != "0"


def _erase_dead(gm: torch.fx.GraphModule, node) -> None:
    """Removes `node` and the pure ops above it that nothing else uses."""
    while isinstance(node, torch.fx.Node) and not node.users and node.op in (
            "call_method", "call_function") and (
            _view_or_upcast(node) or _is_mul(node)
            or _is_tanh(node) or _is_div(node) or _row_shift(node) is not None
            or (node.op == "call_function" and node.target in (F.pad,) + _LINEAR)):
        inputs = [a for a in node.args if isinstance(a, torch.fx.Node)]
        gm.graph.erase_node(node)
        for a in inputs:
            _erase_dead(gm, a)
        return


_LINEAR = (torch._C._nn.linear, F.linear)

# XENT_SWAP_PROJECTION=0 keeps linear layers as they are (the loss alone is
# swapped); read by each rewrite.
SWAP_PROJECTION = os.environ.get("XENT_SWAP_PROJECTION", "1") != "0"


def _sole_user(node, user) -> bool:
    return isinstance(node, torch.fx.Node) and list(node.users) == [user]


def _unread(node) -> bool:
    """Whether nothing reads `node`, or only nodes nothing reads (what the
    swap built and has not used yet)."""
    return node.op != "output" and all(_unread(u) for u in node.users)


def _projection(original, loss, source):
    """Whether `source` is a linear node whose output reaches the `loss`
    node only through `original` (the loss's input as written) and the ops
    between them, each read by nothing else: the logits die with the loss."""
    if not (isinstance(source, torch.fx.Node) and source.op == "call_function"
            and source.target in _LINEAR):
        return False
    node, user = original, loss
    while isinstance(node, torch.fx.Node):
        if node is source:
            # Besides the chain, only the absorbed copies of its shape ops.
            return user in node.users and all(
                u is user or _unread(u) for u in node.users)
        if not _sole_user(node, user):
            return False
        if _view_or_upcast(node) or _row_shift(node) is not None:
            node, user = node.args[0], node
            continue
        if _softcap_source(node) is not None:
            tanh_node = node.args[0] if _is_tanh(node.args[0]) else node.args[1]
            div = tanh_node.args[0]
            if not (_sole_user(tanh_node, node) and _sole_user(div, tanh_node)):
                return False
            node, user = div.args[0], div
            continue
        return False
    return False


def _gradient_shared(node, user) -> bool:
    """Whether the tensor that `user` reads as `node` also gets a gradient
    from elsewhere: `node`, or the views and casts above it, read by another
    node (the graph's output — a model that returns its logits —, another
    loss)."""
    while isinstance(node, torch.fx.Node):
        if _read_elsewhere(node, user):
            return True
        if _view_or_upcast(node):
            node, user = node.args[0], node
            continue
        return False
    return False


def _linear_operands(linear):
    """(hidden, weight, bias) of a linear node, or None."""
    names = ("input", "weight", "bias")
    if len(linear.args) > 3 or set(linear.kwargs) - set(names):
        return None
    bound = dict(zip(names, linear.args))
    bound.update(linear.kwargs)
    h, w, b = bound.get("input"), bound.get("weight"), bound.get("bias")
    hv, wv, out = _value(h), _value(w), _value(linear)
    if not all(isinstance(v, torch.Tensor) for v in (hv, wv, out)):
        return None
    if wv.dim() != 2 or hv.dim() < 1 or hv.shape[-1] != wv.shape[1]:
        return None
    if b is not None and not isinstance(_value(b), torch.Tensor):
        return None
    return h, w, b


def _swap_projection(gm, node, original, logits, source, target, kwargs):
    """Replaces the loss `node` and the linear layer `source` that feeds it
    alone (through `original`, the loss's input as written) by one
    xent.torch.linear_cross_entropy node reading the hidden states
    flattened to rows, where `logits` (the loss's input for xent: the
    absorbed source reshaped) is one row per hidden row; returns the new
    node, or None (nothing changed)."""
    if not _projection(original, node, source):
        return None
    operands = _linear_operands(source)
    x, out, t = _value(logits), _value(source), _value(target)
    if operands is None or x.dim() != 2 or out.dtype not in _DTYPES or \
            tuple(x.shape) != (math.prod(out.shape[:-1]), out.shape[-1]) or \
            t.is_floating_point() or t.dim() != 1:
        return None
    h, w, b = operands
    if type(_value(h).shape[-1]) is not int:
        return None  # a symbolic hidden size
    from . import linear_cross_entropy as xent_linear_cross_entropy
    graph = gm.graph
    with graph.inserting_before(node):
        def cast(v):
            # What autocast did to the linear's operands.
            return v if v is None or _value(v).dtype == out.dtype else \
                graph.call_method("to", (v, out.dtype))
        hidden = graph.call_method("reshape", (cast(h), (-1, _value(h).shape[-1])))
        lin_kwargs = {"class_weight" if k == "weight" else k: v for k, v in kwargs.items()}
        return graph.call_function(xent_linear_cross_entropy,
                                   (hidden, cast(w), target, cast(b)), lin_kwargs)


def rewrite(gm: torch.fx.GraphModule) -> int:
    """Swaps the matching cross-entropy calls of `gm` in place; returns how
    many (see :func:`last_report`)."""
    from . import _cross_entropy_joint, cross_entropy as xent_cross_entropy
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
        reader = node  # what reads the logits for the loss
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
            logits, reader = ls_args["input"], logp
            x = _value(logits)
            if not isinstance(x, torch.Tensor) or not _class_axis_matches(x, ls_args.get("dim")):
                _REPORT.append((node.name, "log_softmax over another axis"))
                continue
        absorbed_from, target = logits, bound["target"]
        t = _value(target)
        ignore_index = bound.get("ignore_index", -100)
        z_loss = fx_zloss.match(node, logits, target, bound.get("reduction", "mean"),
                                ignore_index, bound.get("weight"))
        # The shift is absorbed where padded targets give the same loss:
        # class indices, a reduced loss and an ignore_index to pad with.
        shift_ok = (isinstance(t, torch.Tensor) and not t.is_floating_point()
                    and bound.get("reduction", "mean") in ("mean", "sum")
                    and isinstance(ignore_index, int) and not isinstance(ignore_index, bool))
        logits, _upcast, cap, absorbed, shift, source = _absorb(
            gm, logits, node, shift_ok, set(z_loss.nodes) if z_loss is not None else (), reader)
        if shift is not None:
            target = _shift_targets(gm, node, bound["target"], shift[1], shift[0], ignore_index)
            t = _value(target) if target is not None else None
        if absorbed and (t is None or _check_operands(_value(logits), t,
                                                      bound.get("weight")) is not None):
            # Not with the absorbed source (probability targets in float32
            # and narrow logits, say): the loss as it was written.
            _erase_dead(gm, logits)
            if target is not None and target is not bound["target"]:
                _erase_dead(gm, target)
            logits, cap, absorbed, source = absorbed_from, None, [], None
            target, t = bound["target"], _value(bound["target"])
        x = _value(logits)
        why = _check_operands(x, t, bound.get("weight"))
        kept_cap = cap is None and source is not None and _softcap_source(source) is not None
        if why is None and kept_cap and not SWAP_SHARED_SOFTCAP:
            why = ("the capped logits are returned: Inductor fuses the softcap into its loss "
                   "(XENT_SWAP_SHARED_SOFTCAP=1 swaps it)")
        if why is None and not isinstance(bound.get("ignore_index", -100), int):
            why = "a traced ignore_index"
        if why is None and not isinstance(bound.get("label_smoothing", 0.0), (int, float)):
            why = "a traced label_smoothing"
        if why is None and bound.get("reduction", "mean") not in ("mean", "sum", "none"):
            why = f"reduction {bound.get('reduction')!r}"
        if why is not None and absorbed:
            _erase_dead(gm, logits)  # the moved shape ops go again
            if target is not bound["target"]:
                _erase_dead(gm, target)
        if why is not None:
            _REPORT.append((node.name, why))
            continue
        kwargs = {k: bound[k] for k in _CE_KWARGS if k in bound}
        if cap is not None:
            kwargs["softcap"] = cap
        out = _value(node)
        if isinstance(out, torch.Tensor) and out.dtype != x.dtype:
            if out.dtype != torch.float32:
                _REPORT.append((node.name, f"a loss of dtype {out.dtype}"))
                continue
            # Under autocast PyTorch computes the loss of bf16/f16 logits in
            # float32 and returns it so; xent too, given loss_dtype.
            kwargs["loss_dtype"] = torch.float32
        if z_loss is not None:
            kwargs["z_loss_scale"] = z_loss.scale
            fx_zloss.absorb(gm, node, z_loss)
            absorbed.append(f"z-loss {z_loss.scale:g}")
        new = _swap_projection(gm, node, absorbed_from, logits, source, target, kwargs) \
            if SWAP_PROJECTION else None
        projected = new is not None
        if not projected:
            with gm.graph.inserting_before(node):
                new = gm.graph.call_function(xent_cross_entropy, (logits, target), kwargs)
        new.meta = dict(node.meta)
        old_input = node.args[0] if node.args else None
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        if node.target is F.nll_loss and isinstance(old_input, torch.fx.Node) \
                and not old_input.users:
            gm.graph.erase_node(old_input)
        if absorbed:
            # The upcast copy, the capped logits and the old views, where
            # nothing else reads them.
            _erase_dead(gm, absorbed_from)
        if projected:
            # The loss input, its chain and the linear layer: read by nothing.
            _erase_dead(gm, logits)
        # Where the logits' gradient has other terms (a model that returns
        # its logits gets a tangent for them), the graph sums them anyway:
        # the joint kernel's gradient, whose scaling Inductor fuses into that
        # sum, costs a pass less than the gradient written in the backward
        # and then added.
        joint = not projected and _gradient_shared(logits, new)
        if joint:
            new.target = _cross_entropy_joint
        _REPORT.append((new.name, "swapped"))
        if projected:
            _REPORT.append((new.name, "projection: linear_cross_entropy"))
        if absorbed:
            _REPORT.append((new.name, "absorbed " + ", ".join(absorbed)))
        if kept_cap:
            _REPORT.append((new.name, "softcap kept: the capped logits have other users"))
        if joint:
            _REPORT.append((new.name, "joint kernel: the logits have other users"))
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

