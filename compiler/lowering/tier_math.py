"""The kernels' transcendental helpers (codegen_math.py: exp, log, tanh, logistic in float64; the
float32 ones are XLA's, ir/xla_math.py) as numpy over whole arrays, for the first tier (tiers.py): the same constants, the same
operations in the same order and a fused multiply-add (``float_math.fma``, exact in numpy too)
wherever the helper calls ``_fma``, so every element gets the kernel's bits on any CPU.
tests/compiler/test_tier_math.py compares the two over edge cases and random bit patterns.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import libm_atanf, libm_cbrtf, libm_sincosf, libm_tanf, xla_math, xla_rsqrt
from meshjit.ir.float_math import fma as _exact_fma

_SHIFTER = 6755399441055744.0  # 1.5 * 2**52
_LN2_HIGH = 0.6931467056274414
_LN2_LOW = 4.7493250390316726e-07


def _fma(a, b, c):
    """``a * b + c`` rounded once, in the dtype of ``a`` (the others broadcast to it)."""
    a = np.asarray(a)
    a, b, c = np.broadcast_arrays(a, np.asarray(b, a.dtype), np.asarray(c, a.dtype))
    return _exact_fma(a, b, c)


def _horner(variable, coefficients):
    """``c0 + v*(c1 + v*(c2 + ...))`` with every level one fma (highest degree first in the
    source's nesting, so ``coefficients`` are listed from c0)."""
    value = _fma(variable, coefficients[-1], coefficients[-2])
    for coefficient in reversed(coefficients[:-2]):
        value = _fma(variable, value, coefficient)
    return value


def _int64_as_float64(bits):
    return np.asarray(bits, np.int64).view(np.float64)


def _exp2_int(n):
    """2^n for integral float64 ``n`` in [-1022, 1023] (the kernel's shifter trick)."""
    return _int64_as_float64((np.asarray(n + _SHIFTER).view(np.int64) + 1023) << 52)


def _mantissa_and_exponent(z, bias):
    bits = z.view(np.int64)
    m = _int64_as_float64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    exponent = ((bits >> 52) & 0x7FF).astype(np.float64) - bias
    big = m > 1.4142135623730951
    return np.where(big, m * 0.5, m), np.where(big, exponent + 1.0, exponent)


def _log_specials(z, result, x):
    result = np.where(z == 0.0, result.dtype.type(-np.inf), result)
    result = np.where(z < 0.0, result.dtype.type(np.nan), result)
    result = np.where(z == np.inf, result.dtype.type(np.inf), result)
    return np.where(x == x, result, x)


def _expm1_reduced_f64(z):
    n = _fma(z, 1.4426950408889634, _SHIFTER) - _SHIFTER
    reduced = _fma(-n, _LN2_HIGH, z)
    low_product = n * _LN2_LOW
    r = reduced - low_product
    r_error = (reduced - r) - low_product
    q = _horner(r, [0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333,
                    0.001388888888888889, 0.0001984126984126984, 2.48015873015873e-05,
                    2.7557319223985893e-06, 2.755731922398589e-07, 2.505210838544172e-08,
                    2.08767569878681e-09, 1.6059043836821613e-10])
    tail = (r * r) * q
    high = r + tail
    return high, (tail - (high - r)) + _fma(r_error, high, r_error), n


def _divide_exactly(numerator, numerator_low, small, small_low, large):
    d = small + large
    large_part = d - small
    d_error = ((small - (d - large_part)) + (large - large_part)) + small_low
    inverse = 1.0 / d
    quotient = numerator * inverse
    residual = _fma(-quotient, d_error, _fma(-quotient, d, numerator) + numerator_low)
    return _fma(residual, inverse, quotient)


def exp_f64(x):
    z = np.where(x > 710.0, 710.0, x)
    z = np.where(z >= -746.0, z, -746.0)
    high, low, n = _expm1_reduced_f64(z)
    half = np.floor(n * 0.5)
    first = _exp2_int(half)
    result = _fma(first, high + low, first) * _exp2_int(n - half)
    return np.where(x == x, result, x)


def tanh_f64(x):
    a = np.abs(x)
    a = np.where(a <= 22.0, a, 22.0)
    high, low, n = _expm1_reduced_f64(2.0 * a)
    scale = _exp2_int(n)
    scaled = scale * high
    t = scaled + (scale - 1.0)
    t_low = _fma(scale, low, ((scale - 1.0) - t) + scaled)
    result = np.copysign(_divide_exactly(t, t_low, t, t_low, 2.0), x)
    return np.where(x == x, result, x)


def logistic_f64(x):
    a = np.abs(x)
    a = np.where(a <= 746.0, a, 746.0)
    high, low, n = _expm1_reduced_f64(-a)
    half = np.floor(n * 0.5)
    first = _exp2_int(half)
    second = _exp2_int(n - half)
    scaled = first * high
    tail = first + scaled
    tail_low = _fma(first, low, (first - tail) + scaled)
    tail, tail_low = tail * second, tail_low * second
    numerator = np.where(x < 0, tail, 1.0)
    numerator_low = np.where(x < 0, tail_low, 0.0)
    result = _divide_exactly(numerator, numerator_low, tail, tail_low, 1.0)
    return np.where(x == x, result, x)


def log_f64(x):
    tiny = x < 2.2250738585072014e-308
    m, exponent = _mantissa_and_exponent(np.where(tiny, x * 18014398509481984.0, x), 0.0)
    exponent = exponent - np.where(tiny, 1077.0, 1023.0)
    f = m - 1.0
    s = f / (2.0 + f)
    w = s * s
    series = _horner(w, [0.6666666666666666, 0.4, 0.2857142857142857, 0.2222222222222222,
                             0.18181818181818182, 0.15384615384615385, 0.13333333333333333,
                             0.11764705882352941, 0.10526315789473684, 0.09523809523809523])
    h = 0.5 * f * f
    result = _fma(exponent, _LN2_HIGH, -((h - _fma(exponent, _LN2_LOW, s * _fma(w, series, h))) - f))
    return _log_specials(x, result, x)


# float32: XLA's algorithms, whose numpy oracle (ir/xla_math.py) the helpers follow bit for bit
HELPERS = {f"_{name}_f32": function for name, function in xla_math.FUNCTIONS.items()}
HELPERS.update({"_exp_f64": exp_f64, "_tanh_f64": tanh_f64, "_logistic_f64": logistic_f64, "_log_f64": log_f64})
HELPERS.update({"_sin_f32": libm_sincosf.sin, "_cos_f32": libm_sincosf.cos})  # glibc's sinf/cosf
HELPERS.update({"_tan_f32": libm_tanf.tan, "_cbrt_f32": libm_cbrtf.cbrt, "_atan2_f32": libm_atanf.atan2})  # glibc's
HELPERS["_rsqrt_f32"] = xla_rsqrt.rsqrt_f32  # XLA's CPU rsqrt
