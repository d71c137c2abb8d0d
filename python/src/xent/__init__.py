"""Python side of xent: a float64 reference of PyTorch's cross-entropy and a
driver that compiles MLIR modules to shared libraries and calls them from NumPy."""

from .runtime import (CPU_LOWERING_PASSES, CPU_LOWERING_PIPELINE, BF16Array, DriverError,
                      Library, ResultSpec, ToolError, bf16_bits_to_float32, compile_module,
                      float32_to_bf16_bits, pass_pipeline_args, round_to_bf16)
from .reference import cross_entropy, cross_entropy_grad

__all__ = [
    "BF16Array", "bf16_bits_to_float32", "float32_to_bf16_bits", "round_to_bf16",
    "DriverError", "Library", "ResultSpec", "ToolError", "compile_module",
    "CPU_LOWERING_PASSES", "CPU_LOWERING_PIPELINE", "pass_pipeline_args",
    "cross_entropy", "cross_entropy_grad",
]
