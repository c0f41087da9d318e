"""float64 log for the samplers, in IR ops: glibc's ``log`` as XLA's CPU code calls it, operation
for operation as ``ir/libm_log.py`` computes it (the reference and the description), so that
the interpreter and the fused kernels give JAX's bits on every CPU. The table lookups are two
gathers from constants of 128 values.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.libm_log import (
    INVERSE_C,
    LOG_C,
    NEAR_ONE_LOW,
    NEAR_ONE_SPAN,
    OFFSET,
    SPLIT,
)
from meshjit.ir.libm_log_table import LN2_HIGH, LN2_LOW, POLY, POLY_NEAR_ONE

from .. import lax_ops as lax
from ..operands import shape_of


def _f64(like, value):
    return lax.full(shape_of(like), np.float64(value), "f64")


def _u64(like, value):
    return lax.full(shape_of(like), np.uint64(value), "u64")


def log(x):
    """glibc's float64 log: -inf at zero and denormals (XLA's CPU code reads them as zero), NaN
    below zero and for NaN, inf at inf."""
    near_one = lax.le(lax.sub(lax.bitcast_convert_type(x, "u64"), _u64(x, NEAR_ONE_LOW)), _u64(x, NEAR_ONE_SPAN))
    result = lax.select(near_one, _near_one(x), _by_table(x))
    zero = lax.lt(lax.abs(x), _f64(x, np.finfo(np.float64).tiny))  # denormals read as zero, as in XLA
    result = lax.select(zero, _f64(x, -np.inf), result)
    invalid = lax.bitwise_not(lax.ge(x, _f64(x, 0.0)))  # negative or NaN
    result = lax.select(invalid, _f64(x, np.nan), result)
    return lax.select(lax.eq(x, _f64(x, np.inf)), _f64(x, np.inf), result)


def _by_table(x):
    bits = lax.bitcast_convert_type(x, "u64")
    offset = lax.sub(bits, _u64(x, OFFSET))
    index = lax.convert_element_type(
        lax.bitwise_and(lax.shift_right_logical(offset, _u64(x, 45)), _u64(x, 0x7F)), "i32")
    signed = lax.bitcast_convert_type(offset, "i64")
    k = lax.convert_element_type(lax.shift_right_arithmetic(signed, lax.full(shape_of(x), np.int64(52), "i64")), "f64")
    z = lax.bitcast_convert_type(lax.sub(bits, lax.bitwise_and(offset, _u64(x, 0xFFF0000000000000))), "f64")
    inverse_c = lax.gather_along_axis(lax._constant(INVERSE_C), index, 0, mode="clip")
    log_c = lax.gather_along_axis(lax._constant(LOG_C), index, 0, mode="clip")
    r = lax.fma(z, inverse_c, _f64(x, -1.0))
    w = lax.fma(k, _f64(x, LN2_HIGH), log_c)
    high = lax.add(r, w)
    low = lax.fma(k, _f64(x, LN2_LOW), lax.add(lax.sub(w, high), r))
    r2 = lax.mul(r, r)
    a = [_f64(x, value) for value in POLY]
    poly = lax.fma(lax.fma(r, a[4], a[3]), r2, lax.fma(r, a[2], a[1]))
    return lax.add(lax.fma(lax.mul(r, r2), poly, lax.fma(r2, a[0], low)), high)


def _near_one(x):
    r = lax.sub(x, _f64(x, 1.0))
    b = [_f64(x, value) for value in POLY_NEAR_ONE]
    r2 = lax.mul(r, r)
    r3 = lax.mul(r, r2)
    q1 = lax.fma(r2, b[3], lax.fma(r, b[2], b[1]))
    q2 = lax.fma(r2, b[6], lax.fma(r, b[5], b[4]))
    q3 = lax.fma(r3, b[10], lax.fma(r2, b[9], lax.fma(r, b[8], b[7])))
    poly = lax.fma(lax.fma(q3, r3, q2), r3, q1)
    r_high = lax.fma(_f64(x, -SPLIT), r, lax.fma(r, _f64(x, SPLIT), r))
    square = lax.mul(r_high, r_high)
    high = lax.fma(square, b[0], r)
    low = lax.fma(square, b[0], lax.sub(r, high))
    low = lax.fma(lax.mul(b[0], lax.sub(r, r_high)), lax.add(r, r_high), low)
    return lax.add(lax.fma(poly, r3, low), high)
