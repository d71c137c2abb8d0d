"""Realistic frontend forms of softmax cross-entropy, for ``xent-recognize``.

This module generates the input corpus under
``test/Dialect/Xent/Recognize/Inputs/``: MLIR functions that compute a
cross-entropy loss (or its gradient) the way real frontends lower it, plus
near misses that look similar but are not cross-entropy.  It also describes
every generated function in ``forms.json`` (next to the inputs) and offers the
helpers that the execution tests use to run a function on random inputs and
compare it with the float64 reference (:mod:`xent.testing.reference`).  It is test
tooling of this repository, not part of the installed ``xent`` package: it
writes into the checkout's ``test/`` and lives in ``utils/`` (with
``recognizer_forms_terms.py``, which it imports); ``python/tests/conftest.py``
puts ``utils/`` on the path of the tests that import it
(``test_recognize.py``, ``test_recognize_inputs.py``).

Regenerate the inputs (needs the stock ``mlir-opt`` of LLVM 22, which
canonicalizes the forms that the frontends deliver canonicalized)::

    /usr/bin/python3 utils/recognizer_forms.py --write
    /usr/bin/python3 utils/recognizer_forms.py --check   # up to date?

The IR is written by mirroring the frontends' lowering code (see each
builder's docstring and the header of each generated file for the exact
source).  Two shapes of output exist:

* ``raw``: what the conversion pattern itself creates (e.g. torch-mlir's
  ``convert-torch-to-linalg``): ``tensor.dim`` of static tensors, dynamic
  ``tensor.empty`` + ``tensor.cast``, ``cf.assert`` broadcast checks, sub's
  ``alpha`` multiply, dead ``total_weight`` computations;
* ``canonical``: the same after ``canonicalize, cse`` -- what torch-mlir's
  ``torch-backend-to-linalg-on-tensors-backend-pipeline`` delivers.

Every function carries ``llvm.emit_c_interface`` and takes/returns ranked
tensors, so the CPU pipeline of :mod:`xent.runtime.pipelines` compiles it and
:class:`xent.runtime.driver.Library` calls it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "FILES", "INPUTS_DIR", "JSON_PATH", "Entry", "load_entries", "generate", "write_inputs",
    "lowering_passes", "make_inputs", "expected_outputs", "tolerance", "result_specs", "to_float64",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS_DIR = os.path.join(ROOT, "test", "Dialect", "Xent", "Recognize", "Inputs")
JSON_PATH = os.path.join(INPUTS_DIR, "forms.json")
STOCK_MLIR_OPT = os.path.join(os.environ.get("XENT_LLVM_BIN", "/usr/lib/llvm-22/bin"), "mlir-opt")

# Passes that turn TOSA into linalg/tensor/arith before the CPU pipeline
# (stock mlir-opt 22; tosa-to-linalg-pipeline nests itself on functions and
# runs tosa-validate, so it must be given at the top level).
TOSA_TO_LINALG_PASSES = ("tosa-to-linalg-pipeline", "tosa-to-tensor", "tosa-to-arith")

# linalg.softmax has no loop lowering: decompose it first ("%inputs" = the Inputs directory).
SOFTMAX_LOWERING = ("transform-preload-library{transform-library-paths="
                    "%inputs/decompose-softmax.transform.mlir}", "transform-interpreter")

NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80", "f64": "0xFFF0000000000000"}
# getFloatInf(..., allowNonFinites=false): the lowest finite value.
LOWEST = {"f32": "-3.40282347E+38", "f16": "-6.550400e+04", "bf16": "-3.38953139E+38"}


# =========================================================================== IR builder

def tt(shape: Sequence[Optional[int]], et: str) -> str:
    """``tensor<...>`` type of ``shape`` (None = dynamic) and element type ``et``."""
    dims = "".join(("?" if d is None else str(d)) + "x" for d in shape)
    return f"tensor<{dims}{et}>"


def amap(ndims: int, exprs: Sequence[str]) -> str:
    ds = ", ".join(f"d{i}" for i in range(ndims))
    return f"affine_map<({ds}) -> ({', '.join(exprs)})>"


def ident(ndims: int) -> str:
    return amap(ndims, [f"d{i}" for i in range(ndims)])


def fconst(value, et: str) -> str:
    """A float literal for ``et``: strings pass through, -inf becomes its hex pattern."""
    if isinstance(value, str):
        return value
    if value == float("-inf"):
        return NEG_INF[et]
    return f"{float(value):e}"


class Fn:
    """Emits one ``func.func`` with fresh SSA names and nested regions."""

    def __init__(self, name: str, params: Sequence[Tuple[str, str]], results: Sequence[str]):
        self.name = name
        self.params = list(params)
        self.results = list(results)
        self.lines: List[str] = []
        self.depth = 1
        self.counts: Dict[str, int] = {}

    def fresh(self, hint: str) -> str:
        n = self.counts.get(hint, 0)
        self.counts[hint] = n + 1
        return f"%{hint}" if n == 0 else f"%{hint}_{n}"

    def __call__(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def op(self, hint: str, rhs: str) -> str:
        v = self.fresh(hint)
        self(f"{v} = {rhs}")
        return v

    # ------------------------------------------------------------ small helpers
    def cidx(self, i: int) -> str:
        return self.op(f"c{i}", f"arith.constant {i} : index")

    def cst(self, hint: str, value, et: str) -> str:
        if et.startswith("i"):
            return self.op(hint, f"arith.constant {int(value)} : {et}")
        return self.op(hint, f"arith.constant {value if isinstance(value, str) else fconst(value, et)} : {et}")

    def dim(self, v: str, ty: str, i: int) -> str:
        c = self.cidx(i)
        return self.op("dim", f"tensor.dim {v}, {c} : {ty}")

    def empty(self, shape, dyn: Sequence[str], et: str) -> str:
        return self.op("empty", f"tensor.empty({', '.join(dyn)}) : {tt(shape, et)}")

    def fill(self, value: str, et: str, init: str, ty: str) -> str:
        return self.op("fill", f"linalg.fill ins({value} : {et}) outs({init} : {ty}) -> {ty}")

    def generic(self, hint: str, maps: Sequence[str], iters: Sequence[str],
                ins: Sequence[Tuple[str, str]], outs: Sequence[Tuple[str, str]],
                body: Callable[["Fn", List[str]], Sequence[str]],
                arg_types: Sequence[str], nres: int = 1) -> str:
        """linalg.generic; ``body(fn, block_args)`` emits the payload and returns yielded values."""
        res = self.fresh(hint)
        ins_s = f" ins({', '.join(v for v, _ in ins)} : {', '.join(t for _, t in ins)})" if ins else ""
        outs_s = f" outs({', '.join(v for v, _ in outs)} : {', '.join(t for _, t in outs)})"
        rtys = [t for _, t in outs]
        lhs = f"{res}:{nres}" if nres > 1 else res
        it = ", ".join(f'"{i}"' for i in iters)
        self(f"{lhs} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}}"
             f"{ins_s}{outs_s} {{")
        names = []
        for i, _ in enumerate(arg_types):
            names.append(self.fresh("in" if i < len(ins) else "out"))
        self(f"^bb0({', '.join(f'{n}: {t}' for n, t in zip(names, arg_types))}):")
        self.depth += 1
        ys = list(body(self, names))
        self(f"linalg.yield {', '.join(ys)} : {', '.join(arg_types[len(ins):len(ins) + len(ys)])}")
        self.depth -= 1
        rt = rtys[0] if nres == 1 else "(" + ", ".join(rtys) + ")"
        self(f"}} -> {rt}")
        return res

    def text(self, attrs: str = "attributes {llvm.emit_c_interface}") -> str:
        ps = ", ".join(f"{n}: {t}" for n, t in self.params)
        rs = self.results[0] if len(self.results) == 1 else "(" + ", ".join(self.results) + ")"
        head = f"func.func @{self.name}({ps}) -> {rs} {attrs} {{"
        return "\n".join([head] + self.lines + ["}"]) + "\n"


def ret(fn: Fn, vals: Sequence[str]) -> None:
    fn(f"return {', '.join(vals)} : {', '.join(fn.results)}")


# =========================================================================== torch-mlir TorchToLinalg
#
# Each helper mirrors one conversion pattern of torch-mlir
# (llvm/torch-mlir, lib/Conversion/TorchToLinalg/{Uncategorized,Reduction,
# DataMovement,IndirectDataMovement,Utils}.cpp) and returns
# (value, static_shape, element_type) of the torch op's result after the
# pattern's final tensor.cast.

@dataclass
class T:
    v: str
    shape: List[Optional[int]]
    et: str

    @property
    def ty(self) -> str:
        return tt(self.shape, self.et)


def _cast(fn: Fn, v: str, from_ty: str, to: T) -> T:
    if from_ty == to.ty:
        return T(v, to.shape, to.et)
    c = fn.op("cast", f"tensor.cast {v} : {from_ty} to {to.ty}")
    return T(c, to.shape, to.et)


def tl_elementwise(fn: Fn, operands: Sequence[T], out_et: str, body, result_shape=None,
                   strict: bool = False) -> T:
    """torch_to_linalg::createElementwiseLinalgGeneric (+ the tensor.cast of ConvertElementwiseOp).

    Broadcast dims of static size 1 get a constant-0 map; every other dim is
    read with tensor.dim and, unless the function assumes strict symbolic
    shapes (the FX importer's ``torch.assume_strict_symbolic_shapes``), checked
    equal to the running size with ``cf.assert``.
    """
    rank = max(len(o.shape) for o in operands)
    non_one = set()
    for i in range(rank):
        for o in operands:
            j = i - (rank - len(o.shape))
            if j >= 0 and o.shape[j] != 1:
                non_one.add(i)
                break
    res_dims: List[Optional[str]] = [None] * rank
    res_static: List[Optional[int]] = [1] * rank
    maps = []
    for o in operands:
        exprs = []
        for j, size in enumerate(o.shape):
            rd = j + rank - len(o.shape)
            if size == 1 and rd in non_one:
                exprs.append("0")
                continue
            exprs.append(f"d{rd}")
            d = fn.dim(o.v, o.ty, j)
            if res_dims[rd] is None:
                res_dims[rd] = d
                res_static[rd] = size
                continue
            if size is not None:
                res_static[rd] = size
            if not strict:
                eq = fn.op("eq", f"arith.cmpi eq, {res_dims[rd]}, {d} : index")
                fn(f'cf.assert {eq}, "mismatched size for broadcast"')
        maps.append(amap(rank, exprs))
    maps.append(ident(rank))
    shape_dyn = [None if d is not None else 1 for d in res_dims]
    e = fn.empty(shape_dyn, [d for d in res_dims if d is not None], out_et)
    ety = tt(shape_dyn, out_et)
    g = fn.generic("gen", maps, ["parallel"] * rank, [(o.v, o.ty) for o in operands], [(e, ety)],
                   body, [o.et for o in operands] + [out_et])
    final = T("", list(result_shape) if result_shape is not None else res_static, out_et)
    return _cast(fn, g, ety, final)


def tl_reduction(fn: Fn, x: T, dims: Sequence[int], keepdim: bool, init: str, init_et: str,
                 body) -> Tuple[str, str]:
    """torch_to_linalg::createReductionLinalgGeneric; returns (value, type) before any cast."""
    fn.cidx(1)  # created (unused) by the C++ helper; canonicalize removes it
    shape, dyn, out_exprs = [], [], []
    for i in range(len(x.shape)):
        d = fn.dim(x.v, x.ty, i)
        if i not in dims:
            shape.append(None)
            dyn.append(d)
            out_exprs.append(f"d{i}")
        elif keepdim:
            shape.append(1)
            out_exprs.append("0")
    e = fn.empty(shape, dyn, init_et)
    ety = tt(shape, init_et)
    f = fn.fill(init, init_et, e, ety)
    iters = ["reduction" if i in dims else "parallel" for i in range(len(x.shape))]
    g = fn.generic("red", [ident(len(x.shape)), amap(len(x.shape), out_exprs)], iters,
                   [(x.v, x.ty)], [(f, ety)], body, [x.et, init_et])
    return g, ety


def tl_max_dim(fn: Fn, x: T, dim: int, init: str) -> T:
    """ConvertAtenMinMaxDimOp<AtenMaxDimOp> with keepdim=true (value result only used).

    A two-result generic (running max + its i64 index), outputs initialised by
    linalg.fill (-inf, or the lowest finite value without allow-non-finites),
    then tensor.cast and tensor.expand_shape to re-insert the reduced dim.
    """
    rank = len(x.shape)
    sizes = [fn.dim(x.v, x.ty, i) for i in range(rank) if i != dim]
    red_shape = [x.shape[i] for i in range(rank) if i != dim]
    dyn_shape = [None] * len(sizes)
    z = fn.cst("c0_i64", 0, "i64")
    ei = fn.empty(dyn_shape, sizes, "i64")
    fi = fn.fill(z, "i64", ei, tt(dyn_shape, "i64"))
    ev = fn.empty(dyn_shape, sizes, x.et)
    init_v = fn.cst("cst", init, x.et)
    fv = fn.fill(init_v, x.et, ev, tt(dyn_shape, x.et))
    out_exprs = [f"d{i}" for i in range(rank) if i != dim]
    maps = [ident(rank), amap(rank, out_exprs), amap(rank, out_exprs)]
    iters = ["reduction" if i == dim else "parallel" for i in range(rank)]

    def body(f, a):
        i = f.op("idx", f"linalg.index {dim} : index")
        ii = f.op("idx_i64", f"arith.index_cast {i} : index to i64")
        m = f.op("max", f"arith.maximumf {a[0]}, {a[1]} : {x.et}")
        p = f.op("gt", f"arith.cmpf ogt, {a[0]}, {a[1]} : {x.et}")
        s = f.op("sel", f"arith.select {p}, {ii}, {a[2]} : i64")
        return [m, s]

    g = fn.generic("maxdim", maps, iters, [(x.v, x.ty)],
                   [(fv, tt(dyn_shape, x.et)), (fi, tt(dyn_shape, "i64"))], body,
                   [x.et, x.et, "i64"], nres=2)
    val = _cast(fn, f"{g}#0", tt(dyn_shape, x.et), T("", red_shape, x.et))
    fn.op("cast", f"tensor.cast {g}#1 : {tt(dyn_shape, 'i64')} to {tt(red_shape, 'i64')}")
    return tl_unsqueeze(fn, val, dim)


def tl_unsqueeze(fn: Fn, x: T, dim: int) -> T:
    """tensor.expand_shape inserting a unit dim at ``dim`` (aten.unsqueeze / keepdim)."""
    rank = len(x.shape)
    out_shape = list(x.shape[:dim]) + [1] + list(x.shape[dim:])
    if rank == 0:
        reassoc = "[]"
    else:
        groups = [[i] for i in range(rank)]
        if dim < rank:
            groups[dim] = [dim, dim + 1]
            for i in range(dim + 1, rank):
                groups[i] = [i + 1]
        else:
            groups[rank - 1] = [rank - 1, rank]
        reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
    outs = []
    for i, s in enumerate(out_shape):
        if s is None:
            src = i if i < dim else i - 1
            outs.append(fn.dim(x.v, x.ty, src))
        else:
            outs.append(str(s))
    y = fn.op("expanded", f"tensor.expand_shape {x.v} {reassoc} output_shape [{', '.join(outs)}]"
                          f" : {x.ty} into {tt(out_shape, x.et)}")
    return T(y, out_shape, x.et)


def tl_squeeze(fn: Fn, x: T, dim: int) -> T:
    """tensor.collapse_shape removing the unit dim ``dim`` (aten.squeeze.dim)."""
    rank = len(x.shape)
    out_shape = [s for i, s in enumerate(x.shape) if i != dim]
    if rank == 1:
        reassoc = "[]"
    else:
        groups = [[i] for i in range(rank) if i != dim]
        if dim > 0:
            groups[dim - 1].append(dim)
        else:
            groups[0].insert(0, 0)
        reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
    y = fn.op("collapsed", f"tensor.collapse_shape {x.v} {reassoc} : {x.ty} into {tt(out_shape, x.et)}")
    return T(y, out_shape, x.et)


def tl_sub(fn: Fn, a: T, b: T, strict=False, result_shape=None) -> T:
    """aten.sub.Tensor(a, b, alpha=1): ``a - b * alpha`` with alpha an f64 constant."""
    alpha = fn.cst("cst_alpha", "1.000000e+00", "f64")

    def body(f, x):
        al = f.op("alpha", f"arith.truncf {alpha} : f64 to {a.et}") if a.et != "f64" else alpha
        m = f.op("mul", f"arith.mulf {x[1]}, {al} : {a.et}")
        return [f.op("sub", f"arith.subf {x[0]}, {m} : {a.et}")]

    return tl_elementwise(fn, [a, b], a.et, body, result_shape or _bshape(a, b), strict)


def _bshape(*ts: T) -> List[Optional[int]]:
    rank = max(len(t.shape) for t in ts)
    out: List[Optional[int]] = [1] * rank
    for t in ts:
        for j, s in enumerate(t.shape):
            rd = j + rank - len(t.shape)
            if s != 1:
                out[rd] = s if out[rd] in (1, None) or s is not None else out[rd]
                if s is None and out[rd] == 1:
                    out[rd] = None
    return out


def tl_binary(fn: Fn, op: str, a: T, b: T, strict=False) -> T:
    def body(f, x):
        return [f.op(op.split(".")[1], f"{op} {x[0]}, {x[1]} : {a.et}")]
    return tl_elementwise(fn, [a, b], a.et, body, _bshape(a, b), strict)


def tl_unary(fn: Fn, op: str, x: T, strict=False) -> T:
    def body(f, a):
        return [f.op(op.split(".")[1], f"{op} {a[0]} : {x.et}")]
    return tl_elementwise(fn, [x], x.et, body, x.shape, strict)


def tl_scalar(fn: Fn, op: str, x: T, value: float, scalar_first=False, strict=False) -> T:
    """aten.mul.Scalar / aten.div.Scalar: the scalar as a constant in the payload."""
    def body(f, a):
        c = f.op("cst", f"arith.constant {fconst(value, x.et)} : {x.et}")
        lhs, rhs = (c, a[0]) if scalar_first else (a[0], c)
        return [f.op(op.split(".")[1], f"{op} {lhs}, {rhs} : {x.et}")]
    return tl_elementwise(fn, [x], x.et, body, x.shape, strict)


def tl_softcap(fn: Fn, x: T, cap: float, form: str = "div", scale: Optional[float] = None,
               strict=False) -> T:
    """Gemma's final logit softcap ``torch.tanh(x / cap) * cap`` as TorchToLinalg lowers it.

    ``form``: ``div`` (x / cap, then tanh, then tanh * cap) or ``recip``
    (x * (1 / cap), then cap * tanh: the multiplications commuted);
    ``scale`` replaces the final factor (a near miss when it is not ``cap``).
    """
    scale = cap if scale is None else scale
    if form == "div":
        y = tl_scalar(fn, "arith.divf", x, cap, strict=strict)
    else:
        y = tl_scalar(fn, "arith.mulf", x, float(np.float32(1.0 / cap)), strict=strict)
    th = tl_unary(fn, "math.tanh", y, strict)
    return tl_scalar(fn, "arith.mulf", th, scale, scalar_first=(form != "div"), strict=strict)


def tl_tanh_backward(fn: Fn, grad: T, y: T, strict=False) -> T:
    """aten.tanh_backward(grad, y) in TorchToLinalg's payload: grad * (1 - y * y)."""
    def body(f, a):
        one = f.op("cst", f"arith.constant 1.000000e+00 : {grad.et}")
        yy = f.op("mul", f"arith.mulf {a[1]}, {a[1]} : {grad.et}")
        s = f.op("sub", f"arith.subf {one}, {yy} : {grad.et}")
        return [f.op("mul", f"arith.mulf {a[0]}, {s} : {grad.et}")]
    return tl_elementwise(fn, [grad, y], grad.et, body, grad.shape, strict)


def tl_to_dtype(fn: Fn, x: T, et: str, strict=False) -> T:
    """aten.to.dtype / prims.convert_element_type (convertScalarToDtype)."""
    def body(f, a):
        wid = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
        if x.et.startswith("i") and not et.startswith("i"):
            op = "arith.uitofp" if x.et == "i1" else "arith.sitofp"
        elif wid[x.et] < wid[et]:
            op = "arith.extf"
        else:
            op = "arith.truncf"
        return [f.op("conv", f"{op} {a[0]} : {x.et} to {et}")]
    return tl_elementwise(fn, [x], et, body, x.shape, strict)


def tl_sum_dim(fn: Fn, x: T, dim: int, keepdim=True, out_et=None) -> T:
    """aten.sum.dim_IntList (ConvertReductionOp): zero-filled accumulator, ``addf(in, acc)``."""
    oet = out_et or x.et
    z = fn.cst("cst_0", "0.000000e+00", oet)

    def body(f, a):
        v = a[0] if x.et == oet else f.op("conv", f"arith.extf {a[0]} : {x.et} to {oet}")
        return [f.op("add", f"arith.addf {v}, {a[1]} : {oet}")]

    g, ety = tl_reduction(fn, x, [dim], keepdim, z, oet, body)
    out_shape = [(1 if i == dim else s) for i, s in enumerate(x.shape)] if keepdim else \
        [s for i, s in enumerate(x.shape) if i != dim]
    return _cast(fn, g, ety, T("", out_shape, oet))


def tl_sum_all(fn: Fn, x: T, out_et: Optional[str] = None) -> T:
    """aten.sum (all dims) to a 0-d tensor; converts the element first (e.g. i1 -> f32 uitofp)."""
    oet = out_et or x.et
    if oet.startswith("i"):
        z = fn.cst("c0", 0, oet)
    else:
        z = fn.cst("cst_0", "0.000000e+00", oet)

    def body(f, a):
        v = a[0]
        if x.et != oet:
            if x.et == "i1" and oet.startswith("i"):
                v = f.op("ext", f"arith.extui {v} : i1 to {oet}")
            elif x.et == "i1":
                v = f.op("conv", f"arith.uitofp {v} : i1 to {oet}")
            else:
                v = f.op("conv", f"arith.extf {v} : {x.et} to {oet}")
        op = "arith.addi" if oet.startswith("i") else "arith.addf"
        return [f.op("add", f"{op} {v}, {a[1]} : {oet}")]

    g, ety = tl_reduction(fn, x, list(range(len(x.shape))), False, z, oet, body)
    return T(g, [], oet)


def tl_log_softmax(fn: Fn, x: T, dim: int, init: str, strict=False) -> T:
    """DecomposeComplexOps getLogSoftmaxResult, then TorchToLinalg of each op:
    max.dim(keepdim) / sub.Tensor / exp / sum.dim_IntList(keepdim) / log / sub.Tensor."""
    xmax = tl_max_dim(fn, x, dim, init)
    shifted = tl_sub(fn, x, xmax, strict, x.shape)
    e = tl_unary(fn, "math.exp", shifted, strict)
    s = tl_sum_dim(fn, e, dim, keepdim=True)
    lg = tl_unary(fn, "math.log", s, strict)
    return tl_sub(fn, shifted, lg, strict, x.shape)


def tl_nll_forward_direct(fn: Fn, logp: T, target: T, reduction: str, ignore: int,
                          with_total_weight: bool = True, divisor: str = "count"
                          ) -> Tuple[T, Optional[T]]:
    """ConvertAtenNllLossForwardOp (Uncategorized.cpp): the unweighted NLL lowering.

    Per element: ``select(index_cast(t) == ignore, 0, -logp[i, index_cast(t)])``
    read with tensor.extract (no bounds check: an ignored target reads
    out of bounds and the select discards it).  mean/sum: an i32 count of
    kept targets (cmpi ne / extui / addi), sitofp, then a reduction whose
    payload divides each element by the count (mean) before adding.  The
    op's second result (total_weight = numel - #ignored) is also built.
    ``divisor="numel"`` divides by the number of targets instead (a near miss).
    """
    et = logp.et
    ig = fn.cst("c_ignore", ignore, "i64")
    ign_idx = fn.op("ignore_idx", f"arith.index_cast {ig} : i64 to index")
    zero = fn.cst("cst_0", "0.000000e+00", et)
    rank_in = len(logp.shape)

    def per_elem(f, a):
        ti = f.op("t", f"arith.index_cast {a[0]} : i64 to index")
        eq = f.op("is_ignored", f"arith.cmpi eq, {ti}, {ign_idx} : index")
        idx = [ti]
        if rank_in == 2:
            i0 = f.op("i", "linalg.index 0 : index")
            idx = [i0, ti]
        v = f.op("picked", f"tensor.extract {logp.v}[{', '.join(idx)}] : {logp.ty}")
        n = f.op("neg", f"arith.negf {v} : {et}")
        return [f.op("sel", f"arith.select {eq}, {zero}, {n} : {et}")]

    res = tl_elementwise(fn, [target], et, per_elem, target.shape)
    tdims = list(range(len(target.shape)))
    if reduction in ("mean", "sum"):
        zi = fn.cst("c0_i32", 0, "i32")

        def count(f, a):
            ti = f.op("t", f"arith.index_cast {a[0]} : i64 to index")
            ne = f.op("kept", f"arith.cmpi ne, {ti}, {ign_idx} : index")
            e = f.op("kept_i32", f"arith.extui {ne} : i1 to i32")
            return [f.op("cnt", f"arith.addi {a[1]}, {e} : i32")]

        if divisor == "count":
            cnt, cty = tl_reduction(fn, target, tdims, False, zi, "i32", count)
            n = fn.op("count", f"tensor.extract {cnt}[] : {cty}")
            nf = fn.op("count_f", f"arith.sitofp {n} : i32 to {et}")
        else:
            n = fn.dim(target.v, target.ty, 0)
            n = fn.op("numel", f"arith.index_cast {n} : index to i32")
            nf = fn.op("numel_f", f"arith.sitofp {n} : i32 to {et}")

        def acc(f, a):
            v = a[0]
            if reduction == "mean":
                v = f.op("div", f"arith.divf {v}, {nf} : {et}")
            return [f.op("add", f"arith.addf {v}, {a[1]} : {et}")]

        g, gty = tl_reduction(fn, res, tdims, False, zero, et, acc)
        res = T(g, [], et)
    tw = None
    if with_total_weight:
        if reduction == "none" and rank_in == 2:
            e = fn.empty([], [], et)
            tw = T(fn.fill(fn.cst("cst_0", "0.000000e+00", et), et, e, tt([], et)), [], et)
        elif len(target.shape) == 0:
            tv = fn.op("tval", f"tensor.extract {target.v}[] : {target.ty}")
            c = fn.op("ign", f"arith.cmpi eq, {tv}, {ig} : i64")
            ci = fn.op("ign_i64", f"arith.extui {c} : i1 to i64")
            one = fn.cst("c1_i64", 1, "i64")
            twi = fn.op("tw", f"arith.subi {one}, {ci} : i64")
            twf = fn.op("tw_f", f"arith.sitofp {twi} : i64 to {et}")
            e = fn.empty([], [], et)
            tw = T(fn.fill(twf, et, e, tt([], et)), [], et)
        else:
            z64 = fn.cst("c0_i64", 0, "i64")

            def nign(f, a):
                c = f.op("ign", f"arith.cmpi eq, {a[0]}, {ig} : i64")
                ci = f.op("ign_i64", f"arith.extui {c} : i1 to i64")
                return [f.op("cnt", f"arith.addi {ci}, {a[1]} : i64")]

            g, gty = tl_reduction(fn, target, tdims, False, z64, "i64", nign)
            ni = fn.op("n_ignored", f"tensor.extract {g}[] : {gty}")
            numel = fn.dim(target.v, target.ty, 0)
            numel = fn.op("numel", f"arith.index_cast {numel} : index to i64")
            twi = fn.op("tw", f"arith.subi {numel}, {ni} : i64")
            twf = fn.op("tw_f", f"arith.sitofp {twi} : i64 to {et}")
            e = fn.empty([], [], et)
            tw = T(fn.fill(twf, et, e, tt([], et)), [], et)
    return res, tw


def tl_gather_dim1(fn: Fn, self_: T, index: T, dim: int = 1) -> T:
    """ConvertAtenGatherOp (IndirectDataMovement.cpp) with its two cf.assert bounds checks."""
    rank = len(index.shape)
    sizes = [fn.dim(index.v, index.ty, i) for i in range(rank)]
    dyn = [None] * rank
    z = fn.cst("cst_0", "0.000000e+00", self_.et)
    e = fn.empty(dyn, sizes, self_.et)
    f0 = fn.fill(z, self_.et, e, tt(dyn, self_.et))

    def body(f, a):
        idx = []
        for i in range(len(self_.shape)):
            if i == dim:
                idx.append(f.op("index", f"arith.index_cast {a[0]} : i64 to index"))
            else:
                idx.append(f.op("i", f"linalg.index {i} : index"))
        ic = f.op("index_1", f"arith.index_cast {a[0]} : i64 to index")
        c = f.op("c", f"arith.constant {dim} : index")
        d = f.op("dim", f"tensor.dim {self_.v}, {c} : {self_.ty}")
        lt = f.op("lt", f"arith.cmpi slt, {ic}, {d} : index")
        f(f'cf.assert {lt}, "index must be smaller than dim size"')
        z64 = f.op("c0_i64", "arith.constant 0 : i64")
        ge = f.op("ge", f"arith.cmpi sge, {a[0]}, {z64} : i64")
        f(f'cf.assert {ge}, "index must be larger or equal to 0"')
        return [f.op("extracted", f"tensor.extract {self_.v}[{', '.join(idx)}] : {self_.ty}")]

    g = fn.generic("gather", [ident(rank), ident(rank)], ["parallel"] * rank,
                   [(index.v, index.ty)], [(f0, tt(dyn, self_.et))], body, [index.et, self_.et])
    return _cast(fn, g, tt(dyn, self_.et), T("", index.shape, self_.et))


def tl_nll_forward_decomposed(fn: Fn, logp: T, target: T, weight: Optional[T], reduction: str,
                              ignore: int, strict=False, count_via_i64=False,
                              total_weight_out: Optional[list] = None) -> T:
    """DecomposeAtenNllLossForwardOp (torch-mlir DecomposeComplexOps.cpp), which
    mirrors PyTorch's torch/_decomp/decompositions.py nll_loss_forward, then
    TorchToLinalg of each op:

    weight: ``self = self * weight.view(1, C)`` (before the gather!);
    ``cond = target != ignore``; ``safe = where(cond, target, 0)``;
    ``-gather(self, 1, safe.unsqueeze(1)).squeeze(1)``; ``where(cond, ., 0)``;
    total weight = ``sum(where(cond, gather(weight.expand(N, C), 1, safe), 0))``
    or ``sum(cond)`` (torch-mlir: sum of i1 with an f32 result, uitofp) or,
    through FX (``count_via_i64``), ``(target != ignore).sum().to(self)``;
    mean = ``sum(result) / total_weight``.
    """
    et = logp.et
    self_ = logp
    w2 = None
    if weight is not None:
        w2 = tl_unsqueeze(fn, weight, 0)  # aten.view(weight, [1, C]) -> expand_shape
        self_ = tl_binary(fn, "arith.mulf", logp, w2, strict)
    ig = fn.cst("c_ignore", ignore, "i64")

    def ne_body(f, a):
        return [f.op("ne", f"arith.cmpi ne, {a[0]}, {ig} : i64")]

    cond = tl_elementwise(fn, [target], "i1", ne_body, target.shape, strict)
    z64 = fn.cst("c0_i64", 0, "i64")
    zt = T(fn.op("zero_t", f"tensor.from_elements {z64} : tensor<i64>"), [], "i64")

    def where_i(f, a):
        return [f.op("safe", f"arith.select {a[0]}, {a[1]}, {a[2]} : i64")]

    safe = tl_elementwise(fn, [cond, target, zt], "i64", where_i, target.shape, strict)
    safe_ = tl_unsqueeze(fn, safe, 1)
    g = tl_gather_dim1(fn, self_, safe_)
    g = tl_unary(fn, "arith.negf", g, strict)
    sq = tl_squeeze(fn, g, 1)

    def where_f(f, a):
        z = f.op("zero", f"arith.sitofp {a[2]} : i64 to {et}")
        return [f.op("masked", f"arith.select {a[0]}, {a[1]}, {z} : {et}")]

    result = tl_elementwise(fn, [cond, sq, zt], et, where_f, target.shape, strict)
    if reduction == "none":
        return result
    if weight is not None:
        wexp = _expand(fn, w2, logp, strict)
        wg = tl_gather_dim1(fn, wexp, safe_)
        wsq = tl_squeeze(fn, wg, 1)

        def where_w(f, a):
            z = f.op("zero", f"arith.sitofp {a[2]} : i64 to {weight.et}")
            return [f.op("masked", f"arith.select {a[0]}, {a[1]}, {z} : {weight.et}")]

        wsum = tl_elementwise(fn, [cond, wsq, zt], weight.et, where_w, target.shape, strict)
        total = tl_sum_all(fn, wsum, et)
    elif count_via_i64:
        cnt = tl_sum_all(fn, cond, "i64")
        total = tl_to_dtype(fn, cnt, et, strict)
    else:
        total = tl_sum_all(fn, cond, et)
    if total_weight_out is not None:
        total_weight_out.append(total)
    s = tl_sum_all(fn, result)
    if reduction == "sum":
        return s
    return tl_binary(fn, "arith.divf", s, total, strict)


def _expand(fn: Fn, w2: T, like: T, strict: bool) -> T:
    """aten.expand(w.view(1, C), self.shape): a broadcasting copy generic."""
    rank = len(like.shape)
    sizes = []
    for i in range(rank):
        if w2.shape[i] == 1:
            sizes.append(fn.dim(like.v, like.ty, i))
        else:
            sizes.append(fn.dim(w2.v, w2.ty, i))
    dyn = [None] * rank
    e = fn.empty(dyn, sizes, w2.et)
    exprs = ["0" if w2.shape[i] == 1 else f"d{i}" for i in range(rank)]
    g = fn.generic("expand", [amap(rank, exprs), ident(rank)], ["parallel"] * rank,
                   [(w2.v, w2.ty)], [(e, tt(dyn, w2.et))], lambda f, a: [a[0]], [w2.et, w2.et])
    return _cast(fn, g, tt(dyn, w2.et), T("", like.shape, w2.et))


def tl_nll_backward(fn: Fn, grad: T, logp: T, target: T, weight: Optional[T], reduction: str,
                    ignore: int, total_weight: T) -> T:
    """ConvertAtenNllLossBackwardOp (Uncategorized.cpp): one generic over (N, C) reading
    grad_output (map to () or (d0)), target (d0) and total_weight (), writing
    ``select(t != c || t == ignore, 0, w[t] * -(g / total_weight))``."""
    et = grad.et
    rank = len(logp.shape)
    sizes = [fn.dim(logp.v, logp.ty, i) for i in range(rank)]
    dyn = [None] * rank
    z = fn.cst("cst_0", "0.000000e+00", et)
    e = fn.empty(dyn, sizes, et)
    f0 = fn.fill(z, et, e, tt(dyn, et))
    ig = fn.cst("c_ignore", ignore, "i64")
    ign_idx = fn.op("ignore_idx", f"arith.index_cast {ig} : i64 to index")
    gmap = amap(rank, ["d0"]) if (reduction == "none" and rank == 2) else amap(rank, [])
    tmap = amap(rank, ["d0"]) if rank == 2 else amap(rank, [])
    twmap = amap(rank, [])

    def body(f, a):
        g, t, tw = a[0], a[1], a[2]
        ti = f.op("t", f"arith.index_cast {t} : i64 to index")
        ci = f.op("c", f"linalg.index {rank - 1} : index")
        if reduction == "mean":
            g = f.op("g", f"arith.divf {g}, {tw} : {et}")
        ng = f.op("neg", f"arith.negf {g} : {et}")
        if weight is not None:
            w = f.op("w", f"tensor.extract {weight.v}[{ti}] : {weight.ty}")
        else:
            w = f.op("one", f"arith.constant 1.000000e+00 : {et}")
        wg = f.op("wg", f"arith.mulf {w}, {ng} : {et}")
        ne = f.op("ne", f"arith.cmpi ne, {ti}, {ci} : index")
        eq = f.op("eq", f"arith.cmpi eq, {ti}, {ign_idx} : index")
        o = f.op("zero_grad", f"arith.ori {ne}, {eq} : i1")
        zz = f.op("zero", f"arith.constant 0.000000e+00 : {et}")
        return [f.op("sel", f"arith.select {o}, {zz}, {wg} : {et}")]

    gen = fn.generic("nll_bwd", [gmap, tmap, twmap, ident(rank)], ["parallel"] * rank,
                     [(grad.v, grad.ty), (target.v, target.ty), (total_weight.v, total_weight.ty)],
                     [(f0, tt(dyn, et))], body, [et, "i64", et, et])
    return _cast(fn, gen, tt(dyn, et), T("", logp.shape, et))


def tl_log_softmax_backward(fn: Fn, grad: T, logp: T, dim: int, strict=False) -> T:
    """DecomposeAten_LogSoftmaxBackwardDataOp + createSoftmaxBackwardCommonKernel:
    ``grad - exp(output) * broadcast_to(sum(grad, dim, keepdim))``."""
    e = tl_unary(fn, "math.exp", logp, strict)
    s = tl_sum_dim(fn, grad, dim, keepdim=True)
    # aten.broadcast_to(sum, grad.size()): a copy generic with a (d0, 0) map.
    rank = len(grad.shape)
    sizes = [fn.dim(grad.v, grad.ty, i) for i in range(rank)]
    dyn = [None] * rank
    em = fn.empty(dyn, sizes, grad.et)
    exprs = ["0" if i == dim else f"d{i}" for i in range(rank)]
    b = fn.generic("bcast", [amap(rank, exprs), ident(rank)], ["parallel"] * rank,
                   [(s.v, s.ty)], [(em, tt(dyn, grad.et))], lambda f, a: [a[0]], [grad.et, grad.et])
    b = _cast(fn, b, tt(dyn, grad.et), T("", grad.shape, grad.et))
    m = tl_binary(fn, "arith.mulf", e, b, strict)
    return tl_sub(fn, grad, m, strict, grad.shape)


# =========================================================================== metadata

Dims = List[object]  # ints (static) or symbol names (dynamic): "N", "C", "B", "T"


def shape_of(dims: Dims) -> List[Optional[int]]:
    return [d if isinstance(d, int) else None for d in dims]


def ty_of(dims: Dims, et: str) -> str:
    return tt(shape_of(dims), et)


@dataclass
class Spec:
    """Machine-readable description of one corpus function (one row of forms.json)."""

    file: str
    function: str
    form: str
    kind: str                      # forward | backward | joint | near_miss
    expected: str                  # recognize | near_miss | optional
    args: List[dict]               # {"role", "dims", "dtype", "type"}
    results: List[dict]
    torch: str                     # PyTorch-equivalent semantics
    source: str                    # frontend / lowering mirrored, with repository paths
    variant: str                   # the IR features of this function
    reduction: Optional[str] = None
    ignore_index: Optional[int] = None
    weighted: bool = False
    axis: int = 1
    logits_dtype: str = "f32"
    target: Optional[str] = "index"   # index | probabilities | None
    target_dtype: Optional[str] = "i64"
    compute_dtype: str = "f32"
    static: bool = True
    lowering: List[str] = field(default_factory=list)
    reason: Optional[str] = None
    softcap: Optional[float] = None   # the chain caps the logits: softcap * tanh(x / softcap)
    label_smoothing: Optional[float] = None  # (1 - eps) * nll + eps / C * smooth
    z_loss_scale: Optional[float] = None     # + z * lse ** 2 on kept elements
    check: str = "reference"       # reference | differs | runs

    def row(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        d["raise_to"] = self.raise_to()
        return d

    def raise_to(self) -> List[dict]:
        """The xent ops a recognizer should produce (empty for near misses)."""
        if self.expected == "near_miss":
            return []
        base = {"reduction": self.reduction, "ignore_index": self.ignore_index,
                "weighted": self.weighted, "axis": self.axis, "target": self.target,
                "softcap": self.softcap, "label_smoothing": self.label_smoothing,
                "z_loss_scale": self.z_loss_scale}
        ops = []
        if self.kind in ("forward", "joint"):
            ops.append({"op": "xent.cross_entropy", **base})
        if self.kind in ("backward", "joint"):
            ops.append({"op": "xent.cross_entropy_grad", **base})
        return ops


def arg(role: str, dims: Dims, dtype: str) -> dict:
    return {"role": role, "dims": list(dims), "dtype": dtype, "type": ty_of(dims, dtype)}


def params_of(args: Sequence[dict]) -> List[Tuple[str, str]]:
    return [(f"%{a['role']}", a["type"]) for a in args]


def tval(a: dict) -> T:
    return T(f"%{a['role']}", shape_of(a["dims"]), a["dtype"])


def torch_semantics(reduction, ignore, weighted, axis=1, label_smoothing=None, extra=""):
    w = ", weight=w" if weighted else ""
    ig = f", ignore_index={ignore}" if ignore is not None else ""
    note = " (no ignore_index in the source: every target counts)" if ignore is None else ""
    return f"F.cross_entropy(x, t{w}, reduction='{reduction}'{ig}) over class dim {axis}{note}{extra}"


# =========================================================================== form 1: torch-mlir TorchToLinalg

TORCH_SRC = ("llvm/torch-mlir: lib/Dialect/Torch/Transforms/DecomposeComplexOps.cpp "
             "(getLogSoftmaxResult, DecomposeAtenNllLossForwardOp, DecomposeAten_LogSoftmaxBackwardDataOp), "
             "lib/Conversion/TorchToLinalg/Reduction.cpp (ConvertAtenMinMaxDimOp, ConvertReductionOp), "
             "Uncategorized.cpp (ConvertElementwiseOp, ConvertAtenNllLossForwardOp, ConvertAtenNllLossBackwardOp), "
             "IndirectDataMovement.cpp (ConvertAtenGatherOp), Utils.cpp (createElementwiseLinalgGeneric, "
             "createReductionLinalgGeneric); tests test/Conversion/TorchToLinalg/basic.mlir")


def torch_forward(file: str, name: str, *, dims: Dims, et: str, reduction: str, ignore: int,
                  init: str, weighted=False, decomposed=False, strict=False, collapse=False,
                  fx=False, form="torch_linalg", variant="", target_et="i64",
                  softcap: Optional[float] = None, softcap_form: str = "div",
                  softcap_scale: Optional[float] = None) -> Tuple[Fn, Spec]:
    """One cross-entropy forward as torch-mlir lowers F.cross_entropy.

    ``decomposed``: nll_loss_forward goes through DecomposeAtenNllLossForwardOp
    (always the case with class weights: the direct TorchToLinalg pattern
    rejects them).  ``fx``: the PyTorch decompositions that torch.export
    applies (torch/_decomp/decompositions.py _log_softmax / nll_loss_forward):
    half inputs widened to f32 for log_softmax and narrowed back, the count
    computed as ``(t != ignore).sum().to(dtype)``.  ``collapse``: logits
    (B, T, V) and labels (B, T) flattened by ``.view(-1, V)`` first.
    ``softcap``: the logits are capped first (see :func:`tl_softcap`);
    ``softcap_scale`` multiplies the tanh by another value than the divisor
    (a near miss).
    """
    C = dims[-1]
    args = [arg("logits", dims, et), arg("target", dims[:-1], target_et)]
    if weighted:
        args.append(arg("weight", [C], et))
    loss_dims = [] if reduction != "none" else (dims[:-1] if not collapse else ["N"])
    res = [arg("loss", loss_dims, et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    x, t = tval(args[0]), tval(args[1])
    w = tval(args[2]) if weighted else None
    axis = len(dims) - 1
    if collapse:
        flat_c = shape_of(dims)[-1]
        nb = None if any(d is None for d in shape_of(dims)[:-1]) else int(np.prod(dims[:-1]))
        xv = fn.op("collapsed", f"tensor.collapse_shape {x.v} [[0, 1], [2]] : {x.ty} into {tt([nb, flat_c], et)}")
        tv = fn.op("collapsed", f"tensor.collapse_shape {t.v} [[0, 1]] : {t.ty} into {tt([nb], target_et)}")
        x, t = T(xv, [nb, flat_c], et), T(tv, [nb], target_et)
    dim = len(x.shape) - 1
    xin = x
    if fx and et != "f32":
        xin = tl_to_dtype(fn, x, "f32", strict)
    if softcap is not None:
        xin = tl_softcap(fn, xin, softcap, softcap_form, softcap_scale, strict)
    logp = tl_log_softmax(fn, xin, dim, init, strict)
    if fx and et != "f32":
        logp = tl_to_dtype(fn, logp, et, strict)
    if decomposed or weighted:
        loss = tl_nll_forward_decomposed(fn, logp, t, w, reduction, ignore, strict, count_via_i64=fx)
    else:
        loss, _ = tl_nll_forward_direct(fn, logp, t, reduction, ignore)
    ret(fn, [loss.v])
    capped = softcap is not None and softcap_scale is None
    extra = "; logits.view(-1, V), labels.view(-1)" if collapse else ""
    if softcap is not None:
        scale = softcap if softcap_scale is None else softcap_scale
        extra = f" of x = torch.tanh(x / {softcap}) * {scale}" + extra
    spec = Spec(file=file, function=name, form=form, kind="forward", expected="recognize",
                args=args, results=res,
                torch=torch_semantics(reduction, ignore, weighted, axis, extra=extra),
                softcap=softcap if capped else None,
                source=TORCH_SRC if not fx else FX_SRC, variant=variant, reduction=reduction,
                ignore_index=ignore, weighted=weighted, axis=axis, logits_dtype=et,
                target_dtype=target_et, compute_dtype=et if not fx else et,
                static=all(isinstance(d, int) for d in dims))
    return fn, spec


FX_SRC = ("pytorch/pytorch: torch/_decomp/decompositions.py (_log_softmax: x.to(opmath) / amax / "
          "shifted - log(sum(exp(shifted))) / .to(result_dtype); nll_loss_forward: self * w.view, "
          "where(t != ignore, t, 0), -gather(...).squeeze, where(..., 0), total_weight = "
          "(t != ignore).sum().to(self) or sum(where(..., gather(w.expand), 0))); imported by "
          "llvm/torch-mlir python/torch_mlir/extras/fx_importer.py and lowered by TorchToLinalg "
          "(aten.amax -> DecomposeAtenAminAmaxOp -> aten.max.dim; to.dtype -> arith.extf/truncf; "
          "gather -> ConvertAtenGatherOp with cf.assert bounds checks); strict symbolic shapes: no "
          "broadcast cf.assert")


def torch_backward(file: str, name: str, *, dims: Dims, et: str, reduction: str, ignore: int,
                   init: str, weighted=False, joint=False, seed=False, variant="",
                   softcap: Optional[float] = None, through_cap=True, file_form="torch_backward"
                   ) -> Tuple[Fn, Spec]:
    """F.cross_entropy backward as torch-mlir lowers the autograd graph.

    aten.nll_loss_backward (ConvertAtenNllLossBackwardOp, weights supported)
    then aten._log_softmax_backward_data (decomposed:
    ``g - exp(logp) * sum(g, 1, keepdim)``).  ``joint``: forward and backward
    in one function sharing log_softmax and total_weight (AOTAutograd joint
    graph); ``seed``: the gradient seed is the constant 1.0 of
    ``loss.backward()`` instead of an argument.  Otherwise the function
    recomputes log_softmax and total_weight from the logits (rematerialised
    backward graph).  ``softcap``: the logits are capped first
    (:func:`tl_softcap`) and the gradient goes back through the cap as
    autograd does: mul.Scalar's backward (``* c``), aten.tanh_backward
    (``g * (1 - y * y)``), div.Scalar's backward (``/ c``); without
    ``through_cap`` the function returns the gradient with respect to the
    capped logits (a near miss).
    """
    C = dims[-1]
    gdims = [] if reduction != "none" else dims[:-1]
    args = []
    if not seed:
        args.append(arg("grad_output", gdims, et))
    args += [arg("logits", dims, et), arg("target", dims[:-1], "i64")]
    if weighted:
        args.append(arg("weight", [C], et))
    res = []
    if joint:
        res.append(arg("loss", [] if reduction != "none" else dims[:-1], et))
    res.append(arg("grad_logits", dims, et))
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    roles = {a["role"]: tval(a) for a in args}
    x, t = roles["logits"], roles["target"]
    w = roles.get("weight")
    xc, tanh = x, None
    if softcap is not None:
        y = tl_scalar(fn, "arith.divf", x, softcap)
        tanh = tl_unary(fn, "math.tanh", y)
        xc = tl_scalar(fn, "arith.mulf", tanh, softcap)
    logp = tl_log_softmax(fn, xc, 1, init)
    if weighted:
        tws: list = []
        loss = tl_nll_forward_decomposed(fn, logp, t, w, reduction, ignore, total_weight_out=tws)
        tw = tws[0] if tws else None
        if tw is None:  # reduction none: total_weight is a zero 0-d tensor
            e = fn.empty([], [], et)
            tw = T(fn.fill(fn.cst("cst_0", "0.000000e+00", et), et, e, tt([], et)), [], et)
    else:
        loss, tw = tl_nll_forward_direct(fn, logp, t, reduction, ignore)
    if seed:
        one = fn.cst("cst_seed", "1.000000e+00", et)
        e = fn.empty([], [], et)
        g = T(fn.fill(one, et, e, tt([], et)), [], et)
    else:
        g = roles["grad_output"]
    gn = tl_nll_backward(fn, g, logp, t, w, reduction, ignore, tw)
    dx = tl_log_softmax_backward(fn, gn, logp, 1)
    if softcap is not None and through_cap:
        dx = tl_scalar(fn, "arith.mulf", dx, softcap)
        dx = tl_tanh_backward(fn, dx, tanh)
        dx = tl_scalar(fn, "arith.divf", dx, softcap)
    ret(fn, ([loss.v] if joint else []) + [dx.v])
    kind = "joint" if joint else "backward"
    sem = torch_semantics(reduction, ignore, weighted,
                          extra=f" of x = torch.tanh(x / {softcap}) * {softcap}" if softcap else "")
    sem = (f"loss = {sem}; loss.backward(" + ("" if seed else "grad_output") + ") -> logits.grad") \
        if joint else f"torch.autograd.grad({sem}, x, grad_output)"
    if softcap is not None and not through_cap:
        sem += " -- but returns the gradient with respect to the capped logits"
    spec = Spec(file=file, function=name, form=file_form, kind=kind, expected="recognize",
                args=args, results=res, torch=sem, source=TORCH_SRC, variant=variant,
                softcap=softcap if through_cap else None,
                reduction=reduction, ignore_index=ignore, weighted=weighted, axis=1,
                logits_dtype=et, compute_dtype=et, static=all(isinstance(d, int) for d in dims))
    return fn, spec


def torch_backward_saved(file: str, name: str, *, dims: Dims, et: str, reduction: str,
                         ignore: int) -> Tuple[Fn, Spec]:
    """The backward graph on its own, fed by the forward's saved tensors (log-probabilities and
    total_weight) instead of the logits: what AOTAutograd hands a backend for the backward."""
    args = [arg("grad_output", [], et), arg("logp", dims, et), arg("target", dims[:-1], "i64"),
            arg("total_weight", [], et)]
    res = [arg("grad_logits", dims, et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    r = {a["role"]: tval(a) for a in args}
    gn = tl_nll_backward(fn, r["grad_output"], r["logp"], r["target"], None, reduction, ignore,
                         r["total_weight"])
    dx = tl_log_softmax_backward(fn, gn, r["logp"], 1)
    ret(fn, [dx.v])
    spec = Spec(file=file, function=name, form="torch_backward", kind="backward",
                expected="near_miss", args=args, results=res,
                torch=("aten._log_softmax_backward_data(aten.nll_loss_backward(g, logp, t, None, "
                       f"{reduction!r}, {ignore}, total_weight), logp, 1): the backward graph alone"),
                source=TORCH_SRC, variant="saved log-probabilities and total_weight as arguments",
                reduction=reduction, ignore_index=ignore, axis=1, logits_dtype=et,
                compute_dtype=et, check="runs",
                reason=("no logits: the chain starts from the saved log-probabilities, which "
                        "nothing in the function proves normalized, and divides by an externally "
                        "computed total_weight, which the op's region cannot read (even with "
                        "assume-normalized-log-probs; see saved_logp.mlir for the forms it raises)"))
    return fn, spec


# =========================================================================== shared pick / reduce (linalg)

def pick_nll(fn: Fn, logp: T, target: T, axis: int, ignore: Optional[int], et: str) -> T:
    """Per-element ``-logp[..., t, ...]`` by tensor.extract inside a generic over the target,
    zero for ignored targets (the TorchToLinalg nll payload, generalised to N-D)."""
    rank = len(target.shape)
    sizes = [fn.dim(target.v, target.ty, i) for i in range(rank) if target.shape[i] is None]
    e = fn.empty(target.shape, sizes, et)
    if ignore is not None:
        ig = fn.cst("c_ignore", ignore, target.et)
    zero = fn.cst("cst_0", "0.000000e+00", et)

    def body(f, a):
        ti = f.op("t", f"arith.index_cast {a[0]} : {target.et} to index")
        idx = [f.op("i", f"linalg.index {i} : index") for i in range(rank)]
        idx.insert(axis, ti)
        v = f.op("picked", f"tensor.extract {logp.v}[{', '.join(idx)}] : {logp.ty}")
        n = f.op("neg", f"arith.negf {v} : {et}")
        if ignore is None:
            return [n]
        k = f.op("kept", f"arith.cmpi ne, {a[0]}, {ig} : {target.et}")
        return [f.op("sel", f"arith.select {k}, {n}, {zero} : {et}")]

    g = fn.generic("nll", [ident(rank), ident(rank)], ["parallel"] * rank, [(target.v, target.ty)],
                   [(e, tt(target.shape, et))], body, [target.et, et])
    return T(g, list(target.shape), et)


def reduce_all(fn: Fn, x: T, acc_first=False) -> T:
    rank = len(x.shape)
    zero = fn.cst("cst_0", "0.000000e+00", x.et)
    e = fn.empty([], [], x.et)
    f0 = fn.fill(zero, x.et, e, tt([], x.et))

    def body(f, a):
        ops = (a[1], a[0]) if acc_first else (a[0], a[1])
        return [f.op("add", f"arith.addf {ops[0]}, {ops[1]} : {x.et}")]

    g = fn.generic("sum", [ident(rank), amap(rank, [])], ["reduction"] * rank,
                   [(x.v, x.ty)], [(f0, tt([], x.et))], body, [x.et, x.et])
    return T(g, [], x.et)


def count_kept(fn: Fn, target: T, ignore: int, et: str) -> T:
    """Number of kept targets as a 0-d float tensor: cmpi ne / extui / addi, then sitofp."""
    rank = len(target.shape)
    z = fn.cst("c0_i64", 0, "i64")
    e = fn.empty([], [], "i64")
    f0 = fn.fill(z, "i64", e, tt([], "i64"))
    ig = fn.cst("c_ignore", ignore, target.et)

    def body(f, a):
        k = f.op("kept", f"arith.cmpi ne, {a[0]}, {ig} : {target.et}")
        ki = f.op("kept_i64", f"arith.extui {k} : i1 to i64")
        return [f.op("cnt", f"arith.addi {a[1]}, {ki} : i64")]

    g = fn.generic("count", [ident(rank), amap(rank, [])], ["reduction"] * rank,
                   [(target.v, target.ty)], [(f0, tt([], "i64"))], body, [target.et, "i64"])
    e2 = fn.empty([], [], et)
    g2 = fn.generic("count_f", [amap(0, []), amap(0, [])], [], [(g, tt([], "i64"))],
                    [(e2, tt([], et))],
                    lambda f, a: [f.op("cf", f"arith.sitofp {a[0]} : i64 to {et}")], ["i64", et])
    return T(g2, [], et)


def div0d(fn: Fn, a: T, b: T) -> T:
    e = fn.empty([], [], a.et)
    g = fn.generic("mean", [amap(0, []), amap(0, []), amap(0, [])], [], [(a.v, a.ty), (b.v, b.ty)],
                   [(e, a.ty)], lambda f, x: [f.op("div", f"arith.divf {x[0]}, {x[1]} : {a.et}")],
                   [a.et, b.et, a.et])
    return T(g, [], a.et)


def finish_reduction(fn: Fn, per: T, target: T, reduction: str, ignore: Optional[int]) -> T:
    if reduction == "none":
        return per
    s = reduce_all(fn, per)
    if reduction == "sum":
        return s
    if ignore is None:
        raise ValueError("mean without ignore_index: use a constant divisor")
    return div0d(fn, s, count_kept(fn, target, ignore, per.et))


def map_generic(fn: Fn, hint: str, ins: Sequence[T], out_shape, out_et: str, maps_in: Sequence[str],
                body, dyn_from: Optional[T] = None) -> T:
    """An elementwise/broadcast generic writing a fresh tensor of ``out_shape``."""
    rank = len(out_shape)
    src = dyn_from or ins[0]
    sizes = [fn.dim(src.v, src.ty, i) for i in range(rank) if out_shape[i] is None]
    e = fn.empty(out_shape, sizes, out_et)
    g = fn.generic(hint, list(maps_in) + [ident(rank)], ["parallel"] * rank,
                   [(i.v, i.ty) for i in ins], [(e, tt(out_shape, out_et))], body,
                   [i.et for i in ins] + [out_et])
    return T(g, list(out_shape), out_et)


# =========================================================================== form 3: upstream linalg

LINALG_SRC = ("llvm/llvm-project: mlir/lib/Dialect/Linalg/IR/LinalgOps.cpp (SoftmaxOp::decomposeOperation: "
              "LLVM 19 fills the max with getIdentityValue(maximumf, useOnlyFiniteValue) = -FLT_MAX, "
              "LLVM 22 with the maxnumf identity NaN 0xFFC00000; both reduce with arith.maxnumf); "
              "mlir/test/Dialect/Linalg/transform-op-decompose.mlir")
NAMED_SRC = ("DecomposeNamedLinalgOps.cpp (-linalg-decompose-named-ops, a downstream/proposed pass, not in "
             "LLVM 22's mlir-opt): linalg.reduce{maxnumf} filled with APFloat::getSmallest (+1.4e-45), "
             "linalg.broadcast, linalg.sub/exp (in place into the broadcast buffer), linalg.reduce{addf}, "
             "linalg.broadcast, linalg.div; mirrored by hand")


def linalg_softmax_form(file, name, *, dims: Dims, axis: int, reduction: str, ignore: Optional[int],
                        decompose: Optional[str] = None, variant="") -> Tuple[Fn, Spec]:
    """``linalg.softmax`` then ``math.log`` then the NLL pick.

    ``decompose``: None keeps linalg.softmax; "llvm22"/"llvm19" marks the
    function for decomposition by the stock mlir-opt's
    ``transform.structured.decompose_interface`` (the LLVM 19 form replaces
    the NaN max init with -FLT_MAX, as LLVM 19's decomposeOperation did).
    """
    et = "f32"
    tdims = [d for i, d in enumerate(dims) if i != axis]
    args = [arg("logits", dims, et), arg("target", tdims, "i64")]
    res = [arg("loss", [] if reduction != "none" else tdims, et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    x, t = tval(args[0]), tval(args[1])
    sizes = [fn.dim(x.v, x.ty, i) for i in range(len(dims)) if x.shape[i] is None]
    e = fn.empty(x.shape, sizes, et)
    sm = fn.op("softmax", f"linalg.softmax dimension({axis}) ins({x.v} : {x.ty}) outs({e} : {x.ty}) -> {x.ty}")
    lg = map_generic(fn, "log", [T(sm, x.shape, et)], x.shape, et, [ident(len(dims))],
                     lambda f, a: [f.op("log", f"math.log {a[0]} : {et}")], dyn_from=x)
    per = pick_nll(fn, lg, t, axis, ignore, et)
    loss = finish_reduction(fn, per, t, reduction, ignore)
    ret(fn, [loss.v])
    v = {None: "linalg.softmax kept", "llvm22": "decomposed by stock mlir-opt 22 "
         "(transform.structured.decompose_interface): maxnumf from NaN 0xFFC00000, exp(x - max) fused "
         "in one generic, sum, divide", "llvm19": "LLVM 19 decomposition: maxnumf from -FLT_MAX"}[decompose]
    spec = Spec(file=file, function=name, form="linalg_softmax", kind="forward", expected="recognize",
                args=args, results=res, torch=torch_semantics(reduction, ignore, False, axis,
                                                             extra="; log(softmax(x)) instead of log_softmax"),
                source=LINALG_SRC, variant=f"{v}; {variant}".strip("; "), reduction=reduction,
                ignore_index=ignore, axis=axis, static=all(isinstance(d, int) for d in dims))
    spec.lowering = list(SOFTMAX_LOWERING)
    spec._decompose = decompose  # type: ignore[attr-defined]
    return fn, spec


def linalg_named_form(file, name, *, N: int, C: int, reduction: str, ignore: int) -> Tuple[Fn, Spec]:
    """Softmax decomposed into named ops as -linalg-decompose-named-ops writes it, then linalg.log."""
    et = "f32"
    args = [arg("logits", [N, C], et), arg("target", [N], "i64")]
    res = [arg("loss", [] if reduction != "none" else [N], et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    x, t = tval(args[0]), tval(args[1])
    rty, fty = tt([N], et), tt([N, C], et)
    out = fn.empty([N, C], [], et)
    e = fn.empty([N], [], et)
    init = fn.cst("cst", "1.401300e-45", et)
    f0 = fn.fill(init, et, e, rty)
    red = fn.fresh("reduced")
    fn(f"{red} = linalg.reduce ins({x.v} : {fty}) outs({f0} : {rty}) dimensions = [1]")
    fn("  (%in: f32, %init: f32) {")
    fn("    %mx = arith.maxnumf %in, %init : f32")
    fn("    linalg.yield %mx : f32")
    fn("  }")
    be = fn.empty([N, C], [], et)
    bc = fn.op("broadcasted", f"linalg.broadcast ins({red} : {rty}) outs({be} : {fty}) dimensions = [1]")
    sub = fn.op("sub", f"linalg.sub ins({x.v}, {bc} : {fty}, {fty}) outs({bc} : {fty}) -> {fty}")
    ex = fn.op("exp", f"linalg.exp ins({sub} : {fty}) outs({bc} : {fty}) -> {fty}")
    e2 = fn.empty([N], [], et)
    z = fn.cst("cst_0", "0.000000e+00", et)
    f1 = fn.fill(z, et, e2, rty)
    red2 = fn.fresh("reduced")
    fn(f"{red2} = linalg.reduce ins({ex} : {fty}) outs({f1} : {rty}) dimensions = [1]")
    fn("  (%in: f32, %init: f32) {")
    fn("    %s = arith.addf %in, %init : f32")
    fn("    linalg.yield %s : f32")
    fn("  }")
    be2 = fn.empty([N, C], [], et)
    bc2 = fn.op("broadcasted", f"linalg.broadcast ins({red2} : {rty}) outs({be2} : {fty}) dimensions = [1]")
    dv = fn.op("div", f"linalg.div ins({ex}, {bc2} : {fty}, {fty}) outs({out} : {fty}) -> {fty}")
    le = fn.empty([N, C], [], et)
    lg = fn.op("log", f"linalg.log ins({dv} : {fty}) outs({le} : {fty}) -> {fty}")
    per = pick_nll(fn, T(lg, [N, C], et), t, 1, ignore, et)
    loss = finish_reduction(fn, per, t, reduction, ignore)
    ret(fn, [loss.v])
    spec = Spec(file=file, function=name, form="linalg_named", kind="forward", expected="recognize",
                args=args, results=res, torch=torch_semantics(reduction, ignore, False, 1,
                                                             extra="; log(softmax(x))"),
                lowering=list(SOFTMAX_LOWERING), source=NAMED_SRC, variant="named ops; max init +1.4e-45 (APFloat::getSmallest); "
                "sub/exp write into the broadcast buffer; linalg.log; mean = total / kept count",
                reduction=reduction, ignore_index=ignore, axis=1)
    return fn, spec


# =========================================================================== form 4: TOSA

TOSA_SRC = ("llvm/torch-mlir: lib/Conversion/TorchToTosa/TorchToTosa.cpp (aten.max.dim -> tosa.reduce_max, "
            "sub.Tensor -> tosa.mul(alpha) + tosa.sub, exp/log, sum -> tosa.reduce_sum per axis + reshape, "
            "ne.Scalar -> tosa.equal + tosa.logical_not, where.self -> tosa.select, neg -> tosa.negate with "
            "zero points, div.Tensor -> tosa.reciprocal + tosa.mul), TosaLegalizeCommon.cpp (convertGatherNdOp: "
            "flattened indices = sum(coords * strides), tosa.gather on (1, N*C, 1)); test/Conversion/"
            "TorchToTosa/basic.mlir; syntax of mlir/include/mlir/Dialect/Tosa/IR/TosaOps.td (LLVM 22: "
            "tosa.mul shift operand, tosa.negate zero-point operands, tosa.const_shape for reshape)")
TF_TOSA_SRC = ("tensorflow/tensorflow: tensorflow/compiler/mlir/tosa/transforms/legalize_common.cc "
               "(convertLogSoftmaxOp: log(exp(x) * reciprocal(reduce_sum(exp(x)))) -- no max shift; "
               "convertReduceMeanOp: reduce_sum then tosa.mul by a constant 1/N)")


class Tosa:
    def __init__(self, fn: Fn):
        self.fn = fn
        self._shift = None

    def const(self, dense: str, ty: str, hint="const") -> str:
        return self.fn.op(hint, f'"tosa.const"() <{{values = dense<{dense}> : {ty}}}> : () -> {ty}')

    def shape(self, dims: Sequence[int]) -> str:
        vals = f"[{', '.join(map(str, dims))}]" if dims else ""
        return self.fn.op("shape", f"tosa.const_shape {{values = dense<{vals}> : tensor<{len(dims)}xindex>}}"
                                   f" : () -> !tosa.shape<{len(dims)}>")

    def reshape(self, x: T, dims: Sequence[int]) -> T:
        s = self.shape(dims)
        y = self.fn.op("reshaped", f"tosa.reshape {x.v}, {s} : ({x.ty}, !tosa.shape<{len(dims)}>) -> "
                                   f"{tt(dims, x.et)}")
        return T(y, list(dims), x.et)

    def shift(self) -> str:
        return self.const("0", "tensor<1xi8>", "shift")

    def binary(self, op: str, a: T, b: T, out_et=None, shape=None) -> T:
        shape = shape or [max(p, q) for p, q in zip(a.shape, b.shape)]
        oet = out_et or a.et
        extra = f", {self.shift()}" if op == "mul" else ""
        extra_ty = ", tensor<1xi8>" if op == "mul" else ""
        y = self.fn.op(op, f"tosa.{op} {a.v}, {b.v}{extra} : ({a.ty}, {b.ty}{extra_ty}) -> {tt(shape, oet)}")
        return T(y, list(shape), oet)

    def unary(self, op: str, x: T) -> T:
        return T(self.fn.op(op, f"tosa.{op} {x.v} : ({x.ty}) -> {x.ty}"), x.shape, x.et)

    def negate(self, x: T) -> T:
        z1 = self.const("0.000000e+00", f"tensor<1x{x.et}>", "zp")
        z2 = self.const("0.000000e+00", f"tensor<1x{x.et}>", "zp")
        return T(self.fn.op("neg", f"tosa.negate {x.v}, {z1}, {z2} : ({x.ty}, tensor<1x{x.et}>, "
                                   f"tensor<1x{x.et}>) -> {x.ty}"), x.shape, x.et)

    def reduce(self, op: str, x: T, axis: int) -> T:
        shape = [1 if i == axis else s for i, s in enumerate(x.shape)]
        return T(self.fn.op(op, f"tosa.{op} {x.v} {{axis = {axis} : i32}} : ({x.ty}) -> {tt(shape, x.et)}"),
                 shape, x.et)

    def cast(self, x: T, et: str) -> T:
        return T(self.fn.op("cast", f"tosa.cast {x.v} : ({x.ty}) -> {tt(x.shape, et)}"), x.shape, et)

    def select(self, p: T, a: T, b: T) -> T:
        return T(self.fn.op("select", f"tosa.select {p.v}, {a.v}, {b.v} : ({p.ty}, {a.ty}, {b.ty}) -> "
                                      f"{tt(p.shape, a.et)}"), list(p.shape), a.et)

    def scalar(self, value: str, et: str, rank: int) -> T:
        c = T(self.const(value, f"tensor<{et}>"), [], et)
        return self.reshape(c, [1] * rank)

    def sum_all(self, x: T) -> T:
        for ax in range(len(x.shape)):
            x = self.reduce("reduce_sum", x, ax)
        return self.reshape(x, [])

    def log_softmax(self, x: T, axis: int, alpha=True) -> T:
        rank = len(x.shape)
        m = self.reduce("reduce_max", x, axis)
        if alpha:
            m = self.binary("mul", m, self.scalar("1.000000e+00", x.et, rank))
        sh = self.binary("sub", x, m, shape=x.shape)
        e = self.unary("exp", sh)
        s = self.reduce("reduce_sum", e, axis)
        lg = self.unary("log", s)
        if alpha:
            lg = self.binary("mul", lg, self.scalar("1.000000e+00", x.et, rank))
        return self.binary("sub", sh, lg, shape=x.shape)

    def onehot(self, t: T, C: int, axis_shape: List[int]) -> T:
        """equal(iota constant, labels[..., None]) cast to f32 through i8."""
        rank = len(t.shape) + 1
        iota = self.const("[" * rank + ", ".join(map(str, range(C))) + "]" * rank,
                          tt([1] * (rank - 1) + [C], t.et), "iota")
        tl = self.reshape(t, list(t.shape) + [1])
        eq = self.binary("equal", T(iota, [1] * (rank - 1) + [C], t.et), tl, "i1",
                         shape=list(t.shape) + [C])
        return self.cast(self.cast(eq, "i8"), "f32")


def tosa_gather_form(file, name, *, N: int, C: int, reduction: str, ignore: int, pick: str = "flat",
                     keep_rank: int = 0, softcap: Optional[float] = None,
                     softcap_scale: Optional[float] = None, wrong_axis: bool = False) -> Tuple[Fn, Spec]:
    """torch-mlir TorchToTosa of DecomposeComplexOps' log_softmax + nll_loss_forward.

    ``pick``: ``flat`` gathers the target's log-probability from the
    flattened (1, N*C, 1) values at b*C + t (convertGatherNdOp); ``rows``
    gathers per row from (N, C, 1) values at (N, 1) indices.
    ``keep_rank``: 0 reshapes the total to rank 0 (torch's 0-d loss); 1 or 2
    keeps it as tensor<1xf32> / tensor<1x1xf32> (the rank-keeping
    tosa.reduce_sum results, as a frontend returns them without the final
    reshape).  ``softcap``: the logits are capped first as
    ``tosa.mul(tanh(x * reciprocal(cap)), cap)`` (``softcap_scale``: another
    final factor, a near miss).  ``wrong_axis``: the rank-2 total reduces
    the unit axis instead of the batch axis (a near miss).
    """
    et = "f32"
    args = [arg("logits", [N, C], et), arg("target", [N], "i64")]
    if wrong_axis:
        loss_dims = [N, 1]
    elif reduction == "none":
        loss_dims = [N]
    else:
        loss_dims = [1] * keep_rank
    res = [arg("loss", loss_dims, et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    ts = Tosa(fn)
    x, t = tval(args[0]), tval(args[1])
    if softcap is not None:
        # aten.div.Scalar -> tosa.reciprocal + tosa.mul; aten.tanh -> tosa.tanh;
        # aten.mul.Scalar -> tosa.mul by the constant.
        scale = softcap if softcap_scale is None else softcap_scale
        cap = ts.scalar(f"{float(softcap):e}", et, 2)
        y = ts.binary("mul", x, ts.unary("reciprocal", cap), shape=x.shape)
        x = ts.binary("mul", ts.unary("tanh", y), ts.scalar(f"{float(scale):e}", et, 2), shape=x.shape)
    logp = ts.log_softmax(x, 1, alpha=True)
    ign = ts.scalar(str(ignore), "i64", 1)
    eq = ts.binary("equal", t, ign, "i1", shape=[N])
    ne = ts.unary("logical_not", eq)
    zero_i = ts.scalar("0", "i64", 1)
    safe = ts.select(ne, t, zero_i)
    safe2 = ts.reshape(safe, [N, 1])
    idx32 = ts.cast(safe2, "i32")
    if pick == "flat":
        # aten.gather(self, 1, safe2) -> convertGatherNdOp
        idx3 = ts.reshape(idx32, [N, 1, 1])
        rows = ts.const("[" + ", ".join(f"[[{i}]]" for i in range(N)) + "]", tt([N, 1, 1], "i32"), "rows")
        coords = fn.op("concat", f"tosa.concat {rows}, {idx3.v} {{axis = 2 : i32}} : ({tt([N, 1, 1], 'i32')}, "
                                 f"{idx3.ty}) -> {tt([N, 1, 2], 'i32')}")
        vals = ts.reshape(logp, [1, N * C, 1])
        ind = ts.reshape(T(coords, [N, 1, 2], "i32"), [N, 2])
        strides = ts.reshape(T(ts.const(f"[{C}, 1]", tt([2], "i32")), [2], "i32"), [1, 2])
        flat = ts.binary("mul", ind, strides, shape=[N, 2])
        flat = ts.reduce("reduce_sum", flat, 1)
        flat = ts.reshape(flat, [1, N])
        g = fn.op("gather", f"tosa.gather {vals.v}, {flat.v} : ({vals.ty}, {flat.ty}) -> {tt([1, N, 1], et)}")
        g = ts.reshape(T(g, [1, N, 1], et), [N, 1])
    else:
        # per-row gather: values (N, C, 1), indices (N, 1) -> (N, 1, 1)
        vals = ts.reshape(logp, [N, C, 1])
        g = fn.op("gather", f"tosa.gather {vals.v}, {idx32.v} : ({vals.ty}, {idx32.ty}) -> {tt([N, 1, 1], et)}")
        g = ts.reshape(T(g, [N, 1, 1], et), [N, 1])
    neg = ts.negate(g)
    sq = ts.reshape(neg, [N])
    zero_f = ts.scalar("0.000000e+00", et, 1)
    per = ts.select(ne, sq, zero_f)

    def total(v: T) -> T:
        if keep_rank == 0:
            return ts.sum_all(v)
        if keep_rank == 2:
            v = ts.reshape(v, [N, 1])
            if wrong_axis:
                return ts.reduce("reduce_sum", v, 1)
            return ts.reduce("reduce_sum", ts.reduce("reduce_sum", v, 0), 1)
        return ts.reduce("reduce_sum", v, 0)

    if reduction == "none":
        out = per
    else:
        s = total(per)
        if reduction == "sum":
            out = s
        else:
            cnt = ts.sum_all(ts.cast(ts.cast(ne, "i8"), et))
            if keep_rank:
                cnt = ts.reshape(cnt, [1] * keep_rank)
            out = ts.binary("mul", s, ts.unary("reciprocal", cnt), shape=loss_dims)
    ret(fn, [out.v])
    variant = ("reduce_max/sub(alpha mul)/exp/reduce_sum/log/sub; " +
               ("gather over flattened indices; " if pick == "flat" else
                "gather per row: values (N, C, 1), indices (N, 1); ") +
               "ignore by equal + logical_not + select; negate with zero points; mean by "
               "reciprocal(count) * sum")
    extra = ""
    if softcap is not None:
        scale = softcap if softcap_scale is None else softcap_scale
        variant = (f"softcap: tosa.mul(tosa.tanh(tosa.mul(x, tosa.reciprocal({softcap}))), {scale}); "
                   + variant)
        extra = f" of x = torch.tanh(x / {softcap}) * {scale}"
    if keep_rank:
        variant += f"; the total keeps rank {keep_rank} (tensor<{'1x' * keep_rank}f32>)"
        extra += f", returned as .view({', '.join(['1'] * keep_rank)})"
    near = wrong_axis or softcap_scale is not None
    if wrong_axis:
        variant += "; the total reduces the unit axis 1 of (N, 1), not the batch axis"
    spec = Spec(file=file, function=name, form="tosa", kind="near_miss" if near else "forward",
                expected="near_miss" if near else "recognize", args=args, results=res,
                torch=torch_semantics(reduction, ignore, False, extra=extra), source=TOSA_SRC,
                variant=variant, reduction=reduction, ignore_index=ignore, axis=1,
                lowering=list(TOSA_TO_LINALG_PASSES),
                softcap=softcap if softcap is not None and not near else None,
                check="runs" if wrong_axis else ("differs" if near else "reference"),
                reason=("the loss of each element is divided by the count but not summed over the "
                        "batch: the rank-keeping reduce_sum runs over the unit axis" if wrong_axis else
                        f"tanh(x / {softcap}) * {softcap_scale} is not a softcap: the scale differs "
                        "from the divisor" if near else None))
    return fn, spec


def tosa_onehot_form(file, name, *, dims: List[int], reduction: str, ignore: Optional[int],
                     unshifted=False) -> Tuple[Fn, Spec]:
    """log_softmax + one-hot product (equal against an iota constant, tosa.mul, reduce_sum)."""
    et = "f32"
    axis = len(dims) - 1
    C = dims[-1]
    tdims = dims[:-1]
    args = [arg("logits", dims, et), arg("target", tdims, "i32")]
    res = [arg("loss", [] if reduction != "none" else tdims, et)]
    fn = Fn(name, params_of(args), [r["type"] for r in res])
    ts = Tosa(fn)
    x, t = tval(args[0]), tval(args[1])
    if unshifted:
        e = ts.unary("exp", x)
        s = ts.reduce("reduce_sum", e, axis)
        r = ts.unary("reciprocal", s)
        sm = ts.binary("mul", e, r, shape=dims)
        logp = ts.unary("log", sm)
    else:
        logp = ts.log_softmax(x, axis, alpha=False)
    oh = ts.onehot(t, C, dims)
    prod = ts.binary("mul", oh, logp, shape=dims)
    picked = ts.reduce("reduce_sum", prod, axis)
    neg = ts.negate(picked)
    per = ts.reshape(neg, tdims)
    if ignore is not None:
        ign = ts.scalar(str(ignore), "i32", len(tdims))
        keep = ts.unary("logical_not", ts.binary("equal", t, ign, "i1", shape=tdims))
        per = ts.select(keep, per, ts.scalar("0.000000e+00", et, len(tdims)))
    if reduction == "none":
        out = per
    else:
        s = ts.sum_all(per)
        if reduction == "sum":
            out = s
        elif ignore is None:
            n = int(np.prod(tdims))
            if unshifted:  # TF ReduceMean: multiply by the constant 1/N
                out = ts.binary("mul", s, T(ts.const(repr(1.0 / n), tt([], et)), [], et), shape=[])
            else:
                out = ts.binary("mul", s, ts.unary("reciprocal", T(ts.const(f"{float(n)}", tt([], et)), [],
                                                                      et)), shape=[])
        else:
            cnt = ts.sum_all(ts.cast(ts.cast(keep, "i8"), et))
            out = ts.binary("mul", s, ts.unary("reciprocal", cnt), shape=[])
    ret(fn, [out.v])
    spec = Spec(file=file, function=name, form="tosa", kind="forward",
                expected="optional" if unshifted else "recognize", args=args, results=res,
                torch=torch_semantics(reduction, ignore, False, axis),
                source=TF_TOSA_SRC if unshifted else TOSA_SRC,
                variant=("TF LogSoftmax legalization without max shift: log(exp(x) * reciprocal(sum(exp(x)))); "
                         if unshifted else "shifted log_softmax; ") +
                "one-hot = cast(cast(equal(iota const, labels[..., None]), i8), f32); tosa.mul; reduce_sum",
                reduction=reduction, ignore_index=ignore, axis=axis, target_dtype="i32",
                lowering=list(TOSA_TO_LINALG_PASSES),
                reason=("semantically log_softmax but not max-shifted: overflows for logits > ~88 where "
                        "the raised op stays finite; raise only if the policy accepts improving numerics")
                if unshifted else None)
    return fn, spec


# =========================================================================== form 5: JAX (stablehlo -> linalg)

JAX_SRC = ("jax-ml/jax: jax/_src/nn/functions.py (log_softmax: shifted = x - stop_gradient(max); "
           "shifted - log(sum(exp(shifted)))), jax/_src/ops/special.py (logsumexp: amax = "
           "select(isfinite(amax), amax, 0); log(abs(sum(exp(a - amax)))) + amax), jax.nn.one_hot "
           "(labels[..., None] == iota); google-deepmind/optax softmax_cross_entropy(_with_integer_labels); "
           "lowered as openxla/stablehlo StablehloLegalizeToLinalg / iree-org/iree "
           "compiler/src/iree/compiler/InputConversion/StableHLO (stablehlo.reduce -> generic with "
           "`op %acc, %in` body and fill of the init, broadcast_in_dim -> copy generic, is_finite -> "
           "absf + cmpf one inf, convert i1 -> uitofp), one generic per stablehlo op, canonicalized")


def jax_form(file, name, *, dims: Dims, in_et="f32", label_et="i32", reduction="mean",
             lse="logsumexp", probs=False, flip=False, variant="") -> Tuple[Fn, Spec]:
    et = "f32"
    r = len(dims)
    axis = r - 1
    C = dims[-1]
    bdims = dims[:-1]
    args = [arg("logits", dims, in_et),
            arg("target", dims if probs else bdims, et if probs else label_et)]
    res = [arg("loss", [] if reduction != "none" else bdims, et)]
    fn = Fn(name, params_of(args), [r_["type"] for r_ in res])
    x, lab = tval(args[0]), tval(args[1])
    full = shape_of(dims)
    bshape = shape_of(bdims)
    bexprs = [f"d{i}" for i in range(r - 1)]
    idm = ident(r)
    bmap = amap(r, bexprs)

    def reduce_axis(v: T, kind: str, init: str) -> T:
        sizes = [fn.dim(v.v, v.ty, i) for i in range(r - 1) if bshape[i] is None]
        e = fn.empty(bshape, sizes, et)
        c = fn.cst("cst", init, et)
        f0 = fn.fill(c, et, e, tt(bshape, et))
        op = "arith.maximumf" if kind == "max" else "arith.addf"
        g = fn.generic("reduce", [idm, bmap], ["parallel"] * (r - 1) + ["reduction"], [(v.v, v.ty)],
                       [(f0, tt(bshape, et))],
                       lambda f, a: [f.op(kind, f"{op} {a[1]}, {a[0]} : {et}")], [et, et])
        return T(g, bshape, et)

    def ew(hint, ins, body, out_et=et, maps=None):
        return map_generic(fn, hint, ins, full, out_et, maps or [idm] * len(ins), body, dyn_from=x)

    def bcast(v: T) -> T:
        return map_generic(fn, "bcast", [v], full, v.et, [bmap], lambda f, a: [a[0]], dyn_from=x)

    if in_et != et:
        x = ew("convert", [x], lambda f, a: [f.op("ext", f"arith.extf {a[0]} : {in_et} to {et}")])
    m = reduce_axis(x, "max", NEG_INF[et])
    if lse == "logsumexp":
        inf = fn.cst("cst_inf", "0x7F800000", et)
        zero = fn.cst("cst_zero", "0.000000e+00", et)

        def finite(f, a):
            ab = f.op("abs", f"math.absf {a[0]} : {et}")
            fin = f.op("finite", f"arith.cmpf one, {ab}, {inf} : {et}")
            return [f.op("sel", f"arith.select {fin}, {a[0]}, {zero} : {et}")]

        ms = map_generic(fn, "amax", [m], bshape, et, [ident(r - 1)], finite, dyn_from=m)
        d = ew("sub", [x, bcast(ms)], lambda f, a: [f.op("sub", f"arith.subf {a[0]}, {a[1]} : {et}")])
        e = ew("exp", [d], lambda f, a: [f.op("exp", f"math.exp {a[0]} : {et}")])
        s = reduce_axis(e, "sum", "0.000000e+00")
        a_ = map_generic(fn, "abs", [s], bshape, et, [ident(r - 1)],
                         lambda f, a: [f.op("abs", f"math.absf {a[0]} : {et}")], dyn_from=s)
        lg = map_generic(fn, "log", [a_], bshape, et, [ident(r - 1)],
                         lambda f, a: [f.op("log", f"math.log {a[0]} : {et}")], dyn_from=s)
        lsum = map_generic(fn, "lse", [ms, lg] if flip else [lg, ms], bshape, et, [ident(r - 1)] * 2,
                           lambda f, a: [f.op("add", f"arith.addf {a[0]}, {a[1]} : {et}")], dyn_from=s)
        logp = ew("logp", [x, bcast(lsum)], lambda f, a: [f.op("sub", f"arith.subf {a[0]}, {a[1]} : {et}")])
    else:
        sh = ew("shifted", [x, bcast(m)], lambda f, a: [f.op("sub", f"arith.subf {a[0]}, {a[1]} : {et}")])
        e = ew("exp", [sh], lambda f, a: [f.op("exp", f"math.exp {a[0]} : {et}")])
        s = reduce_axis(e, "sum", "0.000000e+00")
        lg = map_generic(fn, "log", [s], bshape, et, [ident(r - 1)],
                         lambda f, a: [f.op("log", f"math.log {a[0]} : {et}")], dyn_from=s)
        logp = ew("logp", [sh, bcast(lg)], lambda f, a: [f.op("sub", f"arith.subf {a[0]}, {a[1]} : {et}")])
    if probs:
        oh = lab
    else:
        ie = fn.empty([C if isinstance(C, int) else None], [] if isinstance(C, int) else
                      [fn.dim(x.v, x.ty, axis)], label_et)
        cty = tt([C if isinstance(C, int) else None], label_et)

        def iota(f, a):
            i = f.op("i", "linalg.index 0 : index")
            return [f.op("iota", f"arith.index_cast {i} : index to {label_et}")]

        io = fn.generic("iota", [ident(1)], ["parallel"], [], [(ie, cty)], iota, [label_et])
        ib = map_generic(fn, "bcast", [T(io, [C if isinstance(C, int) else None], label_et)], full,
                         label_et, [amap(r, [f"d{axis}"])], lambda f, a: [a[0]], dyn_from=x)
        lb = map_generic(fn, "bcast", [lab], full, label_et, [bmap], lambda f, a: [a[0]], dyn_from=x)
        eq = ew("eq", [lb, ib], lambda f, a: [f.op("eq", f"arith.cmpi eq, {a[0]}, {a[1]} : {label_et}")], "i1")
        oh = ew("one_hot", [eq], lambda f, a: [f.op("oh", f"arith.uitofp {a[0]} : i1 to {et}")])
    prod = ew("prod", [oh, logp], lambda f, a: [f.op("mul", f"arith.mulf {a[0]}, {a[1]} : {et}")])
    per = reduce_axis(prod, "sum", "0.000000e+00")
    neg = map_generic(fn, "neg", [per], bshape, et, [ident(r - 1)],
                      lambda f, a: [f.op("neg", f"arith.negf {a[0]} : {et}")], dyn_from=per)
    if reduction == "none":
        out = neg
    else:
        out = reduce_all(fn, neg, acc_first=True)
        if reduction == "mean":
            if all(isinstance(d, int) for d in bdims):
                n = fn.cst("cst_n", f"{float(np.prod(bdims)):e}", et)
            else:
                cnt = None
                for i, d in enumerate(bdims):
                    di = str(d) if isinstance(d, int) else fn.dim(x.v, x.ty, i)
                    if isinstance(d, int):
                        di = fn.cidx(d)
                    cnt = di if cnt is None else fn.op("numel", f"arith.muli {cnt}, {di} : index")
                ni = fn.op("numel_i64", f"arith.index_cast {cnt} : index to i64")
                n = fn.op("numel_f", f"arith.sitofp {ni} : i64 to {et}")
            e0 = fn.empty([], [], et)
            out = T(fn.generic("mean", [amap(0, []), amap(0, [])], [], [(out.v, out.ty)], [(e0, out.ty)],
                               lambda f, a: [f.op("div", f"arith.divf {a[0]}, {n} : {et}")], [et, et]),
                    [], et)
    ret(fn, [out.v])
    lse_desc = ("logsumexp: select(isfinite(max), max, 0), log(abs(sum(exp(x - max)))) + max, "
                "logp = x - lse" if lse == "logsumexp" else
                "log_softmax: shifted = x - max, shifted - log(sum(exp(shifted)))")
    tgt = "float one-hot/probability labels (optax.softmax_cross_entropy)" if probs else \
        f"{label_et} labels, one-hot by iota == labels, uitofp"
    sem = (f"optax.softmax_cross_entropy(x, q).{reduction}()" if probs else
           "optax.softmax_cross_entropy_with_integer_labels(x, t)"
           + ("" if reduction == "none" else f".{reduction}()"))
    sem += f" == {torch_semantics(reduction, None, False, axis)}" + \
        (" with probability targets" if probs else "")
    spec = Spec(file=file, function=name, form="jax", kind="forward", expected="recognize", args=args,
                results=res, torch=sem, source=JAX_SRC,
                variant=f"{lse_desc}; {tgt}; " + (f"f32 cast of {in_et} logits; " if in_et != et else "")
                + ("lse = max + log (operands swapped); " if flip else "") + variant,
                reduction=reduction, ignore_index=None, axis=axis, logits_dtype=in_et,
                target="probabilities" if probs else "index", target_dtype=et if probs else label_et,
                compute_dtype=et, static=all(isinstance(d, int) for d in dims))
    return fn, spec


# =========================================================================== near misses

def near_misses(file: str) -> List[Tuple[Fn, Spec]]:
    out = []
    N, C = 8, 10
    et = "f32"
    ninf = NEG_INF[et]

    def mk(name, args, res, body, torch, reason, check="differs", variant="", reduction="mean",
           ignore=-100):
        fn = Fn(name, params_of(args), [r["type"] for r in res])
        vals = body(fn, {a["role"]: tval(a) for a in args})
        ret(fn, vals)
        out.append((fn, Spec(file=file, function=name, form="near_miss", kind="near_miss",
                             expected="near_miss", args=args, results=res, torch=torch, source=TORCH_SRC,
                             variant=variant, reduction=reduction, ignore_index=ignore, axis=1,
                             reason=reason, check=check)))

    x_t = [arg("logits", [N, C], et), arg("target", [N], "i64")]
    loss = [arg("loss", [], et)]

    def softmax(fn, r):
        x = r["logits"]
        m = tl_max_dim(fn, x, 1, ninf)
        e = tl_unary(fn, "math.exp", tl_sub(fn, x, m, result_shape=x.shape))
        s = tl_sum_dim(fn, e, 1)
        return [tl_binary(fn, "arith.divf", e, s).v]

    mk("nm_softmax", [arg("logits", [N, C], et)], [arg("probs", [N, C], et)], softmax,
       "F.softmax(x, 1)", "softmax probabilities, no log and no pick", check="runs",
       variant="aten._softmax decomposition: max.dim / sub / exp / sum / div", reduction=None, ignore=None)
    mk("nm_log_softmax", [arg("logits", ["N", C], et)], [arg("logp", ["N", C], et)],
       lambda fn, r: [tl_log_softmax(fn, r["logits"], 1, ninf).v],
       "F.log_softmax(x, 1)", "log_softmax alone: no pick, no reduction", check="runs",
       reduction=None, ignore=None)

    def axes(fn, r):
        x, t = r["logits"], r["target"]
        m = tl_max_dim(fn, x, 1, ninf)
        sh = tl_sub(fn, x, m, result_shape=x.shape)
        e = tl_unary(fn, "math.exp", sh)
        s = tl_sum_dim(fn, e, 0)          # sum over the batch axis instead of the class axis
        lg = tl_unary(fn, "math.log", s)
        logp = tl_sub(fn, sh, lg, result_shape=x.shape)
        return [tl_nll_forward_direct(fn, logp, t, "mean", -100)[0].v]

    mk("nm_axes_mismatch", x_t, loss, axes,
       "shifted = x - x.amax(1, keepdim=True); F.nll_loss(shifted - shifted.exp().sum(0, keepdim=True).log(), t)",
       "max over the class axis but the exp-sum over the batch axis")

    def unshifted(fn, r):
        x, t = r["logits"], r["target"]
        m = tl_max_dim(fn, x, 1, ninf)
        sh = tl_sub(fn, x, m, result_shape=x.shape)
        e = tl_unary(fn, "math.exp", x)    # exp of the unshifted input
        s = tl_sum_dim(fn, e, 1)
        lg = tl_unary(fn, "math.log", s)
        logp = tl_sub(fn, sh, lg, result_shape=x.shape)
        return [tl_nll_forward_direct(fn, logp, t, "mean", -100)[0].v]

    mk("nm_unshifted_exp", x_t, loss, unshifted,
       "F.nll_loss((x - x.amax(1, keepdim=True)) - x.exp().sum(1, keepdim=True).log(), t)",
       "the max is subtracted from x but the exp-sum uses the unshifted x: off by the row max")

    mk("nm_gather_raw_logits", x_t, loss,
       lambda fn, r: [tl_nll_forward_direct(fn, r["logits"], r["target"], "mean", -100)[0].v],
       "F.nll_loss(x, t)", "NLL picked from the raw logits: no log_softmax at all")

    def other(fn, r):
        x, t, o = r["logits"], r["target"], r["other"]
        logp = tl_log_softmax(fn, x, 1, ninf)
        return [tl_nll_forward_direct(fn, o, t, "mean", -100)[0].v, logp.v]

    mk("nm_pick_other_tensor", [arg("logits", [N, C], et), arg("other", [N, C], et), arg("target", [N], "i64")],
       [arg("loss", [], et), arg("logp", [N, C], et)], other,
       "(F.nll_loss(other, t), F.log_softmax(x, 1))",
       "log_softmax(x) is computed (and returned) but the NLL picks from another tensor")

    mk("nm_mean_wrong_count", [arg("logits", ["N", C], et), arg("target", ["N"], "i64")],
       [arg("loss", [], et)],
       lambda fn, r: [tl_nll_forward_direct(fn, tl_log_softmax(fn, r["logits"], 1, ninf), r["target"], "mean",
                                            -100, divisor="numel")[0].v],
       "F.cross_entropy(x, t, reduction='sum', ignore_index=-100) / t.numel()",
       "mean divides by the number of targets, not by the number of kept targets "
       "(equal to CE only when nothing is ignored)")
    return out


# =========================================================================== the corpus

FILES: Dict[str, dict] = {
    "torch_linalg_raw.mlir": dict(canonicalize=False, header="""\
torch-mlir TorchToLinalg, RAW: what the conversion patterns emit before any
cleanup (torch-mlir-opt --convert-torch-to-linalg --convert-torch-to-arith on
the torch IR of F.cross_entropy after --torch-decompose-complex-ops): every
size read with tensor.dim (even static ones), dynamic tensor.empty + tensor.cast
back to the static type, sub.Tensor's alpha (f64 1.0, truncf, mulf) inside the
payload, cf.assert "mismatched size for broadcast" checks, the unused i64
index result of aten.max.dim, and the dead total_weight computation of
aten.nll_loss_forward.  torch_linalg.mlir holds the same functions after
canonicalize + cse, which is what the full backend pipeline delivers."""),
    "torch_linalg.mlir": dict(canonicalize=True, header="""\
torch-mlir TorchToLinalg, as delivered by
torch-backend-to-linalg-on-tensors-backend-pipeline (canonicalize + cse after
the conversion).  log_softmax is decomposed (DecomposeComplexOps
getLogSoftmaxResult) into aten.max.dim / sub / exp / sum.dim_IntList / log /
sub; nll_loss_forward is either lowered directly (ConvertAtenNllLossForwardOp:
tensor.extract of logp[i, index_cast(t)] in a generic over the target, no
bounds check, select(t == ignore, 0, -v), i32 count cmpi ne / extui / addi,
sitofp, and for mean a per-element divf before the sum) or, with class
weights (which the direct pattern rejects) or when the decomposition is
enabled, decomposed (DecomposeAtenNllLossForwardOp: weight multiplied into
logp, where / unsqueeze / gather with cf.assert bounds checks / neg / squeeze
/ where, total weight as a sum of i1 (uitofp) or of gathered weights, mean as
a division of the total).  Surviving features: the max is a TWO-result
generic (value + i64 index via linalg.index / cmpf ogt / select) because the
index output is read by its own payload; keepdim by tensor.expand_shape
(max) or a (d0, 0) output map (sum)."""),
    "torch_fx.mlir": dict(canonicalize=True, header="""\
PyTorch decompositions through FX: torch.export(...).run_decompositions()
applies torch/_decomp/decompositions.py (_log_softmax computes in the opmath
dtype: half inputs are widened with convert_element_type -> arith.extf and
the log-probabilities narrowed back -> arith.truncf; nll_loss_forward uses a
safe target where(t != ignore, t, 0), gather, neg, where(mask, ., 0); total
weight (t != ignore).sum().to(dtype), i.e. extui/addi in i64 then sitofp, or
the sum of gathered class weights) and torch-mlir's fx_importer + TorchToLinalg
lowers the aten ops (aten.amax -> aten.max.dim two-result generic; gather with
cf.assert bounds checks; no broadcast cf.assert under strict symbolic shapes).
Delivered form (canonicalize + cse)."""),
    "linalg_softmax.mlir": dict(canonicalize=False, header="""\
Upstream MLIR linalg: linalg.softmax followed by math.log and the NLL pick
(a generic over the target reading the log-probabilities with tensor.extract).
Also the decompositions of linalg.softmax: the one the stock mlir-opt 22
produces (transform.structured.decompose_interface, run by the generator on
the linalg.softmax function: maxnumf reduction filled with NaN 0xFFC00000,
exp(x - max) in one generic, sum, divide), LLVM 19's (same structure, filled
with -FLT_MAX; the Debian llvm-toolchain-19 source's LinalgOps.cpp uses
getIdentityValue(maximumf, useOnlyFiniteValue=true)), and the named-op form of
the -linalg-decompose-named-ops pass (which LLVM 22's mlir-opt does NOT have:
mirrored by hand from its source, see the function comment).  log(softmax)
equals log_softmax mathematically but underflows to -inf for logit gaps > ~87."""),
    "tosa.mlir": dict(canonicalize=False, header="""\
TOSA (MLIR 22 syntax: tosa.mul takes a tensor<1xi8> shift operand, tosa.negate
takes input/output zero-point operands, reshapes take !tosa.shape values of
tosa.const_shape).  Lower with tosa-to-linalg-pipeline, tosa-to-tensor,
tosa-to-arith before the CPU pipeline (forms.json "lowering")."""),
    "jax.mlir": dict(canonicalize=True, header="""\
JAX / optax losses as stablehlo lowers them to linalg (one generic per
stablehlo op, then canonicalize): class axis last; reductions are generics
whose body is `op %acc, %in` (stablehlo reduce region order); jnp.max starts
from -inf; logsumexp replaces a non-finite max by 0 and takes log(abs(sum));
one-hot = uitofp(iota == labels); mean divides by the constant (or
tensor.dim-derived) element count; JAX has no ignore_index."""),
    "torch_backward.mlir": dict(canonicalize=True, header="""\
F.cross_entropy backward through torch-mlir: aten.nll_loss_backward
(ConvertAtenNllLossBackwardOp: one generic over (N, C) reading grad_output
with a () or (d0) map, target (d0) and total_weight (), writing
select(t != class || t == ignore, 0, w[t] * -(g / total_weight))) followed by
aten._log_softmax_backward_data (DecomposeAten_LogSoftmaxBackwardDataOp:
g - exp(logp) * broadcast_to(sum(g, 1, keepdim))).  Standalone functions
recompute log_softmax and total_weight from the logits (rematerialised
backward); joint functions hold the forward and the backward (AOTAutograd
joint graph) sharing logp and total_weight; torch_bwd_saved_mean is the
backward graph alone on the saved tensors (a near miss).  Delivered form."""),
    "softcap.mlir": dict(canonicalize=True, header="""\
Logit softcap before the loss, as Gemma 2 writes it (transformers'
modeling_gemma2.py: logits = logits / cap; logits = torch.tanh(logits);
logits = logits * cap; then F.cross_entropy), lowered by torch-mlir
TorchToLinalg like torch_linalg.mlir: aten.div.Scalar / aten.tanh /
aten.mul.Scalar become one elementwise generic each (the scalar a constant
in the payload), then the log_softmax + nll chain of the capped logits.
Also x * (1 / cap) and cap * tanh (commuted), and a near miss whose final
factor is not the divisor.  Delivered form (canonicalize + cse)."""),
    "near_misses.mlir": dict(canonicalize=True, header="""\
Near misses: look like cross-entropy but are not; xent-recognize must leave
them alone.  Built with the same torch-mlir lowering helpers as
torch_linalg.mlir (delivered form)."""),
}


def corpus() -> List[Tuple[Fn, Spec]]:
    items: List[Tuple[Fn, Spec]] = []
    f32, bf16, f16 = "f32", "bf16", "f16"
    for raw in (True, False):
        file = "torch_linalg_raw.mlir" if raw else "torch_linalg.mlir"
        p = "torch_linalg_raw_" if raw else "torch_linalg_"
        form = "torch_linalg"
        V = [
            ("mean_static_f32", dict(dims=[8, 10], et=f32, reduction="mean", ignore=-100, init=NEG_INF[f32]),
             "static, -inf init, direct NLL lowering, mean as per-element divf by the count"),
            ("sum_dynamic_finite", dict(dims=["N", "C"], et=f32, reduction="sum", ignore=-100,
                                        init=LOWEST[f32]),
             "fully dynamic, -FLT_MAX init (allow-non-finites=false), direct NLL, sum"),
            ("none_static", dict(dims=[6, 7], et=f32, reduction="none", ignore=-1, init=NEG_INF[f32]),
             "reduction none, ignore_index -1"),
            ("mean_bf16", dict(dims=["N", 32], et=bf16, reduction="mean", ignore=-100, init=NEG_INF[bf16]),
             "bf16 throughout (torch-mlir's decomposition does not upcast): bf16 max/exp/sum/log"),
            ("mean_f16_finite", dict(dims=[8, 16], et=f16, reduction="mean", ignore=-100,
                                     init=LOWEST[f16]),
             "f16 throughout, max init -65504 (f16 lowest, allow-non-finites=false)"),
            ("mean_unbatched", dict(dims=[9], et=f32, reduction="mean", ignore=-100, init=NEG_INF[f32]),
             "unbatched: logits (C), target 0-d; rank-0 generics; class axis 0"),
            ("weighted_mean", dict(dims=[8, 10], et=f32, reduction="mean", ignore=-100, init=NEG_INF[f32],
                                   weighted=True),
             "class weights: decomposed NLL (weight.view(1,C) multiplied into logp, gather with cf.assert "
             "bounds checks, total weight = sum of gathered weights), mean = total / total weight"),
            ("weighted_sum_dynamic", dict(dims=["N", 12], et=f32, reduction="sum", ignore=-100,
                                          init=NEG_INF[f32], weighted=True),
             "class weights, dynamic batch, sum"),
            ("decomposed_mean_dynamic", dict(dims=["N", 10], et=f32, reduction="mean", ignore=-100,
                                             init=NEG_INF[f32], decomposed=True),
             "no weights but nll_loss_forward decomposed (torch-mlir's default backend-legal-ops): "
             "where/gather/neg/where, total = sum(i1 mask) via uitofp"),
            ("flattened_rank3", dict(dims=[2, "T", 32], et=f32, reduction="mean", ignore=-100,
                                     init=NEG_INF[f32], collapse=True),
             "LLM style: logits (B, T, V) and labels (B, T) flattened with tensor.collapse_shape "
             "(.view(-1, V)) before the loss"),
        ]
        for suffix, kw, variant in V:
            if raw and suffix in ("weighted_sum_dynamic",):
                continue
            items.append(torch_forward(file, p + suffix, form=form, variant=variant, **kw))
    fx = "torch_fx.mlir"
    items += [
        torch_forward(fx, "torch_fx_mean_bf16", dims=["N", 32], et=bf16, reduction="mean", ignore=-100,
                      init=NEG_INF[f32], fx=True, strict=True, decomposed=True, form="torch_fx",
                      variant="bf16 logits widened to f32 (extf) for log_softmax, truncf back; NLL in bf16; "
                      "count via extui/addi i64 + sitofp"),
        torch_forward(fx, "torch_fx_sum_f16_weighted", dims=[8, 16], et=f16, reduction="sum", ignore=-100,
                      init=NEG_INF[f32], fx=True, strict=True, weighted=True, form="torch_fx",
                      variant="f16 logits and f16 class weights, widened for log_softmax; sum"),
        torch_forward(fx, "torch_fx_mean_weighted_f32", dims=[8, 10], et=f32, reduction="mean", ignore=-100,
                      init=NEG_INF[f32], fx=True, strict=True, weighted=True, form="torch_fx",
                      variant="f32, class weights, mean by the sum of gathered weights"),
        torch_forward(fx, "torch_fx_none_dynamic", dims=["N", 10], et=f32, reduction="none", ignore=-100,
                      init=NEG_INF[f32], fx=True, strict=True, decomposed=True, form="torch_fx",
                      variant="per-element losses, dynamic batch"),
        torch_forward(fx, "torch_fx_mean_ignore_valid_class", dims=[8, 10], et=f32, reduction="mean", ignore=3,
                      init=NEG_INF[f32], fx=True, strict=True, decomposed=True, form="torch_fx",
                      variant="ignore_index 3 (a valid class index); count via i64 sum"),
    ]
    ls = "linalg_softmax.mlir"
    items += [
        linalg_softmax_form(ls, "linalg_softmax_log_mean", dims=[8, 10], axis=1, reduction="mean",
                            ignore=-100, variant="mean = total / kept count (0-d divf)"),
        linalg_softmax_form(ls, "linalg_softmax_llvm22_sum_dynamic", dims=["N", 10], axis=1, reduction="sum",
                            ignore=None, decompose="llvm22", variant="no ignore_index, dynamic batch"),
        linalg_softmax_form(ls, "linalg_softmax_llvm19_mean", dims=[8, 10], axis=1, reduction="mean",
                            ignore=-100, decompose="llvm19"),
        linalg_named_form(ls, "linalg_named_mean", N=8, C=10, reduction="mean", ignore=-100),
        linalg_softmax_form(ls, "linalg_softmax_rank3_axis1_none", dims=[2, 5, 6], axis=1, reduction="none",
                            ignore=-100, variant="N-D: logits (N, C, L), target (N, L), class axis 1, "
                            "per-element losses (N, L)"),
    ]
    ts = "tosa.mlir"
    items += [
        tosa_gather_form(ts, "tosa_gather_mean", N=8, C=10, reduction="mean", ignore=-100),
        tosa_onehot_form(ts, "tosa_onehot_sum", dims=[8, 10], reduction="sum", ignore=-100),
        tosa_onehot_form(ts, "tosa_unshifted_mean", dims=[8, 10], reduction="mean", ignore=None,
                         unshifted=True),
        tosa_onehot_form(ts, "tosa_rank3_axis2_mean", dims=[2, 4, 10], reduction="mean", ignore=None),
        tosa_gather_form(ts, "tosa_gather_rows_mean_rank1", N=8, C=10, reduction="mean", ignore=-100,
                         pick="rows", keep_rank=1),
        tosa_gather_form(ts, "tosa_gather_sum_rank2", N=8, C=10, reduction="sum", ignore=-100,
                         keep_rank=2),
        tosa_gather_form(ts, "tosa_softcap_mean", N=8, C=10, reduction="mean", ignore=-100,
                         pick="rows", softcap=30.0),
        tosa_gather_form(ts, "tosa_nm_softcap_scale", N=8, C=10, reduction="mean", ignore=-100,
                         pick="rows", softcap=30.0, softcap_scale=20.0),
        tosa_gather_form(ts, "tosa_nm_rank2_wrong_axis", N=8, C=10, reduction="mean", ignore=-100,
                         keep_rank=2, wrong_axis=True),
    ]
    jx = "jax.mlir"
    items += [
        jax_form(jx, "jax_mean_rank1", dims=[8, 10], reduction="mean", lse="logsumexp"),
        jax_form(jx, "jax_mean_rank2_bf16", dims=[2, 6, 16], in_et=bf16, reduction="mean", lse="log_softmax"),
        jax_form(jx, "jax_sum_dynamic", dims=["N", 12], reduction="sum", lse="logsumexp", flip=True),
        jax_form(jx, "jax_probs_mean", dims=[8, 10], reduction="mean", lse="log_softmax", probs=True),
        jax_form(jx, "jax_none_rank2_dynamic", dims=["B", "T", 8], reduction="none", lse="log_softmax",
                 label_et="i64"),
    ]
    bw = "torch_backward.mlir"
    items += [
        torch_backward(bw, "torch_bwd_mean", dims=[8, 10], et=f32, reduction="mean", ignore=-100,
                       init=NEG_INF[f32], variant="grad_output 0-d argument; recomputes log_softmax and "
                       "total_weight (= numel - #ignored)"),
        torch_backward(bw, "torch_bwd_weighted_sum_dynamic", dims=["N", 10], et=f32, reduction="sum",
                       ignore=-100, init=NEG_INF[f32], weighted=True,
                       variant="class weights read with tensor.extract %w[t] in the nll_loss_backward "
                       "payload; dynamic batch"),
        torch_backward(bw, "torch_bwd_none", dims=[6, 7], et=f32, reduction="none", ignore=-1,
                       init=NEG_INF[f32], variant="per-element grad_output (N) read with a (d0) map"),
        torch_backward(bw, "torch_joint_mean_seed", dims=[8, 10], et=f32, reduction="mean", ignore=-100,
                       init=NEG_INF[f32], joint=True, seed=True,
                       variant="joint forward + backward, seed 1.0 constant (loss.backward())"),
        torch_backward(bw, "torch_joint_weighted_mean_dynamic", dims=["N", 12], et=f32, reduction="mean",
                       ignore=-100, init=NEG_INF[f32], weighted=True, joint=True,
                       variant="joint, class weights, dynamic batch, grad_output argument"),
        torch_backward(bw, "torch_joint_mean_bf16", dims=[8, 32], et=bf16, reduction="mean", ignore=-100,
                       init=NEG_INF[bf16], joint=True,
                       variant="joint in bf16 throughout (forward and gradient)"),
        torch_backward_saved(bw, "torch_bwd_saved_mean", dims=[8, 10], et=f32, reduction="mean", ignore=-100),
    ]
    sc = "softcap.mlir"
    items += [
        torch_forward(sc, "torch_softcap_mean", dims=[8, 10], et=f32, reduction="mean", ignore=-100,
                      init=NEG_INF[f32], softcap=30.0,
                      variant="softcap x / 30 (divf), tanh, tanh * 30 (mulf); direct NLL, mean"),
        torch_forward(sc, "torch_softcap_recip_sum_dynamic", dims=["N", 12], et=f32, reduction="sum",
                      ignore=-100, init=NEG_INF[f32], softcap=15.0, softcap_form="recip",
                      variant="softcap as x * (1 / 15) (mulf by the rounded reciprocal), tanh, 15 * tanh "
                      "(commuted mulf); dynamic batch, sum"),
        torch_forward(sc, "torch_softcap_none_decomposed", dims=[6, 7], et=f32, reduction="none",
                      ignore=-1, init=NEG_INF[f32], softcap=50.0, decomposed=True,
                      variant="softcap 50; decomposed NLL (where/gather/neg/where), per-element losses"),
    ]
    items += [
        torch_backward(sc, "torch_softcap_bwd_mean", dims=[8, 10], et=f32, reduction="mean", ignore=-100,
                       init=NEG_INF[f32], softcap=30.0,
                       variant="softcap 30; nll_loss_backward + _log_softmax_backward_data, then the chain "
                       "rule through the cap: * 30, tanh_backward g * (1 - y * y), / 30"),
        torch_backward(sc, "torch_softcap_joint_sum_seed", dims=[8, 10], et=f32, reduction="sum", ignore=-100,
                       init=NEG_INF[f32], softcap=20.0, joint=True, seed=True,
                       variant="joint forward + backward through softcap 20, seed 1.0"),
    ]
    nb_fn, nb = torch_backward(sc, "torch_nm_softcap_bwd_capped", dims=[8, 10], et=f32, reduction="mean",
                               ignore=-100, init=NEG_INF[f32], softcap=30.0, through_cap=False,
                               variant="softcap 30; the gradient stops at the capped logits")
    nb.kind, nb.expected, nb.check = "near_miss", "near_miss", "differs"
    nb.reason = ("the gradient with respect to the capped logits: xent.cross_entropy_grad with "
                 "softcap = 30 is the gradient with respect to the uncapped ones")
    items.append((nb_fn, nb))
    nm_fn, nm = torch_forward(sc, "torch_nm_softcap_scale", dims=[8, 10], et=f32, reduction="mean",
                              ignore=-100, init=NEG_INF[f32], softcap=30.0, softcap_scale=20.0,
                              variant="tanh(x / 30) * 20: the scale is not the divisor")
    nm.kind, nm.expected, nm.check = "near_miss", "near_miss", "differs"
    nm.reason = ("tanh(x / 30) * 20 is not a softcap (the scale differs from the divisor): the "
                 "logits the loss sees are not capped at +-30")
    items.append((nm_fn, nm))
    items += _terms().corpus()
    items += near_misses("near_misses.mlir")
    return items


# =========================================================================== generation

def _run_opt(text: str, args: Sequence[str], opt: str = STOCK_MLIR_OPT) -> str:
    p = subprocess.run([opt, *args, "-"], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{opt} {' '.join(args)} failed:\n{p.stderr.decode()}\n--- input ---\n{text}")
    return p.stdout.decode()


DECOMPOSE_SOFTMAX_LIBRARY = "decompose-softmax.transform.mlir"
_DECOMPOSE_SCRIPT = """// Transform library: decompose every linalg.softmax with the stock
// AggregatedOpInterface (transform.structured.decompose_interface).  Used by
// utils/recognizer_forms.py to generate the decomposed forms and, through
// transform-preload-library + transform-interpreter, to lower
// linalg_softmax.mlir before the CPU pipeline (convert-linalg-to-loops cannot
// lower linalg.softmax).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %sm = transform.structured.match ops{["linalg.softmax"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %sm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""


def _decompose_softmax(fn_text: str, which: str) -> str:
    """Run the stock mlir-opt's linalg.softmax decomposition on one function."""
    out = _run_opt("module {\n" + fn_text + "}\n" + _DECOMPOSE_SCRIPT,
                   ["--transform-interpreter", "--mlir-print-local-scope"])
    m = re.search(r"^(\s*)func\.func @.*?^\1}\n", out, re.S | re.M)
    body = textwrap.dedent(m.group(0))
    if which == "llvm19":
        assert "0xFFC00000" in body
        body = body.replace("0xFFC00000", "-3.40282347E+38")
    return body


def _comment(spec: Spec) -> List[str]:
    a = ", ".join(f"{x['role']} {x['type']}" for x in spec.args)
    r = ", ".join(f"{x['role']} {x['type']}" for x in spec.results)
    spec.variant = spec.variant.strip().rstrip(";").strip()
    lines = [f"@{spec.function} [{spec.expected}]: {spec.torch}",
             f"  ({a}) -> ({r})"]
    if spec.variant:
        lines.append(f"  IR: {spec.variant}")
    if spec.reason:
        lines.append(f"  why {spec.expected}: {spec.reason}")
    out = []
    for ln in lines:
        while len(ln) > 96:
            cut = ln.rfind(" ", 0, 96)
            cut = cut if cut > 20 else 96
            out.append(ln[:cut])
            ln = "      " + ln[cut:].lstrip()
        out.append(ln)
    return out


def generate(opt: str = STOCK_MLIR_OPT) -> Tuple[Dict[str, str], List[dict]]:
    """Return ({file name: text}, forms.json rows)."""
    items = corpus()
    by_file: Dict[str, List[Tuple[Fn, Spec]]] = {}
    for fn, spec in items:
        by_file.setdefault(spec.file, []).append((fn, spec))
    files, rows = {}, []
    for fname, meta in FILES.items():
        fns = by_file.get(fname, [])
        texts = []
        for fn, spec in fns:
            t = fn.text()
            which = getattr(spec, "_decompose", None)
            if which:
                t = _decompose_softmax(t, which)
            texts.append(t)
        module = "module {\n" + "".join(texts) + "}\n"
        args = ["--canonicalize", "--cse"] if meta["canonicalize"] else []
        printed = _run_opt(module, args, opt)
        comments = {spec.function: _comment(spec) for _, spec in fns}
        out_lines = []
        for line in printed.splitlines():
            m = re.match(r"^  func\.func @([\w$.]+)\(", line)
            if m and m.group(1) in comments:
                if out_lines and out_lines[-1].strip():
                    out_lines.append("")
                out_lines += ["  // " + c for c in comments[m.group(1)]]
            out_lines.append(line)
        head = [f"// {ln}" if ln else "//" for ln in meta["header"].splitlines()]
        srcs = sorted({spec.source for _, spec in fns})
        head.append("//")
        head.append("// Sources studied:")
        for s in srcs:
            words, cur = s.split(), "//   -"
            for w in words:
                if len(cur) + len(w) + 1 > 96:
                    head.append(cur)
                    cur = "//     "
                cur += " " + w
            head.append(cur)
        head.append("//")
        head.append("// GENERATED by `/usr/bin/python3 utils/recognizer_forms.py --write`;")
        head.append("// " + ("printed by mlir-opt 22 after --canonicalize --cse." if meta["canonicalize"]
                             else "printed by mlir-opt 22 without passes."))
        head.append("// Each function: its PyTorch-equivalent semantics, signature, IR features, and the")
        head.append("// expectation for xent-recognize.  forms.json holds the same, machine-readable.")
        files[fname] = "\n".join(head) + "\n\n" + "\n".join(out_lines) + "\n"
        for _, spec in fns:
            spec.variant = spec.variant.strip().rstrip(";").strip()
            row = spec.row()
            rows.append(row)
    return files, rows


def write_inputs(directory: str = INPUTS_DIR, opt: str = STOCK_MLIR_OPT) -> List[str]:
    files, rows = generate(opt)
    os.makedirs(directory, exist_ok=True)
    written = []
    files = dict(files)
    files[DECOMPOSE_SOFTMAX_LIBRARY] = _DECOMPOSE_SCRIPT.lstrip()
    for name, text in files.items():
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
    doc = {"description": "Realistic frontend forms of softmax cross-entropy (input corpus of "
                          "xent-recognize); see utils/recognizer_forms.py and docs/recognition-forms.md",
           "columns": {
               "file": "file under test/Dialect/Xent/Recognize/Inputs",
               "function": "func.func symbol (carries llvm.emit_c_interface)",
               "form": "frontend family: torch_linalg | torch_fx | linalg_softmax | linalg_named | tosa | jax "
                       "| torch_backward | near_miss",
               "kind": "forward (loss) | backward (dlogits) | joint (loss, dlogits) | near_miss",
               "expected": "recognize (must become xent ops) | near_miss (must stay) | optional (policy)",
               "reduction": "mean | sum | none (PyTorch semantics)",
               "ignore_index": "ignored target value, null = none in the source",
               "weighted": "class weights operand present",
               "axis": "class axis of the logits argument",
               "args/results": "role (logits, target, weight, grad_output, logp, total_weight, other; "
                               "loss, grad_logits, probs, logp), dims (ints; strings name dynamic sizes "
                               "shared across arguments), dtype, type",
               "compute_dtype": "element type the chain computes in (sets the test tolerance)",
               "lowering": "passes needed before the CPU pipeline (TOSA)",
               "check": "reference: equals xent.testing.reference; differs: must differ from it; "
                        "runs: only runs",
               "raise_to": "the xent ops expected from xent-recognize with their attributes (ignore_index "
                           "null: the source has none, any value that no valid label takes is exact)",
           },
           "functions": rows}
    with open(os.path.join(directory, "forms.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    written.append(os.path.join(directory, "forms.json"))
    return written


# =========================================================================== execution helpers

DEFAULT_SIZES = ({"N": 5, "C": 9, "B": 2, "T": 3}, {"N": 3, "C": 4, "B": 3, "T": 2})

# (rtol, atol) of a loss/gradient computed in each element type against the float64 reference.
TOLERANCE = {"f32": (3e-5, 3e-5), "f16": (1.5e-2, 1.5e-2), "bf16": (8e-2, 8e-2)}


@dataclass
class Entry:
    """One row of forms.json with convenience accessors."""

    row: dict

    def __getattr__(self, k):
        try:
            return self.row[k]
        except KeyError as e:
            raise AttributeError(k) from e

    @property
    def id(self) -> str:
        return f"{self.row['file']}::{self.row['function']}"

    def arg(self, role: str) -> Optional[dict]:
        for a in self.row["args"]:
            if a["role"] == role:
                return a
        return None


def load_entries(path: str = JSON_PATH) -> List[Entry]:
    with open(path) as f:
        return [Entry(r) for r in json.load(f)["functions"]]


def lowering_passes(entry: Entry) -> str:
    """The comma-separated pass list compiling the function's file to the LLVM dialect."""
    from xent.runtime.pipelines import CPU_LOWERING_PASSES
    pre = ",".join(entry.lowering).replace("%inputs", INPUTS_DIR)
    return f"{pre},{CPU_LOWERING_PASSES}" if pre else CPU_LOWERING_PASSES


def _concrete(dims, sizes) -> Tuple[int, ...]:
    return tuple(d if isinstance(d, int) else sizes[d] for d in dims)


def make_inputs(entry: Entry, rng: np.random.Generator, sizes: Optional[dict] = None,
                ignore_fraction: float = 0.3, scale: float = 3.0) -> List[object]:
    """Random arguments for ``entry`` (NumPy arrays, BF16Array for bf16), in signature order.

    Targets are valid class indices, about ``ignore_fraction`` of them set to
    ignore_index (never all); probability targets are random distributions.
    """
    from xent.runtime.bf16 import BF16Array
    sizes = dict(DEFAULT_SIZES[0] if sizes is None else sizes)
    lg = entry.arg("logits") or entry.arg("logp")
    C = _concrete(lg["dims"], sizes)[entry.axis]
    out = []

    def floats(shape, dtype, gen):
        v = gen(shape).astype(np.float32)
        if dtype == "bf16":
            return BF16Array.from_float(v)
        return v.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])

    for a in entry.args:
        shape = _concrete(a["dims"], sizes)
        role, dt = a["role"], a["dtype"]
        if role in ("logits", "other"):
            out.append(floats(shape, dt, lambda s: rng.standard_normal(s) * scale))
        elif role == "logp":
            x = rng.standard_normal(shape) * scale
            x = x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)
            out.append(floats(shape, dt, lambda s: x))
        elif role == "target" and dt.startswith("i"):
            t = rng.integers(0, C, size=shape)
            ig = entry.ignore_index
            if ig is not None and t.size > 1:
                mask = rng.random(shape) < ignore_fraction
                mask.flat[0] = False
                mask.flat[-1] = True
                t = np.where(mask, ig, t)
            out.append(t.astype(np.int64 if dt == "i64" else np.int32))
        elif role == "target":
            q = rng.random(shape)
            q = q / q.sum(axis=entry.axis, keepdims=True)
            out.append(floats(shape, dt, lambda s: q))
        elif role == "weight":
            out.append(floats(shape, dt, lambda s: rng.uniform(0.25, 2.0, s)))
        elif role == "total_weight" and entry.form == "saved_logp":
            # What the forward saved: the kept count (no class weights).
            kept = float(np.sum(out[entry.args.index(entry.arg("target"))] != entry.ignore_index))
            out.append(floats(shape, dt, lambda s: np.full(s, kept)))
        elif role in ("grad_output", "total_weight"):
            out.append(floats(shape, dt, lambda s: rng.uniform(0.5, 2.0, s)))
        else:
            raise ValueError(f"unknown argument role {role!r}")
    return out


def to_float64(v) -> np.ndarray:
    from xent.runtime.bf16 import BF16Array
    if isinstance(v, BF16Array):
        return v.to_float32().astype(np.float64)
    return np.asarray(v, dtype=np.float64)


def expected_outputs(entry: Entry, inputs: Sequence[object]) -> List[np.ndarray]:
    """float64 reference values of the function's results (forward loss / gradient)."""
    from xent.testing import reference
    r = {a["role"]: v for a, v in zip(entry.args, inputs)}
    x = to_float64(r["logits"] if "logits" in r else r["logp"])
    t = r["target"]
    t = to_float64(t) if entry.target == "probabilities" else np.asarray(t)
    w = to_float64(r["weight"]) if "weight" in r else None
    ig = entry.ignore_index if entry.ignore_index is not None else -100
    kw = dict(weight=w, ignore_index=ig, reduction=entry.reduction, axis=entry.axis,
              softcap=entry.row.get("softcap"),
              label_smoothing=entry.row.get("label_smoothing") or 0.0,
              z_loss_scale=entry.row.get("z_loss_scale") or 0.0)
    outs = []
    for res in entry.results:
        if res["role"] == "loss":
            loss = reference.cross_entropy(x, t, **kw)[0]
            if entry.reduction != "none" and res["dims"]:
                loss = np.reshape(loss, res["dims"])  # a total that keeps unit dimensions
            outs.append(loss)
        elif res["role"] == "grad_logits":
            g = to_float64(r["grad_output"]) if "grad_output" in r else np.float64(1.0)
            outs.append(reference.cross_entropy_grad(g, x, t, **kw))
        else:
            outs.append(None)  # probs / logp of near misses: no cross-entropy reference
    return outs


def tolerance(entry: Entry) -> Tuple[float, float]:
    return TOLERANCE[entry.compute_dtype]


def result_specs(entry: Entry) -> List[str]:
    return [r["type"] for r in entry.results]


def _terms():
    """recognizer_forms_terms (label smoothing, z-loss, saved log-probabilities), its files added
    to FILES; imported late: it builds on the helpers of this module."""
    import recognizer_forms_terms
    FILES.update(recognizer_forms_terms.FILES)
    return recognizer_forms_terms


def recognize_pass(file: str) -> str:
    """The xent-recognize invocation the tests run on ``file`` (with the options its header states)."""
    _terms()
    return FILES[file].get("recognize", "xent-recognize")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="regenerate the input files and forms.json")
    g.add_argument("--check", action="store_true", help="fail if the committed inputs are out of date")
    ap.add_argument("--dir", default=INPUTS_DIR)
    ap.add_argument("--mlir-opt", default=STOCK_MLIR_OPT)
    a = ap.parse_args(argv)
    if a.write:
        for p in write_inputs(a.dir, a.mlir_opt):
            print(p)
        return 0
    files, rows = generate(a.mlir_opt)
    files[DECOMPOSE_SOFTMAX_LIBRARY] = _DECOMPOSE_SCRIPT.lstrip()
    stale = []
    for name, text in files.items():
        path = os.path.join(a.dir, name)
        if not os.path.exists(path) or open(path).read() != text:
            stale.append(path)
    with open(os.path.join(a.dir, "forms.json")) as f:
        if json.load(f)["functions"] != json.loads(json.dumps(rows)):
            stale.append(os.path.join(a.dir, "forms.json"))
    for p in stale:
        print(f"out of date: {p}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
