"""xent-recognize changes no numbers, and the ops it creates mean what the chains compute.

Every function of the recognizer's input corpus (test/Dialect/Xent/
Recognize/Inputs, described by forms.json) is compiled three ways with xent-opt:

* plain: the file's own lowering (TOSA -> linalg, the linalg.softmax
  decomposition) and the CPU lowering, as the frontend IR stands;
* recognized: ``xent-recognize`` (with the options the file's header states:
  ``assume-normalized-log-probs`` for the backward on saved log-probabilities),
  then the fallback (``xent-inline-decomposition``,
  the file's lowering, ``xent-cpu-pipeline``): the region the pass built is
  what runs, and must give exactly the plain numbers;
* canonical: ``xent-recognize``, then every decomposition region is dropped so
  that ``xent-cpu-pipeline`` materializes the op's own canonical
  decomposition: the numbers then come from the op's attributes (reduction,
  ignore_index, axis, weight, probability targets, softcap, label_smoothing,
  z_loss_scale) alone and must match the
  float64 reference of PyTorch's semantics.

Inputs are random, with about 30 % ignored targets. The text after
``xent-recognize`` must contain the expected xent ops, and none for near
misses.
"""

import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing.irtext import pass_pipeline as pipeline, strip_regions
from xent.runtime.pipelines import CPU_LOWERING_PASSES

import recognizer_forms as forms

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

ENTRIES = forms.load_entries()
FILES = sorted({e.file for e in ENTRIES})

pytestmark = pytest.mark.skipif(not os.access(XENT_OPT, os.X_OK),
                                reason=f"xent-opt not built at {XENT_OPT}")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


def read(name):
    with open(os.path.join(forms.INPUTS_DIR, name)) as f:
        return f.read()


def lowering(name):
    """The file's own lowering before the CPU passes (empty for most)."""
    entry = next(e for e in ENTRIES if e.file == name)
    return forms.lowering_passes(entry)[:-len(CPU_LOWERING_PASSES)].rstrip(",")


