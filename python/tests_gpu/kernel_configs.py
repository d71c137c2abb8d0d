"""The compiled kernels the GPU tests use, by KernelCache configuration.

``make_bundle.py`` compiles them into a cache directory on a machine with
LLVM; the tests look them up there by the same configurations (which carry
a hash of the source, so an edited source is never matched by a stale
library).
"""

import hashlib
import os

from xent.runtime import gpu

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_MLIR = os.path.join(HERE, "kernels.mlir")

CROSS_ENTROPY_MEAN_MLIR = """\
func.func @ce_mean(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32>
    attributes {llvm.emit_c_interface} {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
"""

# xent-gpu-pipeline's stages with gpu-async-region before the host lowering
# (gpu-to-llvm only lowers stream-ordered gpu.alloc/gpu.dealloc); used when
# the registered pipeline cannot lower the module's allocations.
CROSS_ENTROPY_FALLBACK_PIPELINE = [
    "--pass-pipeline=builtin.module(convert-xent-to-gpu,canonicalize,cse,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},canonicalize,"
    "func.func(gpu-async-region),gpu-lower-to-nvvm-pipeline{cubin-chip=sm_90 "
    "cubin-features=+ptx80 cubin-format=bin opt-level=3})"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def kernels_text() -> str:
    with open(KERNELS_MLIR) as f:
        return f.read()


def suite_config() -> dict:
    return {"suite": "python/tests_gpu/kernels.mlir", "source": _sha(kernels_text()),
            "pipeline": gpu.gpu_pipeline_args()}


def cross_entropy_config() -> dict:
    return {"op": "cross_entropy", "reduction": "mean", "logits": "bf16", "target": "i64",
            "chip": "sm_90", "source": _sha(CROSS_ENTROPY_MEAN_MLIR)}
