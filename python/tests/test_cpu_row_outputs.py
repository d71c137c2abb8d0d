"""The per-row outputs of the loss ops (``return_lse``, ``return_argmax``,
``return_accuracy``) through the CPU fallback, against the float64 reference
(``reference.row_outputs``, computed independently from the raw logits).

Every reduction, dtype, rank (with the class axis in the middle and last),
static and dynamic shapes, i32 and i64 argmax, with and without a z-loss and
a softcap, on the forward and on the joint op; half of the kept targets are
the predicted class so that accuracies are far from 0 and 1. Edge cases: ties
resolve to the first class, NaN rows (ignored) give the first NaN's index and
a NaN lse, every target ignored gives a NaN mean accuracy and 0 per element.
"""

import itertools

import numpy as np
import pytest

from xent.testing import build_library, default_xent_opt, reference
from xent.testing.codegen import OpConfig, cross_entropy_function, make_inputs, to_float64

XENT_OPT = default_xent_opt()
ALL = ("lse", "argmax", "accuracy")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    import os
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


def _configs():
    configs = []
    combos = itertools.product(("mean", "sum", "none"), ("f32", "bf16", "f16"),
                               (False, True), (False, True))
    for k, (reduction, dtype, with_z, joint) in enumerate(combos):
        shape, axis = [((6, 37), None), ((37,), None), ((2, 37, 3), None),
                       ((2, 3, 37), 2)][k % 4]
        outputs = [ALL, ("lse",), ("argmax", "accuracy"), ("lse", "accuracy")][(k // 4) % 4]
        configs.append(OpConfig(
            shape, dtype=dtype, reduction=reduction, axis=axis, dynamic=k % 3 == 1,
            ignore_index=None if k % 2 else 5, weighted=k % 5 == 0,
            label_smoothing=0.1 if k % 7 == 0 else 0.0,
            z_loss_scale=1e-3 if with_z else 0.0, with_z=with_z,
            softcap=20.0 if k % 3 == 2 else None, loss_dtype="f32" if k % 2 else dtype,
            row_outputs=outputs, argmax_dtype="i32" if k % 4 == 1 else "i64",
            joint=joint, with_grad=joint, target="i32" if k % 6 == 3 else "i64"))
    # Probability targets have lse and argmax (no accuracy).
    configs.append(OpConfig((6, 37), target="probs", reduction="mean", row_outputs=("lse", "argmax"),
                            with_grad=False, softcap=20.0))
    return configs


CONFIGS = _configs()


@pytest.fixture(scope="module")
def lib(cache_dir):
    return build_library([cross_entropy_function(f"rows_{i}", c)[0]
                          for i, c in enumerate(CONFIGS)], cache_dir, XENT_OPT)


def _targets(c, logits64, rng):
    """Random class indices, every other one the argmax, every fourth ignored."""
    x = np.moveaxis(logits64, c.class_axis, -1)
    k = np.arange(int(np.prod(c.element_shape))).reshape(c.element_shape)
    t = rng.integers(0, c.num_classes, size=c.element_shape)
    t = np.where(k % 2 == 0, np.argmax(x, axis=-1), t)
    return np.where(k % 4 == 3, c.effective_ignore_index, t)


def _check(c, outputs, inputs, what):
    lse, argmax, accuracy = reference.row_outputs(
        inputs.logits, inputs.target, ignore_index=c.effective_ignore_index,
        reduction=c.reduction, softcap=c.reference_kwargs()["softcap"], axis=c.class_axis)
    expected = {"lse": lse, "argmax": argmax, "accuracy": accuracy}
    for name, value in zip(c.row_outputs, outputs):
        if name == "argmax":
            assert value.dtype == np.dtype(np.int32 if c.argmax_dtype == "i32" else np.int64)
            np.testing.assert_array_equal(value, argmax, err_msg=f"{what}: argmax")
            continue
        # Rounded once to the result type (bf16: 2^-8, f16: 2^-11 relative).
        rtol = {"f32": 2e-6, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}[
            c.loss_dtype if name == "lse" or c.reduction == "none" else "f32"]
        if name == "accuracy" and c.reduction != "none":
            rtol = max(rtol, {"f32": 1e-6, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}[c.loss_dtype])
        np.testing.assert_allclose(to_float64(value), expected[name], rtol=rtol, atol=1e-6,
                                   err_msg=f"{what}: {name}")


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_row_outputs_match_reference(lib, index):
    c = CONFIGS[index]
    rng = np.random.default_rng(900 + index)
    logits64 = rng.standard_normal(c.shape) * 3.0
    from xent.testing.codegen import _as_dtype
    _, rounded = _as_dtype(logits64, c.dtype)
    target = None if c.probabilities else _targets(c, rounded, rng)
    inputs = make_inputs(c, rng, logits64=logits64, target=target)
    _, types = cross_entropy_function(f"rows_{index}", c)
    results = lib.call(f"rows_{index}", inputs.args, types)
    first = 1 + (1 if c.with_z else 0)
    outputs = results[first:first + len(c.row_outputs)]
    _check(c, outputs, inputs, str(c))
    # The loss beside them is unchanged.
    exp_loss, _ = reference.cross_entropy(inputs.logits, inputs.target, weight=inputs.weight,
                                          **c.reference_kwargs())
    tol = 1e-5 if c.loss_dtype == "f32" else 2.0 ** -7
    np.testing.assert_allclose(to_float64(results[0]), exp_loss, rtol=tol, atol=1e-5)
    if "accuracy" in c.row_outputs and c.reduction == "mean" and np.prod(c.element_shape) >= 6:
        acc = to_float64(outputs[c.row_outputs.index("accuracy")])
        assert 0.2 < acc < 1.0, "the test's targets should make accuracy informative"


def test_matrix_covers_every_reduction_and_output():
    seen = {(c.reduction, o) for c in CONFIGS if not c.probabilities for o in c.row_outputs}
    assert seen == set(itertools.product(("mean", "sum", "none"), ALL))
    assert {c.joint for c in CONFIGS} == {False, True}
    assert {c.argmax_dtype for c in CONFIGS if "argmax" in c.row_outputs} == {"i32", "i64"}


EDGE = {
    "edge_mean": OpConfig((4, 5), reduction="mean", row_outputs=ALL, with_z=False,
                          with_grad=False),
    "edge_none": OpConfig((4, 5), reduction="none", row_outputs=ALL, with_z=False,
                          with_grad=False, dtype="bf16"),
}


@pytest.fixture(scope="module")
def edge_lib(cache_dir):
    return build_library([cross_entropy_function(n, c)[0] for n, c in EDGE.items()],
                         cache_dir, XENT_OPT)


def _edge_call(edge_lib, name, logits, target):
    c = EDGE[name]
    inputs = make_inputs(c, np.random.default_rng(0), logits64=logits, target=target)
    _, types = cross_entropy_function(name, c)
    return c, inputs, edge_lib.call(name, inputs.args, types)


def test_ties_first_index_and_nan_rows(edge_lib):
    nan = np.nan
    logits = np.array([[1.0, 3.0, 3.0, 0.0, 3.0],     # tie: class 1
                       [2.0, 2.0, 2.0, 2.0, 2.0],     # all equal: class 0
                       [0.0, nan, 5.0, nan, 1.0],     # NaN: the first NaN, 1
                       [-1.0, -2.0, -1.0, -3.0, 0.5]])
    target = np.array([1, 0, -100, 4])
    for name in EDGE:
        c, inputs, (loss, lse, argmax, accuracy) = _edge_call(edge_lib, name, logits, target)
        np.testing.assert_array_equal(argmax, [1, 0, 1, 4])
        assert np.isnan(to_float64(lse)[2]) and np.isfinite(to_float64(loss)).all()
        _check(c, [lse, argmax, accuracy], inputs, name)
    np.testing.assert_array_equal(to_float64(_edge_call(edge_lib, "edge_none", logits, target)[2][3]),
                                  [1.0, 1.0, 0.0, 1.0])


def test_all_ignored(edge_lib):
    logits = np.random.default_rng(1).standard_normal((4, 5))
    target = np.full(4, -100)
    _, _, (loss, lse, argmax, accuracy) = _edge_call(edge_lib, "edge_mean", logits, target)
    assert np.isnan(accuracy) and np.isnan(loss)
    np.testing.assert_array_equal(argmax, np.argmax(logits.astype(np.float32), axis=1))
    _, _, (_, _, _, accuracy) = _edge_call(edge_lib, "edge_none", logits, target)
    np.testing.assert_array_equal(to_float64(accuracy), np.zeros(4))
