"""Side-by-side benchmark of softmax cross-entropy on a CUDA GPU.

    XENT_CACHE_DIR=<kernels> python3 -m xent.bench \\
        [--rows 4096] [--vocab 32768 65536 128256 262144] [--dtypes bf16 f32] \\
        [--layouts contiguous slice] \\
        [--liger PATH_TO_LIGER_CHECKOUT] [--plot bench.png] [--json out.json]

In one process, on the same inputs (fresh random logits per vocabulary size,
1 target in 7 ignored, mean reduction), it times torch eager
``F.cross_entropy``, ``torch.compile(F.cross_entropy)``, Liger's Triton
kernel when a checkout is given (never vendored) and ``xent.torch``:
forward + backward and forward only, with CUDA events (median of many runs
after warm-up; each sample is ``--inner`` back-to-back calls). It prints milliseconds, effective GB/s (bytes below), the
percentage of a device-to-device copy measured in the same run,
the extra device memory beyond inputs and outputs, and the gradient's
relative L2 error against float64 on a sample of rows; and writes a PNG plot
of GB/s against V per provider when matplotlib is available. ``--rows`` takes
several batch sizes; ``--layouts slice`` also times logits that are a view
(the first V columns of a buffer padded to V + 64, as with a padded
vocabulary).

Bytes counted: forward + backward reads the logits once and writes the
gradient once (2·N·V·sizeof); forward only reads them (N·V·sizeof).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32, "f16": torch.float16}


INNER = 10


def _time(fn, repeats: int, warmup: int = 3) -> float:
    """Median over `repeats` samples of the time per call, each sample being
    INNER back-to-back calls between two events (as in a training loop: the
    host queues work ahead, so per-call host overhead is hidden unless it
    exceeds the GPU time)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(INNER):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / INNER)
    return statistics.median(times)


def _gpu_time(fn, iters: int = 5) -> float:
    """Milliseconds per call that the GPU spends in kernels and copies
    (torch.profiler), without host overhead or idle gaps: what the kernels
    themselves reach."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for e in prof.events():
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
            total_us += getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0)
    return total_us / iters / 1000


def copy_bandwidth(nbytes: int, repeats: int) -> float:
    """GB/s of a device-to-device copy of `nbytes` (bytes read + written)."""
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)
    ms = _time(lambda: dst.copy_(src), repeats)
    return 2 * src.numel() * 4 / ms / 1e6


def torch_loss(x, t, label_smoothing=0.0, softcap=None):
    """PyTorch's loss with the same attributes (a softcap as Gemma writes it)."""
    if softcap:
        x = softcap * torch.tanh(x / softcap)
    return F.cross_entropy(x, t, label_smoothing=label_smoothing)


def providers(liger_path, label_smoothing=0.0, softcap=None):
    attrs = dict(label_smoothing=label_smoothing, softcap=softcap)
    out = {"torch": lambda x, t: torch_loss(x, t, **attrs)}
    compiled = torch.compile(torch_loss)
    out["torch.compile"] = lambda x, t: compiled(x, t, **attrs)
    if liger_path:
        sys.path.insert(0, liger_path)
        try:
            from liger_kernel.transformers.functional import liger_cross_entropy
            out["liger"] = lambda x, t: liger_cross_entropy(
                x, t, label_smoothing=label_smoothing, softcap=softcap)
        except Exception as e:  # a checkout that does not import is reported, not fatal
            print(f"liger unavailable: {e}")
    from xent.runtime import kernels
    from xent import torch as xt
    out["xent"] = lambda x, t: xt.cross_entropy(x, t, **attrs)

    def two_pass(x, t):  # rows not kept on chip: the logits read twice
        kernels.RESIDENT_ROWS = False
        try:
            return xt.cross_entropy(x, t, **attrs)
        finally:
            kernels.RESIDENT_ROWS = True
    if not label_smoothing and not softcap:  # (those always take two passes)
        out["xent 2-pass"] = two_pass
    return out


def grad_error(fn, x, t, rows=64, label_smoothing=0.0, softcap=None):
    xs = x[:rows].detach().clone().requires_grad_()
    fn(xs, t[:rows]).backward()
    ref = x[:rows].detach().double().requires_grad_()
    torch_loss(ref, t[:rows], label_smoothing, softcap).backward()
    d = xs.grad.double() - ref.grad
    return (torch.linalg.vector_norm(d) / torch.linalg.vector_norm(ref.grad)).item()


