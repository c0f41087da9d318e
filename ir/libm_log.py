"""float64 log as XLA's CPU code gets it from the C library: glibc 2.36's ``log`` on a CPU
with FMA (its ``__log_fma`` variant, every AVX2 and AVX-512 machine), computed with numpy's
IEEE-exact operations and ``float_math.fma``, so the bits are the same on every CPU.

x = 2^k z with z in [0.6875, 1.375); the top 7 bits of z's mantissa pick c_i, and
log x = k ln2 + log c_i + r + poly(r) with r = z/c_i - 1 = fma(z, 1/c_i, -1). Within
[1 - 2^-4, 1 + 0x1.09p-4) a degree-11 polynomial in x - 1 replaces it, its square term split
exactly. The order of operations and the multiply-adds fused are those of glibc's machine code;
``ir/libm_log_table.py`` holds the data. Equal to glibc's ``log`` over dense sweeps
(tests/ir/test_libm_log.py).
"""

from __future__ import annotations

import numpy as np

from .float_math import fma
from .libm_log_table import LN2_HIGH, LN2_LOW, POLY, POLY_NEAR_ONE, TABLE

INVERSE_C = np.array([invc for invc, _ in TABLE], np.float64)
LOG_C = np.array([logc for _, logc in TABLE], np.float64)
OFFSET = 0x3FE6000000000000  # z's range starts at 0x1.6p-1
NEAR_ONE_LOW, NEAR_ONE_SPAN = 0x3FEE000000000000, 0x308FFFFFFFFFF  # bits of 1 - 2^-4, and the range
SPLIT = 2.0 ** 27  # splits x - 1 into 26-bit halves


def log(x: np.ndarray) -> np.ndarray:
    """glibc's float64 log of every element of ``x``, denormals read as zero (-inf), as XLA's
    CPU code calls it."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        result = np.where(_near_one(x), _log_near_one(x), _log_by_table(x))
        # XLA's CPU code runs with denormals read as zero
        result = np.where(np.abs(x) < np.finfo(np.float64).tiny, -np.inf, result)
        result = np.where((x < 0) | np.isnan(x), np.nan, result)
        return np.where(x == np.inf, np.inf, result)


def _near_one(x):
    bits = x.view(np.uint64)
    return (bits - np.uint64(NEAR_ONE_LOW)) <= np.uint64(NEAR_ONE_SPAN)


def _log_by_table(x):
    bits = x.view(np.uint64)
    offset = bits - np.uint64(OFFSET)
    index = ((offset >> np.uint64(45)) & np.uint64(0x7F)).astype(np.intp)
    k = (offset.view(np.int64) >> np.int64(52)).astype(np.float64)
    z = (bits - (offset & np.uint64(0xFFF0000000000000))).view(np.float64)
    r = fma(z, INVERSE_C[index], np.full_like(z, -1.0))
    w = fma(k, np.full_like(k, LN2_HIGH), LOG_C[index])
    high = r + w
    low = fma(k, np.full_like(k, LN2_LOW), (w - high) + r)
    r2 = r * r
    a = [np.full_like(r, value) for value in POLY]
    poly = fma(fma(r, a[4], a[3]), r2, fma(r, a[2], a[1]))
    return fma(r * r2, poly, fma(r2, a[0], low)) + high


def _log_near_one(x):
    r = x - 1.0
    b = [np.full_like(r, value) for value in POLY_NEAR_ONE]
    r2 = r * r
    r3 = r * r2
    q1 = fma(r2, b[3], fma(r, b[2], b[1]))
    q2 = fma(r2, b[6], fma(r, b[5], b[4]))
    q3 = fma(r3, b[10], fma(r2, b[9], fma(r, b[8], b[7])))
    poly = fma(fma(q3, r3, q2), r3, q1)
    # r = r_high + r_low with r_high's 27 bits squared exactly; -r^2/2 added in two parts
    r_high = fma(np.full_like(r, -SPLIT), r, fma(r, np.full_like(r, SPLIT), r))
    square = r_high * r_high
    high = fma(square, b[0], r)
    low = fma(square, b[0], r - high)
    low = fma(b[0] * (r - r_high), r + r_high, low)
    return fma(poly, r3, low) + high
