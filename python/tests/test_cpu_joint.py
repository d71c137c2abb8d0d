"""xent.cross_entropy_and_grad (the joint form that xent-fuse-forward-backward
creates) computes exactly what the forward and gradient ops compute: checked
through the CPU fallback against the float64 reference."""

import itertools
import os

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing import reference
from xent.testing.codegen import OpConfig, cross_entropy_function, make_inputs, module, to_float64

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

CONFIGS = [
    OpConfig((6, 37), dtype=dtype, target=target, weighted=weighted, reduction=reduction,
             ignore_index=None if target == "probs" else 3, label_smoothing=0.1,
             z_loss_scale=1e-3, softcap=20.0 if weighted else None, dynamic=reduction == "sum",
             joint=True)
    for dtype, target, weighted, reduction in itertools.product(
        ("f32", "bf16"), ("i64", "probs"), (False, True), ("mean", "sum", "none"))
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    assert os.access(XENT_OPT, os.X_OK), f"xent-opt not built at {XENT_OPT}"
    text = module([cross_entropy_function(f"joint_{i}", c)[0] for i, c in enumerate(CONFIGS)])
    cache = os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))
    return Library(compile_module(text, ["--xent-cpu-pipeline"], XENT_OPT, out_dir=cache))


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_joint_matches_reference(lib, index):
    c = CONFIGS[index]
    inputs = make_inputs(c, np.random.default_rng(300 + index))
    _, types = cross_entropy_function(f"joint_{index}", c)
    loss, z, dlogits = lib.call(f"joint_{index}", inputs.args, types)
    kwargs = c.reference_kwargs()
    exp_loss, exp_z = reference.cross_entropy(inputs.logits, inputs.target,
                                              weight=inputs.weight, **kwargs)
    exp_grad = reference.cross_entropy_grad(inputs.grad_output, inputs.logits, inputs.target,
                                            weight=inputs.weight, **kwargs)
    np.testing.assert_allclose(to_float64(loss), exp_loss, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_float64(z), exp_z, rtol=1e-5, atol=1e-7)
    rtol = 2.0 ** -7 if c.dtype == "bf16" else 1e-5
    np.testing.assert_allclose(to_float64(dlogits), exp_grad, rtol=rtol,
                               atol=1e-6 * np.abs(exp_grad).max())
