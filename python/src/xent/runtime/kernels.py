"""MLIR for the kernels behind xent.torch: one entry function per
configuration, in destination-passing style (buffers in, results written into
the caller's buffers), compiled by ``xent-gpu-pipeline``. Free of torch, so a
machine without a GPU can precompile a cache (:func:`precompile`)."""

from __future__ import annotations

import concurrent.futures
import itertools
import os
from typing import Dict, Iterable, List, Optional

from . import gpu
from .optext import cross_entropy_op, loss_attributes, tensor_type
from .pipelines import xent_gpu_pipeline_args

__all__ = ["call_configs", "kernel_config", "kernel_module", "library_config", "library_entries",
           "entry_name", "precompile", "pipeline_args", "with_loss_dtype", "CHIP", "THREADS", "ROW_OUTPUTS"]

_REDUCTIONS = ("mean", "sum", "none")
CHIP = os.environ.get("XENT_CHIP", "sm_90")
# Threads per block of the kernels (of long rows, under runtime dispatch,
# where the host code picks 256 for rows that two blocks of 256 hold).
THREADS = int(os.environ.get("XENT_THREADS", "512"))
# Gradient kernels keep rows on chip (xent-gpu-pipeline resident-rows); the
# benchmark turns it off to time the two-pass kernel side by side.
RESIDENT_ROWS = os.environ.get("XENT_RESIDENT_ROWS", "1") != "0"
# Soft-capped bf16 / f16 gradient kernels form one exponential in N (2, 4,
# 8) on the FMA pipe (xent-gpu-pipeline split-exponentials=N) where a bundle
# is built with XENT_SPLIT_EXPONENTIALS=N, to time it against the default
# (the same configurations and keys: the two bundles' libraries side by side
# in xent.bench.bundles).
SPLIT_EXPONENTIALS = int(os.environ.get("XENT_SPLIT_EXPONENTIALS", "0"))


def _memref(rank: int, dtype: str) -> str:
    return "memref<" + "?x" * rank + dtype + ">"


def _view(rank: int, dtype: str) -> str:
    """A buffer with any strides and offset: a torch view is passed as it is."""
    strides = ", ".join(["?"] * rank)
    return "memref<" + "?x" * rank + dtype + f", strided<[{strides}], offset: ?>>"


def _tensor(rank: int, dtype: str) -> str:
    return tensor_type(["?"] * rank, dtype)


ROW_OUTPUTS = ("return_lse", "return_argmax", "return_accuracy")


