"""The pass pipelines Python hands to an ``*-opt`` tool, all named here.

xent's own pipelines are defined once, in C++ (``lib/Pipelines``), and
called by name: :func:`xent_cpu_pipeline_args` and
:func:`xent_gpu_pipeline_args` give the arguments that run
``xent-cpu-pipeline`` / ``xent-gpu-pipeline`` with some options, in
``xent-opt`` or, with ``plugin=``, in the stock ``mlir-opt`` loading
``XentPlugin.so``.

Two pipelines are upstream passes only, for modules without xent ops, so
that they run in the stock ``mlir-opt`` with no plugin:
``CPU_LOWERING_PASSES`` (below) and :func:`gpu_lowering_pipeline_args`
(gpu-dialect modules; :func:`xent.runtime.gpu.gpu_pipeline_args`). Each is
the corresponding C++ pipeline without its xent stages, and
``python/tests/test_pipelines.py`` checks that: it expands both with
``--dump-pass-pipeline`` and compares them pass by pass, options included,
so a stage or an option changed in C++ alone fails there. What the C++
pipelines add, and why these do without:

* ``xent-cpu-pipeline``: the xent passes (decomposition, rows over an
  ``scf.forall``, polynomial math, the ``expand_shape`` guard), the vector
  lowering they need, the clean-ups after them, ``eliminate-empty-tensors``
  (results computed in the caller's buffer), the row loops' lowering, and
  ``convert-to-llvm`` (OpenMP regions and MPI calls, which plain IR does not
  have); its ``convert-scf-to-cf`` comes after ``finalize-memref-to-llvm``
  (an OpenMP region's alloca scope must still hold one block), which for
  IR without OpenMP regions makes no difference.
* ``xent-gpu-pipeline``: fusion and ``convert-xent-to-gpu``, the host
  tensors' bufferization, the ``expand_shape`` guard and the cubins'
  compression; the gpu-dialect pipeline outlines ``gpu.launch`` regions
  first, which hand-written modules may hold.

``CPU_LOWERING_PASSES`` is also the plain, scalar lowering of tensor-level
linalg that the tests use as an independent reference for the IR frontends
emit (the chains ``xent-recognize`` raises). ``xent-cpu-pipeline`` is the
performance pipeline (rows over OpenMP threads, classes in vectors,
polynomial ``exp``/``log``; docs/user-guide.md). This list accepts
``func.func`` on ranked tensors, static or dynamic, carrying
``llvm.emit_c_interface`` and returning tensors.  Stage by stage:

1. ``canonicalize, cse``: tidy the tensor IR.
2. ``one-shot-bufferize`` across function boundaries with identity-layout
   memrefs at the boundaries, so every argument and result is a plain
   contiguous memref descriptor; ``scf.for`` may carry freshly allocated
   tensors.  Function arguments are writable: IR that updates an argument
   tensor in place writes into the caller's buffer (build outputs from
   ``tensor.empty``).
3. ``buffer-deallocation-pipeline``: ownership-based deallocation; temporaries
   are freed inside the function and every returned memref is a fresh
   ``malloc`` owned by the caller (aliases of arguments or globals are cloned).
4. ``convert-linalg-to-loops`` (scf loops), strided-metadata expansion,
   affine lowering and ``scf`` -> ``cf``.
5. Low-precision floats.  bf16 math and arithmetic are computed in f32 and
   bf16 ``extf``/``truncf`` are expanded to integer ops (round to nearest
   even), because libgcc < 13 lacks ``__truncsfbf2``.  The emulation marks its
   casts ``fastmath<contract>``, so a chain of bf16 ops keeps f32
   intermediates (``extf(truncf(v))`` folds to ``v``); an explicit
   ``arith.truncf`` without fastmath flags always rounds.  f16 is left to LLVM,
   which promotes each operation to f32 through libgcc's ``__extendhfsf2`` /
   ``__truncsfhf2``.  Extending f16 math here would create
   ``arith.extf ... fastmath<contract>``, which LLVM 22's
   ``convert-arith-to-llvm`` turns into an ``llvm.fpext`` with a stray
   ``#arith.fastmath`` attribute that ``mlir-translate`` cannot parse; for the
   same reason, do not put fastmath flags on f16 ``arith.extf``/``truncf``.
6. ``math`` -> LLVM intrinsics (``exp``, ``log``, ``tanh``... become libm
   calls in ``llc``), leftovers -> libm calls; then arith, index, memref, cf,
   ub and func -> LLVM, and ``reconcile-unrealized-casts``.

The resulting module needs only libc and libm (``malloc``, ``free``, ``expf``,
``logf``, ``tanhf``...); a ``memref.copy`` between non-contiguous memrefs
calls ``memrefCopy`` from ``libmlir_c_runner_utils``, which the driver links
on demand.
"""

from __future__ import annotations

import re
from typing import List, Optional

__all__ = ["CPU_LOWERING_PASSES", "CPU_LOWERING_PIPELINE", "pass_pipeline_args",
           "xent_cpu_pipeline_args", "xent_gpu_pipeline_args", "gpu_lowering_pipeline_args",
           "host_cpu_options"]

