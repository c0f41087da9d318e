"""float32 log, log1p and erf as XLA's CPU backend computes them, spelled in IR ops.

meshjit's own ``log``, ``log1p`` and ``erf`` ops round closer to the true values; the samplers
that must give JAX's numbers (gumbel's two nested logs amplify a one-ulp difference near zero
into hundreds of ulps) use these instead: Eigen's polynomial log (Cephes' coefficients) with the
multiply-adds LLVM fuses, XLA's log1p (a rational function below |x| = sqrt(2) - 1), and XLA's
rational erf. Bit-equal with JAX 0.10.2 on CPU over dense sweeps (tests/api/test_random_*).
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.float_math import (
    LOG1P_DENOMINATOR,
    LOG1P_DENOMINATOR_F64,
    LOG1P_NUMERATOR,
    LOG1P_NUMERATOR_F64,
    LOG1P_SMALL,
    LOG1P_SMALL_F64,
    LOG_CHAINS,
    LOG_LN2_HIGH,
    LOG_LN2_LOW,
    LOG_MIN_NORMAL,
    LOG_SQRT_HALF,
)
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.float_math import word as _bits

from .. import lax_ops as lax
from ..autodiff import CustomJVPRule, call_with_custom_rule
from ..operands import dtype_of, shape_of
from . import libm_log as _libm_log


def _f32(shape, value):
    return lax.full(shape, np.float32(value), "f32")


def _u32(shape, value):
    return lax.full(shape, np.uint32(value), "u32")


def _log(x):
    """log(x): x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m by the Cephes polynomial."""
    shape = shape_of(x)
    clamped = lax.max(x, _f32(shape, _bits(LOG_MIN_NORMAL)))  # denormals read as the smallest normal
    bits = lax.bitcast_convert_type(clamped, "u32")
    biased = lax.convert_element_type(lax.shift_right_logical(bits, _u32(shape, 23)), "i32")
    exponent = lax.add(lax.convert_element_type(lax.sub(biased, lax.full(shape, np.int32(127), "i32")), "f32"),
                       _f32(shape, 1.0))
    fraction = lax.bitwise_or(lax.bitwise_and(bits, _u32(shape, 0x807FFFFF)), _u32(shape, 0x3F000000))
    mantissa = lax.bitcast_convert_type(fraction, "f32")  # in [0.5, 1)
    small = lax.lt(mantissa, _f32(shape, _bits(LOG_SQRT_HALF)))
    zero, one = _f32(shape, 0.0), _f32(shape, 1.0)
    exponent = lax.sub(exponent, lax.select(small, one, zero))
    reduced = lax.add(lax.sub(mantissa, one), lax.select(small, mantissa, zero))
    square = lax.mul(reduced, reduced)
    cube = lax.mul(square, reduced)
    chains = []
    for high, middle, low in LOG_CHAINS:
        chain = lax.fma(reduced, _f32(shape, _bits(high)), _f32(shape, _bits(middle)))
        chains.append(lax.fma(chain, reduced, _f32(shape, _bits(low))))
    poly = lax.fma(chains[0], cube, chains[1])
    poly = lax.fma(poly, cube, chains[2])
    poly = lax.fma(poly, cube, lax.mul(exponent, _f32(shape, _bits(LOG_LN2_LOW))))
    result = lax.fma(_f32(shape, -0.5), square, reduced)
    result = lax.fma(exponent, _f32(shape, _bits(LOG_LN2_HIGH)), lax.add(result, poly))
    return _log_special_values(x, result)


def _log_special_values(x, result):
    shape = shape_of(x)
    zero = _f32(shape, 0.0)
    invalid = lax.bitwise_not(lax.gt(x, zero))  # negative or NaN
    result = lax.select(invalid, _f32(shape, np.nan), result)
    result = lax.select(lax.eq(x, zero), _f32(shape, -np.inf), result)
    return lax.select(lax.eq(x, _f32(shape, np.inf)), _f32(shape, np.inf), result)


def _horner(x, coefficients):
    shape = shape_of(x)
    # XLA starts from x * 0 + c (so an infinite x gives NaN, as there)
    value = lax.add(lax.mul(x, _f32(shape, 0.0)), _f32(shape, _coefficient(coefficients[0])))
    for coefficient in coefficients[1:]:
        value = lax.fma(value, x, _f32(shape, _coefficient(coefficient)))
    return value


def _coefficient(value) -> np.float32:
    return np.float32(value) if isinstance(value, float) else _bits(value)


def _log1p(x):
    """log(1 + x): the rational function for |x| < sqrt(2) - 1, else log of 1 + x."""
    if dtype_of(x).name == "f64":
        return _log1p_f64(x)
    shape = shape_of(x)
    ratio = lax.div(_horner(x, LOG1P_NUMERATOR), _horner(x, LOG1P_DENOMINATOR))
    square = lax.mul(x, x)
    near_zero = lax.add(x, lax.fma(square, _f32(shape, -0.5), lax.mul(lax.mul(x, square), ratio)))
    far = _log(lax.add(x, _f32(shape, 1.0)))
    return lax.select(lax.lt(lax.abs(x), _f32(shape, _bits(LOG1P_SMALL))), near_zero, far)


def _f64(shape, value):
    return lax.full(shape, np.float64(value), "f64")


def _word64(bits: int) -> np.float64:
    return np.array(bits, np.uint64).view(np.float64)[()]


def _log1p_f64(x):
    """float64 log1p as XLA computes it: the same rational function with float64 coefficients
    (Horner steps fused) below |x| = sqrt(2) - 1, else glibc's log of 1 + x (``libm_log``)."""
    shape = shape_of(x)

    def horner(coefficients):
        value = lax.add(lax.mul(x, _f64(shape, 0.0)), _f64(shape, _word64(coefficients[0])))
        for coefficient in coefficients[1:]:
            value = lax.fma(value, x, _f64(shape, _word64(coefficient)))
        return value

    ratio = lax.div(horner(LOG1P_NUMERATOR_F64), horner(LOG1P_DENOMINATOR_F64))
    square = lax.mul(x, x)
    near_zero = lax.add(x, lax.fma(square, _f64(shape, -0.5), lax.mul(lax.mul(x, square), ratio)))
    far = _libm_log.log(lax.add(x, _f64(shape, 1.0)))
    return lax.select(lax.lt(lax.abs(x), _f64(shape, _word64(LOG1P_SMALL_F64))), near_zero, far)


