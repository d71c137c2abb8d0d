"""The xent.torch kernel configurations the GPU drop-in tests use.

``make_xent_bundle.py`` compiles them on a machine with LLVM; the tests call
xent.torch, which finds the same configurations in the cache. The set covers
every combination of reduction × weights × label smoothing × z-loss × softcap
× target kind, each paired in turn with a logits dtype and rank, with and
without the gradient, and two ignore_index values.
"""

import itertools

from xent.runtime.kernels import kernel_config

DTYPES = ("bf16", "f32", "f16")


def matrix():
    """(config, description) pairs; every attribute combination appears."""
    out = []
    combos = itertools.product(("mean", "sum", "none"), (False, True), (0.0, 0.1),
                               (0.0, 1e-4), (None, 30.0), ("index", "probs"))
    for k, (reduction, weighted, eps, z, cap, kind) in enumerate(combos):
        dtype = DTYPES[k % 3]
        rank = 4 if (k // 3) % 4 == 3 else 2
        target = "probs" if kind == "probs" else ("i32" if k % 5 == 0 else "i64")
        ignore_index = -100 if k % 2 else 0
        for with_grad in ((True, False) if k % 8 == 0 else (True,)):
            out.append(kernel_config(dtype=dtype, target=target, rank=rank, weighted=weighted,
                                     reduction=reduction, ignore_index=ignore_index,
                                     label_smoothing=eps, z_loss_scale=z, softcap=cap,
                                     with_grad=with_grad))
    return out


def specials():
    """Configurations of the edge-case tests."""
    base = dict(target="i64", rank=2, weighted=False, ignore_index=-100, label_smoothing=0.0,
                z_loss_scale=0.0, softcap=None, with_grad=True)
    out = []
    for dtype in DTYPES:
        out.append(kernel_config(dtype=dtype, reduction="mean", **base))
    out.append(kernel_config(dtype="bf16", reduction="mean",
                             **{**base, "label_smoothing": 0.1, "z_loss_scale": 1e-4}))
    out.append(kernel_config(dtype="bf16", reduction="mean", **{**base, "rank": 1}))
    out.append(kernel_config(dtype="bf16", reduction="none", **base))
    for dtype in DTYPES:  # forward only (also what xent.bench times)
        out.append(kernel_config(dtype=dtype, reduction="mean", **{**base, "with_grad": False}))
    return out


def two_pass():
    """The benchmark's gradient configurations with resident rows off (the
    two-pass kernel, timed side by side by xent.bench)."""
    from xent.runtime import kernels
    kernels.RESIDENT_ROWS = False
    try:
        return [kernel_config(dtype=d, target="i64", rank=2, weighted=False, reduction="mean",
                              ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0,
                              softcap=None, with_grad=True) for d in DTYPES]
    finally:
        kernels.RESIDENT_ROWS = True


def small_rows():
    """The 256-thread variants that xent.torch picks (kernels.threads_for) for
    rows of at most 8192 16-byte vectors when the kernel keeps rows on chip."""
    from xent.runtime.kernels import has_resident_path
    return [{**c, "threads": 256} for c in matrix() + specials()
            if has_resident_path(**c) and c["threads"] != 256]


def bench_attributes():
    """What ``python -m xent.bench --cases ...`` runs (every case of
    xent.bench.cross_entropy.CASES; the older ``--label-smoothing 0.1`` and
    ``--softcap 30`` are two of them): bf16 and f32, forward + backward and
    forward only, with the threads xent.torch picks for V >= 32768."""
    from xent.runtime.kernels import has_resident_path
    cases = [{}, {"label_smoothing": 0.1}, {"softcap": 30.0}, {"weighted": True},
             {"z_loss_scale": 1e-4}, {"target": "probs"}, {"reduction": "none"}]
    out = []
    for dtype in ("bf16", "f32"):
        for case in cases:
            for with_grad in (True, False):
                attrs = dict(dtype=dtype, target="i64", rank=2, weighted=False,
                             reduction="mean", ignore_index=-100, label_smoothing=0.0,
                             z_loss_scale=0.0, softcap=None, with_grad=with_grad)
                attrs.update(case)
                out.append(kernel_config(**attrs))
                if has_resident_path(**attrs):
                    out.append(kernel_config(**attrs, threads=256))
    return out


def native():
    """What test_native.py calls (bf16 unless stated): mean, sum, none,
    label smoothing, z-loss, class weights; f32 mean and rank-3 none."""
    base = dict(dtype="bf16", target="i64", rank=2, weighted=False, reduction="mean",
                ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                with_grad=True)
    variants = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1},
                {"z_loss_scale": 1e-4}, {"weighted": True}, {"reduction": "sum", "with_grad": False},
                {"dtype": "f32"}, {"dtype": "f32", "rank": 3, "reduction": "none"}]
    from xent.runtime.kernels import has_resident_path
    out = []
    for v in variants:
        attrs = {**base, **v}
        out.append(kernel_config(**attrs))
        if has_resident_path(**attrs):  # the threads xent.torch picks for short rows
            out.append(kernel_config(**attrs, threads=256))
    return out


def swapped():
    """What test_fx_swap.py's compiled models call: f32 mean, mean with
    label smoothing 0.1, sum; bf16 mean; with the gradient (and the
    forward-only variant of each for evaluation under no_grad)."""
    from xent.runtime.kernels import has_resident_path
    base = dict(dtype="f32", target="i64", rank=2, weighted=False, reduction="mean",
                ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                with_grad=True)
    out = []
    for v in ({}, {"label_smoothing": 0.1}, {"reduction": "sum"}, {"dtype": "bf16"}):
        for with_grad in (True, False):
            attrs = {**base, **v, "with_grad": with_grad}
            out.append(kernel_config(**attrs))
            if has_resident_path(**attrs):
                out.append(kernel_config(**attrs, threads=256))
    return out


CONFIGS = (matrix() + specials() + two_pass() + small_rows() + bench_attributes() + native()
           + swapped())
