"""xent.runtime.gpu and libxent_cuda_runtime.so on a CUDA device, with PyTorch tensors.

Runs where PyTorch sees a GPU (skipped elsewhere); the kernels come from
``$XENT_CACHE_DIR`` (filled by python/tools/make_bundle.py) or are compiled on first use.
Prints a timing table at the end (``-s`` shows it).
"""

import ctypes
import statistics
import time

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from xent.runtime import gpu  # noqa: E402

import kernel_configs  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i32": torch.int32, "i64": torch.int64}
STRIDED = "memref<?x?xf32, strided<[?, ?], offset: ?>>"
TIMINGS = []


@pytest.fixture(scope="module")
def lib():
    return gpu.KernelCache().get(kernel_configs.suite_config(), kernel_configs.kernels_text)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def random(n, dtype):
    if dtype.is_floating_point:
        return torch.randn(n, device="cuda").to(dtype)
    return torch.randint(-1000, 1000, (n,), device="cuda", dtype=dtype)


def vadd(lib, t):
    return lib.function(f"vadd_{t}", [f"memref<?x{t}>"] * 3)


# --------------------------------------------------------------------------- results

@pytest.mark.parametrize("t", list(DTYPES))
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_vadd_current_stream(lib, t, n):
    a, b = random(n, DTYPES[t]), random(n, DTYPES[t])
    c = torch.full_like(a, 7)  # poisoned
    vadd(lib, t)(a, b, c)
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)


def test_vadd_empty(lib):
    a = torch.empty(0, device="cuda")
    vadd(lib, "f32")(a, a, a)  # an empty grid: nothing launched, no error


def test_vadd_side_stream_no_sync(lib):
    """On a non-default stream the call enqueues after a running kernel and returns at once."""
    n = 1 << 22
    fn = vadd(lib, "f32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a, b = random(n, torch.float32), random(n, torch.float32)
        c = torch.full_like(a, float("nan"))
        fn(a, b, c)  # warm: module load and function lookup
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time ahead of the launch
        t0 = time.perf_counter()
        fn(a, b, c)
        returned_after = time.perf_counter() - t0
        pending = not s.query()
        ref = a + b
    s.synchronize()
    assert pending, "the call waited for the stream"
    assert returned_after < 0.05
    torch.testing.assert_close(c, ref, rtol=0, atol=0)
    TIMINGS.append(("vadd on a side stream behind a 0.1 s kernel: call returned after",
                    f"{returned_after * 1e6:.0f} us"))


def test_vadd_default_stream_no_sync(lib):
    n = 1 << 20
    fn = vadd(lib, "f32")
    a, b = random(n, torch.float32), random(n, torch.float32)
    c = torch.empty_like(a)
    fn(a, b, c)
    torch.cuda._sleep(200_000_000)
    fn(a, b, c)
    pending = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    assert pending
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)


def test_vadd_explicit_streams(lib):
    n = 4096
    fn = vadd(lib, "f32")
    a, b = random(n, torch.float32), random(n, torch.float32)
    c1, c2, c3 = (torch.zeros_like(a) for _ in range(3))
    torch.cuda.synchronize()  # side streams are not ordered after the default stream
    s = torch.cuda.Stream()
    fn(a, b, c1, stream=s)           # a torch.cuda.Stream
    fn(a, b, c2, stream=s.cuda_stream)  # a raw CUstream
    s.synchronize()
    fn(a, b, c3, stream=gpu.SYNCHRONOUS)  # own stream, synchronized before returning
    for c in (c1, c2, c3):
        assert torch.equal(c, a + b)


def test_vadd_cluster(lib):
    n = 10_000
    a, b = random(n, torch.float32), random(n, torch.float32)
    c = torch.full_like(a, float("nan"))
    lib.function("vadd_f32_cluster", ["memref<?xf32>"] * 3)(a, b, c)
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)


@pytest.mark.parametrize("name,t", [("rowsum_f32", "f32"), ("rowsum_bf16", "bf16"),
                                    ("rowsum_big_f32", "f32")])
@pytest.mark.parametrize("shape", [(3, 1), (37, 1001), (512, 32000)])
def test_rowsum_dynamic_shared_memory(lib, name, t, shape):
    x = torch.randn(shape, device="cuda").to(DTYPES[t])
    out = torch.full((shape[0],), float("nan"), device="cuda")
    lib.function(name, [f"memref<?x?x{t}>", "memref<?xf32>"])(x, out)
    ref = x.double().sum(1)
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-3)


def test_rowsum_strided_views(lib):
    fn = lib.function("rowsum_strided_f32", [STRIDED, "memref<?xf32>"])
    base = torch.randn(64, 300, device="cuda")
    for x in (base[3:, ::2], base.t(), base[5:9, 7:], base):
        out = torch.full((x.shape[0],), float("nan"), device="cuda")
        fn(x, out)  # no copy: data_ptr and strides as they are
        torch.testing.assert_close(out.double(), x.double().sum(1), rtol=1e-5, atol=1e-3)


def test_allocated_result(lib):
    fn = lib.function("scale_alloc_f32", ["memref<?xf32>"], ["memref<?xf32>"])
    x = random(100_000, torch.float32)
    y = fn(x)
    assert y.is_cuda and y.dtype == torch.float32 and y.shape == x.shape
    assert y.data_ptr() != x.data_ptr()
    torch.testing.assert_close(y, 2 * x, rtol=0, atol=0)
    z = y[10:20].clone()  # views and ops on the result work like any tensor
    torch.testing.assert_close(z, 2 * x[10:20], rtol=0, atol=0)


