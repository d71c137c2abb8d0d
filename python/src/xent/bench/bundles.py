"""Two kernel bundles side by side in one process: the same calls of
xent.torch's signatures, on the same buffers and values, through each
bundle's library. A bundle of one library per call signature (the
``xent_entry`` of kernel_config's ``runtime_dispatch`` configuration,
before the libraries held several entries) or of the packed libraries
(kernels.library_config, the entry named by kernels.entry_name) is read
as it is. ``triton.testing.do_bench`` wall clock of the entry function
called directly, the best of two rounds, and % of the copy bandwidth
measured in the same run (the gradient kernels move at least one read and
one write of the logits, what a copy moves; the forward kernels half of
it, so their % is against half the copy's time).

    python3 -m xent.bench.bundles OLD_BUNDLE NEW_BUNDLE [--dtype bf16] [--forward]
    python3 -m xent.bench.bundles OLD_BUNDLE NEW_BUNDLE --linear [--dtype bf16]

``--linear`` times the linear family's joint entries instead (run_linear).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from typing import Dict, List, Tuple

from ..runtime import gpu, kernels

CASES = {"plain": {}, "smoothing": {"label_smoothing": 0.1}, "softcap": {"softcap": 30.0},
         "weights": {"weighted": True}, "z-loss": {"z_loss_scale": 1e-4},
         "probs": {"target": "probs"}, "none": {"reduction": "none"},
         "softcap+smoothing": {"softcap": 30.0, "label_smoothing": 0.1},
         "weights+smoothing": {"weighted": True, "label_smoothing": 0.1}}
CLASSES = (32768, 65536, 131072, 262144)
ROWS = (256, 1024, 4096)


def cells(dtype: str, with_grad: bool, cases=None) -> List[Tuple[str, int, int, Dict]]:
    out = []
    for name, change in CASES.items():
        if cases and name not in cases:
            continue
        for classes in CLASSES:
            for rows in ROWS:
                attrs = {**dict(dtype=dtype, target="i64", rank=2, weighted=False,
                                reduction="mean", ignore_index=-100, label_smoothing=0.0,
                                z_loss_scale=0.0, softcap=None, with_grad=with_grad), **change}
                out.append((name, classes, rows, attrs))
    return out


def _function(cache: gpu.KernelCache, config: Dict, runtime: str):
    """The entry of `config` in the bundle `cache`: its packed library's
    entry where the bundle has that library, else the library of its own;
    loaded with `runtime`. Both bundles' libraries use one runtime (the
    new bundle's): the libraries bind to the first one loaded, and the
    caller's stream is set on the one Python holds, which must be that
    one."""
    packed = kernels.library_config(config)
    if cache.lookup(packed) is not None:
        lib = gpu.GpuLibrary(cache.path(packed), runtime=runtime)
        return lib.function(kernels.entry_name(config))
    return gpu.GpuLibrary(cache.path(config), runtime=runtime).function("xent_entry")


def run(old_dir: str, new_dir: str, dtype: str, with_grad: bool, cases=None) -> None:
    import torch
    import triton.testing as tt
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]
    caches = {"old": gpu.KernelCache(old_dir), "new": gpu.KernelCache(new_dir)}
    runtime = os.path.join(new_dir, gpu.RUNTIME_NAME)
    dev = "cuda"
    print(f"{dtype}, {'loss + gradient' if with_grad else 'loss'}; old {old_dir}, new {new_dir}")
    print(f"{'case':10s} {'V':>7s} {'N':>5s} {'old ms':>8s} {'new ms':>8s} {'new/old':>7s} "
          f"{'old %copy':>9s} {'new %copy':>9s}")
    worst = 0.0
    for name, classes, rows, attrs in cells(dtype, with_grad, cases):
        config = kernels.kernel_config(**attrs, runtime_scalars=True, runtime_dispatch=True,
                                       loss_dtype=dtype)
        torch.manual_seed(0)
        x = torch.randn(rows, classes, device=dev, dtype=torch_dtype) * 3
        if attrs["target"] == "probs":
            t = torch.softmax(torch.randn(rows, classes, device=dev), -1).to(torch_dtype)
        else:
            t = torch.randint(0, classes, (rows,), device=dev)
            t[::7] = -100
        w = torch.rand(classes, device=dev) + 0.5 if attrs["weighted"] else None
        shape = () if attrs["reduction"] != "none" else (rows,)
        loss = torch.empty(shape, device=dev, dtype=torch_dtype)
        z = torch.empty(shape, device=dev)
        tensors = [x, t] + ([w] if w is not None else [])
        if with_grad:
            dx = torch.empty_like(x)
            tensors += [torch.ones(shape, device=dev), loss, z, dx]
        else:
            tensors += [loss, z]
        scalars = ([] if attrs["target"] == "probs" else [ctypes.c_int64(-100)]) + [
            ctypes.c_float(attrs["label_smoothing"]), ctypes.c_float(attrs["z_loss_scale"]),
            ctypes.c_float(attrs["softcap"] or 0.0)]
        fns = {label: _function(cache, config, runtime) for label, cache in caches.items()}
        times: Dict[str, float] = {}
        for label in ("old", "new") * 2:
            fn = fns[label]
            fn(*tensors, *scalars)
            torch.cuda.synchronize()
            ms = tt.do_bench(lambda: fn(*tensors, *scalars), rep=100)
            times[label] = min(times.get(label, ms), ms)
        src, dst = torch.empty_like(x), torch.empty_like(x)
        copy_ms = tt.do_bench(lambda: dst.copy_(src), rep=100)
        moved = copy_ms if with_grad else copy_ms / 2
        o, n = times["old"], times["new"]
        worst = max(worst, n / o)
        print(f"{name:10s} {classes:7d} {rows:5d} {o:8.4f} {n:8.4f} {n / o:7.3f} "
              f"{moved / o * 100:8.1f}% {moved / n * 100:8.1f}%", flush=True)
        del x, t, tensors, src, dst
        torch.cuda.empty_cache()
    print(f"worst new/old: {worst:.3f}")


LINEAR_SHAPES = ((8192, 2048, 128256), (8192, 4096, 128256), (8192, 2048, 256000),
                 (16384, 4096, 128256))


def _linear_function(cache: gpu.KernelCache, config: Dict, runtime: str):
    """The entry of the linear `config` in its packed library of `cache`."""
    from ..runtime import linear
    inputs, results, _ = linear._types(config)
    types = [linear._memref(t) for _, t in inputs] + [linear._memref(t) for _, t in results]
    lib = gpu.GpuLibrary(cache.path(linear.library_config(config)), runtime=runtime)
    return lib.function(linear.entry_name(config), types, [])


def run_linear(old_dir: str, new_dir: str, dtype: str, shapes=LINEAR_SHAPES) -> None:
    """xent.linear_cross_entropy_and_grad (mean, no bias, 1 target in 7
    ignored; nothing, the weight or the hidden states frozen) through each
    bundle's library on the same buffers: ``do_bench`` wall clock, the best
    of two rounds."""
    import torch
    import triton.testing as tt
    from ..runtime import linear
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]
    caches = {"old": gpu.KernelCache(old_dir), "new": gpu.KernelCache(new_dir)}
    runtime = os.path.join(new_dir, gpu.RUNTIME_NAME)
    print(f"linear {dtype}, mean, loss + gradients; old {old_dir}, new {new_dir}")
    print(f"{'N, H, V':>20s} {'frozen':>7s} {'old ms':>8s} {'new ms':>8s} {'new/old':>7s}")
    worst = 0.0
    for n, h, v in shapes:
        torch.manual_seed(0)
        hidden = torch.randn(n, h, device="cuda", dtype=torch_dtype)
        weight = torch.randn(v, h, device="cuda", dtype=torch_dtype) * h ** -0.5
        t = torch.randint(0, v, (n,), device="cuda")
        t[::7] = -100
        g = torch.ones((), device="cuda")
        for frozen in (None, "weight", "hidden"):
            config = linear.linear_config(dtype=dtype, reduction="mean", bias=False,
                                          destinations=True, runtime_scalars=True,
                                          frozen=frozen)
            outs = [torch.empty((), device="cuda"), torch.empty((), device="cuda")]
            if frozen != "hidden":
                outs.append(torch.empty_like(hidden))
            if frozen != "weight":
                outs.append(torch.empty_like(weight))
            args = [g, hidden, weight, t, -100, 0.0, 0.0, 0.0] + outs
            fns = {label: _linear_function(c, config, runtime) for label, c in caches.items()}
            times: Dict[str, float] = {}
            for label in ("old", "new") * 2:
                fns[label](*args)
                torch.cuda.synchronize()
                ms = tt.do_bench(lambda: fns[label](*args), rep=200)
                times[label] = min(times.get(label, ms), ms)
            o, nw = times["old"], times["new"]
            worst = max(worst, nw / o)
            print(f"{f'{n}, {h}, {v}':>20s} {frozen or '-':>7s} {o:8.3f} {nw:8.3f} "
                  f"{nw / o:7.3f}", flush=True)
            del outs, args
        del hidden, weight
        torch.cuda.empty_cache()
    print(f"worst new/old: {worst:.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xent.bench.bundles",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f16", "f32"))
    parser.add_argument("--forward", action="store_true", help="the loss alone (no gradient)")
    parser.add_argument("--cases", help=f"comma-separated subset of {', '.join(CASES)}")
    parser.add_argument("--linear", action="store_true",
                        help="the linear family's joint entries instead (LINEAR_SHAPES)")
    args = parser.parse_args(argv)
    if args.linear:
        run_linear(args.old, args.new, args.dtype)
        return 0
    run(args.old, args.new, args.dtype, not args.forward,
        args.cases.split(",") if args.cases else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
