"""Kernels of one call signature built per feature set and geometry (the
drop-in's runtime-scalar libraries) against the same call's
``runtime-dispatch`` library (one per signature, the host code picking the
variant), side by side in one process: the same buffers and values, the
``@xent_entry`` functions called directly, ``triton.testing.do_bench``
wall clock and % of the copy bandwidth measured in the same run. bf16,
N = 4096, joint loss + gradient, mean unless the case says otherwise.

Compile both sets on a machine with LLVM (no GPU needed), then time them on
the GPU machine::

    XENT_OPT=build/bin/xent-opt build/venv/bin/python -m xent.bench.dispatch --compile DIR
    python3 -m xent.bench.dispatch DIR
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from typing import Dict, List, Tuple

from ..runtime import gpu, kernels

CASES = {"plain": {}, "smoothing": {"label_smoothing": 0.1}, "softcap": {"softcap": 30.0},
         "z-loss": {"z_loss_scale": 1e-4}, "none": {"reduction": "none"},
         "weights": {"weighted": True}}
CLASSES = (32768, 65536, 128256, 262144)
N = 4096


def has_resident_path(*, target: str, rank: int, label_smoothing: float,
                      softcap, with_grad: bool, dtype: str, weighted: bool = False,
                      **_) -> bool:
    """Whether a per-feature-set library's gradient kernel keeps rows on
    chip (convert-xent-to-gpu's hasResidentPath for xent.torch's modules:
    class axis last; label smoothing only without class weights; a softcap
    only on bf16 / f16 logits). The rule those libraries were named by,
    which the dispatching ones leave to their host code."""
    return (kernels.RESIDENT_ROWS and with_grad and target != "probs"
            and not (label_smoothing and weighted)
            and (softcap is None or dtype != "f32") and rank <= 2)


def threads_for(dtype: str, classes: int, resident: bool) -> int:
    """The per-feature-set libraries' block size: 256 threads where the
    resident kernel's two blocks of 256 hold the row (at most 8192 16-byte
    vectors), else kernels.THREADS (what runtime-dispatch picks too)."""
    if not resident:
        return kernels.THREADS
    width = 4 if dtype == "f32" else 8
    return 256 if -(-classes // width) <= 8192 else kernels.THREADS


def pairs() -> List[Tuple[str, Dict, Dict, Dict]]:
    """(name, attributes, the per-feature-set library's configuration, the
    dispatching library's) for each case and row length."""
    out = []
    for name, change in CASES.items():
        for classes in CLASSES:
            attrs = {**dict(dtype="bf16", target="i64", rank=2, weighted=False,
                            reduction="mean", ignore_index=-100, label_smoothing=0.0,
                            z_loss_scale=0.0, softcap=None, with_grad=True), **change}
            # The block size today's drop-in picks for this row length.
            threads = threads_for("bf16", classes, has_resident_path(**attrs))
            old = kernels.kernel_config(**attrs, threads=threads, runtime_scalars=True,
                                        loss_dtype="bf16")
            new = kernels.kernel_config(**attrs, runtime_scalars=True, runtime_dispatch=True,
                                        loss_dtype="bf16")
            out.append((f"{name}/{classes}", attrs, old, new))
    return out


def compile_all(directory: str) -> None:
    configs = {json.dumps(c, sort_keys=True): c for _, _, old, new in pairs()
               for c in (old, kernels.library_config(new))}
    kernels.precompile(list(configs.values()), directory, jobs=os.cpu_count() or 1)


def run(directory: str) -> None:
    import torch
    import triton.testing as tt
    cache = gpu.KernelCache(directory)
    dev = "cuda"
    print(f"{'case':18s} {'per-set ms':>10s} {'dispatch ms':>11s} {'ratio':>6s} "
          f"{'per-set %copy':>13s} {'dispatch %copy':>14s}")
    for name, attrs, old, new in pairs():
        classes = int(name.split("/")[1])
        torch.manual_seed(0)
        x = torch.randn(N, classes, device=dev, dtype=torch.bfloat16) * 3
        t = torch.randint(0, classes, (N,), device=dev)
        t[::7] = -100
        w = torch.rand(classes, device=dev) + 0.5 if attrs["weighted"] else None
        shape = () if attrs["reduction"] != "none" else (N,)
        g = torch.ones(shape, device=dev)
        loss = torch.empty(shape, device=dev, dtype=torch.bfloat16)
        z = torch.empty(shape, device=dev)
        dx = torch.empty_like(x)
        tensors = [x, t] + ([w] if w is not None else []) + [g, loss, z, dx]
        ls, zs, sc = attrs["label_smoothing"], attrs["z_loss_scale"], attrs["softcap"]
        per_set = [ctypes.c_int64(-100)] + [ctypes.c_float(v) for k, v in (
            ("label_smoothing", ls), ("z_loss_scale", zs), ("softcap", sc)) if old[k]]
        dispatch = [ctypes.c_int64(-100), ctypes.c_float(ls), ctypes.c_float(zs),
                    ctypes.c_float(sc or 0.0)]
        times = {}
        for label, config, scalars in (("old", old, per_set), ("new", new, dispatch)) * 2:
            lib_config = (kernels.library_config(config) if config.get("runtime_dispatch")
                          else config)
            fn = cache.get(lib_config).function(kernels.entry_name(config))
            fn(*tensors, *scalars)
            torch.cuda.synchronize()
            ms = tt.do_bench(lambda: fn(*tensors, *scalars), rep=200)
            times[label] = min(times.get(label, ms), ms)
        src, dst = torch.empty_like(x), torch.empty_like(x)
        copy_ms = tt.do_bench(lambda: dst.copy_(src))
        # The resident kernels' minimum traffic is one read and one write of
        # the logits: what a copy of them moves.
        o, n = times["old"], times["new"]
        print(f"{name:18s} {o:10.3f} {n:11.3f} {n / o:6.3f} {copy_ms / o * 100:12.1f}% "
              f"{copy_ms / n * 100:13.1f}%", flush=True)
        del x, dx, src, dst
        torch.cuda.empty_cache()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xent.bench.dispatch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--compile", action="store_true",
                        help="compile both sets into DIRECTORY (needs xent-opt, no GPU)")
    args = parser.parse_args(argv)
    if args.compile:
        compile_all(args.directory)
    else:
        run(args.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
