"""The JAX corpus (test/Dialect/Xent/Recognize/Inputs/frontends/jax) gives JAX's numbers.

Every program JAX exported, in both lowered forms (``*.linalg.mlir``:
StableHLO's own stablehlo-legalize-to-linalg; ``*.fused.mlir``: then
``--linalg-fuse-elementwise-ops``), is compiled for the CPU three ways and
called on the inputs of ``values.json``:

* plain: the program as JAX's lowering wrote it;
* recognized: ``xent-recognize``, then ``xent-inline-decomposition`` (the
  region the pass captured is what runs);
* canonical: ``xent-recognize`` with every decomposition region dropped, so
  that the op's own decomposition, built from its attributes alone, runs.

Each must give the number JAX computed (``values.json``). The programs
``RAISED`` lists must contain the op after ``xent-recognize`` (with the
attributes checked), the others none.

Labels outside [0, C) follow JAX's conventions: a negative label in
[-C, 0) is wrapped (``take_along_axis`` reads x[t + C]), any other label
outside gives NaN; a one-hot of such a label is all zero (the pick is then
0). The chain, the recognized program and the
op's own decomposition must agree there too, NaN at the same positions.
"""

import json
import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing.irtext import (pass_pipeline as pipeline, strip_regions, variant_module,
                                 with_c_interface)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")
CORPUS = os.path.join(ROOT, "test", "Dialect", "Xent", "Recognize", "Inputs", "frontends", "jax")

with open(os.path.join(CORPUS, "values.json")) as _f:
    VALUES = json.load(_f)

#: The program's arguments, in order (utils/frontends/jax_losses.py).
ARGS = {"take_along_axis_masked": ("x", "t", "mask")}

#: Programs raised (both lowered forms unless a form is named), with the
#: op's reduction; the others are left whole.
RAISED = {
    "optax_int_mean": "mean",
    "optax_int_sum": "sum",
    "optax_int_none": "none",
    "take_along_axis_mean": "mean",
    # One-hot labels: the op's sum over the labels in range, divided by N
    # after it.
    "optax_onehot_mean": "sum",
    # The smoothed one-hot: probability targets (a tensor in the unfused
    # form; fused into the reduction's body, built as one beside the op).
    "optax_smoothed_mean": "mean",
    # One-hot labels with a z-loss: the op's sum with its lse, the z-loss of
    # the labels outside [0, C) added after it, divided by N.
    "t5x_z_loss": "sum",
    # (nll · mask).sum() / mask.sum(): the op's loss per element, weighed
    # and summed after it.
    "take_along_axis_masked": "none",
}

#: Programs whose label is read by JAX's guarded gather (take_along_axis).
GATHERED = ["optax_int_mean", "optax_int_sum", "optax_int_none", "take_along_axis_mean",
            "take_along_axis_masked"]

FILES = sorted(f for f in os.listdir(CORPUS) if f.endswith((".linalg.mlir", ".fused.mlir")))

pytestmark = pytest.mark.skipif(not os.access(XENT_OPT, os.X_OK),
                                reason=f"xent-opt not built at {XENT_OPT}")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


def program(name):
    return name.split(".")[0]


def form(name):
    return name.split(".")[1]


def read(name):
    with open(os.path.join(CORPUS, name)) as f:
        return f.read()


def callable_text(name):
    """The program with @main callable through its C interface."""
    return with_c_interface(read(name), "main")


