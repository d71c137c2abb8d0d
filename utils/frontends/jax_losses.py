"""JAX / optax / flax-style cross-entropy losses as real programs write them,
exported to StableHLO text by JAX itself (``jax.jit(f).lower(...).as_text()``),
with the values JAX computes on fixed inputs beside each (the frontend's own
numbers, float64 inputs rounded to f32).

    JAX_PLATFORMS=cpu python3 utils/frontends/jax_losses.py OUT_DIR

writes OUT_DIR/<name>.stablehlo.mlir and OUT_DIR/values.json; lower.sh
turns them into linalg with StableHLO's own conversion (README.md).
"""

import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

N, C = 8, 10
EPS = 0.1
Z = 1e-4


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C)).astype(np.float32) * 2
    t = rng.integers(0, C, size=(N,)).astype(np.int32)
    mask = (rng.random(N) > 0.25).astype(np.float32)
    return x, t, mask


def optax_int_mean(x, t):
    return optax.softmax_cross_entropy_with_integer_labels(x, t).mean()


def optax_int_sum(x, t):
    return optax.softmax_cross_entropy_with_integer_labels(x, t).sum()


def optax_int_none(x, t):
    return optax.softmax_cross_entropy_with_integer_labels(x, t)


def optax_onehot_mean(x, t):
    return optax.softmax_cross_entropy(x, jax.nn.one_hot(t, C)).mean()


def optax_smoothed_mean(x, t):
    return optax.softmax_cross_entropy(x, optax.smooth_labels(jax.nn.one_hot(t, C), EPS)).mean()


def take_along_axis_mean(x, t):
    # flax / t5x examples: log_softmax, then the label's entry.
    logp = jax.nn.log_softmax(x, axis=-1)
    return -jnp.take_along_axis(logp, t[:, None], axis=-1)[:, 0].mean()


def take_along_axis_masked(x, t, mask):
    logp = jax.nn.log_softmax(x, axis=-1)
    nll = -jnp.take_along_axis(logp, t[:, None], axis=-1)[:, 0]
    return (nll * mask).sum() / mask.sum()


def t5x_z_loss(x, t):
    # t5x.losses.cross_entropy_with_logits: the loss plus z_loss * lse^2.
    lse = jax.nn.logsumexp(x, axis=-1)
    logp = x - lse[:, None]
    nll = -jnp.sum(jax.nn.one_hot(t, C) * logp, axis=-1)
    return (nll + Z * lse ** 2).mean()


def grad_optax_int_mean(x, t):
    return jax.grad(optax_int_mean)(x, t)


def value_and_grad_optax_int_mean(x, t):
    return jax.value_and_grad(optax_int_mean)(x, t)


PROGRAMS = {
    "optax_int_mean": (optax_int_mean, ("x", "t")),
    "optax_int_sum": (optax_int_sum, ("x", "t")),
    "optax_int_none": (optax_int_none, ("x", "t")),
    "optax_onehot_mean": (optax_onehot_mean, ("x", "t")),
    "optax_smoothed_mean": (optax_smoothed_mean, ("x", "t")),
    "take_along_axis_mean": (take_along_axis_mean, ("x", "t")),
    "take_along_axis_masked": (take_along_axis_masked, ("x", "t", "mask")),
    "t5x_z_loss": (t5x_z_loss, ("x", "t")),
    "grad_optax_int_mean": (grad_optax_int_mean, ("x", "t")),
    "value_and_grad_optax_int_mean": (value_and_grad_optax_int_mean, ("x", "t")),
}


def main(out_dir: str) -> int:
    os.makedirs(out_dir, exist_ok=True)
    x, t, mask = _inputs()
    args = {"x": x, "t": t, "mask": mask}
    values = {"inputs": {k: v.tolist() for k, v in args.items()}, "outputs": {},
              "versions": {"jax": jax.__version__, "optax": optax.__version__}}
    for name, (fn, names) in PROGRAMS.items():
        a = [args[n] for n in names]
        text = jax.jit(fn).lower(*a).as_text()
        with open(os.path.join(out_dir, f"{name}.stablehlo.mlir"), "w") as f:
            f.write(text)
        out = fn(*[jnp.asarray(v) for v in a])
        values["outputs"][name] = jax.tree_util.tree_map(lambda v: np.asarray(v).tolist(), out)
    with open(os.path.join(out_dir, "values.json"), "w") as f:
        json.dump(values, f, indent=1, sort_keys=True)
    print(f"{len(PROGRAMS)} programs in {out_dir} (jax {jax.__version__}, optax {optax.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
