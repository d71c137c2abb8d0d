"""xent from Python: softmax cross-entropy as a fusable MLIR op.

* :mod:`xent.runtime`: compile MLIR that uses the xent ops and call it from
  NumPy (``driver``, ``pipelines``, ``bf16``) or with PyTorch CUDA tensors
  (``gpu``), and the kernels behind the drop-in (``kernels``);
* :mod:`xent.torch`: the PyTorch drop-in, ``cross_entropy`` and
  ``CrossEntropyLoss`` (needs the ``torch`` extra);
* :mod:`xent.testing`: the float64 reference and the test suites' tooling;
* :mod:`xent.bench`: the side-by-side GPU benchmark, ``python -m xent.bench``.

The runtime's NumPy side is re-exported here (``xent.compile_module``,
``xent.Library``, ...).
"""

from .runtime import (CPU_LOWERING_PASSES, CPU_LOWERING_PIPELINE, BF16Array, DriverError,
                      Library, ResultSpec, ToolError, bf16_bits_to_float32, compile_module,
                      float32_to_bf16_bits, pass_pipeline_args, round_to_bf16)

__all__ = [
    "BF16Array", "bf16_bits_to_float32", "float32_to_bf16_bits", "round_to_bf16",
    "DriverError", "Library", "ResultSpec", "ToolError", "compile_module",
    "CPU_LOWERING_PASSES", "CPU_LOWERING_PIPELINE", "pass_pipeline_args",
]
