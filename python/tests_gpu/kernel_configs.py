"""The compiled kernels the GPU tests use, by KernelCache configuration.

``python/tools/make_bundle.py`` compiles them into a cache directory on a machine with
LLVM; the tests look them up there by the same configurations (which carry
a hash of the source, so an edited source is never matched by a stale
library).
"""
import hashlib
import json
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


# The in-place rules of convert-xent-to-gpu, executed (test_in_place.py):
# dlogits takes the logits' buffer only when the logits are dead after the
# op, never for a joint op whose kernel keeps rows on chip.
IN_PLACE_MLIR = """\
func.func @joint_dead(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>) attributes {llvm.emit_c_interface} {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
func.func @grad_dead(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> tensor<?x?xbf16> attributes {llvm.emit_c_interface} {
  %d = xent.cross_entropy_grad mean %g, %x, %t
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?x?xbf16>
  return %d : tensor<?x?xbf16>
}
""" + "".join(f"""\
func.func @{name}(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<?x?xbf16>, tensor<f32>) attributes {{llvm.emit_c_interface}} {{
  %d = xent.cross_entropy_grad mean %g, %x, %t
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?x?xbf16>
  %l = xent.cross_entropy {reduction} %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %d, %l : tensor<?x?xbf16>, tensor<f32>
}}
""" for name, reduction in (("grad_read_later", "sum"), ("pair_fused", "mean")))


def in_place_config(resident_rows: bool) -> dict:
    return {"suite": "in_place", "resident_rows": resident_rows, "chip": "sm_90",
            "source": _sha(IN_PLACE_MLIR)}


def in_place_pipeline(resident_rows: bool) -> list:
    return [f"--xent-gpu-pipeline=resident-rows={'true' if resident_rows else 'false'}"]


# The per-row outputs in the kernels (test_row_outputs.py): a joint bf16 mean
# with all three (resident path for long enough rows when compiled in, the
# two-pass walk for short, very long or misaligned ones), an f32 forward per
# element with i32 argmax, and a bf16 sum with label smoothing and softcap
# (five reduction components, accuracy converted to bf16).
ROW_OUTPUTS_MLIR = """\
func.func @joint_mean(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xbf16>)
    attributes {llvm.emit_c_interface} {
  %l, %lse, %am, %acc, %d = xent.cross_entropy_and_grad mean %g, %x, %t
      {return_lse, return_argmax, return_accuracy}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xbf16>)
  return %l, %lse, %am, %acc, %d
      : tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xbf16>
}
func.func @forward_none(%x: tensor<?x?xf32>, %t: tensor<?xi32>)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>)
    attributes {llvm.emit_c_interface} {
  %l, %lse, %am, %acc = xent.cross_entropy none %x, %t
      {ignore_index = 0 : i64, return_lse, return_argmax, return_accuracy}
      : (tensor<?x?xf32>, tensor<?xi32>)
      -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>)
  return %l, %lse, %am, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>
}
func.func @smoothed_sum(%x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<bf16>)
    attributes {llvm.emit_c_interface} {
  %l, %lse, %am, %acc = xent.cross_entropy sum %x, %t
      {label_smoothing = 0.1 : f32, softcap = 30.0 : f32,
       return_lse, return_argmax, return_accuracy}
      : (tensor<?x?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<bf16>)
  return %l, %lse, %am, %acc : tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<bf16>
}
"""


def row_outputs_config(resident_rows: bool) -> dict:
    return {"suite": "row_outputs", "resident_rows": resident_rows, "chip": "sm_90",
            "source": _sha(ROW_OUTPUTS_MLIR)}


def row_outputs_pipeline(resident_rows: bool) -> list:
    return in_place_pipeline(resident_rows)

# The linear + cross-entropy op (test_linear_gpu.py): every dtype x reduction
# x bias at chunks of 128 rows (N is never a multiple of it there), the
# automatic chunk size, f16 with int32 targets and ignore_index 0, every
# attribute with class weights on [B, T, H] rows, results
# written into the caller's buffers; the benchmark's configurations
# (xent.bench.linear_cross_entropy) are among them.
def _linear_config(**kwargs):
    """linear_config as xent.runtime.linear's calls name it: with run-time
    scalars (the attribute values are then arguments, not part of the
    configuration) unless XENT_RUNTIME_SCALARS=0."""
    from xent.runtime import linear
    return linear.linear_config(**kwargs, runtime_scalars=linear.RUNTIME_SCALARS)


def _unique(configs: list) -> list:
    return list({json.dumps(c, sort_keys=True): c for c in configs}.values())


def linear_configs() -> list:
    linear_config = _linear_config
    configs = [linear_config(dtype=d, reduction=r, bias=b, chunk_rows=LINEAR_CHUNK_ROWS)
               for d in ("bf16", "f32") for r in ("mean", "sum", "none") for b in (False, True)]
    # The automatic chunks (test_automatic_chunks, the benchmark).
    configs += [linear_config(dtype=d, reduction=r, bias=b)
                for d in ("bf16", "f32") for r in ("mean", "sum", "none") for b in (False, True)]
    configs.append(linear_config(dtype="bf16", reduction="mean", bias=False, rank=3))
    configs.append(linear_config(dtype="f16", reduction="mean", bias=True,
                                 chunk_rows=LINEAR_CHUNK_ROWS, ignore_index=0, target="i32"))
    # Every attribute at once, class weights, [B, T, H] rows.
    configs += [linear_config(dtype=d, reduction=r, bias=True, chunk_rows=LINEAR_CHUNK_ROWS,
                              rank=3, **LINEAR_ATTRIBUTES)
                for d in ("bf16", "f32") for r in ("mean", "none")]
    # The benchmark's chunk sizes besides the automatic one.
    configs += [linear_config(dtype="bf16", reduction="mean", bias=False, chunk_rows=rows)
                for rows in LINEAR_BENCH_CHUNK_ROWS]
    # Results into the caller's buffers (and so CUDA graphs).
    configs += [linear_config(dtype="bf16", reduction="mean", bias=True,
                              chunk_rows=LINEAR_CHUNK_ROWS, destinations=True),
                linear_config(dtype="f32", reduction="none", bias=False,
                              chunk_rows=LINEAR_CHUNK_ROWS, destinations=True)]
    return _unique(configs)


def linear_dropin_configs() -> list:
    """What xent.torch.linear_cross_entropy asks for (test_linear_dropin.py):
    results into PyTorch's tensors, the joint op for every reduction (per
    element in the backward) and the loss alone (inference, and the forward
    of `none`), at the automatic chunk size."""
    linear_config = _linear_config
    configs = [linear_config(dtype=d, reduction=r, bias=b, destinations=True,
                             with_grad=grad, rank=rank)
               for d in ("bf16", "f32") for r in ("mean", "sum", "none") for b in (False, True)
               for grad in (True, False) for rank in (2, 3)]
    configs += [linear_config(dtype="bf16", reduction=r, bias=True, destinations=True,
                              with_grad=grad, rank=3, **LINEAR_ATTRIBUTES)
                for r in ("mean", "none") for grad in (True, False)]
    return _unique(configs)


LINEAR_CHUNK_ROWS = 128
LINEAR_BENCH_CHUNK_ROWS = (1024, 4096)
LINEAR_ATTRIBUTES = dict(class_weight=True, label_smoothing=0.1, z_loss_scale=1e-4,
                         softcap=30.0, ignore_index=0)
