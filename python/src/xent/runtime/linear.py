"""The linear + cross-entropy op on the GPU through ``xent-gpu-pipeline``.

One entry function per configuration computes
``xent.linear_cross_entropy_and_grad``: the loss and the gradients of the
hidden states, the weight and (with a bias) the bias, for a given
``grad_output``, chunked over rows (docs/linear-cross-entropy.md: each
chunk's logits and their gradient through cuBLASLt GEMMs of the CUDA
runtime, the loss kernel in place over the chunk's f32 logits). The module
text and the configurations are free of torch, so a machine without a GPU
can compile them into a cache (:func:`precompile`);
:func:`linear_cross_entropy_and_grad` calls the compiled function with CUDA
tensors on PyTorch's current stream (the results are fresh device memory).
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Dict, Iterable, List, Optional, Tuple

from . import bundle, gpu
from .optext import linear_cross_entropy_op, loss_attributes, tensor_type
from .pipelines import xent_gpu_pipeline_args

__all__ = ["call_configs", "linear_config", "linear_module", "linear_pipeline_args", "linear_library",
           "linear_cross_entropy_and_grad", "linear_cross_entropy", "precompile", "ENTRY"]

ENTRY = "linear_cross_entropy_and_grad"
_DTYPES = ("bf16", "f16", "f32")
_REDUCTIONS = ("mean", "sum", "none")
# sm_90a: the loss alone may take the Hopper tile kernels (wgmma, TMA);
# its cubins run on the same GPUs as sm_90's.
CHIP = os.environ.get("XENT_CHIP", "sm_90a")


def linear_config(*, dtype: str, reduction: str, bias: bool, ignore_index: int = -100,
                  chunk_rows: int = 0, target: str = "i64", destinations: bool = False,
                  rank: int = 2, class_weight: bool = False, label_smoothing: float = 0.0,
                  z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                  with_grad: bool = True, runtime_scalars: bool = False,
                  frozen: Optional[str] = None) -> Dict:
    """The KernelCache configuration of one entry function: the dtype of
    hidden / weight / bias, the reduction, the op's attributes (a z-loss adds
    the ``z_loss`` result after the loss), hidden ``[N, H]`` (rank 2) or
    ``[B, T, H]`` (rank 3), f32 class weights; `chunk_rows` 0 for the
    pipeline's automatic chunks; `destinations`: the results are written into
    buffers the caller passes after the inputs, instead of returned;
    `with_grad` False: ``xent.linear_cross_entropy``, the loss alone (no
    grad_output, no gradient GEMMs). `runtime_scalars`: ignore_index, label
    smoothing, z-loss scale and softcap are run-time arguments of the entry
    (i64, f32, f32, f32 after the tensors; 0 for a feature not used, a
    softcap of 0 is none) and the z-loss is always a result, so one library
    serves every value: their values are then not part of the
    configuration. `frozen` (with a gradient): ``"weight"``, the entry
    returns no d_weight nor d_bias, ``"hidden"`` no d_hidden; the op's
    unused gradient is not computed (no GEMM, no accumulator)."""
    if frozen not in _FROZEN or (frozen and not with_grad):
        raise ValueError(f"unsupported frozen input {frozen!r}")
    if dtype not in _DTYPES or reduction not in _REDUCTIONS or target not in ("i32", "i64") \
            or rank not in (2, 3):
        raise ValueError(f"unsupported linear configuration {dtype}/{reduction}/{target}/"
                         f"rank {rank}")
    op = "linear_cross_entropy_and_grad" if with_grad else "linear_cross_entropy"
    if runtime_scalars:
        ignore_index, label_smoothing, z_loss_scale, softcap = -100, 0.0, 0.0, None
    config = {"op": op, "dtype": dtype, "reduction": reduction,
              "bias": bool(bias), "ignore_index": int(ignore_index),
              "chunk_rows": int(chunk_rows), "target": target, "chip": CHIP,
              "destinations": bool(destinations), "rank": int(rank),
              "class_weight": bool(class_weight), "label_smoothing": float(label_smoothing),
              "z_loss_scale": float(z_loss_scale),
              "softcap": None if softcap is None else float(softcap)}
    if runtime_scalars:
        config["runtime_scalars"] = True
    if frozen:
        config["frozen"] = frozen
    config["source"] = hashlib.sha256(linear_module(config).encode()).hexdigest()[:16]
    return config


def _tensor(rank: int, dtype: str) -> str:
    return tensor_type(["?"] * rank, dtype)


def _types(c: Dict):
    """The entry's (name, type) inputs and results, and the op's results
    (a frozen input's gradients are results of the op, not of the entry)."""
    t, rows = c["dtype"], c.get("rank", 2) - 1
    per_row = c["reduction"] == "none"
    loss = _tensor(rows if per_row else 0, "f32")
    grad = _with_grad(c)
    inputs = ([("g", loss)] if grad else []) + [("h", _tensor(rows + 1, t)), ("w", _tensor(2, t))]
    if c["bias"]:
        inputs.append(("b", _tensor(1, t)))
    inputs.append(("t", _tensor(rows, c["target"])))
    if c.get("class_weight"):
        inputs.append(("cw", _tensor(1, "f32")))
    if c.get("runtime_scalars"):
        inputs += _SCALARS
    results = [("l", loss)]
    if c.get("z_loss_scale") or c.get("runtime_scalars"):
        results.append(("z", loss))
    if grad:
        results += [("dh", _tensor(rows + 1, t)), ("dw", _tensor(2, t))]
        if c["bias"]:
            results.append(("db", _tensor(1, t)))
    dropped = {"weight": ("dw", "db"), "hidden": ("dh",)}.get(c.get("frozen"), ())
    return inputs, [r for r in results if r[0] not in dropped], results


def _with_grad(c: Dict) -> bool:
    return c["op"] == "linear_cross_entropy_and_grad"


# What a configuration may leave frozen (no gradient computed).
_FROZEN = (None, "weight", "hidden")

# The run-time scalars' arguments and how the op takes them.
_SCALARS = [("ii", "i64"), ("ls", "f32"), ("zs", "f32"), ("sc", "f32")]
_SCALAR_OPERANDS = {"ignore_index": "%ii", "label_smoothing": "%ls", "z_loss_scale": "%zs",
                    "softcap": "%sc"}


def _attributes(c: Dict) -> List[str]:
    if c.get("runtime_scalars"):
        return []
    return loss_attributes(c["ignore_index"], c.get("label_smoothing"), c.get("z_loss_scale"),
                           c.get("softcap"))


def linear_module(c: Dict) -> str:
    """The MLIR of the configuration's entry function ``@linear_cross_entropy_and_grad``
    (dynamic sizes), or of every entry of a library_config, each named by
    entry_name."""
    if c.get("op") == _LIBRARY_OP:
        return "".join(_entry_function(e, entry_name(e)) for e in library_entries(c))
    return _entry_function(c, ENTRY)


def _entry_function(c: Dict, name: str) -> str:
    inputs, results, op_results = _types(c)
    args = ", ".join(f"%{n}: {ty}" for n, ty in inputs)
    out_types = ", ".join(ty for _, ty in results)
    names = ", ".join(f"%{n}" for n, _ in results)
    op = "  " + linear_cross_entropy_op(
        c["op"], c["reduction"], results=[f"%{n}" for n, _ in op_results],
        grad_output="%g" if _with_grad(c) else None, hidden="%h", weight="%w",
        bias="%b" if c["bias"] else None, target="%t",
        class_weight="%cw" if c.get("class_weight") else None,
        scalars=_SCALAR_OPERANDS if c.get("runtime_scalars") else None,
        attributes=_attributes(c), operand_types=[ty for _, ty in inputs],
        result_types=[ty for _, ty in op_results], layout="block") + "\n"
    if not c.get("destinations"):
        return (f"func.func @{name}({args}) -> ({out_types}) attributes "
                f"{{llvm.emit_c_interface}} {{\n{op}  return {names} : {out_types}\n}}\n")
    outs = ", ".join(f"%{n}_out: {_memref(ty)}" for n, ty in results)
    sinks = "".join(f"  bufferization.materialize_in_destination %{n} in restrict writable "
                    f"%{n}_out : ({ty}, {_memref(ty)}) -> ()\n" for n, ty in results)
    return (f"func.func @{name}({args}, {outs}) attributes {{llvm.emit_c_interface}} {{\n"
            f"{op}{sinks}  return\n}}\n")


def linear_pipeline_args(c: Dict):
    """The xent-gpu-pipeline arguments of linear_config `c`."""
    chunks = {"linear_chunk_rows": c["chunk_rows"]} if c["chunk_rows"] else {}
    return xent_gpu_pipeline_args(chip=c["chip"], **chunks)


def _find_wheel_cublaslt() -> None:
    """Points the runtime at PyTorch's cuBLASLt (its ``nvidia-cublas`` wheel)
    unless ``XENT_CUBLASLT`` names one: the runtime opens cuBLASLt at the
    first GEMM, by that variable, else by soname (which finds the copy
    PyTorch loaded, if it did), else at the path of the build machine."""
    if os.environ.get("XENT_CUBLASLT"):
        return
    try:
        import nvidia.cublas as wheel
    except ImportError:
        return
    for root in getattr(wheel, "__path__", []):
        lib = os.path.join(root, "lib")
        names = sorted(n for n in os.listdir(lib) if n.startswith("libcublasLt.so")) \
            if os.path.isdir(lib) else []
        if names:
            os.environ["XENT_CUBLASLT"] = os.path.join(lib, names[-1])
            return


def _memref(tensor_type: str) -> str:
    return tensor_type.replace("tensor<", "memref<")


# Entry functions by configuration, for the process's cache (the lookup
# reads the cache's index and loads the library: not a per-call cost).
_FUNCTIONS: Dict[tuple, gpu.GpuFunction] = {}


def linear_library(config: Dict, cache: Optional[gpu.KernelCache] = None) -> gpu.GpuFunction:
    """The compiled entry function of `config` (from the cache, or compiled
    with ``$XENT_OPT`` where LLVM is at hand); memoized per configuration
    for the default cache (``$XENT_CACHE_DIR`` with the package's bundle
    behind it, xent.runtime.bundle)."""
    key = tuple(sorted(config.items()))
    if cache is None:
        fn = _FUNCTIONS.get(key)
        if fn is not None:
            return fn
    _find_wheel_cublaslt()
    memoize = cache is None
    cache = cache or bundle.kernel_cache()
    # A call of the bundle's signatures is an entry of its library.
    lib_config = library_config(config) or config
    lib = cache.get(lib_config, lambda: linear_module(lib_config),
                    linear_pipeline_args(lib_config), os.environ.get("XENT_OPT"))
    inputs, results, _ = _types(config)
    types = [_memref(t) for _, t in inputs]
    name = entry_name(config)
    if config.get("destinations"):
        fn = lib.function(name, types + [_memref(t) for _, t in results], [])
    else:
        fn = lib.function(name, types, [_memref(t) for _, t in results])
    if memoize:
        _FUNCTIONS[key] = fn
    return fn


def linear_cross_entropy_and_grad(hidden, weight, target, bias=None, *, grad_output,
                                  reduction: str = "mean", ignore_index: int = -100,
                                  class_weight=None, label_smoothing: float = 0.0,
                                  z_loss_scale: float = 0.0, softcap: Optional[float] = None,
                                  chunk_rows: int = 0, frozen: Optional[str] = None,
                                  out=None) -> Tuple:
    """(loss[, z_loss], d_hidden, d_weight[, d_bias]) of ``cross_entropy(
    hidden @ weight.T + bias, target)`` with the op's attributes (z_loss
    when `z_loss_scale` is set) for `grad_output` (0-d f32, or per row for
    ``none``), on the tensors' device and PyTorch's current stream. `hidden`
    is ``[N, H]`` or ``[B, T, H]``, `weight` ``[V, H]``, `target` int64/int32
    shaped like `hidden` without its last dim, `class_weight` f32 ``[V]``.
    `frozen` ``"weight"`` leaves d_weight and d_bias out (not computed),
    ``"hidden"`` d_hidden. With `out` (the result tensors: f32 losses, then the gradients in the
    hidden's dtype, contiguous) the results are written there and `out` is
    returned (nothing is allocated but the op's scratch, which is freed in
    the call's stream order: CUDA-graph capturable after a first call on the
    capturing stream)."""
    return _call(True, hidden, weight, target, bias, grad_output, reduction, ignore_index,
                 class_weight, label_smoothing, z_loss_scale, softcap, chunk_rows, out, frozen)


def linear_cross_entropy(hidden, weight, target, bias=None, *, reduction: str = "mean",
                         ignore_index: int = -100, class_weight=None,
                         label_smoothing: float = 0.0, z_loss_scale: float = 0.0,
                         softcap: Optional[float] = None, chunk_rows: int = 0,
                         out=None) -> Tuple:
    """(loss[, z_loss]) of ``xent.linear_cross_entropy``: the loss alone, no
    gradient GEMMs (the chunks' logits GEMM and the forward kernel), with the
    arguments of :func:`linear_cross_entropy_and_grad` but `grad_output`."""
    return _call(False, hidden, weight, target, bias, None, reduction, ignore_index,
                 class_weight, label_smoothing, z_loss_scale, softcap, chunk_rows, out, None)


# The entry function of each call signature (dtypes, ranks, which optional
# inputs, attributes): the configuration is built and hashed once.
_CALLS: Dict[tuple, gpu.GpuFunction] = {}

# XENT_RUNTIME_SCALARS=0: one library per attribute value, for comparisons.
RUNTIME_SCALARS = os.environ.get("XENT_RUNTIME_SCALARS", "1") != "0"


def _call(with_grad, hidden, weight, target, bias, grad_output, reduction, ignore_index,
          class_weight, label_smoothing, z_loss_scale, softcap, chunk_rows, out,
          frozen) -> Tuple:
    runtime = RUNTIME_SCALARS
    signature = (with_grad, hidden.dtype, hidden.dim(), target.dtype, bias is not None,
                 class_weight is not None, out is not None, reduction, chunk_rows, runtime,
                 frozen) + \
        (() if runtime else (ignore_index, label_smoothing, z_loss_scale, softcap))
    fn = _CALLS.get(signature)
    if fn is None:
        dtype = {"torch.bfloat16": "bf16", "torch.float16": "f16",
                 "torch.float32": "f32"}[str(hidden.dtype)]
        config = linear_config(dtype=dtype, reduction=reduction, bias=bias is not None,
                               ignore_index=ignore_index, chunk_rows=chunk_rows,
                               target="i32" if str(target.dtype) == "torch.int32" else "i64",
                               destinations=out is not None, rank=hidden.dim(),
                               class_weight=class_weight is not None,
                               label_smoothing=label_smoothing, z_loss_scale=z_loss_scale,
                               softcap=softcap, with_grad=with_grad, runtime_scalars=runtime,
                               frozen=frozen)
        fn = linear_library(config)
        if len(_CALLS) >= 256:
            _CALLS.clear()
        _CALLS[signature] = fn
    args = ([grad_output] if with_grad else []) + [hidden, weight] + \
        ([bias] if bias is not None else []) + [target] + \
        ([class_weight] if class_weight is not None else [])
    # With run-time scalars the function always computes the z-loss (0 for
    # a scale of 0); the caller sees it only when it asked for one.
    hidden_z = runtime and not z_loss_scale
    if runtime:
        args += [int(ignore_index), float(label_smoothing), float(z_loss_scale),
                 float(softcap or 0.0)]
    if out is None:
        results = fn(*args)
        return results[:1] + results[2:] if hidden_z else results
    out = list(out)
    if hidden_z:
        out.insert(1, out[0].new_empty(out[0].shape))
    fn(*args, *out)
    return tuple(out[:1] + out[2:] if hidden_z else out)


_LIBRARY_OP = "linear_cross_entropy.library"


@functools.lru_cache(maxsize=None)
def _bundled(dtype: str, with_grad: bool) -> Tuple[Dict, ...]:
    """The linear_configs of xent.torch.linear_cross_entropy's calls for
    `dtype` and `with_grad`: results into PyTorch's tensors, run-time
    scalars, rows as [N, H] and i64 targets (xent.torch flattens [B, T, H]
    and widens i32), the automatic chunks; reduction x bias x class weights
    (x nothing, the weight or the hidden states frozen, with a gradient).
    Built once (each configuration hashes its module's text); shared, so
    not to be modified: library_entries hands out copies."""
    return tuple(linear_config(dtype=dtype, reduction=r, bias=b, class_weight=cw,
                               with_grad=with_grad, destinations=True, runtime_scalars=True,
                               frozen=f)
                 for f in (_FROZEN if with_grad else (None,))
                 for r in _REDUCTIONS for b in (False, True) for cw in (False, True))


def library_config(config: Dict) -> Optional[Dict]:
    """The library of the package's bundle that holds `config`'s entry (one
    per dtype x the joint op or the loss alone, call_configs), or None for
    a configuration of its own library."""
    with_grad = config["op"] == "linear_cross_entropy_and_grad"
    if config.get("op") == _LIBRARY_OP or config not in _bundled(config["dtype"], with_grad):
        return None
    return {"op": _LIBRARY_OP, "version": 2, "dtype": config["dtype"], "with_grad": with_grad,
            "chip": config["chip"], "chunk_rows": 0}


def library_entries(lib: Dict):
    """The linear_configs whose entries the library_config `lib` holds."""
    return [dict(c) for c in _bundled(lib["dtype"], lib["with_grad"])]


def entry_name(config: Dict) -> str:
    """The name of `config`'s entry function in its library:
    ``linear_cross_entropy[_and_grad]_<reduction>[_bias][_class_weight]
    [_frozen_<input>]`` in a library_config's, ENTRY in a library of its
    own."""
    if library_config(config) is None:
        return ENTRY
    frozen = config.get("frozen")
    return "_".join([config["op"], config["reduction"]] + ["bias"] * config["bias"]
                    + ["class_weight"] * config["class_weight"]
                    + (["frozen", frozen] if frozen else []))


def call_configs():
    """The libraries of xent.torch.linear_cross_entropy's calls (the
    package's bundle): one per dtype x the joint op or the loss alone, with
    an entry for each reduction x bias x class weights (library_entries)."""
    return [library_config(_bundled(d, grad)[0]) for d in _DTYPES for grad in (False, True)]


def precompile(configs: Iterable[Dict], cache_dir: Optional[str] = None) -> None:
    """Compiles `configs` into the cache (no GPU needed)."""
    cache = gpu.KernelCache(cache_dir or os.environ.get("XENT_CACHE_DIR"))
    for config in configs:
        cache.path(config, lambda c=config: linear_module(c),
                   pipeline_args=linear_pipeline_args(config),
                   opt_tool=os.environ.get("XENT_OPT"))
