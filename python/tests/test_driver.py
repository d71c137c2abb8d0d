"""Tests of xent.runtime.driver with the stock mlir-opt and
xent.runtime.pipelines.CPU_LOWERING_PASSES."""

import os

import numpy as np
import pytest

from xent.runtime import driver
from xent.runtime.bf16 import BF16Array, round_to_bf16
from xent.runtime.driver import DriverError, Library, ResultSpec, ToolError, compile_module
from xent.runtime.pipelines import CPU_LOWERING_PASSES, CPU_LOWERING_PIPELINE, pass_pipeline_args
from xent.testing.reference import cross_entropy

MLIR_OPT = os.path.join(os.environ.get("XENT_LLVM_BIN", driver.DEFAULT_LLVM_BIN), "mlir-opt")
KERNELS = os.path.join(os.path.dirname(__file__), "kernels.mlir")

pytestmark = pytest.mark.skipif(not os.access(MLIR_OPT, os.X_OK), reason="mlir-opt not found")

STRIDED_SLICE = """
func.func @every_other(%x: tensor<?x8xf32>) -> tensor<?x4xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %s = tensor.extract_slice %x[0, 1] [%n, 4] [1, 2] : tensor<?x8xf32> to tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}
"""


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("xent-cache"))


@pytest.fixture(scope="session")
def lib(cache_dir):
    with open(KERNELS) as f:
        text = f.read()
    return Library(compile_module(text, pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def test_pipeline_strings():
    assert CPU_LOWERING_PIPELINE == f"builtin.module({CPU_LOWERING_PASSES})"
    assert pass_pipeline_args() == [f"--pass-pipeline={CPU_LOWERING_PIPELINE}"]
    assert "one-shot-bufferize" in CPU_LOWERING_PASSES
    assert CPU_LOWERING_PASSES.endswith("reconcile-unrealized-casts")


# --------------------------------------------------------------------------- numerics

@pytest.mark.parametrize("shape", [(5, 7), (1, 3), (16, 33), (0, 4)])
def test_cross_entropy_rows_dynamic(lib, rng, shape):
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    t = rng.integers(0, shape[1], size=shape[0])
    t[::3] = -1  # ignored rows
    loss, total = lib.call("ce_rows", [x, t], ["tensor<?xf32>", "tensor<f32>"])
    assert loss.dtype == np.float32 and loss.shape == (shape[0],)
    assert total.dtype == np.float32 and total.shape == ()
    expected, _ = cross_entropy(x, t, ignore_index=-1, reduction="none", softcap=30.0)
    np.testing.assert_allclose(loss, expected, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(total, expected.sum(), rtol=2e-5, atol=2e-5)
    assert np.all(loss[t == -1] == 0.0)


def test_rank4_static(lib, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = lib.call("affine4d", [x], ResultSpec("f32", 4))
    assert y.shape == (2, 3, 4, 5) and y.flags.c_contiguous
    np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1))


@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (1, 1, 1, 1), (3, 7, 1, 2)])
def test_rank4_dynamic_softmax(lib, rng, shape):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    p, lse = lib.call("softmax_dim1", [x], [("f32", 4), ("f32", 3)])
    x64 = x.astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    expected_lse = np.log(np.exp(x64 - m).sum(axis=1)) + m[:, 0]
    assert lse.shape == shape[:1] + shape[2:] and p.shape == shape
    np.testing.assert_allclose(lse, expected_lse, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p, np.exp(x64 - expected_lse[:, None]), rtol=1e-5, atol=1e-7)


