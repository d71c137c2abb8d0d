"""The xent.torch kernel configurations the GPU drop-in tests use.

``python/tools/make_xent_bundle.py`` compiles them on a machine with LLVM; the tests call
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
    from kernel_variants import has_resident_path
    return [{**c, "threads": 256} for c in matrix() + specials()
            if has_resident_path(**c) and c["threads"] != 256]


def bench_attributes():
    """What ``python -m xent.bench --cases ...`` runs (every case of
    xent.bench.cross_entropy.CASES; the older ``--label-smoothing 0.1`` and
    ``--softcap 30`` are two of them): bf16 and f32, forward + backward and
    forward only, with the threads xent.torch picks for V >= 32768."""
    from kernel_variants import has_resident_path
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
    label smoothing, z-loss, class weights; f32 mean and rank-3 none; per
    element with weights and smoothing, and f16 with smoothing."""
    base = dict(dtype="bf16", target="i64", rank=2, weighted=False, reduction="mean",
                ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                with_grad=True)
    variants = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1},
                {"z_loss_scale": 1e-4}, {"weighted": True}, {"reduction": "sum", "with_grad": False},
                {"dtype": "f32"}, {"dtype": "f32", "rank": 3, "reduction": "none"},
                # test_per_element_gradient_in_backward
                {"reduction": "none", "weighted": True, "label_smoothing": 0.1},
                {"dtype": "f16", "reduction": "none", "label_smoothing": 0.05},
                # test_resident_label_smoothing
                {"dtype": "f32", "label_smoothing": 0.1}]
    from kernel_variants import has_resident_path
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
    from kernel_variants import has_resident_path
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


# (dtype, reduction, with_grad, (return_lse, return_argmax, return_accuracy))
ROW_CASES = [("bf16", "mean", True, (True, True, True)),
             ("f32", "none", True, (True, True, True)),
             ("bf16", "sum", False, (True, False, False)),
             ("bf16", "mean", True, (False, True, False)),
             ("f32", "mean", False, (False, False, True))]


def rows():
    """What test_dropin_rows.py calls: the per-row outputs through
    xent.torch (ROW_CASES), with the threads xent.torch picks for its row
    lengths (1000 and 300000 classes)."""
    from kernel_variants import has_resident_path
    out = []
    for dtype, reduction, with_grad, (lse, am, acc) in ROW_CASES:
        attrs = dict(dtype=dtype, target="i64", rank=2, weighted=False, reduction=reduction,
                     ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                     with_grad=with_grad)
        extra = dict(return_lse=lse, return_argmax=am, return_accuracy=acc)
        out.append(kernel_config(**attrs, **extra))
        if has_resident_path(**attrs):
            out.append(kernel_config(**attrs, **extra, threads=256))
    return out


# What a static configuration says of its call (kernel_config's arguments
# but with_grad and the launch geometry).
_ATTRIBUTES = ("dtype", "target", "rank", "weighted", "reduction", "ignore_index",
               "label_smoothing", "z_loss_scale", "softcap")


def runtime_variant(c):
    """The configuration xent.torch's native path asks for instead of the
    static `c` (XENT_RUNTIME_SCALARS, the default): the same kernel with
    the attribute values as run-time arguments."""
    from xent.runtime import kernels
    keys = _ATTRIBUTES + ("with_grad",)
    saved = kernels.RESIDENT_ROWS
    kernels.RESIDENT_ROWS = c["resident_rows"]
    try:
        return kernel_config(**{k: c[k] for k in keys}, threads=c["threads"],
                             runtime_scalars=True,
                             **{k: True for k in kernels.ROW_OUTPUTS if c.get(k)})
    finally:
        kernels.RESIDENT_ROWS = saved


def forward_sibling(c):
    """The library without gradient that the native path's per-element
    training call (reduction none: the loss in the forward, the joint kernel
    with grad_output in the backward) loads beside the run-time variant of
    the static configuration `c`; None when `c` is not such a call."""
    from xent.runtime import kernels
    if (c.get("runtime_scalars") or not c["with_grad"] or c["reduction"] != "none"
            or any(c.get(k) for k in kernels.ROW_OUTPUTS)):
        return None
    return kernel_config(**{k: c[k] for k in _ATTRIBUTES}, with_grad=False,
                         threads=kernels.THREADS, runtime_scalars=True)


def with_runtime_variants(configs):
    """`configs`, the run-time scalar variant of each, and the forward
    sibling of each per-element one; each of them with the loss in f32 and
    in the logits' dtype (the drop-in's default; f32 with
    ``loss_dtype=torch.float32``)."""
    from xent.runtime.kernels import with_loss_dtype
    out, seen = [], set()

    def add(c):
        key = tuple(sorted((k, str(v)) for k, v in c.items()))
        if key not in seen:
            seen.add(key)
            out.append(c)

    for c in configs:
        add(c)
    for c in configs:
        add(runtime_variant(c))
        sibling = forward_sibling(c)
        if sibling is not None:
            add(sibling)
    for c in list(out):
        add(with_loss_dtype(c))
    return out


STATIC_CONFIGS = (matrix() + specials() + two_pass() + small_rows() + bench_attributes() + native()
           + swapped() + rows())
# The native path asks for the run-time-scalar variants; the ctypes fallback
# (and XENT_RUNTIME_SCALARS=0) for the static ones.
CONFIGS = with_runtime_variants(STATIC_CONFIGS)
