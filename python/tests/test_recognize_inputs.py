"""The input corpus of xent-recognize: realistic frontend forms of cross-entropy.

test/Dialect/Xent/Recognize/Inputs/*.mlir hold the loss (and gradient) chains
that torch-mlir (TorchToLinalg raw and delivered, PyTorch's FX
decompositions, the backward), upstream linalg (linalg.softmax and its
decompositions), TOSA and JAX (stablehlo -> linalg) emit, plus near misses.
forms.json next to them describes every function (form, kind, reduction,
ignore_index, weights, axis, dtypes, argument roles and shapes, expected to be
recognized or not); utils/recognizer_forms.py generates both
and holds the helpers used here.  This file proves that

* the table and the files agree (every function described, signatures equal);
* every file parses and verifies with the stock mlir-opt 22 (and xent-opt);
* every function compiles with xent.runtime.driver (the file's "lowering" passes, e.g.
  TOSA -> linalg, then xent.runtime.pipelines.CPU_LOWERING_PASSES) and, on random
  inputs with ignored targets, computes PyTorch's cross-entropy loss/gradient
  (float64 reference, tolerance by compute dtype); near misses run and, where
  meaningful, provably differ from cross-entropy;
* the committed inputs are what the generator produces;
* the corpus covers the variants the recognizer must handle.

Reuse for the recognizer: set ``XENT_FORMS_PIPELINE`` to a pass list in which
``{lowering}`` stands for the file's own lowering, e.g.
``XENT_FORMS_PIPELINE='{lowering},xent-recognize,xent-inline-decomposition'``;
the functions are then compiled with ``$XENT_OPT`` (build/bin/xent-opt)
instead of the stock mlir-opt and must still match the reference.
"""

import collections
import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime.driver import DEFAULT_LLVM_BIN, Library, compile_module
from xent.runtime.pipelines import CPU_LOWERING_PASSES

import recognizer_forms as forms

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLIR_OPT = os.path.join(os.environ.get("XENT_LLVM_BIN", DEFAULT_LLVM_BIN), "mlir-opt")
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")
PIPELINE = os.environ.get("XENT_FORMS_PIPELINE", "{lowering}")

ENTRIES = forms.load_entries()
FILES = sorted({e.file for e in ENTRIES})
BY_ID = {e.id: e for e in ENTRIES}

pytestmark = pytest.mark.skipif(not os.access(MLIR_OPT, os.X_OK), reason="stock mlir-opt not found")


def read(name):
    with open(os.path.join(forms.INPUTS_DIR, name)) as f:
        return f.read()


def signatures(text):
    """{function: ([arg types], [result types])} of the func.func ops in ``text``."""
    out = {}
    for m in re.finditer(r"func\.func @([\w$.]+)\((.*?)\) -> (\(.*?\)|tensor<[^>]*>) attributes", text):
        args = re.findall(r"%\w+: (tensor<[^>]*>)", m.group(2))
        res = re.findall(r"tensor<[^>]*>", m.group(3))
        out[m.group(1)] = (args, res)
    return out


# --------------------------------------------------------------------------- table

def test_table_matches_files():
    described = collections.defaultdict(set)
    for e in ENTRIES:
        described[e.file].add(e.function)
    for name in FILES:
        sigs = signatures(read(name))
        assert set(sigs) == described[name], f"{name}: functions differ from forms.json"
        for fn in sigs:
            e = BY_ID[f"{name}::{fn}"]
            assert sigs[fn] == ([a["type"] for a in e.args], [r["type"] for r in e.results]), e.id
            assert f"func.func @{fn}(" in read(name)
            assert "llvm.emit_c_interface" in read(name).split(f"func.func @{fn}(")[1].split("\n")[0]


