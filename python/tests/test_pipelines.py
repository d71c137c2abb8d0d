"""The pipelines Python names (xent.runtime.pipelines) against the C++ ones.

The upstream-only lowerings run in the stock mlir-opt without xent; each is
the C++ pipeline without its xent stages. Both are expanded by xent-opt
(``--dump-pass-pipeline``: nested pipelines as their passes, every option
spelled out) and compared pass by pass: the Python one must be the C++ one
minus the stages listed here, each with the reason it is left out, so a
stage or an option changed on one side alone fails. The helpers that call
xent's pipelines by name must give arguments that xent-opt, and the stock
mlir-opt with the plugin, accept."""

import os
import re
import subprocess

import numpy as np
import pytest

from xent.runtime import driver, gpu, pipelines
from xent.runtime.driver import Library, compile_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(ROOT, "build", "bin", "xent-opt")
MLIR_OPT = os.path.join(os.environ.get("XENT_LLVM_BIN", driver.DEFAULT_LLVM_BIN), "mlir-opt")
PLUGIN = os.environ.get("XENT_PLUGIN") or os.path.join(
    os.path.dirname(os.path.dirname(XENT_OPT)), "lib", "XentPlugin.so")

pytestmark = pytest.mark.skipif(not os.access(XENT_OPT, os.X_OK),
                                reason=f"xent-opt not built at {XENT_OPT}")

# The stages of xent-cpu-pipeline (threads=1) that CPU_LOWERING_PASSES leaves
# out, by pass name, and why.
CPU_ONLY = {
    "xent-inline-decomposition": "xent ops: the reference lowers IR without them",
    "xent-cpu-vectorize-rows": "the xent schedule (rows, vectors)",
    "xent-cpu-approximate-math": "the xent schedule (polynomial exp/log)",
    "xent-lower-multi-dynamic-expand-shape": "an xent pass (the reference's inputs do not "
                                             "reach LLVM 22's expand-strided-metadata crash)",
    "canonicalize": "clean-ups after the schedule and the bufferization of its rows",
    "cse": "clean-ups after the schedule and the bufferization of its rows",
    "eliminate-empty-tensors": "results computed in the caller's buffer: an optimization",
    "scf-forall-to-for": "the schedule's row loops",
    "convert-vector-to-scf": "the schedule's vectors",
    "lower-vector-multi-reduction": "the schedule's vectors",
    "convert-vector-to-llvm": "the schedule's vectors",
    "convert-to-llvm": "OpenMP regions and MPI calls, which plain IR does not have",
}
# Placed differently: xent-cpu-pipeline lowers scf after memref (an OpenMP
# region's alloca scope must hold one block), the reference before the
# float emulation; without OpenMP regions the order makes no difference.
CPU_MOVED = {"convert-scf-to-cf"}

# The stages of xent-gpu-pipeline that gpu_pipeline_args leaves out, and the
# one it adds.
GPU_ONLY = {
    "xent-fuse-forward-backward": "xent ops",
    "convert-xent-to-gpu": "xent ops",
    "canonicalize": "clean-ups of the host tensors",
    "cse": "clean-ups of the host tensors",
    "one-shot-bufferize": "host tensors: gpu-dialect modules are written on memrefs",
    "xent-host-compute-to-device": "an xent pass: host linalg around the xent ops",
    "xent-lower-multi-dynamic-expand-shape": "an xent pass",
    "xent-compress-gpu-binaries": "an xent pass (fatbinary); the cubins stay uncompressed",
}
GPU_PYTHON_ONLY = "gpu-kernel-outlining"  # first: hand-written gpu.launch regions


def _split(text: str):
    """Top-level comma-separated entries of a pipeline's text."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    return [re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", e.strip())) for e in entries if e.strip()]


def expand(args, tool=XENT_OPT, extra=()):
    """The passes `args` run, as xent-opt prints them."""
    done = subprocess.run([tool, *extra, *args, "--dump-pass-pipeline", "-o", os.devnull],
                          input="", capture_output=True, text=True, check=True)
    text = done.stderr[done.stderr.index("builtin.module("):]
    return _split(text[len("builtin.module("):text.rindex(")")])


def name(entry: str) -> str:
    """A pass's name; a nested pipeline's single pass's name."""
    m = re.fullmatch(r"[\w.]+\((.*)\)", entry, re.S)
    if m and "," not in m.group(1):
        return name(m.group(1))
    return re.match(r"[\w.-]+", entry).group(0)


