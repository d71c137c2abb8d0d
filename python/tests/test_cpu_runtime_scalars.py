"""Run-time scalars on the CPU fallback, proved by execution.

``ignore_index``, ``label_smoothing``, ``z_loss_scale`` and ``softcap`` given
as SSA scalar operands: one module, compiled once with ``xent-cpu-pipeline``,
takes their values as function arguments (0-d buffers extracted to scalars)
and is called with several values of each; every result is compared with the
float64 reference (python/src/xent/testing/reference.py).
"""

import glob
import os

import numpy as np
import pytest

from xent.testing import build_library, default_xent_opt, expect_close, reference

XENT_OPT = default_xent_opt()
N, C = 6, 11

_SCALARS = """
    %i = tensor.extract %it[] : tensor<i64>
    %e = tensor.extract %et[] : tensor<f32>
    %z = tensor.extract %zt[] : tensor<f32>
    %c = tensor.extract %ct[] : tensor<f32>"""
_ARGS = "%it: tensor<i64>, %et: tensor<f32>, %zt: tensor<f32>, %ct: tensor<f32>"

# Class indices, weighted: every feature at run time, forward and gradient in
# one joint op, for each reduction.
_JOINT = """
  func.func @joint_{r}(%g: {gt}, %x: tensor<?x?xf32>, %t: tensor<?xi64>, %w: tensor<?xf32>,
                       {args}) -> ({lt}, {lt}, tensor<?x?xf32>) attributes {{llvm.emit_c_interface}} {{{scalars}
    %l, %zl, %d = xent.cross_entropy_and_grad {r} %g, %x, %t weight %w ignore_index %i
        label_smoothing %e z_loss_scale %z softcap %c
        : ({gt}, tensor<?x?xf32>, tensor<?xi64>, tensor<?xf32>, i64, f32, f32, f32)
        -> ({lt}, {lt}, tensor<?x?xf32>)
    return %l, %zl, %d : {lt}, {lt}, tensor<?x?xf32>
  }}"""

# Probability targets (no ignore_index), forward and gradient as two ops.
_PROBS = """
  func.func @probs(%x: tensor<?x?xf32>, %q: tensor<?x?xf32>, %et: tensor<f32>, %zt: tensor<f32>,
                   %ct: tensor<f32>) -> (tensor<f32>, tensor<?x?xf32>) attributes {llvm.emit_c_interface} {
    %e = tensor.extract %et[] : tensor<f32>
    %z = tensor.extract %zt[] : tensor<f32>
    %c = tensor.extract %ct[] : tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %l = xent.cross_entropy mean %x, %q label_smoothing %e z_loss_scale %z softcap %c
        : (tensor<?x?xf32>, tensor<?x?xf32>, f32, f32, f32) -> tensor<f32>
    %d = xent.cross_entropy_grad mean %one, %x, %q label_smoothing %e z_loss_scale %z softcap %c
        : (tensor<f32>, tensor<?x?xf32>, tensor<?x?xf32>, f32, f32, f32) -> tensor<?x?xf32>
    return %l, %d : tensor<f32>, tensor<?x?xf32>
  }"""


def _functions():
    out = []
    for r in ("mean", "sum", "none"):
        lt = "tensor<f32>" if r != "none" else "tensor<?xf32>"
        out.append(_JOINT.format(r=r, gt=lt, lt=lt, args=_ARGS, scalars=_SCALARS))
    out.append(_PROBS)
    return out


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("xent-runtime-scalars"))
    lib = build_library(_functions(), cache, XENT_OPT)
    return lib, cache


# (ignore_index, label_smoothing, z_loss_scale, softcap): each feature takes
# several values, including the neutral ones, in one library.
VALUES = [(-100, 0.0, 0.0, 1e4), (0, 0.1, 1e-3, 30.0), (3, 0.7, 0.5, 1.5), (-100, 1.0, 0.0, 4.0),
          (7, 0.25, 2.0, 0.75)]


