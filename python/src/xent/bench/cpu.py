"""The CPU fallback (``xent-cpu-pipeline``) beside hand-written C loops.

    XENT_OPT=build/bin/xent-opt python3 -m xent.bench.cpu \\
        [--rows 1024] [--vocab 32768] [--dtypes f32 bf16] [--repeat 9] [--json out.json]

In one process, on the same inputs (random logits, int64 targets, 1 in 7
ignored, mean reduction), it times the joint loss + gradient and the loss
alone:

* xent: one ``xent.cross_entropy_and_grad`` (or ``xent.cross_entropy``)
  lowered by ``xent-cpu-pipeline`` with ``threads=1`` and with
  ``threads=2``. The gradient is written into the caller's array
  (``bufferization.materialize_in_destination``), as the C loops write
  theirs.
* the same loss as C, compiled here with the system's ``cc``: ``-O3``
  (scalar ``expf``); ``-O3 -march=native -ffast-math`` (libmvec's vector
  ``expf``); the latter with OpenMP over rows on 2 threads. Per row: the
  max, the sum of exponentials, then the gradient, as xent does.

Each figure is the minimum wall clock of ``--repeat`` calls after a warm-up
call; ``xent / C`` divides xent's time by the C loop's with the same thread
count. The loss's and the gradient's relative errors against float64 are
printed beside those of the same formula evaluated by NumPy in float32 and,
where this Python has PyTorch, of PyTorch's own float32 CPU loss.
Not a timed test: the figures go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List

import numpy as np

from ..runtime.bf16 import BF16Array, bf16_bits_to_float32, float32_to_bf16_bits
from ..runtime.driver import Library, compile_module
from ..runtime.pipelines import host_cpu_options, xent_cpu_pipeline_args

IGNORE = -100

_C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef XENT_THREADS
#define XENT_THREADS 1
#endif

static inline float load(const void *x, int64_t i, int bf16) {
  if (!bf16) return ((const float *)x)[i];
  uint32_t bits = (uint32_t)((const uint16_t *)x)[i] << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline void store(void *d, int64_t i, float v, int bf16) {
  if (!bf16) { ((float *)d)[i] = v; return; }
  uint32_t bits;
  memcpy(&bits, &v, 4);
  bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
  ((uint16_t *)d)[i] = (uint16_t)(bits >> 16);
}

/* Per row: max, sum of exp(x - max), the loss term, and (d != 0) the
   gradient scale * (softmax - onehot). Returns the mean loss. */
static float xent(const void *x, const int64_t *t, int64_t n, int64_t v,
                  float g, void *d, int bf16) {
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) count += t[r] != -100;
  float scale = g / (float)count;
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) num_threads(XENT_THREADS)
  for (int64_t r = 0; r < n; ++r) {
    const int64_t base = r * v;
    float m = -INFINITY;
    for (int64_t j = 0; j < v; ++j) m = fmaxf(m, load(x, base + j, bf16));
    float s = 0;
    for (int64_t j = 0; j < v; ++j) s += expf(load(x, base + j, bf16) - m);
    int64_t target = t[r];
    int valid = target != -100;
    if (valid) total += m + logf(s) - load(x, base + target, bf16);
    if (!d) continue;
    float k = valid ? scale / s : 0.0f;
    for (int64_t j = 0; j < v; ++j)
      store(d, base + j, k * expf(load(x, base + j, bf16) - m), bf16);
    if (valid) store(d, base + target, load(d, base + target, bf16) - scale, bf16);
  }
  return (float)(total / (double)count);
}

float joint_f32(const float *x, const int64_t *t, int64_t n, int64_t v, float g, float *d) {
  return xent(x, t, n, v, g, d, 0);
}
float joint_bf16(const uint16_t *x, const int64_t *t, int64_t n, int64_t v, float g, uint16_t *d) {
  return xent(x, t, n, v, g, d, 1);
}
float forward_f32(const float *x, const int64_t *t, int64_t n, int64_t v) {
  return xent(x, t, n, v, 1.0f, 0, 0);
}
float forward_bf16(const uint16_t *x, const int64_t *t, int64_t n, int64_t v) {
  return xent(x, t, n, v, 1.0f, 0, 1);
}
"""

