"""The vectorized, parallel CPU fallback against the float64 reference.

``xent-cpu-pipeline`` tiles each row's class loop in steps of 4 vectors
(``xent-cpu-vectorize-rows``), with a scalar last tile, and spreads rows over
OpenMP threads. test_differential.py draws class counts up to 130; here the
class axis has the sizes where tiles, the peeled last tile and the
partial-result merge meet (one step, one step plus or minus one, many
steps), with more rows, through

* the default pipeline (the host's vector width, OpenMP), and
* ``vector-width=4 threads=1`` (steps of 16 classes, rows one after
  another),

on random inputs and on the adversarial ones (equal logits, +-1e30,
subnormals, NaN/inf, every target ignored...), compared by
:func:`xent.testing.check_config` with the tolerances of the attribute
matrix. The gradient is also written into a caller's array
(``bufferization.materialize_in_destination``): the library writes it there
and allocates no result for it.
"""

import os
from dataclasses import replace

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing import build_library, check_config
from xent.testing.codegen import cross_entropy_function
from xent.testing.randomized import (ADVERSARIAL_KINDS, Case, adversarial_inputs, random_config,
                                     supports)

SEED = 20261206
CLASS_COUNTS = (15, 16, 17, 63, 64, 65, 200, 1000)
PIPELINES = {"default": ("--xent-cpu-pipeline",),
             "narrow-serial": ("--xent-cpu-pipeline=vector-width=4 threads=1",)}


def _configs(count: int):
    rng = np.random.default_rng(SEED)
    configs = []
    for i in range(count):
        c = random_config(rng)
        shape = list(c.shape)
        shape[c.class_axis] = CLASS_COUNTS[i % len(CLASS_COUNTS)]
        # More rows than test_differential.py, but few enough that the
        # reductions over rows stay within the matrix's tolerances (the
        # decomposition sums them one after another in f32).
        others = [a for a in range(len(shape)) if a != c.class_axis and shape[a] != 0]
        for axis in others:
            shape[axis] = 33 if len(others) == 1 else int(rng.choice([3, 5]))
        configs.append(c.with_shape(shape))
    return configs


CONFIGS = _configs(32)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


@pytest.fixture(scope="module", params=sorted(PIPELINES))
def lib(request, cache_dir):
    return build_library([cross_entropy_function(f"v{i}", c)[0] for i, c in enumerate(CONFIGS)],
                         cache_dir, pipeline=PIPELINES[request.param])


def _check(lib, index, kind, rng):
    config = CONFIGS[index]
    with np.errstate(all="ignore"):
        inputs = adversarial_inputs(kind, config, rng)
    case = Case(SEED, index, config, kind, config.shape)
    try:
        check_config(lib, f"v{index}", config, inputs, context=case.describe())
    except AssertionError as e:
        raise AssertionError(f"{case.describe()}\nconfig: {config}\n{e}") from None


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_random_config(lib, index):
    _check(lib, index, "random", np.random.default_rng([SEED, index]))


@pytest.mark.parametrize("kind", [k for k in ADVERSARIAL_KINDS if k != "random"])
def test_adversarial(lib, kind):
    ran = 0
    for index, config in enumerate(CONFIGS):
        if supports(kind, config):
            _check(lib, index, kind, np.random.default_rng([SEED, index, 7]))
            ran += 1
    assert ran > 0, f"no configuration supports {kind}"


def test_class_counts_cover_the_tiles():
    """Each class count is drawn, and some configurations are dynamic."""
    counts = {c.num_classes for c in CONFIGS}
    assert set(CLASS_COUNTS) <= counts
    assert any(c.dynamic for c in CONFIGS) and not all(c.dynamic for c in CONFIGS)


_DPS = """
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>,
                 %d: memref<?x?xf32>) -> tensor<f32> attributes {llvm.emit_c_interface} {
  %l, %dx = xent.cross_entropy_and_grad mean %g, %x, %t {ignore_index = -100 : i64}
      : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  bufferization.materialize_in_destination %dx in restrict writable %d
      : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
  return %l : tensor<f32>
}
"""


def test_gradient_into_the_callers_array(cache_dir):
    """A gradient materialized in a caller's buffer is computed there (the
    array is written; test/Integration/CPU/destination.mlir checks that no
    N x V buffer is allocated)."""
    opt = os.environ.get("XENT_OPT")
    lib = Library(compile_module(_DPS, ["--xent-cpu-pipeline"], opt, out_dir=cache_dir))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((33, 1000)).astype(np.float32)
    t = rng.integers(0, 1000, 33).astype(np.int64)
    t[::5] = -100
    out = np.full_like(x, np.nan)
    (loss,) = lib.call("joint", [np.array(1.0, np.float32), x, t, out], results=[("f32", 0)])
    x64 = x.astype(np.float64)
    p = np.exp(x64 - x64.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    keep = t != -100
    rows = np.arange(len(t))[keep]
    want_loss = -np.log(p[rows, t[keep]]).mean()
    p[rows, t[keep]] -= 1
    p[~keep] = 0
    p /= keep.sum()
    np.testing.assert_allclose(float(loss), want_loss, rtol=2e-6)
    np.testing.assert_allclose(out, p, rtol=1e-5, atol=1e-8)