def kernel_config(*, dtype: str, target: str, rank: int, weighted: bool, reduction: str,
                  ignore_index: int, label_smoothing: float, z_loss_scale: float,
                  softcap: Optional[float], with_grad: bool,
                  threads: Optional[int] = None, return_lse: bool = False,
                  return_argmax: bool = False, return_accuracy: bool = False,
                  runtime_scalars: bool = False, two_pass: bool = False,
                  loss_dtype: Optional[str] = None, runtime_dispatch: bool = False) -> Dict:
    """The configuration that names one compiled library in the cache.

    ``runtime_dispatch=True`` (what xent.torch asks for): one library per
    signature of the call (dtypes, target kind, rank, class weights,
    reduction, gradient or not, loss dtype, per-row outputs). Every value is
    a run-time argument — ignore_index, label smoothing, z-loss scale and
    softcap, 0 for a feature not used (a softcap of 0 is none) — and the
    host code that ``convert-xent-to-gpu``'s ``runtime-dispatch`` generates
    picks the kernel per call: threads per block, resident or two-pass,
    the kernels without smoothing / softcap where their value is 0, the
    two-pass kernel where the gradient is written over the logits. The
    feature values, ``threads`` and ``two_pass`` are then not part of the
    configuration.

    ``return_lse`` / ``return_argmax`` / ``return_accuracy`` ask for the
    per-row outputs (kernel_module: f32 lse and i64 argmax per element, f32
    accuracy reduced like the loss); they appear in the configuration only
    when set, so the configurations (and cache entries) without them are
    what they were.

    ``runtime_scalars=True``: the entry function takes the values of the
    present features (ignore_index for class indices; label smoothing,
    z-loss scale, softcap when non-neutral) as arguments, so the
    configuration records only which features are present and one library
    serves every value. Off by default: existing configurations (and their
    hashes) are unchanged.

    ``two_pass=True`` compiles a gradient kernel without the resident path
    (``resident-rows=false``), whose joint walk may write the gradient over
    the logits (xent.torch's ``inplace``); without a gradient, or where the
    path is two-pass anyway, the configuration is the default one.

    ``loss_dtype``: the loss's element type, ``"f32"`` (the default) or the
    logits' `dtype`; the kernels round it once from their f32 terms (f64
    sums for mean / sum), so the drop-in returns a bf16 / f16 loss with no
    conversion after the call. It appears in the configuration only for a
    loss in bf16 / f16. The z-loss stays f32."""
    if return_accuracy and target == "probs":
        raise ValueError("return_accuracy needs class-index targets")
    if loss_dtype not in (None, "f32", dtype):
        raise ValueError(f"loss_dtype must be 'f32' or the logits' dtype {dtype!r}, "
                         f"not {loss_dtype!r}")
    extras = {k: True for k, v in (("return_lse", return_lse), ("return_argmax", return_argmax),
                                   ("return_accuracy", return_accuracy)) if v}
    if loss_dtype not in (None, "f32"):
        extras["loss_dtype"] = loss_dtype
    if runtime_dispatch:
        if not RESIDENT_ROWS and with_grad:
            extras["resident_rows"] = False
        return {"op": "xent.torch", "version": 5, "chip": CHIP, "runtime_dispatch": True,
                "runtime_scalars": True, "dtype": dtype, "target": target, "rank": rank,
                "weighted": weighted, "reduction": reduction,
                "ignore_index": None if target == "probs" else "runtime",
                "label_smoothing": True, "z_loss_scale": True, "softcap": True,
                "with_grad": with_grad, **extras}
    config = {**_base_config(dtype, target, rank, weighted, reduction, ignore_index,
                             label_smoothing, z_loss_scale, softcap, with_grad, threads,
                             runtime_scalars), **extras}
    if two_pass and with_grad:
        config["resident_rows"] = False
    return config


def _base_config(dtype, target, rank, weighted, reduction, ignore_index, label_smoothing,
                 z_loss_scale, softcap, with_grad, threads, runtime_scalars) -> Dict:
    if runtime_scalars:
        return {"op": "xent.torch", "version": 4, "chip": CHIP, "runtime_scalars": True,
                "threads": THREADS if threads is None else int(threads),
                "resident_rows": RESIDENT_ROWS or not with_grad,
                "dtype": dtype, "target": target, "rank": rank, "weighted": weighted,
                "reduction": reduction, "ignore_index": None if target == "probs" else "runtime",
                "label_smoothing": bool(label_smoothing), "z_loss_scale": bool(z_loss_scale),
                "softcap": softcap is not None, "with_grad": with_grad}
    return {"op": "xent.torch", "version": 4, "chip": CHIP,
            "threads": THREADS if threads is None else int(threads),
            # (only gradient kernels have the resident path)
            "resident_rows": RESIDENT_ROWS or not with_grad,
            "dtype": dtype, "target": target, "rank": rank, "weighted": weighted,
            "reduction": reduction,
            "ignore_index": None if target == "probs" else int(ignore_index),
            "label_smoothing": float(label_smoothing), "z_loss_scale": float(z_loss_scale),
            "softcap": None if softcap is None else float(softcap), "with_grad": with_grad}