def test_table_fields():
    kinds = {"forward", "backward", "joint", "near_miss"}
    for e in ENTRIES:
        assert e.kind in kinds, e.id
        assert e.expected in {"recognize", "near_miss", "optional"}, e.id
        assert e.check in {"reference", "differs", "runs"}, e.id
        assert (e.expected == "near_miss") == (e.kind == "near_miss" or e.check == "runs"), e.id
        if e.expected != "recognize":
            assert e.reason, f"{e.id}: a near miss / optional form needs a reason"
        if e.expected in ("recognize", "optional"):
            assert e.check == "reference", e.id
            assert e.reduction in ("mean", "sum", "none"), e.id
            # a backward on saved log-probabilities reads them instead of the logits
            lg = e.arg("logits") or e.arg("logp")
            assert lg is not None and e.arg("target") is not None, e.id
            assert e.weighted == (e.arg("weight") is not None), e.id
            assert 0 <= e.axis < len(lg["dims"]), e.id
        assert e.compute_dtype in forms.TOLERANCE, e.id
        for a in e.args + e.results:
            assert a["type"] == forms.ty_of(a["dims"], a["dtype"]), e.id


def test_coverage_of_variants():
    """The corpus keeps the variants xent-recognize is specified to handle."""
    rec = [e for e in ENTRIES if e.expected == "recognize"]
    by_form = collections.defaultdict(list)
    for e in rec:
        by_form[e.form].append(e)
    for form in ("torch_linalg", "torch_fx", "linalg_softmax", "linalg_named", "tosa", "jax",
                 "torch_backward"):
        assert by_form[form], f"no recognizable {form} function"
    assert {e.reduction for e in by_form["torch_linalg"]} == {"mean", "sum", "none"}
    assert {e.reduction for e in rec} == {"mean", "sum", "none"}
    assert any(e.weighted for e in by_form["torch_linalg"]) and any(e.weighted for e in by_form["torch_fx"])
    assert {"f32", "bf16", "f16"} <= {e.logits_dtype for e in rec}
    assert any(e.static for e in rec) and any(not e.static for e in rec)
    assert {e.kind for e in by_form["torch_backward"]} >= {"backward", "joint"}
    assert any(e.weighted for e in by_form["torch_backward"])
    assert any(e.target == "probabilities" for e in rec)
    assert any(e.ignore_index is None for e in rec) and any(e.ignore_index not in (None, -100) for e in rec)
    # class axis last with batch rank 2, class axis 1 of a rank-3 tensor, unbatched
    assert any(e.axis == 2 and len(e.arg("logits")["dims"]) == 3 for e in rec)
    assert any(e.axis == 1 and len(e.arg("logits")["dims"]) == 3 for e in rec)
    assert any(len(e.arg("logits")["dims"]) == 1 for e in rec)
    nm = {e.function for e in ENTRIES if e.form == "near_miss"}
    assert nm == {"nm_softmax", "nm_log_softmax", "nm_axes_mismatch", "nm_unshifted_exp",
                  "nm_gather_raw_logits", "nm_pick_other_tensor", "nm_mean_wrong_count"}
    text = {f: read(f) for f in FILES}
    # IR features the matchers meet (see docs/recognition-forms.md)
    assert "arith.maximumf" in text["torch_linalg.mlir"] and "arith.maxnumf" in text["linalg_softmax.mlir"]
    for init in ("0xFF800000", "-3.40282347E+38", "0xFFC00000", "1.401300e-45", "-6.550400e+04"):
        assert any(init in t for t in text.values()), init
    assert "cf.assert" in text["torch_fx.mlir"] and "cf.assert" in text["torch_linalg_raw.mlir"]
    assert "math.absf" in text["jax.mlir"] and "arith.extf" in text["torch_fx.mlir"]
    assert "linalg.reduce" in text["linalg_softmax.mlir"] and "linalg.softmax" in text["linalg_softmax.mlir"]
    for op in ("tosa.gather", "tosa.negate", "tosa.reciprocal", "tosa.logical_not", "tosa.select"):
        assert op in text["tosa.mlir"], op


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("name", FILES)
def test_parses_with_stock_mlir_opt(name):
    p = subprocess.run([MLIR_OPT, os.path.join(forms.INPUTS_DIR, name), "-o", os.devnull],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("name", FILES)
def test_parses_with_xent_opt(name):
    if not os.access(XENT_OPT, os.X_OK):
        pytest.skip("xent-opt not built")
    p = subprocess.run([XENT_OPT, os.path.join(forms.INPUTS_DIR, name), "-o", os.devnull],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_inputs_up_to_date():
    assert forms.main(["--check"]) == 0, \
        "inputs differ from utils/recognizer_forms.py: run " \
        "/usr/bin/python3 utils/recognizer_forms.py --write"


# --------------------------------------------------------------------------- execution

@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


_LIBS = {}


def library(name, cache_dir):
    if name not in _LIBS:
        entries = [e for e in ENTRIES if e.file == name]
        lowerings = {tuple(e.lowering) for e in entries}
        assert len(lowerings) == 1, f"{name}: functions need different lowerings"
        lowering = forms.lowering_passes(entries[0])[:-len(CPU_LOWERING_PASSES)].rstrip(",")
        passes = PIPELINE.replace("{lowering}", lowering).strip(",")
        passes = f"{passes},{CPU_LOWERING_PASSES}" if passes else CPU_LOWERING_PASSES
        tool = MLIR_OPT if PIPELINE == "{lowering}" else XENT_OPT
        _LIBS[name] = Library(compile_module(read(name), [f"--pass-pipeline=builtin.module({passes})"],
                                             tool, out_dir=cache_dir))
    return _LIBS[name]


def check_outputs(entry, outs, inputs):
    expected = forms.expected_outputs(entry, inputs)
    rtol, atol = forms.tolerance(entry)
    for res, got, want in zip(entry.results, outs, expected):
        got = forms.to_float64(got)
        if want is None:
            continue
        want = np.asarray(want, dtype=np.float64)
        assert got.shape == want.shape, f"{entry.id} {res['role']}: shape {got.shape} != {want.shape}"
        close = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if entry.check == "reference":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{entry.id} {res['role']}")
        elif entry.check == "differs":
            assert not close, f"{entry.id}: a near miss computes cross-entropy after all"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_executes(entry, cache_dir):
    lib = library(entry.file, cache_dir)
    assert lib.has_function(entry.function)
    rng = np.random.default_rng(sum(map(ord, entry.function)))
    dynamic = not all(isinstance(d, int) for a in entry.args for d in a["dims"])
    for sizes in forms.DEFAULT_SIZES[:2 if dynamic else 1]:
        inputs = forms.make_inputs(entry, rng, sizes)
        outs = lib.call(entry.function, inputs, forms.result_specs(entry), copy_inputs=True)
        outs = list(outs)
        for res, got in zip(entry.results, outs):
            dims = tuple(d if isinstance(d, int) else sizes[d] for d in res["dims"])
            assert forms.to_float64(got).shape == dims, f"{entry.id} {res['role']}"
        if entry.check != "runs":
            check_outputs(entry, outs, inputs)
        else:
            assert all(np.all(np.isfinite(forms.to_float64(o))) for o in outs), entry.id


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.expected != "near_miss"
                                   and e.ignore_index is not None and e.reduction == "mean"],
                         ids=lambda e: e.id)
def test_all_ignored_mean_is_nan(entry, cache_dir):
    """Every target ignored: PyTorch's mean is 0/0 = NaN and the gradient is 0; the forms agree."""
    lib = library(entry.file, cache_dir)
    rng = np.random.default_rng(7)
    inputs = forms.make_inputs(entry, rng, forms.DEFAULT_SIZES[0])
    for i, a in enumerate(entry.args):
        if a["role"] == "target":
            inputs[i] = np.full_like(inputs[i], entry.ignore_index)
    outs = lib.call(entry.function, inputs, forms.result_specs(entry), copy_inputs=True)
    outs = list(outs)
    for res, got in zip(entry.results, outs):
        got = forms.to_float64(got)
        if res["role"] == "loss":
            assert np.isnan(got).all(), entry.id
        elif res["role"] == "grad_logits":
            # torch-mlir divides grad_output by total_weight = 0 inside a select whose other
            # branch is taken for ignored rows: exactly zero, like the reference.
            assert np.all(got == 0.0), entry.id
