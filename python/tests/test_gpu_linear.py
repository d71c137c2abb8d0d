"""The GPU path of linear + cross-entropy without a GPU: the entry modules of
xent.runtime.linear, their compilation through xent-gpu-pipeline (only the
runtime's symbols left undefined, the GEMMs among them), and the checks of
the runtime's xentGemm* entry points that run before any CUDA call (with
the toolkit's driver stub as libcuda.so.1). The numbers are checked on the
H200: python/tests_gpu/test_linear_gpu.py.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from xent.runtime import gpu, linear

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XENT_OPT = os.environ.get("XENT_OPT") or os.path.join(
    os.environ.get("XENT_BUILD_DIR", os.path.join(ROOT, "build")), "bin", "xent-opt")
RUNTIME = gpu.find_runtime_library()
STUB_LIBCUDA = "/usr/local/cuda/lib64/stubs/libcuda.so"
LLVM_NM = os.path.join(os.environ.get("XENT_LLVM_BIN", "/usr/lib/llvm-22/bin"), "llvm-nm")

needs_compiler = pytest.mark.skipif(
    not (os.access(XENT_OPT, os.X_OK) and RUNTIME),
    reason="needs xent-opt and libxent_cuda_runtime.so (CUDA toolkit)")
needs_stub = pytest.mark.skipif(not (RUNTIME and os.path.exists(STUB_LIBCUDA)),
                                reason="needs the runtime and the CUDA driver stub")


def test_module_and_config():
    c = linear.linear_config(dtype="bf16", reduction="none", bias=True, chunk_rows=64)
    text = linear.linear_module(c)
    assert "xent.linear_cross_entropy_and_grad none %g, %h, %w bias %b, %t" in text
    assert "tensor<?xf32>" in text and "ignore_index = -100 : i64" in text
    assert linear.linear_pipeline_args(c) == [
        "--xent-gpu-pipeline=chip=sm_90a linear-chunk-rows=64"]
    auto = linear.linear_config(dtype="bf16", reduction="none", bias=True)
    assert linear.linear_pipeline_args(auto) == ["--xent-gpu-pipeline=chip=sm_90a"]
    assert auto != c and auto["source"] == c["source"]
    plain = linear.linear_config(dtype="f32", reduction="mean", bias=False, target="i32")
    assert "bias" not in linear.linear_module(plain) and "tensor<?xi32>" in linear.linear_module(plain)
    with pytest.raises(ValueError):
        linear.linear_config(dtype="f64", reduction="mean", bias=False)


def test_forward_only_module():
    """with_grad=False: xent.linear_cross_entropy, no grad_output argument and
    no gradient results; the gradient configurations are unchanged by it."""
    grad = linear.linear_config(dtype="bf16", reduction="mean", bias=True, z_loss_scale=1e-4)
    fwd = linear.linear_config(dtype="bf16", reduction="mean", bias=True, z_loss_scale=1e-4,
                               with_grad=False)
    assert fwd["op"] == "linear_cross_entropy" and grad["op"] == "linear_cross_entropy_and_grad"
    assert fwd["source"] != grad["source"]
    text = linear.linear_module(fwd)
    assert "xent.linear_cross_entropy mean %h, %w bias %b, %t" in text
    assert "%g" not in text and "%dh" not in text
    assert f"-> (tensor<f32>, tensor<f32>)" in text
    outs = linear.linear_module(linear.linear_config(
        dtype="f32", reduction="none", bias=False, destinations=True, with_grad=False))
    assert "%l_out: memref<?xf32>" in outs and "%dh_out" not in outs


@needs_compiler
@pytest.mark.parametrize("bias", [False, True])
def test_forward_only_compiles_without_gradient_gemms(tmp_path, bias):
    config = linear.linear_config(dtype="bf16", reduction="sum", bias=bias, with_grad=False)
    so = gpu.KernelCache(str(tmp_path)).path(config, lambda: linear.linear_module(config),
                                             linear.linear_pipeline_args(config), XENT_OPT)
    gemms = {s for s in _symbols(so, "--undefined-only") if s.startswith("xentGemm")}
    # The logits' product alone (with the bias in its epilogue).
    assert gemms == ({"xentGemmBias_bf16_f32"} if bias else {"xentGemm_bf16_f32"})


def _symbols(path, *flags):
    out = subprocess.run([LLVM_NM, "-D", *flags, "--format=just-symbols", path], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return set(out.split())


@needs_compiler
@pytest.mark.parametrize("dtype,bias", [("bf16", True), ("f32", False)])
def test_compiles_against_the_runtime(tmp_path, dtype, bias):
    config = linear.linear_config(dtype=dtype, reduction="mean", bias=bias, chunk_rows=128)
    cache = gpu.KernelCache(str(tmp_path))
    so = cache.path(config, lambda: linear.linear_module(config),
                    linear.linear_pipeline_args(config), XENT_OPT)
    undefined = {s for s in _symbols(so, "--undefined-only") if not s.startswith(("_ITM", "__"))}
    gemms = {s for s in undefined if s.startswith("xentGemm")}
    expected = ({f"xentGemmBias_{dtype}_f32", f"xentGemm_{dtype}_{dtype}", f"xentGemm_{dtype}_f32"}
                if bias else {"xentGemm_f32_f32"})
    assert gemms == expected
    assert undefined <= _symbols(RUNTIME, "--defined-only")
    assert undefined == gemms | {s for s in undefined if s.startswith("mgpu")}
    assert f"_mlir_ciface_{linear.ENTRY}" in _symbols(so, "--defined-only")


@needs_stub
def test_gemm_arguments_are_checked(tmp_path):
    """Shapes, strides and the bias are checked before any CUDA call; each
    failure is recorded, nothing aborts; then a well-formed call reaches the
    driver (here the stub, which reports that there is none)."""
    (tmp_path / "libcuda.so.1").symlink_to(STUB_LIBCUDA)
    script = textwrap.dedent(f"""
        import ctypes
        rt = ctypes.CDLL({RUNTIME!r})
        rt.xentGetLastErrorMessage.restype = ctypes.c_char_p
        buf = (ctypes.c_float * 64)()
        p = ctypes.cast(buf, ctypes.c_void_p)
        i64, i32, f32 = ctypes.c_int64, ctypes.c_int32, ctypes.c_float
        def mat(rows, cols, rs, cs):
            return [p, p, i64(0), i64(rows), i64(cols), i64(rs), i64(cs)]
        def gemm(a, b, c, ta=0, tb=0):
            rt.xentGemm_f32_f32(*a, *b, *c, i32(ta), i32(tb), f32(1), f32(0))
            print(rt.xentGetLastErrorMessage().decode())
        gemm(mat(2, 3, 3, 1), mat(4, 5, 5, 1), mat(2, 5, 5, 1))
        gemm(mat(2, 3, 2, 2), mat(3, 5, 5, 1), mat(2, 5, 5, 1))
        gemm(mat(2, 3, 3, 1), mat(3, 5, 5, 1), mat(2, 5, 1, 2))
        gemm(mat(3, 2, 1, 3), mat(5, 3, 3, 1), mat(2, 5, 5, 1), ta=1, tb=1)
        rt.xentGemmBias_f32_f32(*mat(2, 3, 3, 1), *mat(3, 5, 5, 1), p, p, i64(0), i64(4), i64(1),
                                *mat(2, 5, 5, 1), i32(0), i32(0), f32(1), f32(0))
        print(rt.xentGetLastErrorMessage().decode())
        print("cuBLASLt", rt.xentHasCublasLt())
        print("still alive")
    """)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), XENT_CUDA_QUIET="1")
    proc = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "xentGemm_f32_f32: op(A) is 2x3, op(B) 4x5 and C 2x5: not a product"
    assert lines[1] == ("xentGemm_f32_f32: A (2x3, strides [2, 2]) is not a matrix cuBLASLt "
                        "can read (it needs a unit stride)")
    assert lines[2] == ("xentGemm_f32_f32: C (2x5, strides [1, 2]) is not a matrix cuBLASLt "
                        "can write (it needs unit column stride)")
    # Transposed operands given in column-major storage are fine: the call
    # gets as far as the driver.
    assert "CUDA_ERROR_STUB_LIBRARY" in lines[3]
    assert lines[4] == ("xentGemmBias_f32_f32: the bias has 4 elements of stride 1; it needs 5 "
                        "contiguous ones")
    assert lines[5] in ("cuBLASLt 1", "cuBLASLt 0")
    assert lines[-1] == "still alive"
    assert proc.stderr.decode() == ""
