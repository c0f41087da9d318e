"""x ** y for weibull_min, in IR ops: glibc 2.36's ``powf`` and ``pow`` as XLA's CPU code calls
them (their FMA variants, every AVX2 and AVX-512 machine), with the order of operations and the
multiply-adds of glibc's machine code, so the interpreter and the fused kernels give JAX's bits
on every CPU.

powf: log2 x in float64 from a 16-entry table and a degree-5 polynomial, y log2 x, then 2^t from
a 32-entry table of 2^(j/32) and a cubic (``ir/libm_powf_table.py``). pow: log x as a
double-double from a 128-entry table, y log x as a double-double, then exp from a 128-entry
table of 2^(j/128) (``ir/libm_pow_table.py``). Defined for x >= 0 (and NaN): a negative x gives
NaN, where C's pow gives a signed value for integer y.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.libm_pow_table import (
    EXP_INVERSE_LN2_N,
    EXP_NEGATIVE_LN2_N_HIGH,
    EXP_NEGATIVE_LN2_N_LOW,
    EXP_POLY,
    EXP_SHIFT,
    EXP_TABLE,
    LN2_HIGH,
    LN2_LOW,
    LOG_POLY,
    LOG_TABLE,
)
from meshjit.ir.libm_powf_table import EXP2F_POLY, EXP2F_TABLE, POWF_LOG2_POLY, POWF_LOG2_TABLE

from .. import lax_ops as lax
from ..autodiff import CustomJVPRule, call_with_custom_rule
from ..operands import dtype_of, shape_of

_INVERSE_C = np.array([invc for invc, _ in POWF_LOG2_TABLE], np.float64)
_LOG2_C = np.array([logc for _, logc in POWF_LOG2_TABLE], np.float64)
_EXP2_BITS = np.array(EXP2F_TABLE, np.uint64)
_OFFSET = 0x3F330000  # z's range starts at 0x1.66p-1
_SHIFT = 1.5 * 2.0 ** 52 / 32  # adding it rounds t to a multiple of 1/32
_OVERFLOW = float.fromhex("0x1.fffffffd1d571p+6")  # above: inf


def _full(like, value, dtype: str):
    return lax.full(shape_of(like), np.asarray(value, {"f32": np.float32, "f64": np.float64, "u32": np.uint32,
                                                        "u64": np.uint64, "i32": np.int32}[dtype]), dtype)


def _log2(x):
    """log2 x in float64 for positive finite float32 x."""
    # glibc scales a denormal x by 2^23 first, which reads as zero in XLA's CPU code (denormals
    # are zero there): the bits become those of 0 minus 23 in the exponent, as in JAX
    subnormal = lax.lt(x, _full(x, np.finfo(np.float32).tiny, "f32"))
    bits = lax.select(subnormal, _full(x, (-(23 << 23)) % 2 ** 32, "u32"), lax.bitcast_convert_type(x, "u32"))
    offset = lax.sub(bits, _full(x, _OFFSET, "u32"))
    index = lax.convert_element_type(
        lax.bitwise_and(lax.shift_right_logical(offset, _full(x, 19, "u32")), _full(x, 0xF, "u32")), "i32")
    top = lax.bitwise_and(offset, _full(x, 0xFF800000, "u32"))
    k = lax.shift_right_arithmetic(lax.bitcast_convert_type(top, "i32"), _full(x, 23, "i32"))
    z = lax.convert_element_type(lax.bitcast_convert_type(lax.sub(bits, top), "f32"), "f64")
    r = lax.fma(z, lax.gather_along_axis(lax._constant(_INVERSE_C), index, 0, mode="clip"), _full(x, -1.0, "f64"))
    y0 = lax.add(lax.convert_element_type(k, "f64"), lax.gather_along_axis(lax._constant(_LOG2_C), index, 0, mode="clip"))
    a = [_full(x, value, "f64") for value in POWF_LOG2_POLY]
    r2 = lax.mul(r, r)
    q = lax.fma(r2, lax.fma(r, a[2], a[3]), lax.fma(r, a[4], y0))
    return lax.fma(lax.fma(r, a[0], a[1]), lax.mul(r2, r2), q)


def _exp2(t):
    """2^t rounded to float32, for float64 t in (-150, 128)."""
    shifted = lax.add(t, _full(t, _SHIFT, "f64"))
    bits = lax.bitcast_convert_type(shifted, "u64")
    r = lax.sub(t, lax.sub(shifted, _full(t, _SHIFT, "f64")))
    index = lax.convert_element_type(lax.bitwise_and(bits, _full(t, 31, "u64")), "i32")
    scale_bits = lax.add(lax.gather_along_axis(lax._constant(_EXP2_BITS), index, 0, mode="clip"),
                         lax.shift_left(bits, _full(t, 47, "u64")))
    c = [_full(t, value, "f64") for value in EXP2F_POLY]
    y = lax.fma(lax.fma(r, c[0], c[1]), lax.mul(r, r), lax.fma(r, c[2], _full(t, 1.0, "f64")))
    return lax.convert_element_type(lax.mul(y, lax.bitcast_convert_type(scale_bits, "f64")), "f32")


def _pow(x, y):
    """glibc's powf for x >= 0 or NaN."""
    exponent = lax.mul(lax.convert_element_type(y, "f64"), _log2(x))
    result = _exp2(exponent)
    result = lax.select(lax.gt(exponent, _full(x, _OVERFLOW, "f64")), _full(x, np.inf, "f32"), result)
    # XLA's CPU code flushes denormal results to zero (below 2^-149 glibc returns 0 at once)
    result = lax.select(lax.le(exponent, _full(x, -149.0, "f64")), _full(x, 0.0, "f32"), result)
    result = lax.select(lax.lt(result, _full(x, np.finfo(np.float32).tiny, "f32")), _full(x, 0.0, "f32"), result)
    return _special_values(x, y, result)


