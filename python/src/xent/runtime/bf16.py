"""bfloat16 support for NumPy, which has no native bf16 dtype.

bf16 values are stored as their raw 16-bit patterns in ``uint16`` arrays and
wrapped in :class:`BF16Array` so that the driver can tell them apart from
genuine 16-bit integers.  Conversion from float32 rounds to nearest, ties to
even (what ``arith.truncf`` and PyTorch do); NaNs stay quiet NaNs.

ml_dtypes' ``bfloat16`` is not used: Debian 12 does not package it, and the
driver passes bit patterns to compiled code either way; one implementation
keeps the bits the same everywhere (ml_dtypes, through Eigen, turns every
NaN into the canonical quiet NaN of its sign; this keeps its upper payload
bits).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BF16Array", "float32_to_bf16_bits", "bf16_bits_to_float32", "round_to_bf16"]


def float32_to_bf16_bits(x) -> np.ndarray:
    """Round float32 values to bf16 (nearest-even) and return the uint16 bit patterns."""
    x = np.asarray(x, dtype=np.float32)
    # ascontiguousarray makes 0-d arrays 1-d; the shape is restored below.
    bits = np.ascontiguousarray(x).view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    # Rounding must not turn a NaN into an infinity: keep the sign and force a quiet NaN.
    nan_bits = (bits >> np.uint32(16)) | np.uint32(0x0040)
    is_nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(is_nan, nan_bits, rounded).astype(np.uint16).reshape(x.shape)


def bf16_bits_to_float32(bits) -> np.ndarray:
    """Widen bf16 bit patterns (uint16) to float32 exactly."""
    a = np.asarray(bits)
    if a.dtype != np.uint16:
        raise TypeError(f"bf16 bits must be uint16, got {a.dtype}")
    b = np.ascontiguousarray(a)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).reshape(a.shape)


def round_to_bf16(x) -> np.ndarray:
    """Round float32 values to the nearest bf16 value, returned as float32."""
    return bf16_bits_to_float32(float32_to_bf16_bits(x))


class BF16Array:
    """A bf16 tensor held as uint16 bit patterns.

    Build one with :meth:`from_float` (rounding) or from existing bits; read
    it back with :meth:`to_float32`.
    """

    __slots__ = ("bits",)

    def __init__(self, bits):
        bits = np.asarray(bits)
        if bits.dtype != np.uint16:
            raise TypeError(f"BF16Array wraps uint16 bit patterns, got {bits.dtype}")
        self.bits = bits

    @classmethod
    def from_float(cls, x) -> "BF16Array":
        return cls(float32_to_bf16_bits(x))

    def to_float32(self) -> np.ndarray:
        return bf16_bits_to_float32(self.bits)

    @property
    def shape(self):
        return self.bits.shape

    @property
    def ndim(self) -> int:
        return self.bits.ndim

    @property
    def size(self) -> int:
        return self.bits.size

    def __len__(self) -> int:
        return len(self.bits)

    def __repr__(self) -> str:
        return f"BF16Array({self.to_float32()!r})"
