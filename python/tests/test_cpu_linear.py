"""The linear cross-entropy family through the CPU pipeline, against the
float64 reference: its canonical decomposition (xent-inline-decomposition)
and xent-chunk-linear-cross-entropy at chunk sizes that divide the rows, do
not divide them, are a single row and exceed them."""

import itertools
import os
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing import reference
from xent.testing.codegen import _as_dtype, loss_attributes, to_float64

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

FEATURES, CLASSES = 16, 37


@dataclass(frozen=True)
class LinearConfig:
    kind: str                      # "forward", "grad" or "joint"
    rows: Tuple[int, ...]          # hidden's leading shape: (N,) or (B, T)
    dtype: str = "f32"
    reduction: str = "mean"
    bias: bool = False
    class_weight: bool = False
    ignore_index: Optional[int] = 3
    label_smoothing: float = 0.0
    z_loss_scale: float = 0.0
    softcap: Optional[float] = None
    dynamic: bool = False

    @property
    def loss(self) -> bool:
        return self.kind != "grad"

    @property
    def grad(self) -> bool:
        return self.kind != "forward"

    @property
    def z(self) -> bool:
        return self.loss and self.z_loss_scale != 0.0

    def kwargs(self) -> dict:
        return dict(reduction=self.reduction, label_smoothing=self.label_smoothing,
                    z_loss_scale=self.z_loss_scale, softcap=self.softcap,
                    ignore_index=-100 if self.ignore_index is None else self.ignore_index)


def _type(shape, dtype, dynamic=False, leading=1):
    """`dynamic`: the first `leading` dims (the rows) are dynamic."""
    dims = ["?" if dynamic and i < leading else str(d) for i, d in enumerate(shape)]
    return f"tensor<{'x'.join(dims + [dtype])}>"


def linear_function(name: str, c: LinearConfig) -> Tuple[str, list]:
    rows = list(c.rows)
    per_row = c.reduction == "none"
    args, operands, types = [], [], []

    def arg(ty):
        args.append(f"%a{len(args)}: {ty}")
        types.append(ty)
        return f"%a{len(args) - 1}"

    red_type = _type(rows, "f32", c.dynamic, len(rows)) if per_row else "tensor<f32>"
    g = arg(red_type) if c.grad else None
    h = arg(_type(rows + [FEATURES], c.dtype, c.dynamic, len(rows)))
    w = arg(_type([CLASSES, FEATURES], c.dtype))
    b = arg(_type([CLASSES], c.dtype)) if c.bias else None
    t = arg(_type(rows, "i64", c.dynamic, len(rows)))
    cw = arg(_type([CLASSES], "f32")) if c.class_weight else None
    text = " bias " + b if b else ""
    operand_text = (f"{g}, " if g else "") + f"{h}, {w}{text}, {t}"
    if cw:
        operand_text += f" class_weight {cw}"
    results = []
    if c.loss:
        results.append(red_type)
        if c.z:
            results.append(red_type)
    if c.grad:
        results += [types[1 if g else 0], types[2 if g else 1]]
        if c.bias:
            results.append(types[3])
    attrs = loss_attributes(c.ignore_index, c.label_smoothing, c.z_loss_scale, c.softcap)
    attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
    op = {"forward": "linear_cross_entropy", "grad": "linear_cross_entropy_grad",
          "joint": "linear_cross_entropy_and_grad"}[c.kind]
    names = [f"%r{i}" for i in range(len(results))]
    result_list = ", ".join(results)
    text = (f"func.func @{name}({', '.join(args)}) -> ({result_list}) "
            f"attributes {{llvm.emit_c_interface}} {{\n"
            f"  {', '.join(names)} = xent.{op} {c.reduction} {operand_text}{attr_text} : "
            f"({', '.join(types)}) -> ({result_list})\n"
            f"  return {', '.join(names)} : {result_list}\n}}\n")
    return text, results


CONFIGS = [
    LinearConfig(kind, rows, dtype=dtype, reduction=reduction, bias=bias,
                 class_weight=weighted, label_smoothing=0.1 if weighted else 0.0,
                 z_loss_scale=1e-2 if kind != "grad" or bias else 0.0,
                 softcap=8.0 if bias and not weighted else None,
                 dynamic=reduction == "sum" and len(rows) == 1)
    for kind, rows, dtype, reduction, bias, weighted in itertools.product(
        ("joint",), ((11,), (2, 5)), ("f32", "bf16"), ("mean", "sum", "none"),
        (False, True), (False, True))
] + [
    LinearConfig(kind, (11,), reduction=reduction, bias=True, class_weight=True,
                 z_loss_scale=1e-2, label_smoothing=0.05)
    for kind, reduction in itertools.product(("forward", "grad"), ("mean", "none"))
] + [
    # Every kept row with its own class weight, no z-loss: mean divides by W.
    LinearConfig("joint", (11,), class_weight=True, ignore_index=None),
] + [
    # [?, ?, H] hidden states: the per-row loss expanded back to [B, T] has
    # two dynamic sizes in one group (LLVM 22's expand-strided-metadata
    # crashed on it before xent-lower-multi-dynamic-expand-shape).
    LinearConfig(kind, (2, 5), reduction=reduction, z_loss_scale=1e-2, dynamic=True)
    for kind, reduction in itertools.product(("forward", "joint", "grad"), ("none", "mean"))
]