# erf = x * P(x^2) / Q(x^2) below |x| = 3.832, else +-1.
_ERF_P = (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)
_ERF_Q = (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 1.0)
_ERF_SATURATED = 0x407547CB


def _erf(x):
    """erf(x) by XLA's rational approximation, exactly +-1 beyond |x| = 3.832."""
    shape = shape_of(x)
    square = lax.mul(x, x)
    numerator = _f32(shape, _coefficient(_ERF_P[0]))
    for coefficient in _ERF_P[1:]:
        numerator = lax.fma(square, numerator, _f32(shape, _coefficient(coefficient)))
    denominator = _f32(shape, _coefficient(_ERF_Q[0]))
    for coefficient in _ERF_Q[1:]:
        denominator = lax.fma(square, denominator, _f32(shape, _coefficient(coefficient)))
    value = lax.div(lax.mul(x, numerator), denominator)
    sign = lax.select(lax.lt(x, _f32(shape, 0.0)), _f32(shape, -1.0), _f32(shape, 1.0))
    saturated = lax.ge(lax.abs(x), _f32(shape, _bits(_ERF_SATURATED)))
    return lax.select(saturated, sign, value)


# exp: Cephes' argument reduction (ln 2 in two parts) and polynomial, fused multiply-adds as
# LLVM forms them; XLA's CPU backend flushes the denormal results to zero.
_EXP_LOG2E = 1.44269504088896341
_EXP_LN2_HIGH, _EXP_LN2_LOW = 0.693359375, -2.12194440e-4
_EXP_POLYNOMIAL = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                   1.6666665459e-1, 5.0000001201e-1)
_EXP_LOWEST, _EXP_HIGHEST = -88.3762626647950, 89.0  # beyond: 0 (flushed) and inf


def _exp(x):
    """e^x = 2^m e^r with m = floor(x log2(e) + 1/2), r = x - m ln 2 (two fused steps), e^r by
    the Cephes polynomial; results below the smallest normal float are 0, as XLA's are."""
    shape = shape_of(x)
    clamped = lax.min(lax.max(x, _f32(shape, _EXP_LOWEST)), _f32(shape, _EXP_HIGHEST))
    m = lax.floor(lax.fma(clamped, _f32(shape, _EXP_LOG2E), _f32(shape, 0.5)))
    m = lax.min(m, _f32(shape, 127.0))  # 2^m stays a float; e^r covers the rest
    r = lax.fma(m, _f32(shape, -_EXP_LN2_HIGH), clamped)
    r = lax.fma(m, _f32(shape, -_EXP_LN2_LOW), r)
    poly = _f32(shape, _EXP_POLYNOMIAL[0])
    for coefficient in _EXP_POLYNOMIAL[1:]:
        poly = lax.fma(poly, r, _f32(shape, coefficient))
    y = lax.add(lax.fma(poly, lax.mul(r, r), r), _f32(shape, 1.0))
    # 2^m as two normal powers of two (m is in [-127, 127]); the first product is exact
    power = lax.convert_element_type(m, "i32")
    first = lax.shift_right_arithmetic(power, lax.full(shape, np.int32(1), "i32"))
    second = lax.sub(power, first)
    result = lax.mul(lax.mul(y, _power_of_two(first)), _power_of_two(second))
    flushed = lax.select(lax.lt(result, _f32(shape, _bits(LOG_MIN_NORMAL))), _f32(shape, 0.0), result)
    return lax.select(lax.ne(x, x), x, flushed)


