"""Pass pipelines that lower tensor-level MLIR to the LLVM dialect on CPU.

``CPU_LOWERING_PASSES`` is the plain, scalar lowering of tensor-level linalg
that the tests use as an independent reference for the IR frontends emit
(the chains ``xent-recognize`` raises): every pass is upstream, so it runs
with the stock ``mlir-opt`` of LLVM 22.  ``xent-opt --xent-cpu-pipeline`` is
the performance pipeline (rows over OpenMP threads, classes in vectors,
polynomial ``exp``/``log``; docs/user-guide.md): it inlines the xent ops'
decomposition and schedules it, then lowers with the same stages as here.
This list accepts ``func.func`` on ranked tensors, static or dynamic,
carrying ``llvm.emit_c_interface`` and returning tensors.  Stage by stage:

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

from typing import List

__all__ = ["CPU_LOWERING_PASSES", "CPU_LOWERING_PIPELINE", "pass_pipeline_args"]

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
