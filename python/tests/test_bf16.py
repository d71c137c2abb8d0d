"""Tests of xent.runtime.bf16 against a brute-force nearest-value search."""

import numpy as np
import pytest

from xent.runtime.bf16 import BF16Array, bf16_bits_to_float32, float32_to_bf16_bits, round_to_bf16


def _nearest_even_bf16(values: np.ndarray) -> np.ndarray:
    """Round finite float32 values to bf16 by searching all finite bf16 values."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    f32 = (bits << 16).view(np.float32)
    finite = np.isfinite(f32)
    table, bits = f32[finite].astype(np.float64), bits[finite]
    order = np.argsort(table, kind="stable")
    table, bits = table[order], bits[order]
    # drop -0.0 (keep +0.0's neighbourhood simple; zero's sign is checked separately)
    keep = ~((table == 0) & (bits == 0x8000))
    table, bits = table[keep], bits[keep]
    out = np.empty(values.shape, dtype=np.uint16)
    v64 = values.astype(np.float64)
    hi = np.clip(np.searchsorted(table, v64), 1, len(table) - 1)
    lo = hi - 1
    d_lo, d_hi = v64 - table[lo], table[hi] - v64
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (bits[hi] % 2 == 0))
    out[...] = np.where(pick_hi, bits[hi], bits[lo])
    return out


def test_matches_brute_force():
    rng = np.random.default_rng(5)
    mags = rng.standard_normal(4000) * np.exp2(rng.integers(-120, 120, size=4000))
    x = mags.astype(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 3.0e38) & (x != 0)]
    np.testing.assert_array_equal(float32_to_bf16_bits(x), _nearest_even_bf16(x))


def test_ties_round_to_even():
    one_ulp = 2.0 ** -7
    x = np.array([1 + one_ulp / 2, 1 + 3 * one_ulp / 2, -(1 + one_ulp / 2)], dtype=np.float32)
    np.testing.assert_array_equal(round_to_bf16(x), [1.0, 1 + 2 * one_ulp, -1.0])


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, 1e-45], dtype=np.float32)
    bits = float32_to_bf16_bits(x)
    assert bits[0] == 0x0000 and bits[1] == 0x8000
    assert bits[2] == 0x7F80 and bits[3] == 0xFF80
    assert np.isnan(bf16_bits_to_float32(bits[4:5]))[0]
    assert bits[5] == 0x7F80  # above the largest bf16: rounds to inf
    assert bits[6] == 0x0000  # float32 denormal below half the smallest bf16 denormal
    # a NaN whose payload lives only in the low 16 bits must stay NaN
    snan = np.array([0x7F800001, 0xFF800001], dtype=np.uint32).view(np.float32)
    assert np.all(np.isnan(round_to_bf16(snan)))


def test_round_trip_is_exact_for_bf16_values():
    bits = np.arange(1 << 16, dtype=np.uint16)
    f = bf16_bits_to_float32(bits)
    ok = ~np.isnan(f)
    np.testing.assert_array_equal(float32_to_bf16_bits(f[ok]), bits[ok])


def test_array_wrapper():
    a = BF16Array.from_float(np.array([[1.5, -2.0]], dtype=np.float32))
    assert a.shape == (1, 2) and a.ndim == 2 and a.size == 2 and len(a) == 1
    np.testing.assert_array_equal(a.to_float32(), [[1.5, -2.0]])
    with pytest.raises(TypeError):
        BF16Array(np.zeros(2, dtype=np.float32))


def test_rank0_keeps_its_shape():
    from xent.runtime.bf16 import BF16Array, float32_to_bf16_bits, bf16_bits_to_float32
    bits = float32_to_bf16_bits(np.float32(1.5))
    assert bits.shape == ()
    assert bf16_bits_to_float32(bits).shape == ()
    assert BF16Array.from_float(np.array(2.0, dtype=np.float32)).to_float32().shape == ()