def _power_of_two(exponent):
    shape = shape_of(exponent)
    biased = lax.add(exponent, lax.full(shape, np.int32(127), "i32"))
    field = lax.shift_left(lax.convert_element_type(biased, "u32"), _u32(shape, 23))
    return lax.bitcast_convert_type(field, "f32")


# float64 exp: XLA's own (Cephes' rational function in g^2 after reducing by ln 2 in two parts),
# its multiply-adds fused by LLVM, 2^n applied in four factors.
_EXP64_LOG2E = 1.4426950408889634073599
_EXP64_P = (1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1)
_EXP64_Q = (3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1,
            2.00000000000000000009e0)
_EXP64_LN2_HIGH, _EXP64_LN2_LOW = 0.693145751953125, 1.42860682030941723212e-6
_EXP64_HIGHEST, _EXP64_LOWEST = 709.782712893384, -708.3964185322641


def _exp_f64(x):
    """float64 e^x as XLA computes it: n = floor(x log2(e) + 1/2), g = x - n ln 2, e^g =
    1 + 2 g P(g^2) / (Q(g^2) - g P(g^2)), times 2^n; 0 below and inf above its range."""
    shape = shape_of(x)
    clamped = lax.max(lax.min(x, _f64(shape, _EXP64_HIGHEST)), _f64(shape, _EXP64_LOWEST))
    n = lax.floor(lax.fma(clamped, _f64(shape, _EXP64_LOG2E), _f64(shape, 0.5)))
    g = lax.fma(lax.neg(n), _f64(shape, _EXP64_LN2_HIGH), clamped)
    g = lax.fma(lax.neg(n), _f64(shape, _EXP64_LN2_LOW), g)
    square = lax.mul(g, g)
    p = _f64(shape, _EXP64_P[0])
    for coefficient in _EXP64_P[1:]:
        p = lax.fma(p, square, _f64(shape, coefficient))
    p = lax.mul(p, g)
    q = _f64(shape, _EXP64_Q[0])
    for coefficient in _EXP64_Q[1:]:
        q = lax.fma(q, square, _f64(shape, coefficient))
    e_g = lax.fma(lax.div(p, lax.sub(q, p)), _f64(shape, 2.0), _f64(shape, 1.0))
    result = _ldexp_f64(e_g, lax.convert_element_type(n, "i64"))
    result = lax.select(lax.lt(x, _f64(shape, _EXP64_LOWEST)), _f64(shape, 0.0), result)
    result = lax.select(lax.gt(x, _f64(shape, _EXP64_HIGHEST)), _f64(shape, np.inf), result)
    return lax.select(lax.ne(x, x), x, result)


def _ldexp_f64(value, exponent):
    """value * 2^exponent in four power-of-two factors, 2^b three times and 2^(e - 3b), b = e >> 2."""
    shape = shape_of(value)
    quarter = lax.shift_right_arithmetic(exponent, lax.full(shape, np.int64(2), "i64"))

    def power(k):
        biased = lax.convert_element_type(lax.add(k, lax.full(shape, np.int64(1023), "i64")), "u64")
        return lax.bitcast_convert_type(lax.shift_left(biased, lax.full(shape, np.uint64(52), "u64")), "f64")

    factor = power(quarter)
    out = lax.mul(lax.mul(lax.mul(value, factor), factor), factor)
    rest = lax.sub(exponent, lax.mul(quarter, lax.full(shape, np.int64(3), "i64")))
    return lax.mul(out, power(rest))


# Derivatives: JAX's rules for exp, log, log1p and erf (differentiating the approximations
# themselves would round differently).


def _with_jax_derivative(name: str, function, tangent):
    def jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        out = function(x)
        return [out], [tangent(dx, out, x)]

    def apply(x):
        return call_with_custom_rule(name, lambda operand: [function(operand)], [x], CustomJVPRule(jvp))[0]

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = function.__doc__
    return apply


def _one_like(x):
    return lax.full(shape_of(x), np.asarray(1.0, to_numpy(dtype_of(x).name)), dtype_of(x).name)


def _erf_tangent(dx, out, x):
    shape = shape_of(x)
    bump = exp(lax.neg(lax.mul(x, x)))
    return lax.mul(_f32(shape, 2.0 / np.sqrt(np.pi)), lax.mul(dx, bump))


log = _with_jax_derivative("xla_log", _log, lambda dx, out, x: lax.div(dx, x))
log_f64 = _with_jax_derivative("glibc_log", _libm_log.log, lambda dx, out, x: lax.div(dx, x))
log1p = _with_jax_derivative("xla_log1p", _log1p, lambda dx, out, x: lax.div(dx, lax.add(x, _one_like(x))))
erf = _with_jax_derivative("xla_erf", _erf, _erf_tangent)
exp = _with_jax_derivative("xla_exp", _exp, lambda dx, out, x: lax.mul(dx, out))
exp_f64 = _with_jax_derivative("xla_exp_f64", _exp_f64, lambda dx, out, x: lax.mul(dx, out))