def test_f16(lib, rng):
    x = rng.standard_normal((3, 6)).astype(np.float16)
    e, sq = lib.call("f16_ops", [x], ["tensor<?x?xf32>", "tensor<?x?xf16>"])
    assert e.dtype == np.float32 and sq.dtype == np.float16
    np.testing.assert_allclose(e, np.exp(x.astype(np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(sq, x * x)


def test_bf16(lib, rng):
    x = BF16Array.from_float(rng.standard_normal(37).astype(np.float32) * 3)
    y = rng.standard_normal(37).astype(np.float32)
    t, s = lib.call("bf16_ops", [x, y], [("bf16", 1), ("bf16", 1)])
    assert isinstance(t, BF16Array) and t.shape == (37,)
    xf = x.to_float32()
    # tanhf may differ from NumPy's tanh in the last float32 bit: allow one bf16 ulp.
    np.testing.assert_allclose(t.to_float32(), round_to_bf16(np.tanh(xf) * y), rtol=2.0**-7)
    # bf16 arithmetic is emulated in f32 and the emulation's contract flags let
    # extf(truncf(v)) fold, so the product is not rounded to bf16 before the add.
    np.testing.assert_array_equal(s.bits, BF16Array.from_float(xf + xf * xf).bits)


def test_i64_rank0_result(lib, rng):
    x = rng.integers(-1000, 1000, size=11, dtype=np.int64)
    total, tripled = lib.call("i64_ops", [x], [("i64", 0), (np.int64, 1)])
    assert total.shape == () and total.dtype == np.int64
    assert int(total) == int(x.sum())
    np.testing.assert_array_equal(tripled, 3 * x)


def test_i32_and_f64(lib, rng):
    x = rng.integers(-50, 50, size=9).astype(np.int32)
    y = rng.random(9) + 0.5
    f, lg = lib.call("mixed", [x, y], ["memref<?xf32>", "memref<?xf64>"])
    np.testing.assert_array_equal(f, x.astype(np.float32))
    np.testing.assert_allclose(lg, np.log(y), rtol=1e-15)


def test_from_elements(lib):
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(lib.call("ends", [x], "tensor<2xf32>"), [0.0, 5.0])


def test_loop_carried_tensor(lib, rng):
    x = rng.random((6, 9)).astype(np.float32)
    np.testing.assert_allclose(lib.call("column_sum", [x], ("f32", 1)), x.sum(axis=1), rtol=1e-5)


def test_non_contiguous_input(lib, rng):
    x = rng.standard_normal((8, 5)).astype(np.float32).T  # Fortran-ordered view
    t = rng.integers(0, 8, size=5)
    loss, _ = lib.call("ce_rows", [x, t], ["tensor<?xf32>", "tensor<f32>"])
    expected, _ = cross_entropy(x, t, reduction="none", softcap=30.0)
    np.testing.assert_allclose(loss, expected, rtol=2e-5)


# --------------------------------------------------------------------------- buffer ownership

def test_constant_result_is_owned_copy(lib):
    for _ in range(3):  # a freed or mutated global would show up on the next call
        c = lib.call("constant", [], "tensor<3xf32>")
        np.testing.assert_array_equal(c, [1.0, 2.0, 3.0])
        c[:] = -1.0


def test_identity_returns_a_copy(lib, rng):
    x = rng.standard_normal(10).astype(np.float32)
    keep = x.copy()
    y = lib.call("identity", [x], "tensor<?xf32>")
    np.testing.assert_array_equal(y, keep)
    y[:] = 0.0
    np.testing.assert_array_equal(x, keep)


def test_same_buffer_returned_twice(lib):
    x = np.arange(4, dtype=np.float32)
    a, b = lib.call("same_twice", [x], [("f32", 1), ("f32", 1)])  # freed once, not twice
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(b, 2 * x)


def test_in_place_argument_update(lib):
    x = np.arange(4, dtype=np.float32)
    y = lib.call("double_in_place", [x], "tensor<4xf32>", copy_inputs=True)
    np.testing.assert_array_equal(x, np.arange(4))
    np.testing.assert_array_equal(y, 2 * np.arange(4))
    # Without copy_inputs the callee writes into the caller's buffer (writable arguments).
    y = lib.call("double_in_place", [x], "tensor<4xf32>")
    np.testing.assert_array_equal(x, 2 * np.arange(4))
    np.testing.assert_array_equal(y, 2 * np.arange(4))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_results_are_freed(lib):
    x = np.ones(2 << 20, dtype=np.float32)  # 8 MiB per result
    lib.call("identity", [x], "tensor<?xf32>")
    before = _rss_bytes()
    for _ in range(64):  # 512 MiB if leaked
        lib.call("identity", [x], "tensor<?xf32>")
    assert _rss_bytes() - before < 128 << 20


def test_runner_utils_linked_on_demand(cache_dir, rng):
    so = compile_module(STRIDED_SLICE, pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = Library(so).call("every_other", [x], "tensor<?x4xf32>")
    np.testing.assert_array_equal(y, x[:, 1::2])


# --------------------------------------------------------------------------- compilation

def test_compilation_is_cached(cache_dir, monkeypatch):
    text = "func.func @f() attributes {llvm.emit_c_interface} { return }"
    first = compile_module(text, pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir)

    def no_tools(*args, **kwargs):
        raise AssertionError("a cached module was recompiled")

    monkeypatch.setattr(driver, "_run", no_tools)
    assert compile_module(text, pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir) == first
    assert Library(first).call("f", [], []) == ()
    with pytest.raises(AssertionError):  # a different pipeline is a different key
        compile_module(text, pass_pipeline_args(CPU_LOWERING_PASSES + ",cse"), MLIR_OPT,
                       out_dir=cache_dir)


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XENT_CACHE_DIR", str(tmp_path))
    text = "func.func @g() attributes {llvm.emit_c_interface} { return }"
    so = compile_module(text, pass_pipeline_args(), MLIR_OPT)
    assert os.path.dirname(so) == str(tmp_path) and os.path.exists(so)


def test_tool_failure_reports_stderr(cache_dir):
    with pytest.raises(ToolError) as info:
        compile_module("func.func @bad( {", pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir)
    assert "error" in info.value.stderr
    assert "error" in str(info.value) and "mlir-opt" in str(info.value)


def test_missing_tool(cache_dir):
    with pytest.raises(DriverError):
        compile_module("", [], "/nonexistent/mlir-opt", out_dir=cache_dir)


def test_missing_function(lib):
    with pytest.raises(DriverError, match="emit_c_interface"):
        lib.call("nope", [], [])


def test_unsupported_input(lib):
    with pytest.raises(TypeError):
        lib.call("identity", [np.zeros(3, dtype=np.uint32)], "tensor<?xf32>")
    with pytest.raises(TypeError):
        lib.call("identity", [[1.0, 2.0]], "tensor<?xf32>")


def test_result_spec_parsing():
    assert ResultSpec.parse("tensor<?x4xf32>") == ResultSpec("f32", 2)
    assert ResultSpec.parse("memref<bf16>") == ResultSpec("bf16", 0)
    assert ResultSpec.parse(("i64", 3)) == ResultSpec("i64", 3)
    assert ResultSpec.parse((np.float16, 1)) == ResultSpec("f16", 1)
    with pytest.raises(ValueError):
        ResultSpec.parse("tensor<?xcomplex>")
    with pytest.raises(ValueError):
        ResultSpec("u32", 1)


LIBM_NAMES = """
func.func @j0(%x: tensor<3xf32>) -> tensor<3xf32> attributes {llvm.emit_c_interface} {
  %0 = func.call @j1(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @j1(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %0 = linalg.add ins(%x, %x : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def test_functions_named_like_libm_symbols(cache_dir):
    """@j0 / @j1 are also libm's Bessel functions: the library must call its own."""
    lib = Library(compile_module(LIBM_NAMES, pass_pipeline_args(), MLIR_OPT, out_dir=cache_dir))
    x = np.array([1.0, -2.0, 3.5], dtype=np.float32)
    np.testing.assert_array_equal(lib.call("j0", [x], ("f32", 1)), 2 * x)
