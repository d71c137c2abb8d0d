"""The kernels of a loss over a slice of the classes (vocabulary-parallel
cross-entropy, docs/scale-out.md), compiled by ``xent-gpu-pipeline``.

Two entry functions per call signature, each one op of the dialect:

* ``xent.cross_entropy none ... class_offset %o num_classes %n
  {return_row_stats}`` writes the slice's per-row statistics (m, Σ exp(x -
  m), x_t or -inf where the slice does not hold the target, [w_t], [Σ w (m -
  x), Σ w]) into the caller's ``rows x K`` f32 buffer, reading the logits
  once (the slice's own per-row loss goes to a scratch buffer);
* ``xent.cross_entropy_grad <reduction> ... row_stats %merged class_offset
  %o num_classes %n`` writes the slice's gradient from the statistics merged
  over the whole row: one more read of the logits and one write.

The offset, the number of classes and the loss's scalars are run-time
arguments, so one library per logits dtype and direction serves every
vocabulary, split and value (the package's bundle holds them:
:func:`call_configs`). Free of torch: a machine without a GPU compiles them
(:func:`precompile`); :func:`statistics` and :func:`gradient` call them with
CUDA tensors on PyTorch's current stream.
"""

from __future__ import annotations

import ctypes
import itertools
import os
from typing import Dict, List, Optional

from . import bundle, gpu
from .kernels import CHIP, THREADS
from .optext import cross_entropy_op, tensor_type
from .pipelines import xent_gpu_pipeline_args

__all__ = ["LIBRARY_OP", "call_configs", "library_config", "library_entries", "entry_name",
           "module", "pipeline_args", "row_stats_width", "statistics", "gradient"]

LIBRARY_OP = "xent.torch.slices"
_DTYPES = ("f32", "bf16", "f16")
_REDUCTIONS = ("mean", "sum", "none")


def row_stats_width(weighted: bool, smoothing: bool) -> int:
    """K, the statistics' values per row: m, s, x_t, [w_t], [Σ w (m - x), Σ w]."""
    return 3 + int(weighted) + 2 * int(smoothing)


def library_config(dtype: str, with_grad: bool) -> Dict:
    """The library of one logits dtype and direction (statistics or gradient)."""
    if dtype not in _DTYPES:
        raise ValueError(f"unsupported logits dtype {dtype!r}")
    return {"op": LIBRARY_OP, "version": 1, "chip": CHIP, "dtype": dtype,
            "with_grad": bool(with_grad)}


def library_entries(lib: Dict) -> List[Dict]:
    """The entries of a library: class weights or not x label smoothing or not
    (it changes the statistics' layout) x, for the gradient, the reduction."""
    reductions = _REDUCTIONS if lib["with_grad"] else ("none",)
    return [{"weighted": w, "smoothing": s, "reduction": r}
            for w, s, r in itertools.product((False, True), (False, True), reductions)]


def entry_name(lib: Dict, entry: Dict) -> str:
    """``xent_slice_{stats,grad_<reduction>}_<weighted|unweighted>_<smoothing|plain>``."""
    kind = f"grad_{entry['reduction']}" if lib["with_grad"] else "stats"
    return (f"xent_slice_{kind}_{'weighted' if entry['weighted'] else 'unweighted'}_"
            f"{'smoothing' if entry['smoothing'] else 'plain'}")


def _scalar_args(smoothing: bool, grad: bool):
    """The entry's scalar arguments, in order, after its buffers: (name,
    type, the op's keyword of the run-time scalar; None for the slice's
    offset and C, the op's class_offset and num_classes)."""
    return ([("ii", "i64", "ignore_index")]
            + ([("ls", "f32", "label_smoothing")] if smoothing else [])
            + ([("zs", "f32", "z_loss_scale")] if grad else [])
            + [("sc", "f32", "softcap"), ("o", "i64", None), ("n", "i64", None)])


def _ctypes_scalars(smoothing: bool, grad: bool, **values):
    """The values of _scalar_args (by name) as a call passes them."""
    return [(ctypes.c_int64 if ty == "i64" else ctypes.c_float)(values[name])
            for name, ty, _ in _scalar_args(smoothing, grad)]


