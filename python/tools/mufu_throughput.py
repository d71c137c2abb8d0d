"""Throughput and accuracy of the SFU (MUFU) forms the row kernels could use
for the softcap's tanh and the exponentials, on the GPU machine (needs cupy
and nvcc / cuobjdump; not part of the package):

    python3 python/tools/mufu_throughput.py

Each form runs four independent chains per thread over a full grid; the
result is thread-instructions per clock per SM at the nominal clock, with
the SASS instructions the PTX became. Then tanh.approx.f32 and the f16x2
path (both inputs rounded to f16, tanh.approx.f16x2, widened) against
float64 tanh, and the error of the softcap's slope 1 - t² from each.
docs/performance.md, "The softcap's MUFU bound".
"""
import cupy as cp, numpy as np, subprocess, tempfile
src = r'''
extern "C" __global__ void k_OP(float* out, int iters) {
  unsigned a = threadIdx.x * 0x3c003c00u + blockIdx.x, b = a ^ 0x1234u, c = a + 77u, d = a * 3u;
  for (int i = 0; i < iters; ++i) {
    asm volatile("BODY" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = __int_as_float(a ^ b ^ c ^ d);
}'''
ops = {
 "tanh_f32": "tanh.approx.f32 %0, %0; tanh.approx.f32 %1, %1; tanh.approx.f32 %2, %2; tanh.approx.f32 %3, %3;",
 "tanh_f16x2": "tanh.approx.f16x2 %0, %0; tanh.approx.f16x2 %1, %1; tanh.approx.f16x2 %2, %2; tanh.approx.f16x2 %3, %3;",
 "tanh_bf16x2": "tanh.approx.bf16x2 %0, %0; tanh.approx.bf16x2 %1, %1; tanh.approx.bf16x2 %2, %2; tanh.approx.bf16x2 %3, %3;",
 "ex2_f32": "ex2.approx.ftz.f32 %0, %0; ex2.approx.ftz.f32 %1, %1; ex2.approx.ftz.f32 %2, %2; ex2.approx.ftz.f32 %3, %3;",
 "ex2_f16x2": "ex2.approx.f16x2 %0, %0; ex2.approx.f16x2 %1, %1; ex2.approx.f16x2 %2, %2; ex2.approx.f16x2 %3, %3;",
 "fma_f32": "fma.rn.f32 %0, %0, %1, %2; fma.rn.f32 %1, %1, %2, %3; fma.rn.f32 %2, %2, %3, %0; fma.rn.f32 %3, %3, %0, %1;",
}
dev = cp.cuda.Device(0); sms = dev.attributes["MultiProcessorCount"]
clk = dev.attributes["ClockRate"] * 1e3
out = cp.empty(sms * 8 * 1024, dtype=cp.float32)
for name, body in ops.items():
    code = src.replace("OP", name).replace("BODY", body)
    mod = cp.RawModule(code=code, options=("-arch=sm_90",))
    k = mod.get_function("k_" + name)
    iters = 4096
    k((sms * 8,), (1024,), (out, np.int32(iters)))
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record(); k((sms * 8,), (1024,), (out, np.int32(iters))); e.record(); e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e)
    instr = sms * 8 * 1024 * iters * 4
    print(f"{name:12s} {instr / (ms * 1e-3) / sms / clk:6.1f} thread-instr/clk/SM (clock {clk/1e9:.2f} GHz nominal)")
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.cu", "w").write(code)
        r = subprocess.run(f"nvcc -arch=sm_90 -cubin -o {d}/k.cubin {d}/k.cu && cuobjdump -sass {d}/k.cubin | grep -oE '(MUFU|HMUFU|FFMA|F2FP|HFMA2|HADD2)[A-Z0-9_.]*' | sort | uniq -c | sort -rn | head -4", shell=True, capture_output=True, text=True)
        print("   ", r.stdout.strip().replace("\n", "\n    ")[:600], r.stderr[-200:])

acc = r'''
#include <cuda_fp16.h>
extern "C" __global__ void acc(const float* y, float* t32, float* t16, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i + 1 >= n) return;
  float a = y[2 * i], b = y[2 * i + 1], r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a)); t32[2 * i] = r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(b)); t32[2 * i + 1] = r;
  __half2 h = __floats2half2_rn(a, b); unsigned u = *(unsigned*)&h, v;
  asm("tanh.approx.f16x2 %0, %1;" : "=r"(v) : "r"(u));
  __half2 o = *(__half2*)&v; t16[2 * i] = __low2float(o); t16[2 * i + 1] = __high2float(o);
}'''
k = cp.RawModule(code=acc, options=("-arch=sm_90",)).get_function("acc")
ys = np.concatenate([np.linspace(-12, 12, 2_000_001), np.logspace(-8, 1.2, 200_000), -np.logspace(-8, 1.2, 200_000)]).astype(np.float32)
if len(ys) % 2: ys = ys[:-1]
y = cp.asarray(ys); t32 = cp.empty_like(y); t16 = cp.empty_like(y)
k(((len(ys) // 2 + 255) // 256,), (256,), (y, t32, t16, np.int32(len(ys))))
ref = np.tanh(ys.astype(np.float64))
for name, t in [("tanh.approx.f32", t32), ("tanh.approx.f16x2", t16)]:
    t = cp.asnumpy(t).astype(np.float64); err = np.abs(t - ref)
    rel = err / np.maximum(np.abs(ref), 1e-30)
    slope_err = np.abs((1 - t * t) - (1 - ref * ref))
    print(f"{name:18s} max abs {err.max():.3e}  max rel {rel.max():.3e} (|y|>1e-4: {rel[np.abs(ys) > 1e-4].max():.3e})  slope abs {slope_err.max():.3e}")
