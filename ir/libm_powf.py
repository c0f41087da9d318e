"""float32 x ** y as JAX 0.10.2 computes it on CPU: XLA's code calls glibc's powf (its FMA
variant, under the CPU's denormals-are-zero mode), here in numpy with the same float64
operations, tables (ir/libm_powf_table.py) and fused multiply-adds, so the reference interpreter
and lone eager ops give JAX's bits on any CPU (numpy's own float32 power is SVML code on AVX-512
machines: 79% equal to JAX). The fused kernels call the C library's powf, which is glibc's.

x^y = 2^(y log2 x): log2 x in float64 from a 16-entry table and a degree-5 polynomial, then 2^t
from a 32-entry table of 2^(j/32) and a cubic; a negative x takes the sign of an odd integer y
and gives NaN for a non-integer one, as C's powf.
"""

from __future__ import annotations

import numpy as np

from .float_math import fma
from .libm_powf_table import EXP2F_POLY, EXP2F_TABLE, POWF_LOG2_POLY, POWF_LOG2_TABLE

_INVERSE_C = np.array([invc for invc, _ in POWF_LOG2_TABLE], np.float64)
_LOG2_C = np.array([logc for _, logc in POWF_LOG2_TABLE], np.float64)
_EXP2_BITS = np.array(EXP2F_TABLE, np.uint64)
_OFFSET = np.uint32(0x3F330000)  # z's range starts at 0x1.66p-1
_SHIFT = 1.5 * 2.0 ** 52 / 32  # adding it rounds t to a multiple of 1/32
_OVERFLOW = float.fromhex("0x1.fffffffd1d571p+6")  # above: inf
_TINY = np.finfo(np.float32).tiny


def _fma(a, b, c):
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    return fma(a, b, c)


def _log2(x):
    """log2 x in float64 for positive finite float32 x (a denormal reads as zero: glibc's scaling
    by 2^23 leaves the bits of 0 minus 23 in the exponent, as in JAX)."""
    bits = np.where(x < _TINY, np.uint32((-(23 << 23)) % 2 ** 32), x.view(np.uint32))
    offset = bits - _OFFSET
    index = ((offset >> np.uint32(19)) & np.uint32(0xF)).astype(np.intp)
    top = offset & np.uint32(0xFF800000)
    k = top.view(np.int32) >> np.int32(23)
    z = (bits - top).view(np.float32).astype(np.float64)
    r = _fma(z, _INVERSE_C[index], -1.0)
    y0 = k.astype(np.float64) + _LOG2_C[index]
    a = POWF_LOG2_POLY
    r2 = r * r
    q = _fma(r2, _fma(r, a[2], a[3]), _fma(r, a[4], y0))
    return _fma(_fma(r, a[0], a[1]), r2 * r2, q)


def _exp2(t):
    """2^t rounded to float32, for float64 t in (-150, 128)."""
    shifted = t + _SHIFT
    bits = shifted.view(np.uint64)
    r = t - (shifted - _SHIFT)
    scale = (_EXP2_BITS[(bits & np.uint64(31)).astype(np.intp)] + (bits << np.uint64(47))).view(np.float64)
    c = EXP2F_POLY
    y = _fma(_fma(r, c[0], c[1]), r * r, _fma(r, c[2], 1.0))
    return (y * scale).astype(np.float32)


def _is_odd_integer(y):
    return (np.floor(y) == y) & (np.abs(y) < 2.0 ** 24) & (np.fmod(y, 2) != 0)


def pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # noqa: A001 - the function's name
    """glibc's powf, elementwise over broadcast float32 arrays."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float32), np.asarray(y, np.float32))
    with np.errstate(all="ignore"):
        magnitude = np.abs(x)
        finite = np.isfinite(magnitude) & (magnitude > 0)
        t = y.astype(np.float64) * _log2(np.where(finite, magnitude, np.float32(1)))
        result = _exp2(np.clip(t, -160.0, 130.0))
        result = np.where(t > _OVERFLOW, np.float32(np.inf), result)
        # denormal results are flushed (XLA's CPU mode; below 2^-149 glibc returns 0 at once)
        result = np.where((t <= -149.0) | (result < _TINY), np.float32(0), result)
        negative_y = y < 0
        result = np.where(magnitude == 0, np.where(negative_y, np.inf, 0), result)
        result = np.where(magnitude == np.inf, np.where(negative_y, 0, np.inf), result)
        infinite_y = np.abs(y) == np.inf
        result = np.where(infinite_y, np.where((magnitude < 1) == negative_y, np.inf, 0), result)
        result = np.where(infinite_y & (magnitude == 1), 1, result)
        # a negative base: the sign of an odd integer exponent, NaN for a non-integer one
        odd = _is_odd_integer(y)
        result = np.where(np.signbit(x) & odd, -result, result)
        non_integer = (np.floor(y) != y) & ~infinite_y
        result = np.where((x < 0) & (x > -np.inf) & non_integer, np.nan, result)
        result = np.where(np.isnan(x) | np.isnan(y), np.nan, result)
        return np.where((y == 0) | (x == 1), np.float32(1), result).astype(np.float32)