def _special_values(x, y, result):
    zero, one, inf = (_full(x, value, "f32") for value in (0.0, 1.0, np.inf))
    negative_y = lax.lt(y, zero)
    # x = 0 or inf: 0 or inf by the sign of y
    result = lax.select(lax.eq(x, zero), lax.select(negative_y, inf, zero), result)
    result = lax.select(lax.eq(x, inf), lax.select(negative_y, zero, inf), result)
    # y = +-inf: 0 or inf by whether |x| < 1 and the sign of y
    small = lax.lt(x, one)
    infinite_y = lax.eq(lax.abs(y), inf)
    result = lax.select(infinite_y, lax.select(lax.eq(small, negative_y), inf, zero), result)
    nan = lax.bitwise_or(lax.ne(x, x), lax.bitwise_or(lax.ne(y, y), lax.lt(x, zero)))
    result = lax.select(nan, _full(x, np.nan, "f32"), result)
    # y = 0 or x = 1: 1, NaN or not
    return lax.select(lax.bitwise_or(lax.eq(y, zero), lax.eq(x, one)), one, result)


def _pow_any(x, y):
    return _pow(x, y) if dtype_of(x).name == "f32" else _pow_f64(x, y)


def _jvp(primals, tangents):
    """JAX's rule: d(x^y) = y x^(y - 1) dx + log(x) x^y dy (not promised bit for bit)."""
    (x, y), (dx, dy) = primals, tangents
    out = _pow_any(x, y)
    one = lax.full(shape_of(y), np.ones((), to_numpy(dtype_of(y).name)), dtype_of(y).name)
    along_x = lax.mul(dx, lax.mul(y, lax.pow(x, lax.sub(y, one))))
    along_y = lax.mul(dy, lax.mul(lax.log(x), out))
    return [out], [lax.add(along_x, along_y)]


def pow(x, y):  # noqa: A001 - the function's name
    """glibc's x ** y (powf for float32, pow for float64; x >= 0), with JAX's derivative."""
    return call_with_custom_rule("glibc_pow", lambda base, exponent: [_pow_any(base, exponent)], [x, y],
                                 CustomJVPRule(_jvp))[0]


# --- float64: glibc's pow -------------------------------------------------------------------

