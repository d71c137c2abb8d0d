"""xent-cpu-pipeline's native-bf16 (bf16 conversions left to LLVM, which a
CPU with AVX512-BF16 runs as vcvtneps2bf16) computes bit for bit what the
portable default (conversions expanded to integer ops) does: both round to
nearest even, NaN stays NaN. Needs such a CPU (the CI machine has one);
elsewhere LLVM would call __truncsfbf2, which Debian 12's libgcc lacks."""

import numpy as np
import pytest

from xent.runtime.bf16 import BF16Array, float32_to_bf16_bits
from xent.runtime.pipelines import host_cpu_options, xent_cpu_pipeline_args
from xent.testing import build_library

pytestmark = pytest.mark.skipif(not host_cpu_options().get("native_bf16"),
                                reason="the host CPU has no bf16 conversions (AVX512-BF16)")

FUNCTION = """
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>) attributes {llvm.emit_c_interface} {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {label_smoothing = 0.1 : f32, softcap = 20.0 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
"""


@pytest.mark.parametrize("classes", [7, 64, 1000, 4099])
def test_native_bf16_is_bit_exact(tmp_path, classes):
    rng = np.random.default_rng(classes)
    x = (rng.standard_normal((9, classes)) * 4).astype(np.float32)
    x[0, 1] = np.inf
    x[1, :] = np.nan
    t = rng.integers(0, classes, 9).astype(np.int64)
    t[2] = -100
    xb = BF16Array(float32_to_bf16_bits(x))
    g = np.array(1.5, np.float32)
    results = []
    for native in (False, True):
        lib = build_library([FUNCTION], str(tmp_path),
                            pipeline=tuple(xent_cpu_pipeline_args(threads=1, native_bf16=native)))
        loss, d = lib.call("joint", [g, xb, t], [("f32", 0), ("bf16", 2)])
        results.append((np.asarray(loss).tobytes(), np.asarray(d.bits).tobytes()))
    assert results[0] == results[1]
