"""The per-row statistics and class slices of the loss ops through the CPU
fallback: a vocabulary split into p slices (1, 2, and 3 uneven ones) is
computed slice by slice with ``xent.cross_entropy {return_row_stats}`` and
``xent.cross_entropy_grad row_stats ... class_offset``, the statistics are
merged in NumPy as the partitioned form merges them (max, then the sums
rescaled), and the loss from the merged values and the slices' gradients
put side by side must equal the float64 reference on the whole vocabulary,
for every reduction, ignore_index, class weights, label smoothing, z-loss
and softcap. The slice's own loss (targets elsewhere ignored) is checked
against the reference on the slice where the features allow it.
"""

import itertools

import numpy as np
import pytest

from xent.testing import build_library, default_xent_opt, reference

XENT_OPT = default_xent_opt()
N, C = 6, 37
SPLITS = {1: [37], 2: [19, 18], 3: [10, 13, 14]}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    import os
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


def _configs():
    configs = []
    for k, (reduction, weighted, smoothing, zloss) in enumerate(itertools.product(
            ("mean", "sum", "none"), (False, True), (0.0, 0.1), (0.0, 1e-3))):
        configs.append(dict(reduction=reduction, weighted=weighted, label_smoothing=smoothing,
                            z_loss_scale=zloss, softcap=15.0 if k % 3 == 1 else None,
                            ignore_index=3 if k % 2 else -100))
    return configs


CONFIGS = _configs()


def _width(c):
    return 3 + (1 if c["weighted"] else 0) + (2 if c["label_smoothing"] else 0)


def _attrs(c, extra, dynamic=False):
    attrs = [f"ignore_index = {c['ignore_index']} : i64"] + extra
    if not dynamic:
        attrs.append(f"num_classes = {C} : i64")
    if c["label_smoothing"]:
        attrs.append(f"label_smoothing = {c['label_smoothing']!r} : f32")
    if c["z_loss_scale"]:
        attrs.append(f"z_loss_scale = {c['z_loss_scale']!r} : f32")
    if c["softcap"] is not None:
        attrs.append(f"softcap = {c['softcap']!r} : f32")
    return "{" + ", ".join(attrs) + "}"


def _functions(i, c, dynamic=False):
    """The statistics and gradient functions of configuration `c`; with
    `dynamic`, num_classes is a run-time operand (the functions' last
    argument, a tensor<i64>) instead of the attribute."""
    k = _width(c)
    prefix = "dyn_" if dynamic else ""
    narg = ", %n: tensor<i64>" if dynamic else ""
    nload = "\n  %nc = tensor.extract %n[] : tensor<i64>" if dynamic else ""
    nop, ntype = (" num_classes %nc", ", i64") if dynamic else ("", "")
    red = c["reduction"]
    x, t, w, s = "tensor<6x?xf32>", "tensor<6xi64>", "tensor<?xf32>", f"tensor<6x{k}xf32>"
    g = "tensor<6xf32>" if red == "none" else "tensor<f32>"
    loss = "tensor<6xf32>" if red == "none" else "tensor<f32>"
    weight = " weight %w" if c["weighted"] else ""
    wtype = f", {w}" if c["weighted"] else ""
    warg = f", %w: {w}" if c["weighted"] else ""
    stats = f"""
func.func @{prefix}stats_{i}(%x: {x}, %t: {t}{warg}, %o: tensor<i64>{narg}) -> ({loss}, {s}) attributes {{llvm.emit_c_interface}} {{
  %off = tensor.extract %o[] : tensor<i64>{nload}
  %l, %s = xent.cross_entropy {red} %x, %t{weight} class_offset %off{nop} {_attrs(c, ["return_row_stats"], dynamic)} : ({x}, {t}{wtype}, i64{ntype}) -> ({loss}, {s})
  return %l, %s : {loss}, {s}
}}"""
    grad = f"""
func.func @{prefix}grad_{i}(%g: {g}, %x: {x}, %t: {t}{warg}, %s: {s}, %o: tensor<i64>{narg}) -> {x} attributes {{llvm.emit_c_interface}} {{
  %off = tensor.extract %o[] : tensor<i64>{nload}
  %d = xent.cross_entropy_grad {red} %g, %x, %t{weight} row_stats %s class_offset %off{nop} {_attrs(c, [], dynamic)} : ({g}, {x}, {t}{wtype}, {s}, i64{ntype}) -> {x}
  return %d : {x}
}}"""
    return [stats, grad], (loss, s, x)