_LOG_INVERSE_C, _LOG_C, _LOG_C_TAIL = (np.array(column, np.float64) for column in zip(*LOG_TABLE))
_EXP_BITS = np.array(EXP_TABLE, np.uint64)
_POW_OFFSET = 0x3FE6955500000000


def _f64(like, value):
    return _full(like, value, "f64")


def _u64(like, value):
    return _full(like, value, "u64")


def _log_f64(x):
    """log x as a double-double (high, low) for positive finite x."""
    subnormal = lax.lt(x, _f64(x, np.finfo(np.float64).tiny))  # scaled by 2^52, read as zero (see _log2)
    bits = lax.select(subnormal, _u64(x, (-(52 << 52)) % 2 ** 64), lax.bitcast_convert_type(x, "u64"))
    offset = lax.sub(bits, _u64(x, _POW_OFFSET))
    index = lax.convert_element_type(
        lax.bitwise_and(lax.shift_right_logical(offset, _u64(x, 45)), _u64(x, 0x7F)), "i32")
    k = lax.convert_element_type(lax.shift_right_arithmetic(
        lax.bitcast_convert_type(offset, "i64"), lax.full(shape_of(x), np.int64(52), "i64")), "f64")
    z = lax.bitcast_convert_type(lax.sub(bits, lax.bitwise_and(offset, _u64(x, 0xFFF0000000000000))), "f64")

    def table(values):
        return lax.gather_along_axis(lax._constant(values), index, 0, mode="clip")

    r = lax.fma(z, table(_LOG_INVERSE_C), _f64(x, -1.0))
    t1 = lax.fma(k, _f64(x, LN2_HIGH), table(_LOG_C))
    low1 = lax.fma(k, _f64(x, LN2_LOW), table(_LOG_C_TAIL))
    a = [_f64(x, value) for value in LOG_POLY]
    ar = lax.mul(r, a[0])
    ar2 = lax.mul(r, ar)
    ar3 = lax.mul(r, ar2)
    t2 = lax.add(r, t1)
    low2 = lax.add(lax.sub(t1, t2), r)
    low3 = lax.fma(ar, r, lax.neg(ar2))
    high = lax.add(t2, ar2)
    low4 = lax.add(lax.sub(t2, high), ar2)
    inner = lax.fma(lax.fma(r, a[6], a[5]), ar2, lax.fma(r, a[4], a[3]))
    poly = lax.fma(ar2, inner, lax.fma(r, a[2], a[1]))
    low = lax.fma(ar3, poly, lax.add(lax.add(lax.add(low1, low2), low3), low4))
    result = lax.add(high, low)
    return result, lax.add(lax.sub(high, result), low)


def _exp_f64(x, tail):
    """exp(x + tail) for 2^-54 <= |x| < 1024 (512 and above through glibc's special case)."""
    shifted = lax.fma(x, _f64(x, EXP_INVERSE_LN2_N), _f64(x, EXP_SHIFT))
    bits = lax.bitcast_convert_type(shifted, "u64")
    kd = lax.sub(shifted, _f64(x, EXP_SHIFT))
    r = lax.fma(kd, _f64(x, EXP_NEGATIVE_LN2_N_LOW), lax.fma(kd, _f64(x, EXP_NEGATIVE_LN2_N_HIGH), x))
    r = lax.add(tail, r)
    index = lax.convert_element_type(lax.mul(lax.bitwise_and(bits, _u64(x, 0x7F)), _u64(x, 2)), "i32")
    table = lax._constant(_EXP_BITS)
    scale_tail = lax.bitcast_convert_type(lax.gather_along_axis(table, index, 0, mode="clip"), "f64")
    scale_bits = lax.add(lax.gather_along_axis(table, lax.add(index, _full(x, 1, "i32")), 0, mode="clip"),
                         lax.shift_left(bits, _u64(x, 45)))
    c = [_f64(x, value) for value in EXP_POLY]
    r2 = lax.mul(r, r)
    tmp = lax.fma(lax.fma(r, c[1], c[0]), r2, lax.add(r, scale_tail))
    tmp = lax.fma(lax.fma(r, c[3], c[2]), lax.mul(r2, r2), tmp)
    scale = lax.bitcast_convert_type(scale_bits, "f64")
    result = lax.fma(tmp, scale, scale)
    large = lax.ge(lax.abs(x), _f64(x, 512.0))
    return lax.select(large, _exp_special(tmp, scale_bits, x), result)


