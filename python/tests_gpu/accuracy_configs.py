"""The random configurations of test_accuracy.py, fixed by a seed
so that python/tools/make_xent_bundle.py compiles exactly the kernels the test calls.

Each case is a drop-in configuration (as xent.torch names it: the block size
from threads_for, as the drop-in picks it) plus the shape and the logits'
scale the test draws. Every dtype meets V = 1, 127, 4096 and 32768, logits of
magnitude up to 200, and every attribute.
"""

import random

from xent.runtime.kernels import kernel_config
from kernel_variants import has_resident_path, threads_for

DTYPES = ("f32", "bf16", "f16")
CLASSES = (1, 127, 4096, 32768)
SCALES = (1.0, 20.0, 200.0)


def _case(rng, dtype, classes, scale):
    kind = rng.choice(("index", "index", "index", "probs"))
    reduction = rng.choice(("none", "none", "mean", "sum"))
    attrs = dict(dtype=dtype, target="probs" if kind == "probs" else rng.choice(("i64", "i32")),
                 rank=2, weighted=rng.random() < 0.4, reduction=reduction,
                 ignore_index=rng.choice((-100, 0)),
                 label_smoothing=rng.choice((0.0, 0.0, 0.1)),
                 z_loss_scale=rng.choice((0.0, 0.0, 1e-4)),
                 softcap=rng.choice((None, None, None, 30.0)),
                 with_grad=rng.random() < 0.8)
    threads = threads_for(dtype, classes, has_resident_path(**attrs))
    config = kernel_config(**attrs, threads=threads)
    rows = 16 if classes >= 32768 else 256
    return {"config": config, "shape": (rows, classes), "scale": scale}


def cases():
    """Every (dtype, V, scale) once with drawn attributes, and twice more at
    |logits| ~ 200 (where the old formulas lost the most)."""
    rng = random.Random(11)
    out = []
    for dtype in DTYPES:
        for classes in CLASSES:
            for scale in SCALES + (200.0, 200.0):
                out.append(_case(rng, dtype, classes, scale))
    return out


CASES = cases()
CONFIGS = [c["config"] for c in CASES]
