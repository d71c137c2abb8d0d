"""The xent runtime: compile MLIR that uses the xent ops, and call it.

* :mod:`xent.runtime.driver`: lower a module with an ``*-opt`` tool and a
  pass pipeline, link it into a shared library (cached by content) and call
  its functions from NumPy through their C interface;
* :mod:`xent.runtime.pipelines`: the pipelines' arguments: xent's own by
  name, and the upstream-only CPU and gpu-dialect lowerings for the stock
  ``mlir-opt``;
* :mod:`xent.runtime.optext`: the xent ops as MLIR text;
* :mod:`xent.runtime.descriptor`: the C memref descriptors of every call;
* :mod:`xent.runtime.bf16`: bfloat16 arrays for NumPy;
* :mod:`xent.runtime.gpu`: GPU modules linked against
  ``libxent_cuda_runtime.so``, called with PyTorch CUDA tensors on PyTorch's
  stream, and the kernel cache a GPU machine without LLVM reads; it
  re-exports its parts :mod:`xent.runtime.memref` (element types, memref
  descriptors), :mod:`xent.runtime.cuda_runtime` (the runtime's ctypes
  view, streams) and :mod:`xent.runtime.library` (calling a library's host
  functions);
* :mod:`xent.runtime.kernels`: the MLIR of the kernels behind
  :mod:`xent.torch`, one entry function per configuration, and
  :func:`~xent.runtime.kernels.precompile` (free of torch);
* :mod:`xent.runtime.linear`: the linear + cross-entropy op on the GPU
  (chunked, cuBLASLt GEMMs), its entry functions and a call on CUDA tensors.

The NumPy side (driver, pipelines, bf16) is re-exported here; ``gpu``,
``kernels`` and ``linear`` are imported by name.
"""

from .bf16 import BF16Array, bf16_bits_to_float32, float32_to_bf16_bits, round_to_bf16
from .driver import DriverError, Library, ResultSpec, ToolError, compile_module
from .pipelines import (CPU_LOWERING_PASSES, CPU_LOWERING_PIPELINE, pass_pipeline_args,
                        xent_cpu_pipeline_args, xent_gpu_pipeline_args)

__all__ = [
    "BF16Array", "bf16_bits_to_float32", "float32_to_bf16_bits", "round_to_bf16",
    "DriverError", "Library", "ResultSpec", "ToolError", "compile_module",
    "CPU_LOWERING_PASSES", "CPU_LOWERING_PIPELINE", "pass_pipeline_args",
    "xent_cpu_pipeline_args", "xent_gpu_pipeline_args",
]