# The run-time features in operand order: (config key, keyword, argument, type).
_SCALARS = (("ignore_index", "ignore_index", "%ii", "i64"),
            ("label_smoothing", "label_smoothing", "%ls", "f32"),
            ("z_loss_scale", "z_loss_scale", "%zs", "f32"),
            ("softcap", "softcap", "%sc", "f32"))


def _runtime_scalars(c: Dict):
    """The entry function's scalar arguments, the op's scalar operands
    (keyword -> argument) and their types, for a runtime-scalars
    configuration; empty otherwise."""
    if not c.get("runtime_scalars"):
        return [], {}, []
    present = [(kw, arg, ty) for key, kw, arg, ty in _SCALARS if c[key]]
    return ([f"{arg}: {ty}" for _, arg, ty in present],
            {kw: arg for kw, arg, _ in present}, [ty for _, _, ty in present])


def _attributes(c: Dict) -> List[str]:
    rows = [k for k in ROW_OUTPUTS if c.get(k)]
    # Under runtime scalars the values are operands (_runtime_scalars).
    if c.get("runtime_scalars"):
        return loss_attributes(row_outputs=rows)
    return loss_attributes(c["ignore_index"], c["label_smoothing"], c["z_loss_scale"],
                           c["softcap"], row_outputs=rows)


_SCALE_KERNEL = """
    // dx *= g, skipped entirely when g == 1 (the usual loss.backward()).
    gpu.func @{kernel}(%dx: memref<?x{dt}>, %g: memref<{gt}>) kernel {{
{gload}
      %one = arith.constant 1.0 : f32
      %skip = arith.cmpf oeq, %gv, %one : f32
      scf.if %skip {{
      }} else {{
        %c0 = arith.constant 0 : index
        %n = memref.dim %dx, %c0 : memref<?x{dt}>
        %bid = gpu.block_id x
        %bdim = gpu.block_dim x
        %tid = gpu.thread_id x
        %gdim = gpu.grid_dim x
        %start0 = arith.muli %bid, %bdim : index
        %start = arith.addi %start0, %tid : index
        %stride = arith.muli %gdim, %bdim : index
        scf.for %k = %start to %n step %stride {{
          %v = memref.load %dx[%k] : memref<?x{dt}>
{scale}
          memref.store %r, %dx[%k] : memref<?x{dt}>
        }}
      }}
      gpu.return
    }}
"""

_SCALE_ENTRY = """
  func.func @{name}(%dx: memref<?x{dt}>, %g: memref<{gt}>) attributes {{llvm.emit_c_interface}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c4096 = arith.constant 4096 : index
    %n = memref.dim %dx, %c0 : memref<?x{dt}>
    // 8 elements per thread, at most 4096 blocks (grid-stride loop).
    %per = arith.constant 2048 : index
    %b0 = arith.ceildivui %n, %per : index
    %b1 = arith.maxui %b0, %c1 : index
    %blocks = arith.minui %b1, %c4096 : index
    gpu.launch_func @xent_scale::@{kernel} blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1) args(%dx : memref<?x{dt}>, %g : memref<{gt}>)
    return
  }}
"""


def _scale_functions(dt: str) -> str:
    """``@xent_scale_grad(dx, g: f32)`` and, for bf16/f16 gradients,
    ``@xent_scale_grad_dt(dx, g)`` with g in the gradient's dtype (what
    autograd hands the backward of a loss in that dtype: no conversion
    kernel before the scaling)."""
    if dt == "f32":
        scale = "          %r = arith.mulf %v, %gv : f32"
    else:
        scale = (f"          %w = arith.extf %v : {dt} to f32\n"
                 f"          %s = arith.mulf %w, %gv : f32\n"
                 f"          %r = arith.truncf %s : f32 to {dt}")
    variants = [("xent_scale_grad", "scale", "f32",
                 "      %gv = memref.load %g[] : memref<f32>")]
    if dt != "f32":
        variants.append(("xent_scale_grad_dt", "scale_dt", dt,
                         f"      %g0 = memref.load %g[] : memref<{dt}>\n"
                         f"      %gv = arith.extf %g0 : {dt} to f32"))
    kernels = "".join(_SCALE_KERNEL.format(kernel=k, dt=dt, gt=gt, gload=load, scale=scale)
                      for _, k, gt, load in variants)
    entries = "".join(_SCALE_ENTRY.format(name=n, kernel=k, dt=dt, gt=gt)
                      for n, k, gt, _ in variants)
    return "\n  gpu.module @xent_scale {" + kernels + "  }\n" + entries