def run(args):
    results = []
    element = {k: torch.tensor([], dtype=v).element_size() for k, v in DTYPES.items()}
    impls = providers(args.liger, args.label_smoothing, args.softcap)
    if args.providers:
        impls = {k: v for k, v in impls.items() if k in args.providers}
    cases = [(d, v, n, layout) for d in args.dtypes for layout in args.layouts
             for n in args.rows for v in args.vocab]
    for dtype_name, vocab, n, layout in cases:
        dtype = DTYPES[dtype_name]
        gen = torch.Generator(device="cuda").manual_seed(vocab)
        pad = 64 if layout == "slice" else 0
        x = (torch.randn(n, vocab + pad, device="cuda", generator=gen) * 4).to(dtype)
        x = x[:, :vocab]
        t = torch.randint(0, vocab, (n,), device="cuda", generator=gen)
        t[::7] = -100
        nbytes = n * vocab * element[dtype_name]
        copy = copy_bandwidth(2 * nbytes, args.repeats)
        for name, fn in impls.items():
            # Each provider gets its own copy: Liger writes the gradient into
            # its input in place.
            # (same strides: a slice stays a slice)
            xp = x
            if len(impls) > 1:
                xp = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device)
                xp.copy_(x)
            leaf = xp.detach().requires_grad_()

            def fwd_bwd():
                leaf.grad = None
                fn(leaf, t).backward()

            def fwd():
                with torch.no_grad():
                    fn(xp, t)

            try:
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                ms_fb = _time(fwd_bwd, args.repeats)
                extra = torch.cuda.max_memory_allocated() - base - nbytes  # minus the gradient
                ms_f = _time(fwd, args.repeats)
                gpu_fb = _gpu_time(fwd_bwd) if args.gpu_time else float("nan")
                err = grad_error(fn, xp, t, label_smoothing=args.label_smoothing,
                                 softcap=args.softcap)
            except Exception as e:
                print(f"{name} V={vocab} {dtype_name}: failed: {e}")
                continue
            row = {"provider": name, "dtype": dtype_name, "rows": n, "vocab": vocab,
                   "layout": layout, "label_smoothing": args.label_smoothing,
                   "softcap": args.softcap,
                   "copy_gbs": copy,
                   "fwd_bwd_ms": ms_fb, "fwd_bwd_gbs": 2 * nbytes / ms_fb / 1e6,
                   "fwd_ms": ms_f, "fwd_gbs": nbytes / ms_f / 1e6,
                   "extra_mb": max(extra, 0) / 2**20, "grad_rel_l2": err,
                   "fwd_bwd_gpu_ms": gpu_fb}
            row["fwd_bwd_pct"] = 100 * row["fwd_bwd_gbs"] / copy
            row["fwd_pct"] = 100 * row["fwd_gbs"] / copy
            row["fwd_bwd_gpu_pct"] = 100 * 2 * nbytes / gpu_fb / 1e6 / copy
            results.append(row)
            print(f"{name:14s} {dtype_name:4s} V={vocab:6d} N={n:5d} {layout:10s} "
                  f"fwd+bwd {ms_fb:7.3f} ms "
                  f"{row['fwd_bwd_gbs']:6.0f} GB/s {row['fwd_bwd_pct']:5.1f}%   fwd "
                  f"{ms_f:7.3f} ms {row['fwd_pct']:5.1f}%   extra {row['extra_mb']:7.0f} MB"
                  f"   grad err {err:.2e}   (copy {copy:.0f} GB/s)"
                  + (f"   gpu-only fwd+bwd {gpu_fb:.3f} ms {row['fwd_bwd_gpu_pct']:5.1f}%"
                     if args.gpu_time else ""), flush=True)
        del x, t
        torch.cuda.empty_cache()
    return results


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    # The plot is of the main series: the largest batch, contiguous logits.
    n = max(r["rows"] for r in results)
    results = [r for r in results if r["rows"] == n and r.get("layout") == "contiguous"] or results
    for ax, key, title in ((axes[0], "fwd_bwd_gbs", "forward + backward"),
                           (axes[1], "fwd_gbs", "forward")):
        for (prov, dt) in sorted({(r["provider"], r["dtype"]) for r in results}):
            rows = sorted((r for r in results if r["provider"] == prov and r["dtype"] == dt),
                          key=lambda r: r["vocab"])
            ax.plot([r["vocab"] for r in rows], [r[key] for r in rows], marker="o",
                    label=f"{prov} {dt}")
        copies = [r["copy_gbs"] for r in results]
        ax.axhline(statistics.median(copies), color="gray", linestyle="--", label="copy")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("V")
        ax.set_ylabel("GB/s")
        ax.set_title(title)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[4096])
    p.add_argument("--layouts", nargs="+", default=["contiguous"],
                   choices=["contiguous", "slice"])
    p.add_argument("--vocab", type=int, nargs="+", default=[32768, 65536, 128256, 262144])
    p.add_argument("--dtypes", nargs="+", default=["bf16", "f32"], choices=sorted(DTYPES))
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--softcap", type=float, default=None)
    p.add_argument("--providers", nargs="+", default=None,
                   help="time only these (torch, torch.compile, liger, xent, 'xent 2-pass')")
    p.add_argument("--gpu-time", action="store_true",
                   help="also report the GPU's own time of fwd+bwd (torch.profiler)")
    p.add_argument("--inner", type=int, default=10,
                   help="back-to-back calls per timed sample (1: each call alone)")
    p.add_argument("--liger", default=None, help="path of a Liger-Kernel checkout (src/)")
    p.add_argument("--plot", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    globals()["INNER"] = max(1, args.inner)
    results = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
