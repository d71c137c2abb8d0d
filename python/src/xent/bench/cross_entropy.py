"""Side-by-side benchmark of softmax cross-entropy on a CUDA GPU.

    XENT_CACHE_DIR=<kernels> python3 -m xent.bench \\
        [--rows 4096] [--vocab 32768 65536 128256 262144] [--dtypes bf16 f32] \\
        [--cases plain smoothing softcap weights zloss probs none upcast] \\
        [--layouts contiguous slice] [--timer events|do_bench] [--gpu-time] \\
        [--liger PATH_TO_LIGER_CHECKOUT] [--plot bench.png] [--json out.json]

In one process, on the same inputs (fresh random logits per vocabulary size,
1 target in 7 ignored, mean reduction), it times torch eager
``F.cross_entropy``, ``torch.compile(F.cross_entropy)``, Liger's Triton
kernel when a checkout is given (never vendored) and ``xent.torch`` (its
call, the call under ``torch.compile``, and PyTorch's loss through
``backend="xent"``):
forward + backward and forward only, with CUDA events (median of many runs
after warm-up; each sample is ``--inner`` back-to-back calls). It prints milliseconds, effective GB/s (bytes below), the
percentage of a device-to-device copy measured in the same run,
the extra device memory beyond inputs and outputs, and the gradient's
relative L2 error against float64 on a sample of rows; and writes a PNG plot
of GB/s against V per provider when matplotlib is available. ``--rows`` takes
several batch sizes; ``--layouts slice`` also times logits that are a view
(the first V columns of a buffer padded to V + 64, as with a padded
vocabulary).

``--cases`` names the attribute combinations (CASES: plain; label smoothing
0.1; softcap 30; class weights; z-loss 1e-4; probability targets; reduction
``none``; ``upcast``: Hugging Face's ``F.cross_entropy(logits.float(), …)``
on the logits as they are, xent's call with ``loss_dtype=torch.float32``),
each timed for every provider that takes it (Liger has no
probability targets), and each with its accuracy: the loss's and the
gradient's error against float64 (the same PyTorch formula run in float64
on the same logits) for every provider, so that xent's error sits beside
PyTorch's in the same dtype (``loss err`` is the largest relative error of
any per-element loss for ``none``). ``--timer do_bench`` times each call on
its own with ``triton.testing.do_bench`` (L2 flushed before each call, the
median; host time included whenever the GPU would wait for it: the wall
clock of the targets), ``events`` (the default) as a training loop queues work.

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


def torch_loss(x, t, weight=None, reduction="mean", label_smoothing=0.0, z_loss_scale=0.0,
               softcap=None):
    """PyTorch's loss with the same attributes, in x's dtype (a softcap as
    Gemma writes it; the z-loss as Liger and xent define it: z·lse² on kept
    rows, divided by their number for ``mean``)."""
    if softcap:
        x = softcap * torch.tanh(x / softcap)
    loss = F.cross_entropy(x, t, weight=None if weight is None else weight.to(x.dtype),
                           reduction=reduction, label_smoothing=label_smoothing)
    if z_loss_scale:
        lse = torch.logsumexp(x if x.dtype == torch.float64 else x.float(), dim=1)
        keep = (torch.ones_like(lse, dtype=torch.bool) if t.is_floating_point()
                else t != -100)
        z = torch.where(keep, z_loss_scale * lse * lse, torch.zeros_like(lse))
        if reduction == "mean":
            z = z.sum() / keep.sum()
        elif reduction == "sum":
            z = z.sum()
        loss = loss + z.to(loss.dtype)
    return loss


# name -> attributes of xent.torch.cross_entropy (plus probs: probability
# targets instead of class indices).
CASES = {
    "plain": {},
    "smoothing": {"label_smoothing": 0.1},
    "softcap": {"softcap": 30.0},
    "weights": {"weight": True},
    "zloss": {"z_loss_scale": 1e-4},
    "probs": {"probs": True},
    "none": {"reduction": "none"},
    # Hugging Face's form: F.cross_entropy(logits.float(), ...) on bf16/f16
    # logits; xent's own call reads them as they are (loss_dtype=float32).
    "upcast": {"upcast": True},
}


def providers(liger_path, case=None):
    """name -> fn(x, t, weight) for the attributes of `case` (a CASES entry)."""
    case = dict(case or {})
    case.pop("probs", None)
    case.pop("weight", None)
    upcast = case.pop("upcast", False)

    def up(x):
        return x.float() if upcast and x.dtype != torch.float64 else x
    out = {"torch": lambda x, t, w: torch_loss(up(x), t, weight=w, **case)}
    # One lambda per compiled provider: each its own code object, so the
    # backends' compiled graphs do not share Dynamo's cache entries.
    out["torch.compile"] = torch.compile(lambda x, t, w: torch_loss(up(x), t, weight=w, **case))
    if liger_path:
        sys.path.insert(0, liger_path)
        try:
            from liger_kernel.transformers.functional import liger_cross_entropy
            liger_attrs = dict(label_smoothing=case.get("label_smoothing", 0.0),
                               softcap=case.get("softcap"),
                               lse_square_scale=case.get("z_loss_scale", 0.0),
                               reduction=case.get("reduction", "mean"))
            out["liger"] = lambda x, t, w: liger_cross_entropy(x, t, weight=w, **liger_attrs)
        except Exception as e:  # a checkout that does not import is reported, not fatal
            print(f"liger unavailable: {e}")
    from xent.runtime import kernels
    from xent import torch as xt
    xent_case = dict(case, loss_dtype=torch.float32) if upcast else case
    out["xent"] = lambda x, t, w: xt.cross_entropy(x, t, weight=w, **xent_case)
    # xent inside a graph (the loss in the forward, the gradient with the
    # graph's grad_output in the backward), and PyTorch's loss as written
    # through the backend that swaps it (absorbing the upcast).
    out["xent compiled"] = torch.compile(
        lambda x, t, w: xt.cross_entropy(x, t, weight=w, **xent_case))
    xt.patch()
    out["xent swap"] = torch.compile(lambda x, t, w: torch_loss(up(x), t, weight=w, **case),
                                     backend="xent")

    def two_pass(x, t, w):  # rows not kept on chip: the logits read twice
        kernels.RESIDENT_ROWS = False
        try:
            return xt.cross_entropy(x, t, weight=w, **case)
        finally:
            kernels.RESIDENT_ROWS = True
    if not case:  # the plain case: resident rows against two passes
        out["xent 2-pass"] = two_pass
        # inplace=True needs logits that are an operation's result: both
        # sides pay the same x·1 (one more read and write of N×V).
        out["xent x*1"] = lambda x, t, w: xt.cross_entropy(x * 1, t, weight=w)
        out["xent inplace x*1"] = lambda x, t, w: xt.cross_entropy(x * 1, t, weight=w,
                                                                    inplace=True)
    return out


def _scalar(loss):
    return loss if loss.dim() == 0 else loss.sum()


def accuracy(fn, x, t, w, case, rows=64):
    """(loss error, gradient relative L2) of `fn` against float64 on the
    first `rows` rows: the loss's relative error (the largest over elements
    for ``none``)."""
    case = {k: v for k, v in case.items() if k not in ("probs", "weight", "upcast")}
    xs = x[:rows].detach().clone().requires_grad_()
    loss = fn(xs, t[:rows], w)
    _scalar(loss).backward()
    ref = x[:rows].detach().double().requires_grad_()
    tr = t[:rows].double() if t.is_floating_point() else t[:rows]
    want = torch_loss(ref, tr, weight=None if w is None else w.double(), **case)
    _scalar(want).backward()
    tiny = torch.finfo(torch.float64).tiny
    loss_err = ((loss.detach().double() - want.detach()).abs()
                / want.detach().abs().clamp_min(tiny)).max().item()
    d = xs.grad.double() - ref.grad
    grad_err = (torch.linalg.vector_norm(d) / torch.linalg.vector_norm(ref.grad)).item()
    return loss_err, grad_err


def _do_bench(fn):
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def _cases(args):
    cases = {name: CASES[name] for name in args.cases}
    if args.label_smoothing or args.softcap:  # the older flags: one case of their own
        custom = {}
        if args.label_smoothing:
            custom["label_smoothing"] = args.label_smoothing
        if args.softcap:
            custom["softcap"] = args.softcap
        cases = {"custom": custom}
    return cases


def run(args):
    results = []
    element = {k: torch.tensor([], dtype=v).element_size() for k, v in DTYPES.items()}
    timer = _do_bench if args.timer == "do_bench" else (lambda fn: _time(fn, args.repeats))
    for case_name, case in _cases(args).items():
        impls = providers(args.liger, case)
        if args.providers:
            impls = {k: v for k, v in impls.items() if k in args.providers}
        if case.get("probs"):
            impls.pop("liger", None)  # (no probability targets)
        for dtype_name, vocab, n, layout in [(d, v, n, layout) for d in args.dtypes
                                             for layout in args.layouts
                                             for n in args.rows for v in args.vocab]:
            results += _run_one(args, timer, element, impls, case_name, case, dtype_name,
                                vocab, n, layout)
    return results


def _run_one(args, timer, element, impls, case_name, case, dtype_name, vocab, n, layout):
    results = []
    dtype = DTYPES[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(vocab)
    pad = 64 if layout == "slice" else 0
    x = (torch.randn(n, vocab + pad, device="cuda", generator=gen) * 4).to(dtype)
    x = x[:, :vocab]
    if case.get("probs"):
        t = torch.softmax(torch.randn(n, vocab, device="cuda", generator=gen), 1).to(dtype)
    else:
        t = torch.randint(0, vocab, (n,), device="cuda", generator=gen)
        t[::7] = -100
    w = (torch.rand(vocab, device="cuda", generator=gen) + 0.5) if case.get("weight") else None
    nbytes = n * vocab * element[dtype_name]
    copy = copy_bandwidth(2 * nbytes, args.repeats)
    for name, fn in impls.items():
        # Each provider gets its own copy: Liger writes the gradient into
        # its input in place (same strides: a slice stays a slice).
        xp = x
        if len(impls) > 1:
            xp = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device)
            xp.copy_(x)
        leaf = xp.detach().requires_grad_()

        def fwd_bwd():
            leaf.grad = None
            _scalar(fn(leaf, t, w)).backward()

        def fwd():
            with torch.no_grad():
                fn(xp, t, w)

        try:
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            ms_fb = timer(fwd_bwd)
            extra = torch.cuda.max_memory_allocated() - base - nbytes  # minus the gradient
            ms_f = timer(fwd)
            gpu_fb = _gpu_time(fwd_bwd) if args.gpu_time else float("nan")
            loss_err, err = accuracy(fn, xp, t, w, case)
        except Exception as e:
            print(f"{name} {case_name} V={vocab} {dtype_name}: failed: {e}")
            continue
        row = {"provider": name, "case": case_name, "dtype": dtype_name, "rows": n,
               "vocab": vocab, "layout": layout, "timer": args.timer,
               "label_smoothing": case.get("label_smoothing", 0.0),
               "softcap": case.get("softcap"), "copy_gbs": copy,
               "fwd_bwd_ms": ms_fb, "fwd_bwd_gbs": 2 * nbytes / ms_fb / 1e6,
               "fwd_ms": ms_f, "fwd_gbs": nbytes / ms_f / 1e6,
               "extra_mb": max(extra, 0) / 2**20, "grad_rel_l2": err, "loss_rel_err": loss_err,
               "fwd_bwd_gpu_ms": gpu_fb}
        row["fwd_bwd_pct"] = 100 * row["fwd_bwd_gbs"] / copy
        row["fwd_pct"] = 100 * row["fwd_gbs"] / copy
        row["fwd_bwd_gpu_pct"] = 100 * 2 * nbytes / gpu_fb / 1e6 / copy
        results.append(row)
        print(f"{name:14s} {case_name:9s} {dtype_name:4s} V={vocab:6d} N={n:5d} {layout:10s} "
              f"fwd+bwd {ms_fb:7.3f} ms "
              f"{row['fwd_bwd_gbs']:6.0f} GB/s {row['fwd_bwd_pct']:5.1f}%   fwd "
              f"{ms_f:7.3f} ms {row['fwd_pct']:5.1f}%   extra {row['extra_mb']:7.0f} MB"
              f"   loss err {loss_err:.2e}   grad err {err:.2e}   (copy {copy:.0f} GB/s)"
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
    p.add_argument("--cases", nargs="+", default=["plain"], choices=sorted(CASES),
                   help="attribute combinations (CASES)")
    p.add_argument("--label-smoothing", type=float, default=0.0,
                   help="one case with this label smoothing (instead of --cases)")
    p.add_argument("--softcap", type=float, default=None,
                   help="one case with this softcap (instead of --cases)")
    p.add_argument("--timer", choices=["events", "do_bench"], default="events",
                   help="events: INNER back-to-back calls per sample; do_bench: "
                        "triton.testing.do_bench, each call alone, L2 flushed")
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