def _inputs(seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((N, C)) * 3).astype(np.float32)
    t = rng.integers(0, C, size=N).astype(np.int64)
    t[1] = 3
    t[4] = 7
    w = rng.uniform(0.5, 2.0, size=C).astype(np.float32)
    return x, t, w


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("values", VALUES)
def test_class_indices(library, reduction, values):
    lib, _ = library
    ii, eps, z, cap = values
    x, t, w = _inputs(len(reduction) + abs(ii))
    g = np.asarray(1.5, np.float32) if reduction != "none" else np.linspace(
        0.5, 2.0, N).astype(np.float32)
    lt = "tensor<f32>" if reduction != "none" else "tensor<?xf32>"
    loss, zl, d = lib.call(f"joint_{reduction}",
                           [g, x, t, w, np.asarray(ii, np.int64), np.asarray(eps, np.float32),
                            np.asarray(z, np.float32), np.asarray(cap, np.float32)],
                           [lt, lt, "tensor<?x?xf32>"])
    kw = dict(weight=w.astype(np.float64), ignore_index=ii, reduction=reduction,
              label_smoothing=float(np.float32(eps)), z_loss_scale=float(np.float32(z)),
              softcap=float(np.float32(cap)))
    ref_loss, ref_z = reference.cross_entropy(x.astype(np.float64), t, **kw)
    ref_d = reference.cross_entropy_grad(g.astype(np.float64), x.astype(np.float64), t, **kw)
    expect_close(loss, ref_loss, rtol=1e-5, atol=1e-5, what="loss")
    expect_close(zl, ref_z, rtol=1e-5, atol=1e-6, what="z_loss")
    expect_close(d, ref_d, rtol=1e-4, atol=1e-6, what="dlogits")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_zero_is_without_the_feature(library, reduction):
    """A run-time value of 0 is the op without the feature: ε = 0 is no
    smoothing also where a logit is -inf (its smoothing term would be
    0 · inf), and a softcap of 0 leaves the logits as they are."""
    lib, _ = library
    x, t, w = _inputs(3)
    x[0, 2] = x[5, 9] = -np.inf
    t[0], t[5] = 1, 4
    g = np.asarray(1.5, np.float32) if reduction != "none" else np.linspace(
        0.5, 2.0, N).astype(np.float32)
    lt = "tensor<f32>" if reduction != "none" else "tensor<?xf32>"
    loss, zl, d = lib.call(f"joint_{reduction}",
                           [g, x, t, w, np.asarray(-100, np.int64), np.asarray(0.0, np.float32),
                            np.asarray(0.0, np.float32), np.asarray(0.0, np.float32)],
                           [lt, lt, "tensor<?x?xf32>"])
    kw = dict(weight=w.astype(np.float64), reduction=reduction)
    ref_loss, ref_z = reference.cross_entropy(x.astype(np.float64), t, **kw)
    ref_d = reference.cross_entropy_grad(g.astype(np.float64), x.astype(np.float64), t, **kw)
    assert np.all(np.isfinite(loss))
    expect_close(loss, ref_loss, rtol=1e-5, atol=1e-5, what="loss")
    expect_close(zl, ref_z, rtol=1e-5, atol=1e-6, what="z_loss")
    expect_close(d, ref_d, rtol=1e-4, atol=1e-6, what="dlogits")


@pytest.mark.parametrize("values", [(0.0, 0.0, 1e4), (0.3, 1e-2, 2.0), (0.9, 1.0, 0.5)])
def test_probabilities(library, values):
    lib, _ = library
    eps, z, cap = values
    x, _, _ = _inputs(11)
    q = np.random.default_rng(5).dirichlet(np.ones(C), size=N).astype(np.float32)
    loss, d = lib.call("probs", [x, q, np.asarray(eps, np.float32), np.asarray(z, np.float32),
                                 np.asarray(cap, np.float32)],
                       ["tensor<f32>", "tensor<?x?xf32>"])
    kw = dict(label_smoothing=float(np.float32(eps)), z_loss_scale=float(np.float32(z)),
              softcap=float(np.float32(cap)))
    ref_loss, _ = reference.cross_entropy(x.astype(np.float64), q.astype(np.float64), **kw)
    ref_d = reference.cross_entropy_grad(np.asarray(1.0), x.astype(np.float64),
                                         q.astype(np.float64), **kw)
    expect_close(loss, ref_loss, rtol=1e-5, atol=1e-5, what="loss")
    expect_close(d, ref_d, rtol=1e-4, atol=1e-6, what="dlogits")


def test_compiled_once(library):
    """Every value above ran through one shared library: the cache holds
    exactly one."""
    _, cache = library
    libraries = glob.glob(os.path.join(cache, "**", "*.so"), recursive=True)
    assert len(libraries) == 1, libraries