def run_xent_opt(text, *args):
    p = subprocess.run([XENT_OPT, *args, "-"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def function_bodies(text):
    """{function name: its text} of a printed module."""
    out, name, lines = {}, None, []
    for line in text.split("\n"):
        m = re.match(r"  func\.func @([\w$.]+)\(", line)
        if m:
            name, lines = m.group(1), []
        if name is not None:
            lines.append(line)
            if line == "  }":
                out[name] = "\n".join(lines)
                name = None
    return out




_RECOGNIZED = {}


def recognized_text(name):
    if name not in _RECOGNIZED:
        _RECOGNIZED[name] = run_xent_opt(read(name), *pipeline(forms.recognize_pass(name)))
    return _RECOGNIZED[name]


_LIBS = {}


def library(name, variant, cache_dir):
    key = (name, variant)
    if key not in _LIBS:
        low = lowering(name)
        if variant == "plain":
            # The chain through the same CPU schedule (row tiling and
            # vectorization pick the same loops for the same ops), so that
            # a recognized op's region gives back the chain bit for bit.
            text, args = read(name), pipeline(low, "xent-cpu-pipeline")
        elif variant == "recognized":
            text = read(name)
            args = pipeline(forms.recognize_pass(name), "xent-inline-decomposition", low,
                            "xent-cpu-pipeline")
        else:
            text = strip_regions(recognized_text(name))
            args = pipeline(low, "xent-cpu-pipeline")
        _LIBS[key] = Library(compile_module(text, args, XENT_OPT, out_dir=cache_dir))
    return _LIBS[key]


def call(lib, entry, inputs):
    return list(lib.call(entry.function, inputs, forms.result_specs(entry), copy_inputs=True))


def sizes_of(entry):
    dynamic = not all(isinstance(d, int) for a in entry.args for d in a["dims"])
    return forms.DEFAULT_SIZES[:2 if dynamic else 1]


# --------------------------------------------------------------------------- the IR

@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_raised_or_left_alone(entry):
    body = function_bodies(recognized_text(entry.file))[entry.function]
    ops = re.findall(r"= xent\.(cross_entropy(?:_grad)?) (\w+)", body)
    if entry.expected == "near_miss" or entry.expected == "optional":
        # The only optional form (TF's unshifted log-softmax) is left alone by
        # policy: its unshifted exp overflows where the op would not.
        assert ops == [], f"{entry.id}: {ops}"
        return
    kinds = {"forward": ["cross_entropy"], "backward": ["cross_entropy_grad"],
             "joint": ["cross_entropy", "cross_entropy_grad"]}[entry.kind]
    assert sorted(o for o, _ in ops) == sorted(kinds), f"{entry.id}: {ops}"
    # An unweighted one-hot mean is the op's sum (labels outside [0, C) as
    # ignored) divided as the chain divides: no region (the chain computes
    # the mean, not the op's sum).
    reduction = entry.reduction
    if entry in ONE_HOT and reduction == "mean" and not entry.weighted:
        reduction = "sum"
        assert "decomposition" not in body, entry.id
    assert {r for _, r in ops} == {reduction}, f"{entry.id}: {ops}"
    assert (" weight %" in body) == entry.weighted, entry.id
    cap = entry.row.get("softcap")
    assert re.findall(r"softcap = ([^ ]+) : f32", body) == ([f"{cap:e}"] * len(kinds) if cap else []), entry.id
    # label_smoothing and z_loss_scale: the f32 nearest to the chain's constant
    for attr, kinds_with in (("label_smoothing", kinds), ("z_loss_scale", kinds)):
        want = entry.row.get(attr)
        got = [float(np.float32(v)) for v in re.findall(attr + r" = ([^ ,}]+) : f32", body)]
        assert got == ([float(np.float32(want))] * len([k for k in kinds if k in kinds_with])
                       if want else []), (entry.id, attr, got)


# --------------------------------------------------------------------------- the numbers

def _is_one_hot_forward(entry):
    target = entry.arg("target")
    return (entry.expected == "recognize" and entry.kind == "forward"
            and "one-hot" in entry.row.get("variant", "")
            and target is not None and target["dtype"].startswith("i"))


#: Forward losses whose pick is a one-hot of class-index labels.
ONE_HOT = [e for e in ENTRIES if _is_one_hot_forward(e)]


def _same_numbers(entry, res, g, w, exact):
    g, w = forms.to_float64(g), forms.to_float64(w)
    assert g.shape == w.shape, f"{entry.id} {res['role']}"
    if exact:
        assert np.array_equal(g, w, equal_nan=True), \
            f"{entry.id} {res['role']}: max difference {np.nanmax(np.abs(g - w))}"
    else:
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, equal_nan=True,
                                   err_msg=f"{entry.id} {res['role']}")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_fallback_gives_the_same_numbers(entry, cache_dir):
    plain = library(entry.file, "plain", cache_dir)
    raised = library(entry.file, "recognized", cache_dir)
    rng = np.random.default_rng(sum(map(ord, entry.function)) + 1)
    for sizes in sizes_of(entry):
        inputs = forms.make_inputs(entry, rng, sizes)
        want = call(plain, entry, inputs)
        got = call(raised, entry, inputs)
        # Bit for bit where the op's region is the chain; a one-hot mean (the
        # op's sum through its own decomposition, then divided) to rounding.
        exact = "decomposition" in function_bodies(recognized_text(entry.file))[entry.function] \
            or entry.expected != "recognize"
        for res, g, w in zip(entry.results, got, want):
            _same_numbers(entry, res, g, w, exact)


@pytest.mark.parametrize("entry", ONE_HOT, ids=lambda e: e.id)
def test_one_hot_labels_out_of_range(entry, cache_dir):
    """A one-hot pick reads nothing for a label outside [0, C): the chain's
    loss is 0 there, and an unweighted mean still counts the element. The
    raised op takes such labels as ignored, so the recognized program gives
    the chain's numbers for them, through the op's region and through the
    op's own decomposition, and no NaN."""
    plain = library(entry.file, "plain", cache_dir)
    raised = library(entry.file, "recognized", cache_dir)
    canonical = library(entry.file, "canonical", cache_dir)
    rng = np.random.default_rng(sum(map(ord, entry.function)) + 3)
    t_index = entry.args.index(entry.arg("target"))
    for sizes in sizes_of(entry):
        inputs = forms.make_inputs(entry, rng, sizes)
        logits = inputs[entry.args.index(entry.arg("logits"))]
        classes = np.asarray(forms.to_float64(logits)).shape[entry.axis]
        t = inputs[t_index].copy()
        flat = t.reshape(-1)
        outside = [c for c in (-1, classes, classes + 3, -7) if c != entry.ignore_index]
        for k in range(0, flat.size, 3):
            flat[k] = outside[(k // 3) % len(outside)]
        inputs[t_index] = t
        want = call(plain, entry, inputs)
        for lib in (raised, canonical):
            got = call(lib, entry, inputs)
            for res, g, w in zip(entry.results, got, want):
                assert np.all(np.isfinite(forms.to_float64(w))), entry.id
                _same_numbers(entry, res, g, w, exact=False)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.expected == "recognize"],
                         ids=lambda e: e.id)
def test_op_semantics_match_the_reference(entry, cache_dir):
    lib = library(entry.file, "canonical", cache_dir)
    rng = np.random.default_rng(sum(map(ord, entry.function)) + 2)
    rtol, atol = forms.tolerance(entry)
    for sizes in sizes_of(entry):
        inputs = forms.make_inputs(entry, rng, sizes)
        got = call(lib, entry, inputs)
        for res, g, w in zip(entry.results, got, forms.expected_outputs(entry, inputs)):
            if w is None:
                continue
            np.testing.assert_allclose(forms.to_float64(g), np.asarray(w, dtype=np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{entry.id} {res['role']}")


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.expected == "recognize"
                                   and e.ignore_index is not None and e.reduction == "mean"],
                         ids=lambda e: e.id)
def test_all_ignored(entry, cache_dir):
    """Every target ignored: NaN mean and zero gradient, in the fallback and in the op."""
    rng = np.random.default_rng(11)
    inputs = forms.make_inputs(entry, rng, forms.DEFAULT_SIZES[0])
    for i, a in enumerate(entry.args):
        if a["role"] == "target":
            inputs[i] = np.full_like(inputs[i], entry.ignore_index)
    for variant in ("recognized", "canonical"):
        outs = call(library(entry.file, variant, cache_dir), entry, inputs)
        for res, got in zip(entry.results, outs):
            got = forms.to_float64(got)
            if res["role"] == "loss":
                assert np.isnan(got).all(), (variant, entry.id)
            elif res["role"] == "grad_logits":
                assert np.all(got == 0.0), (variant, entry.id)


def test_one_hot_masked_mean_out_of_range(cache_dir):
    """Inputs/one_hot.mlir's masked mean (by the count of labels other than
    -100, one-hot pick), with labels outside [0, C) among kept and ignored
    ones: the recognized program (the op's sum over the mapped labels,
    divided by that count) and the op's own decomposition give the chain's
    number."""
    text = read("one_hot.mlir")
    plain = Library(compile_module(text, pipeline(CPU_LOWERING_PASSES), XENT_OPT,
                                   out_dir=cache_dir))
    raised = Library(compile_module(
        text, pipeline("xent-recognize", "xent-inline-decomposition", "xent-cpu-pipeline"),
        XENT_OPT, out_dir=cache_dir))
    recognized = run_xent_opt(text, *pipeline("xent-recognize"))
    assert "xent.cross_entropy sum" in recognized
    canonical = Library(compile_module(strip_regions(recognized), pipeline("xent-cpu-pipeline"),
                                       XENT_OPT, out_dir=cache_dir))
    rng = np.random.default_rng(11)
    for labels in ([0, 4, -1, 5, -100, 2], [9, -100, -3, 1, 1, 7], [-100, 3, -100, -100, 8, 0]):
        x = (rng.standard_normal((6, 5)) * 3).astype(np.float32)
        t = np.array(labels, dtype=np.int64)
        want = plain.call("masked_mean", [x, t], "tensor<f32>", copy_inputs=True)
        # The chain in float64: a label outside [0, 5) adds 0 and counts.
        x64 = x.astype(np.float64)
        logp = x64 - np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1, keepdims=True)) \
            - x64.max(1, keepdims=True)
        kept = t != -100
        picked = np.array([logp[i, c] if 0 <= c < 5 else 0.0 for i, c in enumerate(t)])
        ref = -(picked * kept).sum() / kept.sum()
        np.testing.assert_allclose(float(want), ref, rtol=1e-5)
        for lib in (raised, canonical):
            got = lib.call("masked_mean", [x, t], "tensor<f32>", copy_inputs=True)
            np.testing.assert_allclose(float(got), float(want), rtol=1e-6, atol=1e-7)