#: name -> (extra cc flags, threads)
C_VARIANTS = {
    "C -O3 (scalar expf)": (["-O3"], 1),
    "C -O3 -march=native -ffast-math": (["-O3", "-march=native", "-ffast-math"], 1),
    "C, the same + OpenMP": (["-O3", "-march=native", "-ffast-math", "-fopenmp",
                              "-DXENT_THREADS=2"], 2),
}


def _module(dtype: str) -> str:
    return f"""
func.func @joint(%g: tensor<f32>, %x: tensor<?x?x{dtype}>, %t: tensor<?xi64>,
                 %d: memref<?x?x{dtype}>) -> tensor<f32> attributes {{llvm.emit_c_interface}} {{
  %l, %dx = xent.cross_entropy_and_grad mean %g, %x, %t {{ignore_index = {IGNORE} : i64}}
      : (tensor<f32>, tensor<?x?x{dtype}>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?x{dtype}>)
  bufferization.materialize_in_destination %dx in restrict writable %d
      : (tensor<?x?x{dtype}>, memref<?x?x{dtype}>) -> ()
  return %l : tensor<f32>
}}
func.func @forward(%x: tensor<?x?x{dtype}>, %t: tensor<?xi64>) -> tensor<f32>
    attributes {{llvm.emit_c_interface}} {{
  %l = xent.cross_entropy mean %x, %t {{ignore_index = {IGNORE} : i64}}
      : (tensor<?x?x{dtype}>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}}
"""


def _build_c(flags: List[str], work: str, name: str) -> ctypes.CDLL:
    src = os.path.join(work, "xent_ref.c")
    with open(src, "w") as f:
        f.write(_C_SOURCE)
    so = os.path.join(work, f"{name}.so")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", *flags, src, "-o", so, "-lm"], check=True)
    lib = ctypes.CDLL(so)
    ptr = ctypes.c_void_p
    for fn in ("joint_f32", "joint_bf16"):
        getattr(lib, fn).argtypes = [ptr, ptr, ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ptr]
        getattr(lib, fn).restype = ctypes.c_float
    for fn in ("forward_f32", "forward_bf16"):
        getattr(lib, fn).argtypes = [ptr, ptr, ctypes.c_int64, ctypes.c_int64]
        getattr(lib, fn).restype = ctypes.c_float
    return lib