def _view(rank: int, dtype: str) -> str:
    """A buffer with any strides and offset (a torch view as it is)."""
    strides = ", ".join(["?"] * rank)
    return "memref<" + "?x" * rank + dtype + (f", strided<[{strides}], offset: ?>>"
                                              if rank else ", strided<[], offset: ?>>")


def _tensor(rank: int, dtype: str) -> str:
    return tensor_type(["?"] * rank, dtype)


def _entry(lib: Dict, entry: Dict) -> str:
    dt, grad = lib["dtype"], lib["with_grad"]
    weighted, smoothing, reduction = entry["weighted"], entry["smoothing"], entry["reduction"]
    k = row_stats_width(weighted, smoothing)
    stats_t = tensor_type(["?", k], "f32")
    args, body, operand_types = [], [], []

    def tensor_arg(name: str, rank: int, dtype: str) -> str:
        args.append(f"%{name}: {_view(rank, dtype)}")
        body.append(f"  %{name}_t = bufferization.to_tensor %{name} restrict : "
                    f"{_view(rank, dtype)} to {_tensor(rank, dtype)}")
        operand_types.append(_tensor(rank, dtype))
        return f"%{name}_t"

    g_rank = 1 if reduction == "none" else 0
    g = tensor_arg("g", g_rank, "f32") if grad else None
    x = tensor_arg("x", 2, dt)
    t = tensor_arg("t", 1, "i64")
    w = tensor_arg("w", 1, "f32") if weighted else None
    merged = None
    if grad:
        args.append(f"%st: {_view(2, 'f32')}")
        body.append(f"  %st_t0 = bufferization.to_tensor %st restrict : {_view(2, 'f32')} to "
                    f"{_tensor(2, 'f32')}")
        body.append(f"  %st_t = tensor.cast %st_t0 : {_tensor(2, 'f32')} to {stats_t}")
        operand_types.append(stats_t)
        merged = "%st_t"
    scalar_list = _scalar_args(smoothing, grad)
    scalars = {kw: f"%{name}" for name, _, kw in scalar_list if kw}
    # The op's operands: class_offset and num_classes, then the scalars.
    operand_types += ["i64", "i64"] + [ty for _, ty, kw in scalar_list if kw]
    slice_operands = dict(class_offset="%o", num_classes="%n")
    if grad:
        args.append(f"%dx: {_view(2, dt)}")
        body.append("  " + cross_entropy_op(
            "cross_entropy_grad", reduction, results=["%d"], grad_output=g, logits=x, target=t,
            weight=w, row_stats=merged, scalars=scalars, operand_types=operand_types,
            result_types=_tensor(2, dt), **slice_operands))
        body.append(f"  bufferization.materialize_in_destination %d in restrict writable %dx : "
                    f"({_tensor(2, dt)}, {_view(2, dt)}) -> ()")
    else:
        # The slice's own per-row loss is a result of the op: written to the
        # caller's scratch row buffer.
        args += ["%l: memref<?xf32>", f"%st: memref<?x{k}xf32>"]
        body.append("  " + cross_entropy_op(
            "cross_entropy", "none", results=["%loss", "%stats"], logits=x, target=t, weight=w,
            scalars=scalars, operand_types=operand_types,
            result_types=[_tensor(1, "f32"), stats_t], attributes=["return_row_stats"],
            **slice_operands))
        body.append("  bufferization.materialize_in_destination %loss in restrict writable %l : "
                    f"({_tensor(1, 'f32')}, memref<?xf32>) -> ()")
        body.append("  bufferization.materialize_in_destination %stats in restrict writable %st"
                    f" : ({stats_t}, memref<?x{k}xf32>) -> ()")
    args += [f"%{name}: {ty}" for name, ty, _ in scalar_list]
    return (f"func.func @{entry_name(lib, entry)}(" + ", ".join(args)
            + ") attributes {llvm.emit_c_interface} {\n" + "\n".join(body) + "\n  return\n}\n")