def _entry_function(c: Dict, name: str) -> str:
    """The entry function ``@name`` of kernel_config `c`."""
    r, dt = c["rank"], c["dtype"]
    probs = c["target"] == "probs"
    elem_rank = r if probs else r - 1
    t_dt = dt if probs else c["target"]
    red_rank = 0 if c["reduction"] != "none" else r - 1
    # Logits, target, weight and dlogits are views with any strides (a slice
    # of a padded vocabulary, shifted labels): the kernels read them through
    # their strides, so the drop-in never copies them.
    args = [f"%x: {_view(r, dt)}", f"%t: {_view(elem_rank, t_dt)}"]
    body = [f"  %xt = bufferization.to_tensor %x restrict : {_view(r, dt)} to {_tensor(r, dt)}",
            f"  %tt = bufferization.to_tensor %t restrict : {_view(elem_rank, t_dt)} to "
            f"{_tensor(elem_rank, t_dt)}"]
    operand_types = [_tensor(r, dt), _tensor(elem_rank, t_dt)]
    weight = None
    if c["weighted"]:
        args.append(f"%w: {_view(1, 'f32')}")
        body.append(f"  %wt = bufferization.to_tensor %w restrict : {_view(1, 'f32')} to "
                    f"{_tensor(1, 'f32')}")
        operand_types.append(_tensor(1, "f32"))
        weight = "%wt"
    scalar_args, scalars, scalar_types = _runtime_scalars(c)
    operand_types += scalar_types
    loss_t = _tensor(red_rank, "f32")
    if c["with_grad"]:
        args.append(f"%g: {_memref(red_rank, 'f32')}")
        body.append(f"  %gt = bufferization.to_tensor %g restrict : {_memref(red_rank, 'f32')} to "
                    f"{loss_t}")
    # Results after loss and z-loss: the per-row outputs asked for (lse f32
    # and argmax i64 per element, accuracy f32 reduced like the loss), each
    # written into the caller's buffer after %z.
    outs = [("%l", "%loss", red_rank, c.get("loss_dtype", "f32")),
            ("%zz", "%z", red_rank, "f32")]
    row_rank = r - 1
    for key, value, dest, rank_, type_ in (
            ("return_lse", "%lse_v", "%lse", row_rank, "f32"),
            ("return_argmax", "%am_v", "%am", row_rank, "i64"),
            ("return_accuracy", "%acc_v", "%acc", red_rank, "f32")):
        if c.get(key):
            outs.append((value, dest, rank_, type_))
    args += [f"{dest}: {_memref(rank_, type_)}" for _, dest, rank_, type_ in outs]
    values = [v for v, _, _, _ in outs]
    types = [_tensor(rank_, type_) for _, _, rank_, type_ in outs]
    op = dict(reduction=c["reduction"], logits="%xt", target="%tt", weight=weight,
              scalars=scalars, attributes=_attributes(c))
    if c["with_grad"]:
        args.append(f"%dx: {_view(r, dt)}")
        body.append("  " + cross_entropy_op(
            "cross_entropy_and_grad", results=values + ["%d"], grad_output="%gt",
            operand_types=[loss_t] + operand_types, result_types=types + [_tensor(r, dt)], **op))
        body.append(f"  bufferization.materialize_in_destination %d in restrict writable %dx : "
                    f"({_tensor(r, dt)}, {_view(r, dt)}) -> ()")
    else:
        body.append("  " + cross_entropy_op("cross_entropy", results=values,
                                            operand_types=operand_types, result_types=types,
                                            **op))
    for v, dest, rank_, type_ in outs:
        body.append(f"  bufferization.materialize_in_destination {v} in restrict writable {dest} : "
                    f"({_tensor(rank_, type_)}, {_memref(rank_, type_)}) -> ()")
    # Run-time values last, as scalars (GpuFunction arg types "i64" / "f32").
    args += scalar_args
    return (f"func.func @{name}(" + ", ".join(args) + ") attributes {llvm.emit_c_interface} {\n"
            + "\n".join(body) + "\n  return\n}\n")


