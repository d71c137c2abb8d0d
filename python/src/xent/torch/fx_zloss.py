"""The z-loss a model adds beside its cross-entropy, for xent.torch.fx_swap:
``loss + c · Σ_kept lse² / K`` becomes the swapped loss's ``z_loss_scale``.

xent's z-loss is ``z · lse²`` per element whose target is kept (not
``ignore_index``), reduced like the loss: for a ``mean`` divided by the
kept count K, for a ``sum`` summed. So the form absorbed is the masked one
PaLM-style training code writes, with the mask the loss's own::

    lse = torch.logsumexp(logits, dim=-1)          # the loss's logits
    keep = (labels != ignore_index)                # the loss's targets
    z = (lse.pow(2) * keep).sum() / keep.sum()     # mean; `sum`: no division
    loss = F.cross_entropy(logits.view(-1, V), labels.view(-1)) + c * z

with ``lse · lse``, ``lse ** 2``, ``torch.square(lse)``, ``torch.where(keep,
lse², 0)``, a mask cast to a float type, and ``c · z`` or ``z · c`` for a
Python number c >= 0. The loss must be unweighted (a weighted mean divides
by the kept weight), read by the addition alone, and its logits float32 (a
z-loss computed in bf16 rounds otherwise than xent's float32 one): the
logsumexp reads the loss's logits through shape ops only, the mask the
loss's targets through shape ops only, and the squared lse and the mask
have one shape (element for element the loss's rows). A z-loss over every
row (``lse.pow(2).mean()``) counts the ignored rows too: it is left.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import List, Optional

import torch

__all__ = ["ZLoss", "match", "absorb"]


@dataclass
class ZLoss:
    """A z-loss added to a loss node: `add` computes ``loss + scale · z``;
    `nodes` are the ops of the z term (erased where nothing else reads
    them once the addition is gone)."""
    scale: float
    add: torch.fx.Node
    nodes: List[torch.fx.Node] = field(default_factory=list)


def _value(node):
    if isinstance(node, torch.fx.Node):
        return node.meta.get("example_value", node.meta.get("val"))
    return node


def _call(node, functions=(), methods=()) -> bool:
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "call_function":
        return node.target in functions
    return node.op == "call_method" and node.target in methods


def _number(c) -> bool:
    return (isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
            and c >= 0)


_SHAPE_METHODS = ("view", "reshape", "contiguous", "flatten")


def _strip_views(node):
    while isinstance(node, torch.fx.Node) and node.args and (
            _call(node, (torch.reshape, torch.flatten), _SHAPE_METHODS)):
        node = node.args[0]
    return node


class _Walk:
    """The nodes of a candidate z term, collected as they are matched."""

    def __init__(self):
        self.nodes: List[torch.fx.Node] = []

    def take(self, node):
        self.nodes.append(node)
        return node

    def binary(self, node, functions, methods):
        """The two operands of `node` (a binary call without keywords), or None."""
        if not _call(node, functions, methods) or len(node.args) != 2 or node.kwargs:
            return None
        self.take(node)
        return node.args

    def full_sum(self, node):
        """x where `node` is the sum of every element of x (``x.sum()``,
        ``torch.sum(x)``), else None."""
        if not _call(node, (torch.sum,), ("sum",)) or len(node.args) != 1 or node.kwargs:
            return None
        self.take(node)
        return node.args[0]

    def mask_targets(self, node, ignore_index):
        """t where `node` is ``t != ignore_index`` (``ne``, either side),
        possibly cast to a float type, else None."""
        while _call(node, (), ("float", "to", "type")) and len(node.args) <= 2 \
                and not node.kwargs:
            v = _value(node)
            if not isinstance(v, torch.Tensor) or not v.is_floating_point():
                return None
            self.take(node)
            node = node.args[0]
        args = self.binary(node, (operator.ne, torch.ne), ("ne", "__ne__"))
        if args is None:
            return None
        a, b = args
        t, ii = (a, b) if isinstance(a, torch.fx.Node) else (b, a)
        if not isinstance(ii, int) or isinstance(ii, bool) or ii != ignore_index:
            return None
        return t

    def squared_lse(self, node):
        """The logsumexp node of which `node` is the square, else None."""
        base = None
        args = self.binary(node, (operator.pow, torch.pow), ("pow", "__pow__"))
        if args is not None:
            base = args[0] if args[1] == 2 else None
        elif _call(node, (torch.square,), ("square",)) and len(node.args) == 1 \
                and not node.kwargs:
            base = self.take(node).args[0]
        else:
            args = self.binary(node, (operator.mul, torch.mul), ("mul", "__mul__"))
            if args is not None and args[0] is args[1]:
                base = args[0]
        if not _call(base, (torch.logsumexp,), ("logsumexp",)):
            return None
        dims = dict(zip(("input", "dim", "keepdim"), base.args))
        dims.update(base.kwargs)
        x = _value(dims.get("input"))
        dim = dims.get("dim")
        dim = dim[0] if isinstance(dim, (list, tuple)) and len(dim) == 1 else dim
        if set(dims) - {"input", "dim", "keepdim"} or dims.get("keepdim", False) \
                or not isinstance(x, torch.Tensor) or not isinstance(dim, int) \
                or x.dim() == 0 or dim % x.dim() != x.dim() - 1:
            return None
        return self.take(base)

    def masked_sum(self, node, ignore_index):
        """(lse node, targets node) where `node` is Σ lse² · keep (a product
        either way round, or ``where(keep, lse², 0)``), else None."""
        inner = self.full_sum(node)
        if inner is None:
            return None
        if _call(inner, (torch.where,), ()) and len(inner.args) == 3 and not inner.kwargs \
                and inner.args[2] in (0, 0.0):
            self.take(inner)
            keep, square = inner.args[0], inner.args[1]
        else:
            args = self.binary(inner, (operator.mul, torch.mul), ("mul", "__mul__"))
            if args is None:
                return None
            square, keep = args
            if self.squared_lse(square) is None:
                square, keep = keep, square
        shape = [getattr(_value(n), "shape", None) for n in (square, keep)]
        lse = self.squared_lse(square)
        t = self.mask_targets(keep, ignore_index)
        if lse is None or t is None or shape[0] is None or shape[0] != shape[1]:
            return None
        return lse, t


def match(node: torch.fx.Node, logits, target, reduction: str, ignore_index,
          weight) -> Optional[ZLoss]:
    """The z-loss added to the loss `node` (F.cross_entropy or nll_loss of
    `logits`, `target`), where xent's z_loss_scale computes it exactly."""
    if reduction not in ("mean", "sum") or weight is not None \
            or not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
        return None
    x = _value(logits)
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() != 2:
        return None
    users = list(node.users)
    if len(users) != 1:
        return None
    walk = _Walk()
    add = users[0]
    args = walk.binary(add, (operator.add, operator.iadd, torch.add), ("add", "__add__"))
    if args is None:
        return None
    term = args[1] if args[0] is node else args[0]
    if term is node:
        return None
    scaled = walk.binary(term, (operator.mul, torch.mul), ("mul", "__mul__"))
    if scaled is None:
        return None
    scale, z = scaled if _number(scaled[0]) else (scaled[1], scaled[0])
    if not _number(scale) or not isinstance(z, torch.fx.Node):
        return None
    if reduction == "mean":
        ratio = walk.binary(z, (operator.truediv, torch.div), ("div", "__truediv__"))
        if ratio is None:
            return None
        numerator, count = ratio
        counted = walk.full_sum(count)
        t_count = walk.mask_targets(counted, ignore_index) if counted is not None else None
        if t_count is None or _strip_views(t_count) is not _strip_views(target):
            return None
    else:
        numerator = z
    found = walk.masked_sum(numerator, ignore_index)
    if found is None:
        return None
    lse, t = found
    if _strip_views(lse.args[0] if lse.args else lse.kwargs.get("input")) \
            is not _strip_views(logits) or _strip_views(t) is not _strip_views(target):
        return None
    rows = getattr(_value(lse), "shape", None)
    if rows is None or math.prod(rows) != x.shape[0]:
        return None
    walk.nodes.remove(add)
    return ZLoss(float(scale), add, walk.nodes)


def absorb(gm: torch.fx.GraphModule, loss: torch.fx.Node, z: ZLoss) -> None:
    """The addition's readers read `loss` instead (which is to take the
    z-loss as its z_loss_scale); the z term's ops nothing else reads go."""
    z.add.replace_all_uses_with(loss)
    gm.graph.erase_node(z.add)
    # Readers first: each node goes once nothing reads it.
    for node in sorted(set(z.nodes), key=lambda n: -_position(gm, n)):
        if not node.users:
            gm.graph.erase_node(node)


def _position(gm: torch.fx.GraphModule, node) -> int:
    for i, n in enumerate(gm.graph.nodes):
        if n is node:
            return i
    return -1