@pytest.fixture(scope="module")
def lib(cache_dir):
    functions = []
    for i, c in enumerate(CONFIGS):
        functions += _functions(i, c)[0]
        if i in DYNAMIC:
            functions += _functions(i, c, dynamic=True)[0]
    return build_library(functions, cache_dir, XENT_OPT)


# The configurations also compiled with num_classes as a run-time operand.
DYNAMIC = range(0, len(CONFIGS), 2)


def _merge(parts, c):
    """The statistics of the slices merged into those of the whole rows."""
    m = np.max([p[:, 0] for p in parts], axis=0)
    merged = [m]
    s = sum(np.where(p[:, 0] == -np.inf, 0.0, p[:, 1] * np.exp(p[:, 0] - m)) for p in parts)
    merged += [s, np.max([p[:, 2] for p in parts], axis=0)]
    if c["weighted"]:
        merged.append(sum(p[:, 3] for p in parts))
    if c["label_smoothing"]:
        merged.append(sum(p[:, -2] + p[:, -1] * (m - p[:, 0]) for p in parts))
        merged.append(sum(p[:, -1] for p in parts))
    return np.stack(merged, axis=1)


def _loss_from_stats(stats, target, c):
    m, s, xt = stats[:, 0], stats[:, 1], stats[:, 2]
    kept = target != c["ignore_index"]
    wt = stats[:, 3] if c["weighted"] else np.ones(N)
    lse = m + np.log(s)
    eps = c["label_smoothing"]
    with np.errstate(invalid="ignore"):
        ce = (1 - eps) * wt * (lse - xt)
        if eps:
            ce = ce + eps / C * (stats[:, -2] + np.log(s) * stats[:, -1])
    ce = np.where(kept, ce, 0.0)
    z = np.where(kept, c["z_loss_scale"] * lse * lse, 0.0)
    if c["reduction"] == "none":
        return ce + z
    if c["reduction"] == "sum":
        return ce.sum() + z.sum()
    return ce.sum() / np.where(kept, wt, 0.0).sum() + z.sum() / kept.sum()


@pytest.mark.parametrize("p", sorted(SPLITS))
@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_slices_merge_to_the_whole_row(lib, index, p):
    _check_slices(lib, index, p, dynamic=False)


@pytest.mark.parametrize("index", DYNAMIC)
def test_run_time_num_classes(lib, index):
    """num_classes as an operand computes what the attribute does."""
    _check_slices(lib, index, 3, dynamic=True)