def kernel_module(c: Dict) -> str:
    """MLIR of configuration `c`: the entry function ``@xent_entry`` of a
    kernel_config (buffers in, results written into the caller's buffers:
    destination-passing), or every entry of a library_config, each named
    by entry_name; with the gradient scaling functions of a gradient."""
    if c.get("op") == _LIBRARY_OP:
        text = "".join(_entry_function(e, entry_name(e)) for e in library_entries(c))
    else:
        text = _entry_function(c, "xent_entry")
    if c["with_grad"]:
        text += _scale_functions(c["dtype"])
    return "module attributes {gpu.container_module} {\n" + text + "}\n"


_DTYPES = ("f32", "bf16", "f16")
# The target kinds of xent.torch's calls (kernel_config takes "i32" too): it
# widens int32 class indices to int64 (one cast of N indices beside N x C
# logits; PyTorch's own loss takes int64 alone), so the bundle holds no
# int32 library.
CALL_TARGETS = ("i64", "probs")


def with_loss_dtype(config: Dict, f32_loss: bool = False) -> Dict:
    """`config` with the loss in the logits' dtype, as the drop-in asks for
    it (or in f32 with `f32_loss`): kernel_config's ``loss_dtype``."""
    c = {k: v for k, v in config.items() if k != "loss_dtype"}
    if not f32_loss and c["dtype"] != "f32":
        c["loss_dtype"] = c["dtype"]
    return c


_LIBRARY_OP = "xent.torch.library"


def library_config(config: Dict) -> Dict:
    """The library that holds the entry function of `config` (a
    kernel_config with ``runtime_dispatch``): one per logits dtype × target
    kind × rank × gradient or not, with an entry (entry_name) for each of
    its calls' class weights × reduction × loss dtype × per-row outputs
    (library_entries). Kernels that compute the same are compiled once per
    library (convert-xent-to-gpu shares identical kernels within a module;
    a mean and a sum share their row kernels)."""
    lib = {"op": _LIBRARY_OP, "version": 1, "chip": config["chip"], "runtime_dispatch": True,
           "dtype": config["dtype"], "target": config["target"], "rank": config["rank"],
           "with_grad": config["with_grad"]}
    if config.get("resident_rows") is False:
        lib["resident_rows"] = False
    return lib


def entry_name(config: Dict) -> str:
    """The name of `config`'s entry function in its library:
    ``xent_entry_<weighted|unweighted>_<reduction>_<loss dtype>[_rows]`` for
    a ``runtime_dispatch`` configuration (library_config), ``xent_entry``
    for the others (a library of their own)."""
    if not config.get("runtime_dispatch") or config.get("op") == _LIBRARY_OP:
        return "xent_entry"
    rows = "_rows" if any(config.get(k) for k in ROW_OUTPUTS) else ""
    weighted = "weighted" if config["weighted"] else "unweighted"
    return (f"xent_entry_{weighted}_{config['reduction']}_"
            f"{config.get('loss_dtype', 'f32')}{rows}")


