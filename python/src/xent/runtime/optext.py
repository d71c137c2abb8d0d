"""The xent ops as MLIR text: the one printer behind every Python emitter.

MLIR's Python bindings are not packaged here, so the modules that build
xent IR in Python -- the kernels' entry functions (:mod:`xent.runtime.kernels`,
:mod:`xent.runtime.linear`) and the tests' programs
(:mod:`xent.testing.codegen`) -- print the ops with these functions. They
follow the ops' assembly formats (``XentOps.td``, ``XentLinearOps.td``)::

    %r0, ... = xent.cross_entropy{,_grad,_and_grad} <reduction>
        [%grad_output,] %logits, %target [weight %w] <scalars> [{attrs}]
        : (<operand types>) -> <result types>
    %r0, ... = xent.linear_cross_entropy{,_grad,_and_grad} <reduction>
        [%grad_output,] %hidden, %weight [bias %b], %target [class_weight %cw]
        <scalars> [{attrs}] : (<operand types>) -> <result types>

where ``<scalars>`` are the run-time operands among ``ignore_index``,
``label_smoothing``, ``z_loss_scale`` and ``softcap``, in that order. The
callers choose the SSA names, the types and the attribute values; these
functions only spell them.
"""

from __future__ import annotations

from typing import Iterable, List, Mapping, Optional, Sequence, Union

__all__ = ["SCALAR_KEYWORDS", "tensor_type", "float_attr", "loss_attributes", "attr_dict",
           "cross_entropy_op", "linear_cross_entropy_op"]

#: The scalar operands' keywords, in the order the assembly format reads them.
SCALAR_KEYWORDS = ("ignore_index", "label_smoothing", "z_loss_scale", "softcap")

#: The layouts of an op's text: ``line``, all on one line; ``block``, the
#: attribute dictionary (possibly empty) and the types each on a line of
#: their own, indented by six spaces.
_LAYOUTS = ("line", "block")


def tensor_type(dims: Iterable[Union[int, str]], dtype: str) -> str:
    """``tensor<d0x...xdtype>``; a dimension is a size or ``"?"``."""
    return "tensor<" + "".join(f"{d}x" for d in dims) + dtype + ">"


def float_attr(value: float) -> str:
    """An f32 attribute value: the shortest decimal that reads back as `value`
    as a Python float (a caller that wants the f32-rounded value rounds it
    first)."""
    return f"{float(value)!r} : f32"


def loss_attributes(ignore_index: Optional[int] = None, label_smoothing: float = 0.0,
                    z_loss_scale: float = 0.0, softcap: Optional[float] = None, *,
                    axis: Optional[int] = None, row_outputs: Sequence[str] = ()) -> List[str]:
    """The attribute entries of a loss op (either family) that differ from
    their defaults: ``ignore_index`` unless None, the float attributes unless
    0 (``softcap`` unless None), ``axis`` unless None, then one unit
    attribute per name of `row_outputs` (``return_lse`` ...)."""
    attrs = []
    if ignore_index is not None:
        attrs.append(f"ignore_index = {ignore_index} : i64")
    if label_smoothing:
        attrs.append(f"label_smoothing = {float_attr(label_smoothing)}")
    if z_loss_scale:
        attrs.append(f"z_loss_scale = {float_attr(z_loss_scale)}")
    if softcap is not None:
        attrs.append(f"softcap = {float_attr(softcap)}")
    if axis is not None:
        attrs.append(f"axis = {axis} : i64")
    attrs += list(row_outputs)
    return attrs


def attr_dict(entries: Sequence[str]) -> str:
    """``{a, b}``, or the empty string for no entries."""
    return "{" + ", ".join(entries) + "}" if entries else ""


def _scalars(scalars: Optional[Mapping[str, str]]) -> str:
    """The run-time scalar operands (keyword -> SSA value), in format order."""
    scalars = dict(scalars or {})
    unknown = set(scalars) - set(SCALAR_KEYWORDS)
    if unknown:
        raise ValueError(f"unknown scalar operands {sorted(unknown)}")
    return "".join(f" {kw} {scalars[kw]}" for kw in SCALAR_KEYWORDS if kw in scalars)


def _functional_type(operand_types: Sequence[str], result_types: Union[str, Sequence[str]]) -> str:
    """``(a, b) -> (c, d)``; a single result type given as a string is
    printed without parentheses (MLIR reads both spellings)."""
    results = result_types if isinstance(result_types, str) else \
        "(" + ", ".join(result_types) + ")"
    return f"({', '.join(operand_types)}) -> {results}"


def _op(name: str, reduction: str, results: Sequence[str], operands: str,
        attributes: Sequence[str], operand_types: Sequence[str],
        result_types: Union[str, Sequence[str]], layout: str) -> str:
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}, not {layout!r}")
    head = f"{', '.join(results)} = xent.{name} {reduction} {operands}"
    attrs, types = attr_dict(attributes), _functional_type(operand_types, result_types)
    if layout == "block":
        return f"{head}\n      {attrs}\n      : {types}"
    return f"{head}{' ' + attrs if attrs else ''} : {types}"


def cross_entropy_op(name: str, reduction: str, *, results: Sequence[str], logits: str,
                     target: str, operand_types: Sequence[str],
                     result_types: Union[str, Sequence[str]], grad_output: Optional[str] = None,
                     weight: Optional[str] = None, scalars: Optional[Mapping[str, str]] = None,
                     attributes: Sequence[str] = (), layout: str = "line",
                     row_stats: Optional[str] = None, class_offset: Optional[str] = None,
                     num_classes: Optional[str] = None) -> str:
    """One op of the cross-entropy family (`name`: ``cross_entropy``,
    ``cross_entropy_grad`` or ``cross_entropy_and_grad``), without
    indentation or newline. Operands are SSA names; `grad_output` for the
    ops that take it; `row_stats` (the gradient's merged statistics),
    `class_offset` and a run-time `num_classes` for a class slice;
    `scalars` maps keywords of SCALAR_KEYWORDS to SSA names; `attributes`
    are entries (loss_attributes)."""
    operands = (f"{grad_output}, " if grad_output is not None else "") + f"{logits}, {target}"
    for keyword, value in (("weight", weight), ("row_stats", row_stats),
                           ("class_offset", class_offset), ("num_classes", num_classes)):
        if value is not None:
            operands += f" {keyword} {value}"
    operands += _scalars(scalars)
    return _op(name, reduction, results, operands, attributes, operand_types, result_types,
               layout)


def linear_cross_entropy_op(name: str, reduction: str, *, results: Sequence[str], hidden: str,
                            weight: str, target: str, operand_types: Sequence[str],
                            result_types: Union[str, Sequence[str]],
                            grad_output: Optional[str] = None, bias: Optional[str] = None,
                            class_weight: Optional[str] = None,
                            scalars: Optional[Mapping[str, str]] = None,
                            attributes: Sequence[str] = (), layout: str = "line") -> str:
    """One op of the linear family (`name`: ``linear_cross_entropy``,
    ``linear_cross_entropy_grad`` or ``linear_cross_entropy_and_grad``),
    with the arguments of cross_entropy_op."""
    operands = (f"{grad_output}, " if grad_output is not None else "") + f"{hidden}, {weight}"
    if bias is not None:
        operands += f" bias {bias}"
    operands += f", {target}"
    if class_weight is not None:
        operands += f" class_weight {class_weight}"
    operands += _scalars(scalars)
    return _op(name, reduction, results, operands, attributes, operand_types, result_types,
               layout)