def left_out(python, cpp):
    """The C++ entries a greedy match of `python` as a subsequence of `cpp`
    skips; fails if `python` is not one."""
    skipped, i = [], 0
    for entry in python:
        while i < len(cpp) and cpp[i] != entry:
            skipped.append(cpp[i])
            i += 1
        assert i < len(cpp), f"{entry!r} is not in the C++ pipeline at this place:\n" + \
            "\n".join(cpp)
        i += 1
    return skipped + cpp[i:]


def test_cpu_reference_is_xent_cpu_pipeline_without_xent_stages():
    cpp = expand(pipelines.xent_cpu_pipeline_args(threads=1))
    python = expand(pipelines.pass_pipeline_args())
    assert not any(name(e).startswith("xent-") for e in python)
    for moved in CPU_MOVED:
        assert [name(e) for e in python].count(moved) == 1
        assert [name(e) for e in cpp].count(moved) == 1
    skipped = left_out([e for e in python if name(e) not in CPU_MOVED],
                       [e for e in cpp if name(e) not in CPU_MOVED])
    assert {name(e) for e in skipped} <= set(CPU_ONLY), skipped


@pytest.mark.parametrize("options", [{}, {"chip": "sm_100a", "features": "+ptx86",
                                          "format": "isa"}])
def test_gpu_dialect_pipeline_is_xent_gpu_pipeline_without_xent_stages(options):
    cpp = expand(pipelines.xent_gpu_pipeline_args(**options))
    python = expand(gpu.gpu_pipeline_args(**options))
    assert name(python[0]) == GPU_PYTHON_ONLY
    skipped = left_out(python[1:], cpp)
    assert {name(e) for e in skipped} <= set(GPU_ONLY), skipped
    # The cubins' options and the host lowering are compared, not skipped.
    assert any(e.startswith("gpu-module-to-binary{") for e in python)
    assert any(e.startswith("nvvm-attach-target{") for e in python)


def test_xent_pipeline_args_spelling():
    assert pipelines.xent_cpu_pipeline_args() == ["--xent-cpu-pipeline"]
    assert pipelines.xent_gpu_pipeline_args(chip="sm_90", threads=256, runtime_dispatch=True,
                                            resident_rows=False) == [
        "--xent-gpu-pipeline=chip=sm_90 threads=256 runtime-dispatch=true resident-rows=false"]
    assert pipelines.xent_cpu_pipeline_args(plugin="/p.so", threads=1) == [
        "--load-dialect-plugin=/p.so", "--load-pass-plugin=/p.so",
        "--pass-pipeline=builtin.module(xent-cpu-pipeline{threads=1})"]


def test_xent_opt_accepts_the_options():
    cpu = expand(pipelines.xent_cpu_pipeline_args(threads=2, vector_width=4))
    assert "func.func(xent-cpu-vectorize-rows{vector-width=4})" in cpu
    gpu_ = expand(pipelines.xent_gpu_pipeline_args(
        chip="sm_90", threads=256, runtime_dispatch=True, resident_rows=False,
        linear_chunk_rows=64))
    conversion = next(e for e in gpu_ if e.startswith("convert-xent-to-gpu{"))
    for option in ("threads=256", "runtime-dispatch=true", "resident-rows=false",
                   "linear-chunk-rows=64"):
        assert option in conversion


@pytest.mark.skipif(not (os.access(MLIR_OPT, os.X_OK) and os.path.exists(PLUGIN)),
                    reason="needs the stock mlir-opt and XentPlugin.so")
def test_stock_mlir_opt_with_the_plugin(tmp_path):
    plugin_args = pipelines.xent_cpu_pipeline_args(plugin=PLUGIN, threads=1)
    assert expand(plugin_args[2:], MLIR_OPT, plugin_args[:2]) == \
        expand(pipelines.xent_cpu_pipeline_args(threads=1))
    text = """
func.func @loss(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> tensor<f32>
    attributes {llvm.emit_c_interface} {
  %l = xent.cross_entropy sum %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
"""
    lib = Library(compile_module(text, plugin_args, MLIR_OPT, out_dir=str(tmp_path)))
    x = np.zeros((2, 4), dtype=np.float32)
    loss = lib.call("loss", [x, np.array([0, 3])], ("f32", 0))
    assert np.isclose(float(loss), 2 * np.log(4))
