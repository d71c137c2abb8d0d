"""What stays beside the raised op computes the chain's numbers.

The functions of test/Dialect/Xent/Recognize/beside-op.mlir (a loss scaled
per element by a float, a one-hot z-loss with labels outside [0, C)) are
compiled for the CPU three ways and called on random inputs:

* plain: the chain as written;
* recognized: ``xent-recognize``, then ``xent-inline-decomposition``;
* canonical: ``xent-recognize`` with every decomposition region dropped.

All three must agree (to f32 rounding, NaN at the same positions); the
functions the file says are raised must contain the op.
"""

import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing.irtext import (VARIANTS, pass_pipeline as pipeline, variant_module,
                                 with_c_interface)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")
SOURCE = os.path.join(ROOT, "test", "Dialect", "Xent", "Recognize", "beside-op.mlir")

pytestmark = pytest.mark.skipif(not os.access(XENT_OPT, os.X_OK),
                                reason=f"xent-opt not built at {XENT_OPT}")

with open(SOURCE) as _f:
    CHUNKS = {re.search(r"func\.func @(\w+)\(", c).group(1): c
              for c in _f.read().split("// -----")}

#: Function -> the labels it is called with (rows of 8): a gather reads
#: only labels in [0, 10) (or the ignore index where the chain masks it);
#: a one-hot takes any label.
LABELS = {
    "scaled_none": [[3, 0, 9, 1, 4, 4, 7, 2]],
    "scaled_ignored_mean_by_n": [[3, -100, 9, 1, -100, 4, 7, 2]],
    "scaled_by_a_max": [[3, 0, 9, 1, 4, 4, 7, 2]],
    "one_hot_z_loss_none": [[3, -100, 9, 12, -1, 4, -7, 10], [0, 1, 2, 3, 4, 5, 6, 7]],
}
RAISED = {"scaled_none", "scaled_ignored_mean_by_n", "one_hot_z_loss_none"}


def run_xent_opt(text, *args):
    p = subprocess.run([XENT_OPT, *args, "-"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def result_type(name):
    return re.search(rf"func\.func @{name}\(.*\) -> (tensor<[^>]*>)", CHUNKS[name]).group(1)


def library(name, variant, cache_dir):
    text, args = variant_module(with_c_interface(CHUNKS[name], name), variant,
                                lambda t: run_xent_opt(t, *pipeline("xent-recognize")))
    return Library(compile_module(text, args, XENT_OPT, out_dir=cache_dir))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


@pytest.mark.parametrize("name", sorted(CHUNKS))
def test_raised_or_left(name):
    text = run_xent_opt(CHUNKS[name], *pipeline("xent-recognize"))
    assert ("xent.cross_entropy" in text) == (name in RAISED), text


@pytest.mark.parametrize("name", sorted(CHUNKS))
def test_same_numbers(name, cache_dir):
    rng = np.random.default_rng(3)
    libs = {v: library(name, v, cache_dir) for v in VARIANTS}
    for labels in LABELS[name]:
        x = (rng.standard_normal((8, 10)) * 3).astype(np.float32)
        inputs = [x, np.asarray(labels, dtype=np.int64)]
        if "%w:" in CHUNKS[name]:
            inputs.append((rng.random(8) * 2 - 0.5).astype(np.float32))
        got = {v: np.asarray(lib.call(name, inputs, result_type(name), copy_inputs=True),
                             dtype=np.float64) for v, lib in libs.items()}
        want = got.pop("plain")
        assert np.isfinite(want).all(), want
        for variant, value in got.items():
            np.testing.assert_allclose(value, want, rtol=2e-6, atol=2e-6,
                                       err_msg=f"{name} {variant} {labels}")
