"""Randomized differential testing of the CPU fallback against the float64
reference.

``CONFIG_COUNT`` configurations are drawn from a seed (``XENT_DIFF_SEED``,
default ``xent.testing.randomized.DEFAULT_SEED``) by :mod:`xent.testing.randomized`: every
attribute, dtype, rank, class axis, static or dynamic shapes, empty batches.
They are compiled once into one module (``xent-opt --xent-cpu-pipeline``) and
each is called

* with random inputs at its compiled shape and, when dynamic, at another
  shape (class count included), and
* with adversarial inputs: equal logits, one-hot-like rows, +-1e30,
  subnormals, targets at 0 and C-1, every target ignored, NaN/inf in ignored
  rows (isolated: compared exactly like finite ones), NaN/+inf in kept rows
  and -inf in non-target classes (propagated like the reference says).

Results are compared by :func:`xent.testing.check_config`, with the
tolerances of the attribute matrix (test_cpu_semantics.py). A failure names
the seed, the configuration index, the kind and the shape; rerun with
``XENT_DIFF_SEED=<seed>`` to reproduce, or another seed to explore.
"""

import os

import numpy as np
import pytest

from xent.testing import build_library, check_config
from xent.testing.codegen import cross_entropy_function
from xent.testing.randomized import (ADVERSARIAL_KINDS, DEFAULT_SEED, Case, adversarial_inputs,
                                     call_shapes, random_configs, supports)

SEED = int(os.environ.get("XENT_DIFF_SEED", DEFAULT_SEED))
CONFIG_COUNT = int(os.environ.get("XENT_DIFF_CONFIGS", 48))
CONFIGS = random_configs(SEED, CONFIG_COUNT)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


@pytest.fixture(scope="module")
def diff_lib(cache_dir):
    return build_library([cross_entropy_function(f"d{i}", c)[0] for i, c in enumerate(CONFIGS)],
                         cache_dir)


def _run(lib, case: Case, rng):
    config = CONFIGS[case.index].with_shape(case.shape)
    with np.errstate(all="ignore"):  # f16 rounding of 1e30, inf - inf in the reference
        inputs = adversarial_inputs(case.kind, config, rng)
    try:
        return check_config(lib, f"d{case.index}", config, inputs, context=case.describe())
    except AssertionError as e:
        raise AssertionError(f"{case.describe()}\nconfig: {config}\n{e}") from None


@pytest.mark.parametrize("index", range(CONFIG_COUNT))
def test_random_config(diff_lib, index):
    rng = np.random.default_rng([SEED, index])
    for shape in call_shapes(CONFIGS[index], rng):
        _run(diff_lib, Case(SEED, index, CONFIGS[index], "random", shape), rng)


@pytest.mark.parametrize("kind", ADVERSARIAL_KINDS)
def test_adversarial(diff_lib, kind):
    """Each kind on every configuration that supports it (at least one)."""
    ran = 0
    for index, config in enumerate(CONFIGS):
        if not supports(kind, config):
            continue
        rng = np.random.default_rng([SEED, index, ADVERSARIAL_KINDS.index(kind) + 1])
        _run(diff_lib, Case(SEED, index, config, kind, config.shape), rng)
        ran += 1
    assert ran > 0, f"no configuration of seed {SEED} supports {kind}"


def test_configs_cover_the_attributes():
    """The seeded list exercises every attribute value at least once."""
    seen = lambda f: {f(c) for c in CONFIGS}  # noqa: E731
    assert seen(lambda c: c.reduction) == {"mean", "sum", "none"}
    assert seen(lambda c: c.dtype) == {"f32", "bf16", "f16"}
    assert seen(lambda c: c.target) == {"i32", "i64", "probs"}
    assert seen(lambda c: c.weighted) == {False, True}
    assert seen(lambda c: c.dynamic) == {False, True}
    assert seen(lambda c: len(c.shape)) == {1, 2, 3, 4}
    assert seen(lambda c: c.softcap is not None) == {False, True}
    assert seen(lambda c: c.label_smoothing > 0) == {False, True}
    assert seen(lambda c: c.z_loss_scale > 0) == {False, True}
    assert seen(lambda c: c.axis is not None) == {False, True}
    assert seen(lambda c: c.ignore_index is not None) == {False, True}