def run_xent_opt(text, *args):
    p = subprocess.run([XENT_OPT, *args, "-"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout




def result_type(text):
    m = re.search(r"func\.func public @main\(.*\) -> \((tensor<[^>]*>)", text)
    assert m, "no result type"
    return m.group(1)


_LIBS = {}


def library(name, variant, cache_dir):
    key = (name, variant)
    if key not in _LIBS:
        text, args = variant_module(callable_text(name), variant,
                                    lambda t: run_xent_opt(t, *pipeline("xent-recognize")))
        _LIBS[key] = Library(compile_module(text, args, XENT_OPT, out_dir=cache_dir))
    return _LIBS[key]


def inputs_of(name, **override):
    values = dict(VALUES["inputs"], **override)
    dtypes = {"x": np.float32, "t": np.int32, "mask": np.float32}
    return [np.asarray(values[a], dtype=dtypes[a]) for a in ARGS.get(program(name), ("x", "t"))]


def call(name, variant, cache_dir, inputs):
    lib = library(name, variant, cache_dir)
    out = lib.call("main", inputs, result_type(read(name)), copy_inputs=True)
    return np.asarray(out, dtype=np.float64)


# --------------------------------------------------------------------------- the IR

def test_corpus_is_complete():
    """Every program of values.json but the gradients (StableHLO's conversion
    leaves their scatter) has both lowered forms here."""
    names = {program(f) for f in FILES}
    wanted = {p for p in VALUES["outputs"] if "grad" not in p}
    assert names == wanted
    for p in wanted:
        assert f"{p}.linalg.mlir" in FILES and f"{p}.fused.mlir" in FILES


@pytest.mark.parametrize("name", FILES)
def test_raised_or_left(name):
    text = run_xent_opt(read(name), *pipeline("xent-recognize"))
    ops = re.findall(r"= xent\.cross_entropy (\w+) (.*)", text)
    want = RAISED.get(program(name)) or RAISED.get(f"{program(name)}.{form(name)}")
    if want is None:
        assert ops == [], ops
        return
    assert [r for r, _ in ops] == [want], ops
    attrs = ops[0][1]
    # No label smoothing (the smoothed labels are the targets), z-loss but
    # t5x's or softcap; no weight.
    assert "label_smoothing" not in attrs and "softcap" not in attrs and "weight" not in attrs
    if program(name) == "t5x_z_loss":
        assert "z_loss_scale = 9.99999974E-5 : f32" in attrs and "return_lse" in attrs, attrs
        assert "ignore_index = -1 : i64" in attrs, attrs
    else:
        assert "z_loss_scale" not in attrs
    if program(name) == "optax_smoothed_mean":
        assert "tensor<8x10xf32>, tensor<8x10xf32>" in attrs and "ignore_index" not in attrs
    if program(name) in GATHERED:
        # No ignore mask: the lowest i64, which no i32 label equals, so that
        # every label outside [0, C) gives NaN as in JAX.
        assert "ignore_index = -9223372036854775808 : i64" in attrs, attrs
        # The region the pass captured, but where the chain computes more
        # than the op (the mask's weighing): the op's own decomposition.
        assert ("decomposition" in attrs) == (program(name) != "take_along_axis_masked")


# --------------------------------------------------------------------------- JAX's numbers

@pytest.mark.parametrize("variant", ["plain", "recognized", "canonical"])
@pytest.mark.parametrize("name", FILES)
def test_gives_jax_numbers(name, variant, cache_dir):
    got = call(name, variant, cache_dir, inputs_of(name))
    want = np.asarray(VALUES["outputs"][program(name)], dtype=np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"{name} {variant}")


# --------------------------------------------------------------------------- labels outside [0, C)

def jax_reference(name, x, t, mask):
    """float64 of what JAX computes, with its conventions for labels outside
    [0, C): take_along_axis wraps [-C, 0) and gives NaN beyond; one_hot gives
    an all-zero row."""
    x = x.astype(np.float64)
    n, c = x.shape
    m = x.max(1)
    lse = np.log(np.exp(x - m[:, None]).sum(1)) + m
    logp = x - lse[:, None]
    p = program(name)
    if p in GATHERED:
        w = np.where(t < 0, t + c, t)
        ok = (w >= 0) & (w < c)
        picked = np.where(ok, x[np.arange(n), np.clip(w, 0, c - 1)], np.nan)
        per = lse - picked
        if p == "take_along_axis_masked":
            return (per * mask).sum() / mask.sum()
        return {"optax_int_mean": per.mean(), "optax_int_sum": per.sum(),
                "optax_int_none": per, "take_along_axis_mean": per.mean()}[p]
    hot = (np.arange(c)[None, :] == t[:, None]).astype(np.float64)
    if p == "optax_onehot_mean":
        return -(hot * logp).sum(1).mean()
    if p == "optax_smoothed_mean":
        q = hot * 0.9 + 0.01
        return -(q * logp).sum(1).mean()
    if p == "t5x_z_loss":
        return (-(hot * logp).sum(1) + 1e-4 * lse ** 2).mean()
    raise AssertionError(p)


LABELS = [
    [-1, -10, 3, -5, 9, 0, -2, 7],                  # wrapped into [0, C)
    [-11, 10, 3, -2, 12, 0, -2147483648, 2147483647],  # outside even wrapped
    [4, 5, 2, 7, 0, 4, 2, 7],                       # all in range
]


@pytest.mark.parametrize("labels", range(len(LABELS)))
@pytest.mark.parametrize("name", FILES)
def test_labels_outside_the_classes(name, labels, cache_dir):
    """The chain, the recognized program and the op's own decomposition agree
    with JAX's conventions for labels outside [0, C), NaN at the same
    positions."""
    t = np.asarray(LABELS[labels], dtype=np.int32)
    inputs = inputs_of(name, t=t)
    x = inputs[0]
    mask = inputs[2] if len(inputs) > 2 else None
    want = np.asarray(jax_reference(name, x, t, mask), dtype=np.float64)
    results = {v: call(name, v, cache_dir, inputs) for v in ("plain", "recognized", "canonical")}
    for variant, got in results.items():
        assert np.array_equal(np.isnan(got), np.isnan(want)), (name, variant, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True,
                                   err_msg=f"{name} {variant}")
    if program(name) in GATHERED and labels == 1:
        assert np.isnan(want).any()


def test_i64_labels_at_the_extremes(cache_dir):
    """Inputs/frontends/jax-variants.mlir's i64 take_along_axis (JAX with
    x64): the wrapped label is never the lowest i64, the op's ignore_index
    without a mask, so the extremes give NaN in the chain and in the op."""
    path = os.path.join(CORPUS, os.pardir, "jax-variants.mlir")
    with open(path) as f:
        text = with_c_interface(f.read(), "i64_wrapped")
    recognized = run_xent_opt(text, *pipeline("xent-recognize"))
    assert "xent.cross_entropy mean" in recognized
    libs = {
        "plain": Library(compile_module(text, pipeline("xent-cpu-pipeline"), XENT_OPT,
                                        out_dir=cache_dir)),
        "recognized": Library(compile_module(
            text, pipeline("xent-recognize", "xent-inline-decomposition", "xent-cpu-pipeline"),
            XENT_OPT, out_dir=cache_dir)),
        "canonical": Library(compile_module(strip_regions(recognized), pipeline("xent-cpu-pipeline"),
                                            XENT_OPT, out_dir=cache_dir)),
    }
    x = np.asarray(VALUES["inputs"]["x"], dtype=np.float32)
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    for labels in ([4, 5, 2, 7, 0, 4, 2, 7], [-1, -10, 3, -5, 9, 0, -2, 7],
                   [4, 5, lo, 7, 0, 4, 2, 7], [4, 5, 2, hi, 0, 4, 2, 7]):
        t = np.asarray(labels, dtype=np.int64)
        w = np.where(t < 0, t + 10, t)
        ok = (w >= 0) & (w < 10)
        x64 = x.astype(np.float64)
        m = x64.max(1)
        lse = np.log(np.exp(x64 - m[:, None]).sum(1)) + m
        picked = np.where(ok, x64[np.arange(8), np.clip(w, 0, 9)], np.nan)
        want = (lse - picked).mean()
        for variant, lib in libs.items():
            got = float(lib.call("i64_wrapped", [x, t], "tensor<f32>", copy_inputs=True))
            assert np.isnan(got) == np.isnan(want), (variant, labels, got, want)
            if not np.isnan(want):
                np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=variant)