_CPU_LOWERING_PASS_LIST = (
    "canonicalize",
    "cse",
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map}",
    "buffer-deallocation-pipeline",
    "convert-bufferization-to-memref",
    "func.func(convert-linalg-to-loops)",
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "math-extend-to-supported-types{extra-types=f16 target-type=f32}",
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}",
    "arith-expand{include-bf16=true}",
    "memref-expand",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "finalize-memref-to-llvm",
    "convert-cf-to-llvm",
    "convert-ub-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
)

#: Comma-separated pass list, to be nested as ``builtin.module(<passes>)``.
CPU_LOWERING_PASSES = ",".join(_CPU_LOWERING_PASS_LIST)

#: Full textual pipeline for ``mlir-opt --pass-pipeline=...``.
CPU_LOWERING_PIPELINE = f"builtin.module({CPU_LOWERING_PASSES})"


def pass_pipeline_args(passes: str = CPU_LOWERING_PASSES) -> List[str]:
    """Command-line arguments running ``passes`` on the top-level module."""
    return [f"--pass-pipeline=builtin.module({passes})"]


def _xent_pipeline_args(name: str, options: dict, plugin: Optional[str]) -> List[str]:
    """Arguments running the registered pipeline `name` with `options`
    (keyword spelling: underscores become dashes, booleans ``true`` /
    ``false``), in their order."""
    text = " ".join(f"{key.replace('_', '-')}={_option_value(value)}"
                    for key, value in options.items())
    if plugin is None:
        return [f"--{name}" + (f"={text}" if text else "")]
    return [f"--load-dialect-plugin={plugin}", f"--load-pass-plugin={plugin}",
            f"--pass-pipeline=builtin.module({name}" + (f"{{{text}}}" if text else "") + ")"]


def _option_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def xent_cpu_pipeline_args(*, plugin: Optional[str] = None, **options) -> List[str]:
    """Arguments running ``xent-cpu-pipeline`` (its options as keywords:
    ``threads``, ``vector_width``) in ``xent-opt``, or with `plugin` (the
    path of ``XentPlugin.so``) in the stock ``mlir-opt``."""
    return _xent_pipeline_args("xent-cpu-pipeline", options, plugin)


def host_cpu_options() -> dict:
    """The ``xent-cpu-pipeline`` options this host's CPU allows beyond the
    portable defaults, for code compiled for it (the driver's
    ``target_cpu="native"``): ``native_bf16`` where it converts bf16 in
    hardware (x86 AVX512-BF16, read from ``/proc/cpuinfo``)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    return {"native_bf16": True} if "avx512_bf16" in flags else {}


def xent_gpu_pipeline_args(*, plugin: Optional[str] = None, **options) -> List[str]:
    """Arguments running ``xent-gpu-pipeline`` (its options as keywords:
    ``chip``, ``threads``, ``resident_rows``, ``runtime_dispatch``,
    ``linear_chunk_rows``, ...) in ``xent-opt``, or with `plugin` in the
    stock ``mlir-opt``."""
    return _xent_pipeline_args("xent-gpu-pipeline", options, plugin)


#: The gpu-dialect pipeline for the stock ``mlir-opt`` of LLVM 22, for
#: modules whose kernels are already written in the gpu dialect
#: (``gpu.module`` + ``gpu.launch_func``, or ``gpu.launch`` regions, which
#: are outlined). ``gpu-async-region`` turns synchronous
#: ``gpu.alloc``/``gpu.dealloc`` into stream-ordered ones, which
#: ``gpu-to-llvm`` needs; the rest is upstream's ``gpu-lower-to-nvvm-pipeline``
#: (kernels through ``convert-gpu-to-nvvm`` and ptxas, host code through
#: ``gpu-to-llvm``), with the options ``xent-gpu-pipeline`` gives it.
_GPU_LOWERING_PIPELINE = (
    "builtin.module(gpu-kernel-outlining,func.func(gpu-async-region),"
    "gpu-lower-to-nvvm-pipeline{{cubin-chip={chip} cubin-features={features} "
    "cubin-format={format} opt-level={opt}}})")


def gpu_lowering_pipeline_args(chip: str = "sm_90", features: str = "+ptx80",
                               format: str = "bin", opt_level: int = 3) -> List[str]:
    """``mlir-opt`` arguments lowering a gpu-dialect module to LLVM + an
    embedded binary (``format``: ``bin``, a cubin from ptxas; ``isa``, PTX
    the driver compiles at the first launch; ``fatbin``)."""
    if not re.fullmatch(r"sm_\d+[af]?", chip):
        raise ValueError(f"invalid chip {chip!r}; expected e.g. 'sm_90'")
    if format not in ("bin", "isa", "fatbin"):
        raise ValueError(f"invalid format {format!r}; expected 'bin', 'isa' or 'fatbin'")
    return ["--pass-pipeline=" + _GPU_LOWERING_PIPELINE.format(
        chip=chip, features=features, format=format, opt=int(opt_level))]