def _check_slices(lib, index, p, dynamic):
    c = CONFIGS[index]
    prefix = "dyn_" if dynamic else ""
    extra = [np.array(C, dtype=np.int64)] if dynamic else []
    rng = np.random.default_rng(300 + index)
    x = (rng.standard_normal((N, C)) * 3.0).astype(np.float32)
    target = rng.integers(0, C, size=N).astype(np.int64)
    target[1] = c["ignore_index"] if c["ignore_index"] >= 0 else -100
    target[4] = C - 1
    weight = rng.uniform(0.5, 2.0, size=C).astype(np.float32)
    g = (rng.standard_normal(N) if c["reduction"] == "none" else np.array(0.75)).astype(np.float32)
    loss_t, stats_t, x_t = _functions(index, c)[1]
    ref_kwargs = dict(ignore_index=c["ignore_index"], label_smoothing=c["label_smoothing"],
                      z_loss_scale=c["z_loss_scale"], softcap=c["softcap"])
    w64 = weight.astype(np.float64) if c["weighted"] else None

    bounds = np.cumsum([0] + SPLITS[p])
    parts, slice_losses = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        args = [np.ascontiguousarray(x[:, lo:hi]), target]
        if c["weighted"]:
            args.append(np.ascontiguousarray(weight[lo:hi]))
        args.append(np.array(lo, dtype=np.int64))
        loss, stats = lib.call(f"{prefix}stats_{index}", args + extra, [loss_t, stats_t])
        parts.append(stats.astype(np.float64))
        slice_losses.append((lo, hi, loss))
    merged = _merge(parts, c)

    exp_loss, _ = reference.cross_entropy(x.astype(np.float64), target, weight=w64,
                                          reduction=c["reduction"], **ref_kwargs)
    np.testing.assert_allclose(_loss_from_stats(merged, target, c), exp_loss, rtol=2e-5,
                               atol=1e-6, err_msg=f"merged loss, p={p}, {c}")

    grads = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        args = [g, np.ascontiguousarray(x[:, lo:hi]), target]
        if c["weighted"]:
            args.append(np.ascontiguousarray(weight[lo:hi]))
        args += [merged.astype(np.float32), np.array(lo, dtype=np.int64)]
        grads.append(lib.call(f"{prefix}grad_{index}", args + extra, x_t))
    exp_grad = reference.cross_entropy_grad(g.astype(np.float64), x.astype(np.float64), target,
                                            weight=w64, reduction=c["reduction"], **ref_kwargs)
    np.testing.assert_allclose(np.concatenate(grads, axis=1), exp_grad, rtol=2e-5, atol=1e-6,
                               err_msg=f"gradient, p={p}, {c}")

    # The slice's own loss: targets elsewhere ignored (ε/C of the global C
    # has no reference on the slice alone).
    if c["label_smoothing"]:
        return
    for lo, hi, loss in slice_losses:
        held = (target >= lo) & (target < hi) & (target != c["ignore_index"])
        local = np.where(held, target - lo, -1)
        exp, _ = reference.cross_entropy(
            x[:, lo:hi].astype(np.float64), local,
            weight=w64[lo:hi] if w64 is not None else None, reduction=c["reduction"],
            **dict(ref_kwargs, ignore_index=-1))
        np.testing.assert_allclose(loss, exp, rtol=2e-5, atol=1e-6, equal_nan=True,
                                   err_msg=f"slice [{lo}, {hi}) loss, p={p}, {c}")


def test_statistics_of_a_slice(lib):
    """x_t is -inf and w_t 0 where the slice does not hold the target."""
    index = next(i for i, c in enumerate(CONFIGS) if c["weighted"] and c["ignore_index"] == 3
                 and not c["label_smoothing"] and c["softcap"] is None)
    c = CONFIGS[index]
    x = np.arange(N * 10, dtype=np.float32).reshape(N, 10) / 10.0
    target = np.array([20, 3, 21, 0, 29, 25], dtype=np.int64)
    weight = np.linspace(1.0, 2.0, 10).astype(np.float32)
    _, stats = lib.call(f"stats_{index}", [x, target, weight, np.array(20, dtype=np.int64)],
                        list(_functions(index, c)[1][:2]))
    np.testing.assert_allclose(stats[:, 0], x.max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(stats[:, 1], np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1),
                               rtol=1e-6)
    owned = np.array([True, False, True, False, True, True])
    local = np.where(owned, target - 20, 0)
    np.testing.assert_array_equal(stats[:, 2], np.where(owned, x[np.arange(N), local], -np.inf))
    np.testing.assert_array_equal(stats[:, 3], np.where(owned, weight[local], 0.0))
