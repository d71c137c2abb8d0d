"""Benchmark of linear + cross-entropy (the LM head's loss) on a CUDA GPU.

    XENT_CACHE_DIR=<bundle> python3 -m xent.bench.linear_cross_entropy \\
        [--shapes 8192,2048,128256 8192,2048,256000 16384,4096,128256] \\
        [--dtypes bf16] [--bias] [--loss-only] [--chunk-rows 0] \\
        [--label-smoothing 0.0] [--softcap S] \\
        [--providers torch torch.compile liger cce xent xent.torch] \\
        [--liger LIGER_CHECKOUT/src] [--cce CCE_CHECKOUT] [--json out.json]

For each (N, H, V) it times forward + backward of ``cross_entropy(hidden @
weight.T (+ bias), target)`` (mean, 1 target in 7 ignored; gradients of
hidden, weight and bias) — or, with ``--loss-only``, the loss alone (no
autograd: an evaluation step; xent's ``xent.linear_cross_entropy``, which on
sm_90a takes the tile kernels that never write logits) — with a label
smoothing and a softcap (``softcap · tanh(logits / softcap)``) where given
(PyTorch's, xent's; the fused peers are not run with them) — for:

* ``torch``: ``F.linear`` + ``F.cross_entropy`` and ``backward()``, eager;
* ``torch.compile``: the same function compiled;
* ``liger``: Liger-Kernel's ``LigerFusedLinearCrossEntropyFunction`` from a
  checkout (``--liger``, its ``src/``);
* ``cce``: Cut Cross-Entropy's ``linear_cross_entropy`` (apple/ml-cross-entropy,
  ``--cce``: the checkout holding ``cut_cross_entropy/``), its default
  implementation (gradient filtering on);
* ``xent``: ``xent.linear_cross_entropy_and_grad`` through
  ``xent-gpu-pipeline`` (:mod:`xent.runtime.linear`: chunks of rows, cuBLASLt
  GEMMs, the loss kernel in place over each chunk's logits);
* ``xent.torch``: the PyTorch drop-in ``xent.torch.linear_cross_entropy``
  and ``backward()`` (the op above for grad_output = 1 in the forward, the
  gradients scaled in the backward).

Time: ``triton.testing.do_bench`` (median) when Triton is installed, else
the median of CUDA-event samples. Peak extra memory: the most device memory
the step holds beyond its inputs (hidden, weight, bias, target), outputs
(the gradients) included — PyTorch's allocator
(``torch.cuda.max_memory_allocated``) plus the CUDA driver's default memory
pool, which xent's runtime allocates from (its high-water mark,
``CU_MEMPOOL_ATTR_USED_MEM_HIGH``), plus the cuBLASLt workspace (32 MiB per
stream, allocated once). It also prints each provider's loss and its
gradients' relative L2 distance to PyTorch eager's.

python/tools/make_bundle.py compiles xent's bf16 and f32 mean configurations (with and
without ``--bias``) at the automatic chunk size, and bf16 mean without a
bias at ``--chunk-rows 1024`` and ``4096`` (other sizes need ``XENT_OPT``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
SHAPES = [(8192, 2048, 128256), (8192, 2048, 256000), (16384, 4096, 128256)]
_USED_MEM_CURRENT, _USED_MEM_HIGH = 7, 8  # CUmemPool_attribute
WORKSPACE_BYTES = 32 << 20


class DriverPool:
    """The default memory pool of the current device, through the driver API
    (xent's runtime allocates there with cuMemAllocAsync)."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        device = ctypes.c_int()
        if self.cuda.cuCtxGetDevice(ctypes.byref(device)) != 0:
            raise RuntimeError("no current CUDA context")
        self.pool = ctypes.c_void_p()
        if self.cuda.cuDeviceGetDefaultMemPool(ctypes.byref(self.pool), device) != 0:
            raise RuntimeError("no default memory pool")

    def _get(self, attribute) -> int:
        value = ctypes.c_uint64()
        self.cuda.cuMemPoolGetAttribute(self.pool, attribute, ctypes.byref(value))
        return value.value

    def reset_high(self):
        zero = ctypes.c_uint64(0)
        self.cuda.cuMemPoolSetAttribute(self.pool, _USED_MEM_HIGH, ctypes.byref(zero))

    def used(self) -> int:
        return self._get(_USED_MEM_CURRENT)

    def high(self) -> int:
        return self._get(_USED_MEM_HIGH)


def _bench(fn, repeats: int, rep_ms: int) -> float:
    """Median milliseconds per call: do_bench over `rep_ms` of runs (it
    clears the L2 cache between them), else `repeats` CUDA-event samples."""
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench is not None:
        return do_bench(fn, warmup=100, rep=rep_ms, return_mode="median")
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _torch_loss(h, w, b, t, label_smoothing=0.0, softcap=None):
    logits = F.linear(h, w, b)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    return F.cross_entropy(logits, t, label_smoothing=label_smoothing)


def _from_checkout(path):
    if path and path not in sys.path:
        sys.path.insert(0, path)


def providers(names, chunk_rows, liger=None, cce=None, loss_only=False,
              label_smoothing=0.0, softcap=None):
    out = {}
    features = {"label_smoothing": label_smoothing, "softcap": softcap}
    peers = not label_smoothing and not softcap

    def torch_loss(h, w, b, t):
        return _torch_loss(h, w, b, t, **features)

    def autograd_step(loss_fn):
        def step(h, w, b, t):
            if loss_only:
                with torch.no_grad():
                    return [loss_fn(h, w, b, t)]
            leaves = [x.detach().requires_grad_() for x in (h, w)]
            bias = b.detach().requires_grad_() if b is not None else None
            loss = loss_fn(leaves[0], leaves[1], bias, t)
            loss.backward()
            grads = [leaves[0].grad, leaves[1].grad] + ([bias.grad] if bias is not None else [])
            return [loss.detach()] + grads
        return step

    if "torch" in names:
        out["torch"] = autograd_step(torch_loss)
    if "torch.compile" in names:
        out["torch.compile"] = autograd_step(torch.compile(torch_loss))
    if not peers and ({"liger", "cce"} & set(names)):
        print("liger, cce: not run with --label-smoothing / --softcap")
    if "liger" in names and not loss_only and peers:  # (its function computes gradients)
        _from_checkout(liger)
        try:
            from liger_kernel.ops.fused_linear_cross_entropy import (
                LigerFusedLinearCrossEntropyFunction as Liger)

            def liger_loss(h, w, b, t):
                out_ = Liger.apply(h, w, t, b)
                return out_[0] if isinstance(out_, tuple) else out_
            out["liger"] = autograd_step(liger_loss)
        except Exception as e:  # reported, not fatal
            print(f"liger unavailable: {e}")
    if "cce" in names and peers:
        _from_checkout(cce)
        try:
            from cut_cross_entropy import linear_cross_entropy as cce_loss
            out["cce"] = autograd_step(lambda h, w, b, t: cce_loss(h, w, t, b))
        except Exception as e:
            print(f"cce unavailable: {e}")
    if "xent.torch" in names:
        from xent import torch as xt
        out["xent.torch"] = autograd_step(
            lambda h, w, b, t: xt.linear_cross_entropy(h, w, t, b, chunk_rows=chunk_rows,
                                                       **features))
    if "xent" in names:
        from xent.runtime import linear
        one = torch.ones((), device="cuda")

        def xent_step(h, w, b, t):
            # Results into fresh tensors of PyTorch's allocator: the entries
            # the package's bundle holds (as xent.torch calls them).
            if loss_only:
                return list(linear.linear_cross_entropy(
                    h, w, t, b, reduction="mean", chunk_rows=chunk_rows,
                    out=[torch.empty((), device="cuda")], **features))
            out = [torch.empty((), device="cuda"), torch.empty_like(h), torch.empty_like(w)]
            if b is not None:
                out.append(torch.empty_like(b))
            return list(linear.linear_cross_entropy_and_grad(
                h, w, t, b, grad_output=one, reduction="mean", chunk_rows=chunk_rows,
                out=out, **features))
        out["xent"] = xent_step
    return out


def _rel(x, ref):
    d = torch.linalg.vector_norm(x.double() - ref.double())
    return (d / torch.linalg.vector_norm(ref.double()).clamp_min(1e-30)).item()


def run(args):
    impls = providers(args.providers, args.chunk_rows, args.liger, args.cce, args.loss_only,
                      args.label_smoothing, args.softcap)
    step_name = "loss" if args.loss_only else "fwd+bwd"
    pool = None
    results = []
    for dtype_name in args.dtypes:
        dtype = DTYPES[dtype_name]
        for n, h, v in args.shapes:
            gen = torch.Generator(device="cuda").manual_seed(n + h + v)
            hidden = torch.randn(n, h, device="cuda", generator=gen).to(dtype)
            weight = (torch.randn(v, h, device="cuda", generator=gen) * h ** -0.5).to(dtype)
            bias = (torch.randn(v, device="cuda", generator=gen) * 0.1).to(dtype) \
                if args.bias else None
            target = torch.randint(0, v, (n,), device="cuda", generator=gen)
            target[::7] = -100
            if pool is None:
                pool = DriverPool()
            inputs = (hidden, weight, bias, target)
            reference = None
            for name, step in impls.items():
                try:
                    outputs = step(hidden, weight, bias, target)  # warm-up, compile
                    torch.cuda.synchronize()
                    del outputs
                    torch.cuda.synchronize()
                    base, base_pool = torch.cuda.memory_allocated(), pool.used()
                    torch.cuda.reset_peak_memory_stats()
                    pool.reset_high()
                    outputs = step(hidden, weight, bias, target)
                    torch.cuda.synchronize()
                    extra = (torch.cuda.max_memory_allocated() - base) + \
                        max(pool.high() - base_pool, 0)
                    if name.startswith("xent"):
                        extra += WORKSPACE_BYTES
                    ms = _bench(lambda s=step, a=inputs: s(*a), args.repeats, args.rep_ms)
                except Exception as e:  # a provider that fails is reported, not fatal
                    print(f"{name} {dtype_name} N={n} H={h} V={v}: failed: {e}", flush=True)
                    continue
                if reference is None and name == "torch":
                    reference = [o.detach() for o in outputs]
                errors = [_rel(o, r) for o, r in zip(outputs, reference)] if reference else []
                # Three GEMMs of 2·N·H·V; the loss alone one.
                flops = (2 if args.loss_only else 6) * n * h * v
                row = {"provider": name, "dtype": dtype_name, "rows": n, "hidden": h,
                       "vocab": v, "bias": bool(args.bias), "loss_only": bool(args.loss_only),
                       "label_smoothing": args.label_smoothing, "softcap": args.softcap,
                       "fwd_bwd_ms": ms,
                       "tflops": flops / ms / 1e9, "extra_mb": extra / 2**20,
                       "loss": outputs[0].float().item(),
                       "rel_l2_vs_torch": errors}
                results.append(row)
                print(f"{name:14s} {dtype_name:4s} N={n:6d} H={h:5d} V={v:7d} "
                      f"{step_name} {ms:8.2f} ms {row['tflops']:6.1f} TFLOP/s   "
                      f"extra {row['extra_mb']:8.0f} MB   loss {row['loss']:.6f}"
                      + ("   vs torch: " + " ".join(f"{e:.1e}" for e in errors[1:])
                         if errors else ""), flush=True)
                del outputs
                torch.cuda.empty_cache()
            del hidden, weight, bias, target, inputs
            torch.cuda.empty_cache()
    return results


def _shape(text):
    n, h, v = (int(x) for x in text.split(","))
    return n, h, v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", type=_shape, nargs="+", default=SHAPES,
                   help="N,H,V triples (rows, hidden size, vocabulary)")
    p.add_argument("--dtypes", nargs="+", default=["bf16"], choices=sorted(DTYPES))
    p.add_argument("--bias", action="store_true")
    p.add_argument("--loss-only", action="store_true",
                   help="time the loss alone (no gradients), as an evaluation step")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--softcap", type=float, default=None,
                   help="logits soft-capped as softcap · tanh(logits / softcap)")
    p.add_argument("--chunk-rows", type=int, default=0,
                   help="rows per chunk of xent (0: the pipeline's automatic size)")
    p.add_argument("--providers", nargs="+",
                   default=["torch", "torch.compile", "liger", "cce", "xent", "xent.torch"])
    p.add_argument("--liger", default=None, help="path of a Liger-Kernel checkout's src/")
    p.add_argument("--cce", default=None,
                   help="path of an apple/ml-cross-entropy checkout (holding cut_cross_entropy/)")
    p.add_argument("--repeats", type=int, default=10,
                   help="CUDA-event samples when Triton is not installed")
    p.add_argument("--rep-ms", type=int, default=1000,
                   help="milliseconds of runs for triton.testing.do_bench")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    results = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
