"""The drop-in's kernel configurations and modules (python/src/xent/runtime/kernels.py),
without a GPU or torch: every generated entry module is valid MLIR that
convert-xent-to-gpu lowers (views with any strides, the resident path with
clusters where it applies), and xent.torch's libraries leave the choice of
the kernel variant to the host code the compiler generates."""

import itertools
import os
import subprocess

import pytest

from xent.runtime import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")

PLAIN = dict(target="i64", rank=2, weighted=False, reduction="mean", ignore_index=-100,
             label_smoothing=0.0, z_loss_scale=0.0, softcap=None, with_grad=True)


def test_config_names_threads_and_pipeline_follows():
    c = kernels.kernel_config(dtype="bf16", threads=256, **PLAIN)
    assert c["threads"] == 256
    (arg,) = kernels.pipeline_args(c)
    assert "threads=256" in arg and "resident-rows=true" in arg
    assert kernels.kernel_config(dtype="bf16", threads=256, **PLAIN) == c
    assert kernels.kernel_config(dtype="bf16", threads=512, **PLAIN) != c


def test_split_exponentials_only_where_a_bundle_asks(monkeypatch):
    # XENT_SPLIT_EXPONENTIALS=N (read at import) changes the pipeline, not
    # the configuration: a bundle built with it has the default's keys.
    c = kernels.kernel_config(dtype="bf16", runtime_dispatch=True,
                              **{**PLAIN, "softcap": 30.0})
    (default,) = kernels.pipeline_args(c)
    assert "split-exponentials" not in default
    monkeypatch.setattr(kernels, "SPLIT_EXPONENTIALS", 2)
    assert kernels.kernel_config(dtype="bf16", runtime_dispatch=True,
                                 **{**PLAIN, "softcap": 30.0}) == c
    (split,) = kernels.pipeline_args(c)
    assert "runtime-dispatch=true" in split and "split-exponentials=2" in split
    (lib,) = kernels.pipeline_args(kernels.library_config(c))
    assert "split-exponentials=2" in lib
    out = subprocess.run([XENT_OPT, "--convert-xent-to-gpu=runtime-dispatch=true "
                          "split-exponentials=2"],
                         input=kernels.kernel_module(c), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # The FMA pipe's exponentials (the 1.5·2^23 shift) in the soft-capped
    # kernels, none without the option.
    assert "0x4B400000" in out.stdout
    plain = subprocess.run([XENT_OPT, "--convert-xent-to-gpu=runtime-dispatch=true"],
                           input=kernels.kernel_module(c), capture_output=True, text=True)
    assert plain.returncode == 0 and "0x4B400000" not in plain.stdout


def _lower(config):
    assert os.access(XENT_OPT, os.X_OK), f"xent-opt not built at {XENT_OPT}"
    threads = config["threads"]
    out = subprocess.run([XENT_OPT, f"--convert-xent-to-gpu=threads={threads}"],
                         input=kernels.kernel_module(config), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("dtype,threads", [("bf16", 256), ("f32", 512)])
def test_resident_module(dtype, threads):
    text = _lower(kernels.kernel_config(dtype=dtype, threads=threads, **PLAIN))
    assert "clusters in" in text and "nvgpu.device_async_copy" in text
    assert f"threads in (%c{threads}" in text
    # Views pass through: the entry takes strided memrefs, no host copy.
    assert "strided<[?, ?], offset: ?>" in text and "memref.copy" not in text


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_every_attribute_combination_lowers(dtype):
    for eps, z, cap, probs, grad in itertools.product((0.0, 0.1), (0.0, 1e-4), (None, 30.0),
                                                      (False, True), (False, True)):
        c = kernels.kernel_config(**{**PLAIN, "dtype": dtype, "label_smoothing": eps,
                                     "z_loss_scale": z, "softcap": cap, "with_grad": grad,
                                     "target": "probs" if probs else "i64"})
        text = _lower(c)
        # Rows on chip for gradients of class indices; the softcap of f32
        # logits (the accurate tanh) keeps the two-pass kernel.
        resident = grad and not probs and not (cap and dtype == "f32")
        assert ("clusters in" in text) == resident, c


def test_row_outputs_leave_other_configurations_alone():
    """return_lse / return_argmax / return_accuracy default off and are then
    absent from the configuration (whose hash names the cached library), and
    the module without them is the one it was."""
    c = kernels.kernel_config(dtype="bf16", **PLAIN)
    assert not any(k in c for k in kernels.ROW_OUTPUTS)
    off = kernels.kernel_config(dtype="bf16", return_lse=False, return_argmax=False,
                                return_accuracy=False, **PLAIN)
    assert off == c and kernels.kernel_module(off) == kernels.kernel_module(c)
    on = kernels.kernel_config(dtype="bf16", return_argmax=True, **PLAIN)
    assert on["return_argmax"] is True and "return_lse" not in on and on != c


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("with_grad", [True, False])
def test_row_outputs_lower_to_kernels(reduction, with_grad):
    """The entry module with every per-row output: one buffer each after the
    z-loss (f32 lse and i64 argmax per element, f32 accuracy reduced like the
    loss), all lowered to the kernels (no decomposition left)."""
    c = kernels.kernel_config(dtype="bf16", return_lse=True, return_argmax=True,
                              return_accuracy=True,
                              **{**PLAIN, "reduction": reduction, "with_grad": with_grad})
    module = kernels.kernel_module(c)
    assert "return_lse, return_argmax, return_accuracy" in module
    per_row, reduced = "memref<?xf32>", "memref<f32>" if reduction != "none" else "memref<?xf32>"
    assert f"%lse: {per_row}, %am: memref<?xi64>, %acc: {reduced}" in module
    text = _lower(c)
    assert "xent.cross_entropy" not in text and "linalg.generic" not in text
    assert ("clusters in" in text) == with_grad


def test_accuracy_needs_class_indices():
    with pytest.raises(ValueError, match="class-index"):
        kernels.kernel_config(dtype="bf16", return_accuracy=True, **{**PLAIN, "target": "probs"})


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_dispatching_library(dtype):
    """kernel_config's runtime_dispatch names one library per call
    signature whatever the values and in place; its host code, not Python,
    picks the variant: epsilon and softcap against 0, the row length
    against two blocks of 256, the gradient's address against the
    logits'."""
    c = kernels.kernel_config(dtype=dtype, runtime_dispatch=True, **PLAIN)
    assert c == kernels.kernel_config(dtype=dtype, runtime_dispatch=True, two_pass=True,
                                      threads=128,
                                      **{**PLAIN, "label_smoothing": 0.3, "softcap": 5.0})
    (arg,) = kernels.pipeline_args(c)
    assert "runtime-dispatch=true" in arg
    text = kernels.kernel_module(c)
    entry = next(line for line in text.splitlines() if "func.func @xent_entry" in line)
    assert entry.split(") attributes")[0].endswith("%ii: i64, %ls: f32, %zs: f32, %sc: f32")
    out = subprocess.run([XENT_OPT, "--convert-xent-to-gpu=runtime-dispatch=true"],
                         input=text, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    host = out.stdout.split("gpu.module")[0]
    # epsilon, then the softcap under each of its two branches
    assert host.count("arith.cmpf une") == 3
    assert "memref.extract_aligned_pointer_as_index" in host
    assert "threads in (%c256" in host and "clusters in" in host