def _exp_special(tmp, scale_bits, x):
    """glibc's special case for 512 <= |x| < 1024: the scale's exponent moved into range first,
    and below 2^-1022 the sum rounded once to its subnormal precision."""
    up = lax.bitcast_convert_type(lax.sub(scale_bits, _u64(x, 1009 << 52)), "f64")
    overflowing = lax.mul(lax.fma(tmp, up, up), _f64(x, 2.0 ** 1009))
    scale = lax.bitcast_convert_type(lax.add(scale_bits, _u64(x, 1022 << 52)), "f64")
    y = lax.add(scale, lax.mul(scale, tmp))
    one = lax.select(lax.lt(y, _f64(x, 0.0)), _f64(x, -1.0), _f64(x, 1.0))
    low = lax.add(lax.sub(scale, y), lax.mul(scale, tmp))
    high = lax.add(y, one)
    rounded = lax.sub(lax.add(lax.add(lax.add(lax.sub(one, high), y), low), high), one)
    rounded = lax.select(lax.eq(rounded, _f64(x, 0.0)), _f64(x, 0.0), rounded)
    y = lax.select(lax.lt(lax.abs(y), _f64(x, 1.0)), rounded, y)
    underflowing = lax.mul(y, _f64(x, 2.0 ** -1022))
    return lax.select(lax.gt(x, _f64(x, 0.0)), overflowing, underflowing)


def _pow_f64(x, y):
    """glibc's float64 pow for x >= 0 or NaN."""
    high, low = _log_f64(x)
    exponent = lax.mul(y, high)
    tail = lax.fma(y, low, lax.fma(high, y, lax.neg(exponent)))
    magnitude = lax.abs(exponent)
    result = _exp_f64(exponent, tail)
    result = lax.select(lax.lt(magnitude, _f64(x, 2.0 ** -54)), _f64(x, 1.0), result)
    beyond = lax.select(lax.lt(exponent, _f64(x, 0.0)), _f64(x, 0.0), _f64(x, np.inf))
    result = lax.select(lax.ge(magnitude, _f64(x, 1024.0)), beyond, result)
    flushed = lax.lt(result, _f64(x, np.finfo(np.float64).tiny))  # denormal results are zero in XLA
    return _special_values_f64(x, y, lax.select(flushed, _f64(x, 0.0), result))


def _special_values_f64(x, y, result):
    zero, one, inf = (_f64(x, value) for value in (0.0, 1.0, np.inf))
    negative_y = lax.lt(y, zero)
    magnitude_y = lax.abs(y)
    # |y| below 2^-65: 1; above 2^63: 0 or inf by which side of 1 x is on
    result = lax.select(lax.lt(magnitude_y, _f64(x, 2.0 ** -65)), one, result)
    huge = lax.select(lax.eq(lax.gt(x, one), lax.bitwise_not(negative_y)), inf, zero)
    result = lax.select(lax.ge(magnitude_y, _f64(x, 2.0 ** 63)), huge, result)
    result = lax.select(lax.eq(x, zero), lax.select(negative_y, inf, zero), result)
    result = lax.select(lax.eq(x, inf), lax.select(negative_y, zero, inf), result)
    infinite_y = lax.eq(magnitude_y, inf)
    result = lax.select(infinite_y, lax.select(lax.eq(lax.lt(x, one), negative_y), inf, zero), result)
    nan = lax.bitwise_or(lax.ne(x, x), lax.bitwise_or(lax.ne(y, y), lax.lt(x, zero)))
    result = lax.select(nan, _f64(x, np.nan), result)
    return lax.select(lax.bitwise_or(lax.eq(y, zero), lax.eq(x, one)), one, result)