def module(lib: Dict) -> str:
    """The MLIR of a library: every entry of library_entries."""
    return ("module attributes {gpu.container_module} {\n"
            + "".join(_entry(lib, e) for e in library_entries(lib)) + "}\n")


def pipeline_args(lib: Optional[Dict] = None):
    """The xent-gpu-pipeline arguments: the host code picks each call's
    kernel (runtime-dispatch)."""
    return xent_gpu_pipeline_args(chip=CHIP, threads=THREADS, runtime_dispatch=True)


def call_configs() -> List[Dict]:
    """The libraries of the package's bundle: logits dtype x direction."""
    return [library_config(d, g) for d in _DTYPES for g in (False, True)]


def precompile(config: Dict, cache: gpu.KernelCache, opt_tool: Optional[str]) -> None:
    cache.path(config, lambda: module(config), pipeline_args=pipeline_args(config),
               opt_tool=opt_tool)


_CALLS: Dict[tuple, object] = {}
_DTYPE_NAMES = {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16"}


def _caller(dtype, with_grad: bool, weighted: bool, smoothing: bool, reduction: str):
    key = (dtype, with_grad, weighted, smoothing, reduction)
    fn = _CALLS.get(key)
    if fn is None:
        lib_config = library_config(_DTYPE_NAMES[str(dtype)], with_grad)
        lib = bundle.kernel_cache().get(lib_config, lambda: module(lib_config),
                                        pipeline_args(lib_config), os.environ.get("XENT_OPT"))
        entry = {"weighted": weighted, "smoothing": smoothing, "reduction": reduction}
        fn = _CALLS[key] = lib.tensor_call(entry_name(lib_config, entry))
    return fn


def statistics(logits, target, weight=None, *, offset: int, num_classes: int,
               ignore_index: int = -100, label_smoothing: Optional[float] = None,
               softcap: Optional[float] = None):
    """The per-row statistics (rows x K f32, torch) of the slice `logits`
    (rows x c, classes [offset, offset + c) of `num_classes`) for the int64
    class indices `target` (rows) and the slice's f32 class weights
    `weight`; with the smoothing sums when `label_smoothing` is not None
    (whatever its value: the layout has them)."""
    import torch
    smoothing = label_smoothing is not None
    k = row_stats_width(weight is not None, smoothing)
    rows = logits.shape[0]
    stats = torch.empty((rows, k), device=logits.device, dtype=torch.float32)
    loss = torch.empty((rows,), device=logits.device, dtype=torch.float32)
    tensors = [logits, target] + ([weight] if weight is not None else []) + [loss, stats]
    scalars = _ctypes_scalars(smoothing, False, ii=int(ignore_index),
                              ls=float(label_smoothing or 0.0), sc=float(softcap or 0.0),
                              o=int(offset), n=int(num_classes))
    _caller(logits.dtype, False, weight is not None, smoothing, "none")(*tensors,
                                                                        scalars=scalars)
    return stats


def gradient(grad_output, logits, target, merged, weight=None, *, reduction: str, offset: int,
             num_classes: int, ignore_index: int = -100, label_smoothing: Optional[float] = None,
             z_loss_scale: float = 0.0, softcap: Optional[float] = None, out=None):
    """dlogits of the slice (torch, the logits' dtype; into `out` when
    given) from the statistics `merged` over the whole row (rows x K f32, the
    layout of :func:`statistics` with w_t and Σ w merged), for the f32
    `grad_output` (0-d, or per row for ``none``)."""
    import torch
    smoothing = label_smoothing is not None
    dx = torch.empty_like(logits, memory_format=torch.contiguous_format) if out is None else out
    tensors = [grad_output, logits, target] + ([weight] if weight is not None else []) + \
        [merged, dx]
    scalars = _ctypes_scalars(smoothing, True, ii=int(ignore_index),
                              ls=float(label_smoothing or 0.0), zs=float(z_loss_scale),
                              sc=float(softcap or 0.0), o=int(offset), n=int(num_classes))
    _caller(logits.dtype, True, weight is not None, smoothing, reduction)(*tensors,
                                                                         scalars=scalars)
    return dx