def test_allocated_results_are_freed(lib):
    fn = lib.function("scale_alloc_f32", ["memref<?xf32>"], ["memref<?xf32>"])
    x = random(1 << 22, torch.float32)  # 16 MiB a result
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    for _ in range(300):  # 4.7 GiB if nothing were freed
        y = fn(x)
        del y
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    assert free_before - free_after < 512 << 20, (free_before, free_after)


# --------------------------------------------------------------------------- errors

def test_cpu_tensor_rejected(lib):
    a = torch.zeros(4)
    with pytest.raises(TypeError, match="CPU"):
        vadd(lib, "f32")(a, a, a)


def test_signature_checks(lib):
    a = torch.zeros(8, device="cuda")
    with pytest.raises(TypeError, match="element type f32"):
        vadd(lib, "f32")(a.half(), a, a)
    with pytest.raises(ValueError, match="contiguous"):
        lib.function("rowsum_f32", ["memref<?x?xf32>", "memref<?xf32>"])(
            torch.zeros(4, 4, device="cuda").t(), a[:4])
    with pytest.raises(ValueError, match="rank"):
        vadd(lib, "f32")(a.view(2, 4), a, a)


def test_launch_errors_are_reported_not_fatal(lib):
    a = torch.ones(16, device="cuda")
    with pytest.raises(gpu.CudaError, match="cuLaunchKernel"):
        lib.function("vadd_f32_bad_block", ["memref<?xf32>"] * 3)(a, a, a)
    x = torch.ones(4, 8, device="cuda")
    out = torch.zeros(4, device="cuda")
    with pytest.raises(gpu.CudaError, match="exceed the device's limit"):
        lib.function("rowsum_too_much_smem_f32", ["memref<?x?xf32>", "memref<?xf32>"])(x, out)
    # The context is intact.
    c = torch.empty_like(a)
    vadd(lib, "f32")(a, a, c)
    assert torch.equal(c, 2 * a)


def test_runtime_errors_direct(lib):
    rt = lib.runtime
    rt.clear_errors()
    assert not rt.mgpuMemAlloc(1 << 50, None, 0)  # 1 PiB
    assert rt.xentGetLastError() != 0
    assert b"mgpuMemAlloc: cuMemAllocAsync" in rt.xentGetErrorLog()
    rt.clear_errors()
    image = ctypes.create_string_buffer(b"not a cubin")
    rt._lib.mgpuModuleLoad.restype = ctypes.c_void_p
    rt._lib.mgpuModuleGetFunction.restype = ctypes.c_void_p
    handle = rt._lib.mgpuModuleLoad(image, ctypes.c_size_t(len(image)))
    assert handle
    assert not rt._lib.mgpuModuleGetFunction(ctypes.c_void_p(handle), b"f")
    assert b"cuModuleLoadData" in rt.xentGetErrorLog()
    rt._lib.mgpuModuleUnload(ctypes.c_void_p(handle))
    rt.clear_errors()
    assert rt.xentGetLastError() == 0
    assert rt.device_count() >= 1


# --------------------------------------------------------------------------- the xent kernel

def test_cross_entropy_mean_through_runtime():
    """xent.cross_entropy (bf16, mean) compiled by convert-xent-to-gpu, called like F.cross_entropy."""
    try:
        lib = gpu.KernelCache().get(kernel_configs.cross_entropy_config())
    except gpu.DriverError as e:
        pytest.skip(f"no compiled cross_entropy kernel: {e}")
    fn = lib.function("ce_mean", ["memref<?x?xbf16>", "memref<?xi64>"], ["memref<f32>"])
    for n, v in ((4, 10), (256, 32000), (1000, 50257)):
        x = (torch.randn(n, v, device="cuda") * 3).to(torch.bfloat16)
        t = torch.randint(0, v, (n,), device="cuda")
        t[::7] = -100
        loss = fn(x, t)
        ref = torch.nn.functional.cross_entropy(x.double(), t)
        assert loss.shape == () and loss.dtype == torch.float32
        torch.testing.assert_close(loss.double(), ref, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- timings

def _median_ms(fn, reps=20, inner=10):
    """Median over ``reps`` of the GPU time of ``inner`` back-to-back calls, per call."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def test_timings(lib):
    fn = vadd(lib, "f32")
    n = 1 << 26  # 256 MiB an operand
    a, b = random(n, torch.float32), random(n, torch.float32)
    c = torch.empty_like(a)
    fn(a, b, c)
    torch.add(a, b, out=c)
    ms_x = _median_ms(lambda: fn(a, b, c))
    ms_t = _median_ms(lambda: torch.add(a, b, out=c))
    gigabytes = 3 * 4 * n / 1e9  # two reads and a write
    for what, ms in (("vadd f32 2^26 (xent kernel)", ms_x), ("torch.add f32 2^26", ms_t)):
        TIMINGS.append((f"{what}, median of 20x10 calls",
                        f"{ms:.3f} ms, {gigabytes / (ms / 1e3):.0f} GB/s"))

    small = [random(1024, torch.float32) for _ in range(3)]
    for _ in range(10):
        fn(*small)
    torch.cuda.synchronize()
    calls = 2000
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*small)
    host_us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        torch.add(small[0], small[1], out=small[2])
    torch_us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    TIMINGS.append(("host time per call, n=1024 (xent.runtime.gpu, ctypes + runtime)",
                    f"{host_us:.1f} us"))
    TIMINGS.append(("host time per call, n=1024 (torch.add)", f"{torch_us:.1f} us"))
    assert ms_x > 0


def teardown_module(module):
    if TIMINGS:
        print("\n== timings (" + torch.cuda.get_device_name() + ")")
        for what, value in TIMINGS:
            print(f"  {what}: {value}")
