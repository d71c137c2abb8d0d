"""xent-recognize on projections feeding a cross entropy, by execution.

Every form of recognizer_linear_forms.py (batched linalg products with a
broadcast weight, reshapes around a batch of one, TOSA's matmul, with and
without bias; the backward products into the gradient forms; corpus chains
spliced onto a projection) is compiled three ways:

* plain: the function as written (TOSA lowered first), ``xent-cpu-pipeline``;
* recognized: ``xent-recognize``, ``xent-inline-decomposition`` (the region
  the pass built), then the same lowering: exactly the plain numbers;
* canonical: ``xent-recognize`` with every decomposition region dropped, so
  that the linear op's own canonical decomposition runs: the numbers come
  from its operands and attributes alone and must match the float64
  reference (as must the plain ones).

The recognized text must hold the expected linear op and, outside its
region, no product or xent op of the other families.
"""

import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing.irtext import pass_pipeline as pipeline, strip_regions
from xent.testing import reference
from xent.testing.codegen import to_float64

import recognizer_linear_forms as forms

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

FORMS = forms.forms()

pytestmark = pytest.mark.skipif(not os.access(XENT_OPT, os.X_OK),
                                reason=f"xent-opt not built at {XENT_OPT}")


def run_xent_opt(text, *args):
    p = subprocess.run([XENT_OPT, *args, "-"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout




def lowering(form):
    return forms.TOSA_LOWERING if form.tosa else ""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


_LIBS = {}


def library(form, variant, cache_dir):
    key = (form.name, variant)
    if key not in _LIBS:
        low = lowering(form)
        if variant == "plain":
            text, args = form.text, pipeline(low, "xent-cpu-pipeline")
        elif variant == "recognized":
            text = form.text
            args = pipeline("xent-recognize", "xent-inline-decomposition", low,
                            "xent-cpu-pipeline")
        else:
            text = strip_regions(run_xent_opt(form.text, "--xent-recognize"))
            args = pipeline(low, "xent-cpu-pipeline")
        _LIBS[key] = Library(compile_module(text, args, XENT_OPT, out_dir=cache_dir))
    return _LIBS[key]


def make_inputs(form, rng):
    """Driver arguments and their float64 values by role."""
    args, values = [], {}
    for role, ty in form.args:
        shape = tuple(int(d) for d in re.findall(r"(\d+)x", ty))
        if role == "target":
            t = rng.integers(0, form.classes, size=shape)
            ignore = -100 if form.ignore_index is None else form.ignore_index
            t = np.where(rng.random(shape) < 0.25, ignore, t).astype(np.int64)
            args.append(t)
            values[role] = t
            continue
        scale = 0.5 if role == "weight" else 1.0
        if role == "grad_output":
            v = (rng.standard_normal(shape) if shape else np.array(rng.choice([1.0, -2.0])))
        else:
            v = rng.standard_normal(shape) * scale
        v = np.asarray(v, dtype=np.float32)
        args.append(v)
        values[role] = v.astype(np.float64)
    return args, values


def expected(form, v):
    """The float64 reference of every result, by role."""
    kwargs = form.kwargs
    out = {}
    loss, z = reference.linear_cross_entropy(v["hidden"], v["weight"], v["target"],
                                             bias=v.get("bias"), **kwargs)
    out["loss"], out["z_loss"] = loss, z
    if "d_hidden" not in dict(form.results):
        return out
    g = v.get("grad_output", np.array(1.0))
    dh, dw, db = reference.linear_cross_entropy_grad(g, v["hidden"], v["weight"], v["target"],
                                                     bias=v.get("bias"), **kwargs)
    out.update(d_hidden=dh, d_weight=dw, d_bias=db)
    return out


def call(lib, form, args):
    return list(lib.call(form.name, args, [ty for _, ty in form.results], copy_inputs=True))


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_raised(form):
    text = run_xent_opt(form.text, "--xent-recognize")
    top = strip_regions(text)
    ops = re.findall(r"= xent\.(\w+) (\w+)", top)
    assert ops == [(form.op, form.reduction)], (form.name, ops)
    for gone in ("linalg.matmul", "linalg.batch_matmul", "tosa.matmul", "linalg.generic",
                 "linalg.reduce", "tosa.reduce_sum"):
        assert gone not in top, (form.name, gone)
    assert (" bias %" in top) == form.bias, form.name


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_recognized_gives_the_same_numbers(form, cache_dir):
    args, _ = make_inputs(form, np.random.default_rng(sum(map(ord, form.name))))
    want = call(library(form, "plain", cache_dir), form, args)
    got = call(library(form, "recognized", cache_dir), form, args)
    for (role, _), g, w in zip(form.results, got, want):
        g, w = to_float64(g), to_float64(w)
        assert g.shape == w.shape, (form.name, role)
        assert np.array_equal(g, w, equal_nan=True), \
            f"{form.name} {role}: max difference {np.nanmax(np.abs(g - w))}"


@pytest.mark.parametrize("variant", ["plain", "canonical"])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_matches_the_reference(form, variant, cache_dir):
    args, v = make_inputs(form, np.random.default_rng(sum(map(ord, form.name)) + 1))
    got = call(library(form, variant, cache_dir), form, args)
    want = expected(form, v)
    for (role, _), g in zip(form.results, got):
        w = np.asarray(want[role], dtype=np.float64)
        np.testing.assert_allclose(to_float64(g), w, rtol=1e-5,
                                   atol=1e-5 * max(np.abs(w).max(), 1e-3),
                                   err_msg=f"{form.name} {variant} {role}")