def _best(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def _reference(x64: np.ndarray, t: np.ndarray):
    n = x64.shape[0]
    m = x64.max(1, keepdims=True)
    e = np.exp(x64 - m)
    s = e.sum(1, keepdims=True)
    valid = t != IGNORE
    rows = np.arange(n)[valid]
    loss = (m[valid, 0] + np.log(s[valid, 0]) - x64[rows, t[valid]]).mean()
    grad = e / s
    grad[rows, t[valid]] -= 1
    grad[~valid] = 0
    return loss, grad / valid.sum()


def _errors(loss, grad, ref_loss, ref_grad):
    return (abs(float(loss) - ref_loss) / abs(ref_loss),
            float(np.linalg.norm(grad - ref_grad) / np.linalg.norm(ref_grad)))


def run(rows: int, vocab: int, dtype: str, repeat: int, opt: str, work: str,
        portable: bool = False) -> Dict:
    # The pipeline's options for this host's CPU (the libraries are compiled
    # for it: native bf16 conversions where it has them), unless `portable`.
    host_options = {} if portable else host_cpu_options()
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    t = rng.integers(0, vocab, rows).astype(np.int64)
    t[::7] = IGNORE
    bf16 = dtype == "bf16"
    xin = float32_to_bf16_bits(x) if bf16 else x
    x64 = (bf16_bits_to_float32(xin) if bf16 else x).astype(np.float64)
    ref_loss, ref_grad = _reference(x64, t)
    g = np.array(1.0, np.float32)
    out = np.zeros_like(xin)

    def as_f64(d):
        return (bf16_bits_to_float32(d) if bf16 else d).astype(np.float64)

    result: Dict = {"rows": rows, "vocab": vocab, "dtype": dtype, "joint": {}, "forward": {},
                    "errors": {}}
    text = _module(dtype)
    xarg, darg = (BF16Array(xin), BF16Array(out)) if bf16 else (xin, out)
    xent = {}
    for threads in (1, 2):
        lib = Library(compile_module(
            text, xent_cpu_pipeline_args(threads=threads, **host_options), opt))
        xent[threads] = lib
        name = f"xent, {threads} thread{'s' if threads > 1 else ''}"
        result["joint"][name] = _best(lambda: lib.call("joint", [g, xarg, t, darg],
                                                       results=[("f32", 0)]), repeat)
        result["forward"][name] = _best(lambda: lib.call("forward", [xarg, t],
                                                         results=[("f32", 0)]), repeat)
    loss = xent[1].call("joint", [g, xarg, t, darg], results=[("f32", 0)])[0]
    result["errors"]["xent"] = _errors(loss, as_f64(out), ref_loss, ref_grad)

    # NumPy float32: the formula in the inputs' f32 values, f32 arithmetic.
    x32 = x64.astype(np.float32)
    m = x32.max(1, keepdims=True)
    e = np.exp(x32 - m)
    s = e.sum(1, keepdims=True, dtype=np.float32)
    valid = t != IGNORE
    r = np.arange(rows)[valid]
    loss32 = (m[valid, 0] + np.log(s[valid, 0]) - x32[r, t[valid]]).mean(dtype=np.float32)
    grad32 = e / s
    grad32[r, t[valid]] -= 1
    grad32[~valid] = 0
    grad32 /= np.float32(valid.sum())
    if bf16:
        grad32 = bf16_bits_to_float32(float32_to_bf16_bits(grad32))
    result["errors"]["NumPy float32"] = _errors(loss32, grad32.astype(np.float64), ref_loss,
                                                ref_grad)
    # PyTorch's float32 CPU kernels, where this Python has PyTorch.
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        xt = torch.from_numpy(x32.copy()).requires_grad_()
        loss_t = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), ignore_index=IGNORE)
        loss_t.backward()
        grad_t = xt.grad.numpy()
        if bf16:
            grad_t = bf16_bits_to_float32(float32_to_bf16_bits(grad_t))
        result["errors"][f"PyTorch {torch.__version__} float32"] = _errors(
            float(loss_t), grad_t.astype(np.float64), ref_loss, ref_grad)

    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    for name, (flags, _) in C_VARIANTS.items():
        lib = _build_c(flags, work, f"ref{len(result['joint'])}")
        joint = getattr(lib, f"joint_{dtype}")
        forward = getattr(lib, f"forward_{dtype}")
        result["joint"][name] = _best(
            lambda: joint(ptr(xin), ptr(t), rows, vocab, 1.0, ptr(out)), repeat)
        result["forward"][name] = _best(lambda: forward(ptr(xin), ptr(t), rows, vocab), repeat)
        if name.startswith("C -O3 -march"):
            loss = joint(ptr(xin), ptr(t), rows, vocab, 1.0, ptr(out))
            result["errors"]["C -march=native -ffast-math"] = _errors(loss, as_f64(out),
                                                                      ref_loss, ref_grad)
    return result


def _print(result: Dict) -> None:
    print(f"\n{result['dtype']} logits {result['rows']} x {result['vocab']}, int64 targets "
          f"(1 in 7 ignored), mean; min of the calls, wall clock")
    print(f"{'variant':36} {'joint ms':>9} {'forward ms':>11}")
    for name in result["joint"]:
        print(f"{name:36} {result['joint'][name]:9.2f} {result['forward'][name]:11.2f}")
    j, f = result["joint"], result["forward"]
    pairs = [("xent, 1 thread", "C -O3 -march=native -ffast-math"),
             ("xent, 2 threads", "C, the same + OpenMP"),
             ("xent, 1 thread", "C -O3 (scalar expf)")]
    for a, b in pairs:
        print(f"{a} / {b}: joint {j[a] / j[b]:.2f}x, forward {f[a] / f[b]:.2f}x")
    for name, (le, ge) in result["errors"].items():
        print(f"error vs float64, {name}: loss {le:.2e}, gradient (relative L2) {ge:.2e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--dtypes", nargs="+", default=["f32", "bf16"], choices=["f32", "bf16"])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json")
    parser.add_argument("--portable", action="store_true",
                        help="xent-cpu-pipeline's portable defaults, not the host CPU's options "
                             "(native-bf16 where it converts bf16 in hardware)")
    args = parser.parse_args(argv)
    opt = os.environ.get("XENT_OPT", "xent-opt")
    results = []
    with tempfile.TemporaryDirectory(prefix="xent_bench_cpu_") as work:
        for dtype in args.dtypes:
            results.append(run(args.rows, args.vocab, dtype, args.repeat, opt, work,
                               args.portable))
            _print(results[-1])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
