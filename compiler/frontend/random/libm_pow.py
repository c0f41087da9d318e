"""float32 x ** y for weibull_min, in IR ops: glibc 2.36's ``powf`` as XLA's CPU code calls it (its
FMA variant, every AVX2 and AVX-512 machine), with the order of operations and the multiply-adds
of glibc's machine code, so the interpreter and the fused kernels give JAX's bits on every CPU.

log2 x in float64 from a 16-entry table and a degree-5 polynomial, y log2 x, then 2^t from a
32-entry table of 2^(j/32) and a cubic; ``ir/libm_powf_table.py`` holds the data. Defined for
x >= 0 (and NaN): a negative x gives NaN, where C's powf gives a signed value for integer y.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.libm_powf_table import EXP2F_POLY, EXP2F_TABLE, POWF_LOG2_POLY, POWF_LOG2_TABLE

from .. import lax_ops as lax
from ..autodiff import CustomJVPRule, call_with_custom_rule
from ..operands import shape_of

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
    """log2 x in float64 for positive finite float32 x (denormals scaled by 2^23 first)."""
    subnormal = lax.lt(x, _full(x, np.finfo(np.float32).tiny, "f32"))
    scaled = lax.sub(lax.bitcast_convert_type(lax.mul(x, _full(x, 2.0 ** 23, "f32")), "u32"), _full(x, 23 << 23, "u32"))
    bits = lax.select(subnormal, scaled, lax.bitcast_convert_type(x, "u32"))
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
    tiny = lax.lt(exponent, _full(x, -149.0, "f64"))  # the smallest denormal, as glibc rounds it
    result = lax.select(tiny, _full(x, 2.0 ** -149, "f32"), result)
    result = lax.select(lax.le(exponent, _full(x, -150.0, "f64")), _full(x, 0.0, "f32"), result)
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


def _jvp(primals, tangents):
    """JAX's rule: d(x^y) = y x^(y - 1) dx + log(x) x^y dy (not promised bit for bit)."""
    (x, y), (dx, dy) = primals, tangents
    out = _pow(x, y)
    along_x = lax.mul(dx, lax.mul(y, lax.pow(x, lax.sub(y, _full(y, 1.0, "f32")))))
    along_y = lax.mul(dy, lax.mul(lax.log(x), out))
    return [out], [lax.add(along_x, along_y)]


def pow(x, y):  # noqa: A001 - the function's name
    """glibc's float32 x ** y (x >= 0), with JAX's derivative."""
    return call_with_custom_rule("glibc_powf", lambda base, exponent: [_pow(base, exponent)], [x, y],
                                 CustomJVPRule(_jvp))[0]