PIPELINES = {
    "decomposition": ["--xent-cpu-pipeline"],
    "rows=4": ["--xent-chunk-linear-cross-entropy=rows=4", "--xent-cpu-pipeline"],
    "rows=5": ["--xent-chunk-linear-cross-entropy=rows=5", "--xent-cpu-pipeline"],
    "rows=1": ["--xent-chunk-linear-cross-entropy=rows=1", "--xent-cpu-pipeline"],
    "rows=64": ["--xent-chunk-linear-cross-entropy=rows=64", "--xent-cpu-pipeline"],
}


@pytest.fixture(scope="module", params=list(PIPELINES))
def lib(request, tmp_path_factory):
    assert os.access(XENT_OPT, os.X_OK), f"xent-opt not built at {XENT_OPT}"
    text = "\n".join(linear_function(f"linear_{i}", c)[0] for i, c in enumerate(CONFIGS))
    cache = os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))
    return Library(compile_module(text, PIPELINES[request.param], XENT_OPT, out_dir=cache))


def make_inputs(c: LinearConfig, rng: np.random.Generator):
    """Driver arguments and their float64 values, in operand order."""
    rows = c.rows
    hidden_arg, hidden = _as_dtype(rng.standard_normal(rows + (FEATURES,)), c.dtype)
    weight_arg, weight = _as_dtype(rng.standard_normal((CLASSES, FEATURES)) * 0.5, c.dtype)
    target = rng.integers(0, CLASSES, size=rows)
    if c.ignore_index is not None:
        target = np.where(rng.random(rows) < 0.25, c.ignore_index, target)
    target = target.astype(np.int64)
    values = dict(hidden=hidden, weight=weight, target=target, bias=None, class_weight=None,
                  grad_output=None)
    args = []
    if c.grad:
        g = (rng.standard_normal(rows) if c.reduction == "none"
             else np.array(rng.choice([1.0, -2.0]))).astype(np.float32)
        values["grad_output"] = g.astype(np.float64)
        args.append(g)
    args += [hidden_arg, weight_arg]
    if c.bias:
        bias_arg, values["bias"] = _as_dtype(rng.standard_normal(CLASSES), c.dtype)
        args.append(bias_arg)
    args.append(target)
    if c.class_weight:
        cw = (rng.random(CLASSES) + 0.25).astype(np.float32)
        values["class_weight"] = cw.astype(np.float64)
        args.append(cw)
    return args, values


def _check_gradient(actual, expected, dtype):
    actual = to_float64(actual)
    rtol = 2.0 ** -7 if dtype == "bf16" else 1e-5
    np.testing.assert_allclose(actual, expected, rtol=rtol,
                               atol=1e-5 * max(np.abs(expected).max(), 1e-30))
    rel_l2 = np.linalg.norm(actual - expected) / max(np.linalg.norm(expected), 1e-30)
    assert rel_l2 <= (2.0 ** -8 if dtype == "bf16" else 1e-6)


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_linear_matches_reference(lib, index):
    c = CONFIGS[index]
    args, v = make_inputs(c, np.random.default_rng(700 + index))
    _, result_types = linear_function(f"linear_{index}", c)
    results = list(lib.call(f"linear_{index}", args, result_types))
    kwargs = c.kwargs()
    operands = dict(bias=v["bias"], class_weight=v["class_weight"])
    if c.loss:
        exp_loss, exp_z = reference.linear_cross_entropy(v["hidden"], v["weight"], v["target"],
                                                         **operands, **kwargs)
        np.testing.assert_allclose(to_float64(results.pop(0)), exp_loss, rtol=1e-5, atol=1e-5)
        if c.z:
            np.testing.assert_allclose(to_float64(results.pop(0)), exp_z, rtol=1e-5, atol=1e-7)
    if c.grad:
        d_hidden, d_weight, d_bias = reference.linear_cross_entropy_grad(
            v["grad_output"], v["hidden"], v["weight"], v["target"], **operands, **kwargs)
        _check_gradient(results.pop(0), d_hidden, c.dtype)
        _check_gradient(results.pop(0), d_weight, c.dtype)
        if c.bias:
            _check_gradient(results.pop(0), d_bias, c.dtype)
    assert not results


def test_all_ignored_mean(tmp_path):
    """Every row ignored: NaN loss (0/0, as PyTorch) and zero gradients."""
    c = LinearConfig("joint", (7,), bias=True, class_weight=True, z_loss_scale=1e-2)
    text, result_types = linear_function("all_ignored", c)
    library = Library(compile_module(
        text, ["--xent-chunk-linear-cross-entropy=rows=3", "--xent-cpu-pipeline"], XENT_OPT,
        out_dir=str(tmp_path)))
    args, v = make_inputs(c, np.random.default_rng(5))
    target_index = 4  # grad_output, hidden, weight, bias, target
    args[target_index] = np.full(7, c.ignore_index, dtype=np.int64)
    loss, z, d_hidden, d_weight, d_bias = library.call("all_ignored", args, result_types)
    assert np.isnan(to_float64(loss)) and np.isnan(to_float64(z))
    for d in (d_hidden, d_weight, d_bias):
        assert np.all(to_float64(d) == 0.0)
