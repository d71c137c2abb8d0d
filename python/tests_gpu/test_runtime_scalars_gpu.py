"""Run-time scalars on the GPU: one library per call signature serves every value.

Each case of runtime_scalar_configs.py is one drop-in configuration
(``runtime_dispatch``): its ``@xent_entry`` takes ignore_index (class
indices), ε, z and the softcap (0 for none) as its last
arguments (GpuFunction argument types ``"i64"`` / ``"f32"``), and
convert-xent-to-gpu passes them to the kernels as kernel arguments. The test
calls that one library with several values of each feature (including the
neutral ones: the terms are computed and must vanish) and compares the loss,
the z-loss and the gradient with the float64 reference
(xent.testing.reference) for each value; every call must be served by the
same loaded library, and the drop-in's configuration of every value is that
library's.

Runs where PyTorch sees a GPU; the libraries come from ``$XENT_CACHE_DIR``
(python/tools/make_xent_bundle.py), the package's bundle, or are compiled on
first use: with the package alone (no test bundle, ``XENT_OPT`` unset) the
int32-target case has no library ("no compiled kernel").
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from xent.runtime import bundle, kernels  # noqa: E402
from xent.testing import reference  # noqa: E402

import runtime_scalar_configs  # noqa: E402

TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
# Gradient relative L2 error against float64 (docs/gpu.md: ≤ 2.6e-3 bf16,
# ≤ 5e-4 f16, ≤ 1e-5 f32 over realistic rows), with some room.
GRAD_RTOL = {"f32": 2e-5, "bf16": 4e-3, "f16": 1e-3}


def entry_arg_types(text, name="xent_entry"):
    """The argument types of @name in the module `text`."""
    line = next(l for l in text.splitlines() if l.startswith(f"func.func @{name}("))
    params = line[len(f"func.func @{name}("):line.index(") attributes")]
    return [p.split(": ", 1)[1] for p in params.split(", %")]


def library(c):
    # Where the drop-in looks: $XENT_CACHE_DIR, then the package's bundle,
    # which holds the libraries of xent.torch's call signatures (i64 and
    # probability targets: the drop-in widens int32 targets). The int32
    # case (label_smoothing) is a library of xent.runtime's own, from the
    # test bundle (python/tools/make_xent_bundle.py) in $XENT_CACHE_DIR or
    # compiled with $XENT_OPT. A missing library is a defect of the bundles,
    # not a reason to skip.
    if c.get("runtime_dispatch"):
        c = kernels.library_config(c)
    return bundle.kernel_cache().get(c, lambda: kernels.kernel_module(c),
                                     kernels.pipeline_args(c))


def make_inputs(c, rows, classes, ignore_index, gen):
    dtype = TORCH_DTYPES[c["dtype"]]
    x = (torch.randn(rows, classes, device="cuda", generator=gen) * 4).to(dtype)
    w = None
    if c["weighted"]:
        w = torch.randint(16, 81, (classes,), device="cuda", generator=gen) / 64.0
    if c["target"] == "probs":
        t = torch.softmax(torch.randn(rows, classes, device="cuda", generator=gen) * 2, dim=1)
        return x, t.to(dtype), w
    t = torch.randint(0, classes, (rows,), device="cuda", generator=gen)
    # Every candidate ignore_index of the case (classes 0, 3, ...) appears
    # as a target, and a fifth of the rows take the value in use.
    for r, v in enumerate((0, 1, 2, 3, 5, 7, classes - 1)):
        if r < rows and v < classes:
            t[r] = v
    drop = torch.rand(rows, device="cuda", generator=gen) < 0.2
    t = torch.where(drop, torch.full_like(t, ignore_index), t)
    return x, t.to(torch.int32 if c["target"] == "i32" else torch.int64), w


def scalar_args(c, v):
    """The run-time values in @xent_entry's order (kernels._SCALARS)."""
    return [0.0 if v[key] is None else v[key] for key, _, _, _ in kernels._SCALARS if c[key]]


def call(lib, fn, c, x, t, w, g, v):
    reduced = c["reduction"] != "none"
    shape = () if reduced else (x.shape[0],)
    loss = torch.empty(shape, device="cuda", dtype=torch.float32)
    z = torch.empty(shape, device="cuda", dtype=torch.float32)
    args = [x, t] + ([w] if w is not None else []) + ([g] if c["with_grad"] else [])
    args += [loss, z]
    dx = None
    if c["with_grad"]:
        dx = torch.empty_like(x)
        args.append(dx)
    fn(*args, *scalar_args(c, v))
    torch.cuda.synchronize()
    return loss, z, dx


def np64(tensor):
    return None if tensor is None else tensor.detach().double().cpu().numpy()


def check(c, x, t, w, g, v, loss, z, dx):
    xn, tn, wn = np64(x), t.cpu().numpy(), np64(w)
    if c["target"] == "probs":
        tn = np64(t)
    ii = v["ignore_index"] if c["target"] != "probs" else -100
    kw = dict(ignore_index=ii, reduction=c["reduction"], label_smoothing=v["label_smoothing"],
              z_loss_scale=v["z_loss_scale"], softcap=v["softcap"])
    ref_loss, ref_z = reference.cross_entropy(xn, tn, wn, **kw)
    np.testing.assert_allclose(np64(loss), ref_loss, rtol=1e-4, atol=1e-5, err_msg=str(v))
    np.testing.assert_allclose(np64(z), ref_z, rtol=1e-4, atol=1e-6, err_msg=str(v))
    if dx is None:
        return
    ref_d = reference.cross_entropy_grad(np64(g), xn, tn, wn, **kw)
    got = np64(dx)
    err = np.linalg.norm(got - ref_d) / np.linalg.norm(ref_d)
    assert err <= GRAD_RTOL[c["dtype"]], (v, err)
    if c["target"] != "probs":
        ignored = tn == ii
        assert np.all(got[ignored] == 0.0), v


@pytest.mark.parametrize("name", sorted(runtime_scalar_configs.CASES))
def test_one_library_serves_every_value(name):
    attrs, (rows, classes), values = runtime_scalar_configs.CASES[name]
    c = runtime_scalar_configs.config(attrs, classes)
    # The drop-in names one configuration (one library) for every value.
    assert all(o == c for o in runtime_scalar_configs.configs_for_values(name))
    text = kernels.kernel_module(c)
    lib = library(c)
    fn = lib.function(kernels.entry_name(c), entry_arg_types(text))
    gen = torch.Generator(device="cuda").manual_seed(len(name) * 1009 + classes)
    losses = []
    for v in values:
        x, t, w = make_inputs(c, rows, classes, v["ignore_index"], gen)
        g = None
        if c["with_grad"]:
            g = (torch.tensor(0.5, device="cuda") if c["reduction"] != "none"
                 else torch.rand(rows, device="cuda", generator=gen) * 2 - 0.5)
        loss, z, dx = call(lib, fn, c, x, t, w, g, v)
        check(c, x, t, w, g, v, loss, z, dx)
        # The same library file serves this value (the cache has no other
        # for this configuration).
        assert library(c).path == lib.path
        # The same inputs with the first value give another loss: the value
        # is read at run time, not baked into the library.
        if v is not values[0]:
            other, _, _ = call(lib, fn, c, x, t, w, g, values[0])
            assert not torch.equal(other, loss), (name, v)
        losses.append(loss)
    assert len(losses) == len(values) > 1
