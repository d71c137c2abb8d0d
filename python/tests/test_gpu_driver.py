"""xent.runtime.gpu without a GPU: pipeline, descriptors, streams, the kernel cache,
compilation against libxent_cuda_runtime.so, and the runtime's behaviour
without a CUDA driver. (The tests that run kernels are in python/tests_gpu.)

Compilation tests need the CUDA toolkit's ptxas and the runtime library
(built when CMake finds the toolkit); they are skipped without them.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from xent.runtime import driver, gpu, library
from xent.runtime.driver import DriverError

LLVM_BIN = os.environ.get("XENT_LLVM_BIN", driver.DEFAULT_LLVM_BIN)
MLIR_OPT = os.path.join(LLVM_BIN, "mlir-opt")
LLVM_NM = os.path.join(LLVM_BIN, "llvm-nm")
PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
STUB_LIBCUDA = "/usr/local/cuda/lib64/stubs/libcuda.so"
RUNTIME = gpu.find_runtime_library()
KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "tests_gpu", "kernels.mlir")

needs_toolchain = pytest.mark.skipif(
    not (os.access(MLIR_OPT, os.X_OK) and os.access(PTXAS, os.X_OK) and RUNTIME),
    reason="needs mlir-opt, ptxas and libxent_cuda_runtime.so (CUDA toolkit)")


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class FakeDevice:
    def __init__(self, type_, index=None):
        self.type, self.index = type_, index


class FakeTensor:
    """What xent.runtime.gpu reads of a torch.Tensor."""

    def __init__(self, ptr, shape, strides, dtype="float32", device=("cuda", 0)):
        self._ptr, self.shape, self._strides = ptr, tuple(shape), tuple(strides)
        self.dtype, self.device = FakeDtype(dtype), FakeDevice(*device)

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides


class FakeCudaArray:
    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides, "version": 2}


# --------------------------------------------------------------------------- pure Python

def test_pipeline_args():
    (arg,) = gpu.gpu_pipeline_args()
    assert arg.startswith("--pass-pipeline=builtin.module(gpu-kernel-outlining,")
    assert "func.func(gpu-async-region)" in arg
    assert "cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin opt-level=3" in arg
    assert "cubin-chip=sm_100a" in gpu.gpu_pipeline_args(chip="sm_100a")[0]
    with pytest.raises(ValueError, match="chip"):
        gpu.gpu_pipeline_args(chip="90")
    with pytest.raises(ValueError, match="format"):
        gpu.gpu_pipeline_args(format="cubin")


def test_memref_type_parse():
    t = gpu.MemRefType.parse("memref<?x4xbf16>")
    assert (t.element_type, t.shape, t.identity, t.rank) == ("bf16", (None, 4), True, 2)
    assert gpu.MemRefType.parse("tensor<f32>").shape == ()
    s = gpu.MemRefType.parse("memref<?x?xf32, strided<[?, ?], offset: ?>>")
    assert not s.identity and s.rank == 2
    for bad in ("memref<?xf8E4M3>", "memref<?xf32, affine_map<(d0) -> (d0)>>", "vector<4xf32>"):
        with pytest.raises(ValueError):
            gpu.MemRefType.parse(bad)


def test_descriptor_from_tensor_is_zero_copy():
    t = FakeTensor(0x7f0000001000, (3, 5), (10, 2), "bfloat16", ("cuda", 1))
    view = gpu._tensor_view(t, 0)
    assert (view.element_type, view.device, view.is_cuda) == ("bf16", 1, True)
    d = gpu._descriptor(view)
    assert d.allocated == d.aligned == 0x7f0000001000 and d.offset == 0
    assert list(d.sizes) == [3, 5] and list(d.strides) == [10, 2]
    assert view.nbytes_span == (2 * 10 + 4 * 2 + 1) * 2


@pytest.mark.parametrize("dtype,elem", [("float32", "f32"), ("float16", "f16"),
                                        ("bfloat16", "bf16"), ("int64", "i64"), ("int32", "i32")])
def test_torch_dtypes(dtype, elem):
    assert gpu._tensor_view(FakeTensor(16, (2,), (1,), dtype), 0).element_type == elem


def test_cuda_array_interface():
    view = gpu._tensor_view(FakeCudaArray(4096, (2, 3), "<i8", (48, 8)), 0)
    assert (view.element_type, view.shape, view.strides) == ("i64", (2, 3), (6, 1))
    view = gpu._tensor_view(FakeCudaArray(4096, (2, 3)), 0)
    assert view.strides == (3, 1)


def test_checks_against_signature():
    spec = gpu.MemRefType.parse("memref<?x8xf32>")
    ok = gpu._tensor_view(FakeTensor(256, (4, 8), (8, 1)), 0)
    gpu._check_view(ok, spec, 0)
    gpu._check_view(gpu._tensor_view(FakeTensor(256, (1, 8), (99, 1)), 0), spec, 0)
    cases = [
        (FakeTensor(256, (4, 8), (8, 1), device=("cpu", None)), TypeError, "CPU"),
        (FakeTensor(256, (4, 8), (8, 1), "float16"), TypeError, "element type f32"),
        (FakeTensor(256, (32,), (1,)), ValueError, "rank 2"),
        (FakeTensor(256, (4, 7), (7, 1)), ValueError, "dimension 1 must be 8"),
        (FakeTensor(256, (4, 8), (1, 4)), ValueError, "contiguous"),
    ]
    for tensor, error, message in cases:
        with pytest.raises(error, match=message):
            gpu._check_view(gpu._tensor_view(tensor, 0), spec, 0)
    strided = gpu.MemRefType.parse("memref<?x?xf32, strided<[?, ?], offset: ?>>")
    gpu._check_view(gpu._tensor_view(FakeTensor(256, (4, 8), (1, 4)), 0), strided, 0)
    with pytest.raises(TypeError, match="dtype"):
        gpu._tensor_view(FakeTensor(256, (2,), (1,), "complex64"), 0)
    with pytest.raises(TypeError, match="CUDA tensor"):
        gpu._tensor_view([1, 2], 0)


def test_stream_resolution():
    class Stream:
        cuda_stream = 0x1234

    assert gpu._stream_handle(gpu.SYNCHRONOUS, 0) is None
    assert gpu._stream_handle(0xabc, 0) == 0xabc
    assert gpu._stream_handle(Stream(), 0) == 0x1234
    assert gpu._stream_handle(None, None) is None  # no CUDA tensor: synchronous
    with pytest.raises(ValueError):
        gpu._stream_handle("current", 0)
    with pytest.raises(TypeError):
        gpu._stream_handle(object(), 0)


def test_results_without_torch(monkeypatch):
    """Result descriptors become owning DeviceArrays; aliases of arguments own nothing."""
    # GpuFunction lives in xent.runtime.library, which looks torch up there.
    monkeypatch.setattr(library, "_torch", lambda: None)
    freed = []

    class FakeRuntime:
        def mgpuSetDefaultDevice(self, device):
            pass

        def mgpuMemFree(self, ptr, stream):
            freed.append((ptr.value, stream.value))

    fn = gpu.GpuFunction.__new__(gpu.GpuFunction)
    fn.library = type("L", (), {"runtime": FakeRuntime()})()
    fn.result_types = [gpu.MemRefType.parse("memref<?x2xbf16>"), gpu.MemRefType.parse("memref<f32>"),
                       gpu.MemRefType.parse("memref<?xf32>")]
    d0, d1, d2 = (gpu._descriptor_type(r)() for r in (2, 0, 1))
    d0.allocated, d0.aligned, d0.offset = 0x10000, 0x10000, 4
    d0.sizes[0], d0.sizes[1], d0.strides[0], d0.strides[1] = 3, 2, 2, 1
    d1.allocated = d1.aligned = 0x20000
    d2.allocated = d2.aligned = 0x30040  # inside the argument below
    d2.sizes[0], d2.strides[0] = 4, 1
    arg = gpu._tensor_view(FakeTensor(0x30000, (1024,), (1,)), 0)
    a0, a1, a2 = fn._wrap_results([d0, d1, d2], [arg], stream=0x55, device=0)
    cai = a0.__cuda_array_interface__
    assert cai["data"] == (0x10000 + 8, False) and cai["shape"] == (3, 2)
    assert cai["strides"] == (4, 2) and cai["typestr"] == "<i2"
    assert a1.shape == () and a2.owner is arg
    del a0, a1, cai
    assert sorted(freed) == [(0x10000, 0x55), (0x20000, 0x55)]


def test_kernel_cache_index(tmp_path, monkeypatch):
    cache = gpu.KernelCache(str(tmp_path))
    config = {"op": "test", "dtype": "bf16"}
    assert cache.lookup(config) is None
    with pytest.raises(DriverError, match='no compiled kernel for {"dtype": "bf16", "op": "test"}'):
        cache.path(config)
    built = []

    def fake_compile(text, pipeline_args, opt_tool, out_dir):
        built.append(text)
        path = os.path.join(out_dir, "xent_fake.so")
        open(path, "w").close()
        return path

    monkeypatch.setattr(gpu, "compile_gpu_module", fake_compile)
    assert cache.path(config, lambda: "module {}") == str(tmp_path / "xent_fake.so")
    assert cache.path(config, lambda: "other") == str(tmp_path / "xent_fake.so")
    assert built == ["module {}"]
    (entry,) = (tmp_path / "index").iterdir()
    assert json.loads(entry.read_text())["config"] == config
    # A copy of the directory is found without the compiler.
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path, copy, ignore=shutil.ignore_patterns("copy"))
    assert gpu.KernelCache(str(copy)).lookup(config) == str(copy / "xent_fake.so")
    assert gpu.KernelCache.key(config) != gpu.KernelCache.key({"op": "test", "dtype": "f16"})


def test_kernel_cache_rebuilds_what_another_compiler_built(tmp_path, monkeypatch):
    # An entry records the compiler that built it; where another compiler
    # is at hand the entry is rebuilt (an older xent-opt wrote other kernels
    # under the same configuration); where none is, or rebuilding fails,
    # the entry is served.
    cache = gpu.KernelCache(str(tmp_path))
    config = {"op": "test", "dtype": "f32"}
    built = []

    def fake_compile(text, pipeline_args, opt_tool, out_dir):
        built.append(text)
        path = os.path.join(out_dir, f"xent_{len(built)}.so")
        open(path, "w").close()
        return path

    monkeypatch.setattr(gpu, "compile_gpu_module", fake_compile)
    monkeypatch.setattr(gpu, "compiler_identity", lambda tool=None: "old")
    first = cache.path(config, lambda: "module {}")
    (entry,) = (tmp_path / "index").iterdir()
    assert json.loads(entry.read_text())["compiler"] == "old"
    assert cache.path(config, lambda: "module {}") == first and len(built) == 1
    monkeypatch.setattr(gpu, "compiler_identity", lambda tool=None: "new")
    second = cache.path(config, lambda: "module {}")
    assert second != first and len(built) == 2
    assert json.loads(entry.read_text())["compiler"] == "new"
    # No build callable (a GPU machine): the entry as it is.
    monkeypatch.setattr(gpu, "compiler_identity", lambda tool=None: "newer")
    assert cache.path(config) == second
    # Rebuilding fails: the entry is served, with a warning.

    def failing(*args, **kwargs):
        raise DriverError("tool not found: mlir-opt")

    monkeypatch.setattr(gpu, "compile_gpu_module", failing)
    with pytest.warns(RuntimeWarning, match="built by another compiler"):
        assert cache.path(config, lambda: "module {}") == second


def test_compiler_identity(tmp_path, monkeypatch):
    tool = tmp_path / "xent-opt"
    tool.write_bytes(b"one")
    tool.chmod(0o755)
    a = gpu.compiler_identity(str(tool))
    assert a == gpu.compiler_identity(str(tool))
    tool.write_bytes(b"two!")
    assert gpu.compiler_identity(str(tool)) not in (None, a)
    assert gpu.compiler_identity(str(tmp_path / "missing")) is None


def test_runtime_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv("XENT_CUDA_RUNTIME", str(tmp_path / "missing.so"))
    assert gpu.find_runtime_library() is None
    with pytest.raises(DriverError, match="libxent_cuda_runtime.so not found"):
        gpu.install_runtime(str(tmp_path))


# --------------------------------------------------------------------------- compilation

@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("gpu-cache"))
    with open(KERNELS) as f:
        so = gpu.compile_gpu_module(f.read(), out_dir=cache, runtime=RUNTIME)
    return cache, so


def _nm(path, *flags):
    out = subprocess.run([LLVM_NM, "-D", *flags, "--format=just-symbols", path],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return set(out.split())


@needs_toolchain
def test_compiled_library_links_only_the_runtime(compiled):
    cache, so = compiled
    assert os.path.dirname(so) == cache
    runtime_copy = os.path.join(cache, gpu.RUNTIME_NAME)
    assert open(runtime_copy, "rb").read() == open(RUNTIME, "rb").read()
    undefined = {s for s in _nm(so, "--undefined-only") if not s.startswith(("_ITM", "__"))}
    mgpu = {s for s in undefined if s.startswith("mgpu")}
    assert {"mgpuModuleLoad", "mgpuModuleGetFunction", "mgpuLaunchKernel",
            "mgpuLaunchClusterKernel", "mgpuMemAlloc", "mgpuStreamCreate"} <= mgpu
    assert mgpu <= _nm(runtime_copy, "--defined-only")
    assert undefined == mgpu, "host code needs something besides the runtime"
    dynamic = subprocess.run([os.path.join(LLVM_BIN, "llvm-readelf"), "-d", so], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
    assert "[libxent_cuda_runtime.so]" in dynamic and "[$ORIGIN]" in dynamic
    defined = _nm(so, "--defined-only")
    for name in ("vadd_bf16", "rowsum_big_f32", "rowsum_strided_f32", "scale_alloc_f32"):
        assert f"_mlir_ciface_{name}" in defined


@needs_toolchain
def test_compilation_is_cached(compiled):
    cache, so = compiled
    with open(KERNELS) as f:
        assert gpu.compile_gpu_module(f.read(), out_dir=cache, runtime=RUNTIME) == so


@needs_toolchain
def test_lowering_failure_is_a_tool_error(tmp_path):
    bad = "module attributes {gpu.container_module} { gpu.module @k { gpu.func @f() kernel { " \
          "%x = \"nvvm.unknown_op\"() : () -> i32 gpu.return } } }"
    with pytest.raises(driver.ToolError):
        gpu.compile_gpu_module(bad, out_dir=str(tmp_path), runtime=RUNTIME)


@needs_toolchain
@pytest.mark.skipif(not os.path.exists(STUB_LIBCUDA), reason="no CUDA driver stub")
def test_no_driver_errors_are_exceptions(compiled, tmp_path):
    """Without a driver (the toolkit's stub as libcuda.so.1) a call raises CudaError; nothing aborts."""
    cache, so = compiled
    (tmp_path / "libcuda.so.1").symlink_to(STUB_LIBCUDA)
    script = textwrap.dedent(f"""
        from xent.runtime import gpu
        lib = gpu.GpuLibrary({so!r})
        assert lib.runtime.device_count() == 0
        a = type("A", (), {{"__cuda_array_interface__": {{
            "data": (0x1000, False), "shape": (10,), "typestr": "<f4", "version": 2}}}})()
        try:
            lib.function("vadd_f32", ["memref<?xf32>"] * 3)(a, a, a)
        except gpu.CudaError as e:
            print("CudaError", e.code)
            print(e)
        print("still alive")
    """)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), XENT_CUDA_QUIET="1")
    proc = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "CudaError 34" in out and "CUDA_ERROR_STUB_LIBRARY" in out
    assert "mgpuLaunchKernel: no kernel function" in out
    assert out.rstrip().endswith("still alive")
    assert proc.stderr.decode() == ""  # XENT_CUDA_QUIET


@needs_toolchain
def test_device_allocator_switch(tmp_path):
    """xentSetDeviceAllocator installs a caller's allocator and nulls remove
    it; Runtime.use_torch_allocator installs PyTorch's only in a process that
    imported torch (here a stand-in module: no GPU is touched)."""
    (tmp_path / "libcuda.so.1").symlink_to(STUB_LIBCUDA)
    script = textwrap.dedent(f"""
        import sys, types
        from xent.runtime import gpu
        rt = gpu.Runtime.load({RUNTIME!r})
        assert rt.xentHasDeviceAllocator() == 0
        assert rt.use_torch_allocator() is False
        sys.modules["torch"] = types.ModuleType("torch")
        assert rt.use_torch_allocator() is True
        assert rt.xentHasDeviceAllocator() == 1
        rt.xentSetDeviceAllocator(gpu._ALLOCATE_FN(), gpu._RELEASE_FN(), None)
        assert rt.xentHasDeviceAllocator() == 0
        print("switch ok")
    """)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), XENT_CUDA_QUIET="1")
    proc = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "switch ok" in proc.stdout.decode()
