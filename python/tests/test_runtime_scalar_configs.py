"""Runtime-scalar configurations of the drop-in's kernels
(python/src/xent/runtime/kernels.py, ``runtime_scalars=True``), without a GPU
or torch: the configuration records which features are present, not their
values; and the entry function takes the values as arguments
(test_bundle.py checks the libraries xent.torch asks for)."""

import os
import subprocess

import pytest

from xent.runtime import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

BASE = dict(dtype="bf16", target="i64", rank=2, weighted=True, reduction="mean",
            ignore_index=-100, label_smoothing=0.1, z_loss_scale=0.0, softcap=30.0,
            with_grad=True)


def test_default_configuration_unchanged():
    """Without the option the configuration (hence its cache hash) is what it was."""
    c = kernels.kernel_config(**BASE)
    assert "runtime_scalars" not in c
    assert kernels.kernel_config(**BASE, runtime_scalars=False) == c
    assert c["label_smoothing"] == 0.1 and c["softcap"] == 30.0


def test_one_configuration_for_every_value():
    c = kernels.kernel_config(**BASE, runtime_scalars=True)
    other = kernels.kernel_config(**{**BASE, "ignore_index": 3, "label_smoothing": 0.7,
                                     "softcap": 2.5}, runtime_scalars=True)
    assert c == other
    assert c["runtime_scalars"] and c["ignore_index"] == "runtime"
    assert (c["label_smoothing"], c["z_loss_scale"], c["softcap"]) == (True, False, True)
    # Presence still specializes: a z-loss is another configuration.
    assert kernels.kernel_config(**{**BASE, "z_loss_scale": 1e-4}, runtime_scalars=True) != c


def _run(args, text):
    assert os.access(XENT_OPT, os.X_OK), f"xent-opt not built at {XENT_OPT}"
    out = subprocess.run([XENT_OPT, *args], input=text, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("change", [{}, {"target": "probs", "rank": 3},
                                    {"with_grad": False, "z_loss_scale": 1e-4, "softcap": None},
                                    {"target": "i32", "reduction": "none", "weighted": False}])
def test_entry_takes_the_values(change):
    c = kernels.kernel_config(**{**BASE, **change}, runtime_scalars=True)
    text = kernels.kernel_module(c)
    present = [(key, ty) for key, _, _, ty in kernels._SCALARS if c[key]]
    entry = next(line for line in text.splitlines() if "func.func @xent_entry" in line)
    # The values are the entry's last arguments, scalars of their types.
    assert entry.split(") attributes")[0].endswith(
        ", ".join(f"{arg}: {ty}" for key, _, arg, ty in kernels._SCALARS if c[key]))
    for key, kw, arg, _ in kernels._SCALARS:
        assert (f" {kw} {arg}" in text) == bool(c[key])
        assert f"{key} =" not in text  # no attribute bakes a value in
    # Valid MLIR; the kernels take the op (mode=kernel refuses anything
    # else) and the entry's scalars reach their launch as arguments.
    lowered = _run(["--convert-xent-to-gpu=mode=kernel"], text)
    assert "xent.cross_entropy" not in lowered and present
    launch = next(line for line in lowered.splitlines() if "xent.launch ins(" in line)
    assert launch.split(" : ")[1].split(")")[0].endswith(", ".join(ty for _, ty in present))


def test_checked_in_pipeline_input():
    """test/Conversion/XentToGPU/Inputs/runtime-scalars-entry.mlir (the lit
    test of the whole GPU pipeline) is kernel_module's output."""
    c = kernels.kernel_config(**{**BASE, "z_loss_scale": 1e-4}, runtime_scalars=True)
    path = os.path.join(ROOT, "test", "Conversion", "XentToGPU", "Inputs",
                        "runtime-scalars-entry.mlir")
    with open(path) as f:
        assert f.read() == kernels.kernel_module(c)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_in_the_logits_dtype(reduction):
    """``loss_dtype``: the entry function's loss buffer has the logits' type
    and the lowered op writes it from the row kernel, with no conversion
    kernel after it (the reduced sums are f64 in the kernels' scratch); the
    z-loss stays f32. Only bf16 / f16 losses are keyed (an f32 one is the
    default configuration)."""
    base = {**BASE, "reduction": reduction, "z_loss_scale": 1e-4}
    c = kernels.kernel_config(**base, runtime_scalars=True, loss_dtype="bf16")
    assert c["loss_dtype"] == "bf16"
    assert kernels.kernel_config(**base, runtime_scalars=True, loss_dtype="f32") == \
        kernels.kernel_config(**base, runtime_scalars=True)
    assert kernels.with_loss_dtype(kernels.kernel_config(**base, runtime_scalars=True)) == c
    assert "loss_dtype" not in kernels.with_loss_dtype(c, f32_loss=True)
    f32 = kernels.kernel_config(**{**base, "dtype": "f32"}, runtime_scalars=True)
    assert kernels.with_loss_dtype(f32) == f32
    text = kernels.kernel_module(c)
    entry = next(line for line in text.splitlines() if "func.func @xent_entry" in line)
    loss_type = "memref<bf16>" if reduction != "none" else "memref<?xbf16>"
    z_type = "memref<f32>" if reduction != "none" else "memref<?xf32>"
    assert f"%loss: {loss_type}" in entry and f"%z: {z_type}" in entry
    lowered = _run(["--convert-xent-to-gpu=mode=kernel"], text)
    assert "xent_convert" not in lowered
    if reduction != "none":
        assert "memref<6xf64>" in lowered
    with pytest.raises(ValueError, match="loss_dtype"):
        kernels.kernel_config(**base, loss_dtype="f16")
