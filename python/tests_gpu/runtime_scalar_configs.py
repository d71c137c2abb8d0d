"""The runtime-scalar libraries of test_runtime_scalars_gpu.py: one drop-in
configuration (``kernel_config(..., runtime_scalars=True)``) per feature set,
each with the values the test calls it with, so that python/tools/make_xent_bundle.py
compiles exactly the libraries the test loads (one per feature set, whatever
the values).

Each case: the drop-in attributes (the features present, with placeholder
values that only say "present"), the shape, and the values of
ignore_index / label_smoothing / z_loss_scale / softcap the test passes at
run time. A feature's value may be its neutral one (ε = 0, z = 0): the
terms are still computed, and must give what the value says.
"""

from xent.runtime.kernels import kernel_config

_PRESENT = dict(label_smoothing=0.1, z_loss_scale=1e-4, softcap=30.0)


def _attrs(dtype, target, weighted, reduction, with_grad, features, rank=2):
    """Drop-in attributes with `features` (a subset of _PRESENT's keys) present."""
    return dict(dtype=dtype, target=target, rank=rank, weighted=weighted, reduction=reduction,
                ignore_index=-100,
                label_smoothing=_PRESENT["label_smoothing"] if "label_smoothing" in features
                else 0.0,
                z_loss_scale=_PRESENT["z_loss_scale"] if "z_loss_scale" in features else 0.0,
                softcap=_PRESENT["softcap"] if "softcap" in features else None,
                with_grad=with_grad)


def _values(ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None):
    return dict(ignore_index=ignore_index, label_smoothing=label_smoothing,
                z_loss_scale=z_loss_scale, softcap=softcap)


# name: (attributes, (rows, classes), values called with)
CASES = {
    # ignore_index alone (every class-index library takes it): values that
    # are classes of the row (0, 3, the last), and -100.
    "ignore_index": (_attrs("bf16", "i64", True, "mean", True, ()), (64, 4096),
                     [_values(ignore_index=v) for v in (-100, 0, 3, 4095)]),
    "label_smoothing": (_attrs("f32", "i32", True, "sum", True, ("label_smoothing",)),
                        (48, 1000),
                        [_values(ignore_index=i, label_smoothing=e)
                         for i, e in ((-100, 0.0), (7, 0.1), (-100, 0.5), (2, 1.0))]),
    # z-loss keeps the resident path: V = 131072 bf16 rows on clusters.
    "z_loss": (_attrs("bf16", "i64", False, "mean", True, ("z_loss_scale",)), (8, 131072),
               [_values(z_loss_scale=z) for z in (0.0, 1e-4, 0.25)]),
    "softcap": (_attrs("f32", "i64", False, "none", True, ("softcap",)), (40, 4096),
                [_values(softcap=s) for s in (30.0, 5.0, 0.5, 1e4)]),
    "all": (_attrs("bf16", "i64", True, "mean", True,
                   ("label_smoothing", "z_loss_scale", "softcap")), (32, 32000),
            [_values(-100, 0.1, 1e-4, 30.0), (_values(5, 0.0, 0.0, 1e3)),
             _values(0, 0.9, 0.01, 2.0)]),
    "probs": (_attrs("f32", "probs", True, "mean", True, ("label_smoothing", "softcap")),
              (24, 2048),
              [_values(label_smoothing=e, softcap=s) for e, s in ((0.0, 30.0), (0.2, 4.0))]),
    "forward": (_attrs("f16", "i64", False, "sum", False,
                       ("label_smoothing", "z_loss_scale", "softcap")), (16, 50257),
                [_values(-100, 0.05, 1e-3, 20.0), _values(1, 0.3, 0.0, 50.0)]),
}


def config(attrs, classes):
    """The library's configuration, as the drop-in names it: the call's
    signature alone (kernel_config's runtime_dispatch), whatever the
    values and the row length (`classes`)."""
    return kernel_config(**attrs, runtime_scalars=True, runtime_dispatch=True)


def configs_for_values(name):
    """The drop-in's configuration for each value of case `name`, the
    neutral ones included (ε = 0 and no softcap run the kernels without
    the feature, picked by the library's host code): all equal to
    config(), which is the point."""
    attrs, (_, classes), values = CASES[name]
    return [config(dict(attrs, ignore_index=v["ignore_index"],
                        **{k: v[k] for k in _PRESENT}), classes) for v in values]


CONFIGS = [config(attrs, shape[1]) for attrs, shape, _ in CASES.values()]