def library_entries(lib: Dict) -> List[Dict]:
    """The kernel_configs whose entries the library_config `lib` holds:
    class weights or not × reduction × loss in f32 or the logits' dtype ×
    no per-row output or all of them (the caller drops what it did not ask
    for)."""
    dtype, target = lib["dtype"], lib["target"]
    out = []
    for weighted, reduction in itertools.product((False, True), _REDUCTIONS):
        for loss_dtype in sorted({"f32", dtype}):
            for row_set in _row_sets(target):
                c = kernel_config(
                    dtype=dtype, target=target, rank=lib["rank"], weighted=weighted,
                    reduction=reduction, ignore_index=-100, label_smoothing=0.0,
                    z_loss_scale=0.0, softcap=None, with_grad=lib["with_grad"],
                    loss_dtype=loss_dtype, runtime_dispatch=True,
                    **{k: True for k in row_set})
                assert library_config(c) == lib, "the library's entries must be its own"
                out.append(c)
    return out


def call_configs(*, ranks: Iterable[int] = (2,)) -> List[Dict]:
    """The libraries of xent.torch's calls (library_config) over the
    signature of a call alone: logits dtype × target kind (CALL_TARGETS) ×
    rank × gradient or not; each holds the entries of its class weights × reduction × loss
    dtype × per-row outputs. The kernel variants within each library are
    the compiler's choice."""
    return [library_config(kernel_config(
                dtype=dtype, target=target, rank=rank, weighted=False, reduction="mean",
                ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                with_grad=with_grad, runtime_dispatch=True))
            for dtype, target, rank, with_grad in itertools.product(
                _DTYPES, CALL_TARGETS, ranks, (False, True))]


def _row_sets(target: str):
    """No per-row output, or all of them (accuracy needs class indices):
    the caller drops what it did not ask for."""
    rows = ROW_OUTPUTS if target != "probs" else ROW_OUTPUTS[:2]
    return ((), rows)


def pipeline_args(config: Optional[Dict] = None):
    """The xent-gpu-pipeline arguments of kernel_config `config` (None: the
    module defaults, CHIP, THREADS, RESIDENT_ROWS)."""
    if config is not None and config.get("runtime_dispatch"):
        extras = {} if config.get("resident_rows", True) else {"resident_rows": False}
        if SPLIT_EXPONENTIALS:
            extras["split_exponentials"] = SPLIT_EXPONENTIALS
        return xent_gpu_pipeline_args(chip=CHIP, threads=THREADS, runtime_dispatch=True,
                                      **extras)
    resident = RESIDENT_ROWS if config is None else config.get("resident_rows", True)
    threads = THREADS if config is None else config.get("threads", THREADS)
    return xent_gpu_pipeline_args(chip=CHIP, threads=threads, resident_rows=bool(resident))


def precompile(configs: Iterable[Dict], cache_dir: Optional[str] = None, *, jobs: int = 1,
               opt_tool: Optional[str] = None, progress=None) -> None:
    """Compiles `configs` (kernel_config's, or xent.runtime.linear's
    linear_config's) into the cache (no GPU needed), for a GPU machine
    without LLVM: `jobs` compilations at a time (concurrent compilations
    into one directory are safe), `progress(done, total)` after each."""
    configs = list(configs)
    cache = gpu.KernelCache(cache_dir or os.environ.get("XENT_CACHE_DIR"))
    opt = opt_tool or os.environ.get("XENT_OPT")

    def compile_one(config):
        if config.get("op") == "xent.torch.slices":
            from . import slices  # noqa: PLC0415 - slices imports this module
            slices.precompile(config, cache, opt)
            return
        if str(config.get("op", "")).startswith("linear_"):
            # xent.runtime.linear's configurations (the package's bundle
            # holds both kinds).
            from . import linear  # noqa: PLC0415 - linear imports this module's users
            cache.path(config, lambda: linear.linear_module(config),
                       pipeline_args=linear.linear_pipeline_args(config), opt_tool=opt)
            return
        cache.path(config, lambda: kernel_module(config), pipeline_args=pipeline_args(config),
                   opt_tool=opt)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(compile_one, c) for c in configs]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            future.result()
            if progress:
                progress(done, len(configs))
