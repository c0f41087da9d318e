"""Float arithmetic XLA's CPU backend does and numpy lacks: a fused multiply-add rounded once
(LLVM contracts XLA's ``a * b + c`` into one), XLA's float32 log and log1p, and erf_inv by
Giles' polynomials as XLA expands it. The reference implementations of ``fma`` and ``erf_inv``
are built on these, so meshjit.random's normal values are JAX's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def _two_sum(a, b):
    """``a + b`` rounded, and its exact rounding error (Knuth)."""
    total = a + b
    b_virtual = total - a
    error = (a - (total - b_virtual)) + (b - b_virtual)
    return total, error


def _round_to_odd_sum(a, b):
    """``a + b`` rounded to odd: the rounded sum, nudged one ulp towards the exact sum when it
    was inexact and its last bit is even. A later rounding to fewer bits is then exact."""
    total, error = _two_sum(a, b)
    bits = total.view(np.uint64)
    inexact = (error != 0) & np.isfinite(error) & ((bits & np.uint64(1)) == 0)
    towards = np.where(error > 0, np.inf, -np.inf)
    return np.where(inexact, np.nextafter(total, towards), total)


_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's split of a float64 into two 26-bit halves


def _split(a):
    scaled = _SPLITTER * a
    high = scaled - (scaled - a)
    return high, a - high


def _two_product(a, b):
    """``a * b`` rounded, and its exact rounding error (Dekker)."""
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    return product, error


def _float32_sum(product, c):
    """float32 ``product + c`` rounded once, for a float64 ``product`` of two float32 values
    (exact). The float64 sum rounds to float32 as the exact sum would unless it landed exactly
    on a float32 rounding midpoint (low 29 bits 1 then 28 zeros) or below float32's normals;
    only those, rare, are summed again rounded to odd (53 bits then round to 24 as the exact
    sum would)."""
    total = np.asarray(product + c)
    bits = total.view(np.uint64)
    again = ((bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)) | (np.abs(total) < 2.0 ** -126)
    if again.any():
        product, c = np.broadcast_arrays(product, c)
        total = total.copy()
        total[again] = _round_to_odd_sum(product[again], c[again])
    return total.astype(np.float32)


# NOTE: float64 FMAs of at most this many elements are rounded from the exact value in Python's
# integers: a scalar's (Adam's ``b ** t`` through glibc's powf, nine FMAs in a numpy step) took
# about 50 us each through the array emulation, 0.5 ms a powf (0.3 ms now)
EXACT_MAX_ELEMENTS = 8
# the emulation's terms stay exact while its operands and product lie between these: beyond
# them Veltkamp's split overflows (2^996) or the product's error term is subnormal
_TERMS_MAX, _TERMS_MIN = 2.0 ** 995, 2.0 ** -960


def _exact(x: float, y: float, z: float) -> float:
    """``x * y + z`` rounded once from the exact rational value (int division rounds correctly,
    subnormals included); the plain expression where an operand is not finite, as the emulation
    below. A zero takes the plain expression's sign: the exact sum is zero only where the product
    is exact, and IEEE's sum of the signed product and ``z`` is then the fma's."""
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return x * y + z
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if not exact:
        return x * y + z
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


def _exactly(a: np.ndarray, b: np.ndarray, c: np.ndarray, where: np.ndarray, result: np.ndarray) -> np.ndarray:
    """``result`` with the elements ``where`` says rounded from their exact value (``_exact``)."""
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape, np.shape(where))
    result = np.array(np.broadcast_to(result, shape), np.float64)
    flat = result.reshape(-1)
    a, b, c = (np.broadcast_to(x, shape).ravel() for x in (a, b, c))
    for index in np.flatnonzero(np.broadcast_to(where, shape)):
        flat[index] = _exact(float(a[index]), float(b[index]), float(c[index]))
    return result


def _few(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``fma`` of a few elements, each from its exact value (``_exact``)."""
    a, b, c = np.broadcast_arrays(a, b, c)
    result = np.empty(a.shape, np.float64)
    for index, (x, y, z) in enumerate(zip(a.flat, b.flat, c.flat)):
        result.flat[index] = _exact(float(x), float(y), float(z))
    return result


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` with a single rounding, elementwise, for float32 or float64 arrays."""
    dtype = np.result_type(a, b, c)
    with np.errstate(all="ignore"):
        if dtype == np.float32:
            return _float32_sum(np.asarray(a, np.float64) * np.asarray(b, np.float64), np.asarray(c, np.float64))
        a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
        if max(a.size, b.size, c.size) <= EXACT_MAX_ELEMENTS:
            return _few(a, b, c)
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        # Boldo and Melquiond's emulation: exact product and sum, the low parts rounded to odd.
        product_high, product_low = _two_product(a, b)
        sum_high, sum_low = _two_sum(c, product_high)
        low = _round_to_odd_sum(sum_low, product_low)
        result = sum_high + low
        # Infinities and NaNs make the error terms NaN; the plain expression is right for them,
        # and for a zero result, which is only reached when the exact sum is zero (the product
        # is then exact): its sign follows the sum of the signed product and c, as IEEE's fma
        # (-0 * 0 + -0 is -0, where the error terms' +0 would make it +0).
        result = np.where(np.isfinite(result) & (result != 0), result, a * b + c)
        magnitude = np.abs(product_high)
        outside = finite & ((np.abs(a) >= _TERMS_MAX) | (np.abs(b) >= _TERMS_MAX) | (np.abs(c) >= _TERMS_MAX)
                            | (magnitude >= _TERMS_MAX) | ((magnitude < _TERMS_MIN) & (magnitude != 0)))
        return _exactly(a, b, c, outside, result) if outside.any() else result


# --- XLA's float32 log and log1p (Eigen's polynomial log, Cephes' coefficients) ---------------
# meshjit.random also spells these in IR ops (compiler/frontend/random/xla_float32.py); both
# read the coefficients here. Words are float32 bit patterns.

LOG_CHAINS = ((0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A), (0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50),
              (0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA))
LOG_LN2_LOW, LOG_LN2_HIGH = 0xB95E8083, 0x3F318000  # -2.12194440e-4 + 0.693359375
LOG_SQRT_HALF, LOG_MIN_NORMAL = 0x3F3504F3, 0x00800000
LOG1P_NUMERATOR = (0x383DE04B, 0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76, 0x426473AD,
                   0x41A05101)  # the first is 4.527e-05
LOG1P_DENOMINATOR = (0x3F800000, 0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A,
                     0x42707982)
LOG1P_SMALL = 0x3ED413CD  # sqrt(2) - 1


def word(bits: int) -> np.float32:
    """The float32 whose bit pattern is ``bits``."""
    return np.array(bits, np.uint32).view(np.float32)[()]


def _fma32(a, b, c):
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float32) for x in (a, b, c)))
    return fma(a, b, c)


def xla_log_f32(x: np.ndarray) -> np.ndarray:
    """float32 log as XLA's CPU backend computes it (see ``xla_float32.log``)."""
    x = np.asarray(x, np.float32)
    one, zero = np.float32(1), np.float32(0)
    with np.errstate(all="ignore"):
        bits = np.maximum(x, word(LOG_MIN_NORMAL)).view(np.uint32)
        exponent = ((bits >> 23).astype(np.int32) - 127).astype(np.float32) + one
        mantissa = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(np.float32)
        small = mantissa < word(LOG_SQRT_HALF)
        exponent = exponent - np.where(small, one, zero)
        reduced = (mantissa - one) + np.where(small, mantissa, zero)
        square = reduced * reduced
        cube = square * reduced
        chains = [_fma32(_fma32(reduced, word(high), word(middle)), reduced, word(low))
                  for high, middle, low in LOG_CHAINS]
        poly = _fma32(_fma32(chains[0], cube, chains[1]), cube, chains[2])
        poly = _fma32(poly, cube, exponent * word(LOG_LN2_LOW))
        result = _fma32(np.float32(-0.5), square, reduced)
        result = _fma32(exponent, word(LOG_LN2_HIGH), result + poly)
        result = np.where(x > 0, result, np.float32(np.nan))
        result = np.where(x == 0, np.float32(-np.inf), result)
        return np.where(x == np.inf, np.float32(np.inf), result).astype(np.float32)


# float64: the same rational function's coefficients (bit patterns), and glibc's log beyond it
# (ir/libm_log.py)
LOG1P_NUMERATOR_F64 = (0x3F07BC0962B395CA, 0x3FDFE818A0FE1A83, 0x401A509F46F4FA53,
                       0x403DE9738B8CB9C9, 0x404E798EB86C3351, 0x404C8E7597479A10,
                       0x40340A202D99830A)
LOG1P_DENOMINATOR_F64 = (0x3FF0000000000000, 0x402E20359E903E37, 0x4054C30B52213498,
                         0x406BB86590FCFB56, 0x407351945DC908A5, 0x406B0DB13E48E066,
                         0x404E0F304466448E)
LOG1P_SMALL_F64 = 0x3FDA827999FCEF32


def xla_log1p(x: np.ndarray) -> np.ndarray:
    """log1p as XLA's CPU backend computes it: x - x^2/2 + x^3 P(x)/Q(x) below |x| = sqrt(2) - 1
    (multiply-adds fused), else the log of 1 + x (XLA's polynomial log for float32, glibc's
    log for float64)."""
    from .libm_log import log as libm_log  # imports fma from here
    single = x.dtype == np.float32
    dtype, bits = (np.float32, np.uint32) if single else (np.float64, np.uint64)

    def constant(pattern):
        return np.array(pattern, bits).view(dtype)[()]

    tables = ((LOG1P_NUMERATOR, LOG1P_DENOMINATOR, LOG1P_SMALL) if single else
              (LOG1P_NUMERATOR_F64, LOG1P_DENOMINATOR_F64, LOG1P_SMALL_F64))
    with np.errstate(all="ignore"):
        numerator, denominator = (_horner(x, [constant(c) for c in table]) for table in tables[:2])
        square = x * x
        near_zero = x + fma(square, np.full_like(x, -0.5), (x * square) * (numerator / denominator))
        far = xla_log_f32(x + dtype(1)) if single else libm_log(x + dtype(1))
        return np.where(np.abs(x) < constant(tables[2]), near_zero, far).astype(dtype)


def _horner(x, coefficients):
    value = x * x.dtype.type(0) + coefficients[0]
    for coefficient in coefficients[1:]:
        value = fma(value, x, np.full_like(x, coefficient))
    return value


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the single-precision
# polynomials in w = -log(1 - x**2) - 2.5 (w < 5) or sqrt(w) - 3, highest degree first.
ERF_INV_F32 = (
    (5.0, 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)),
    (np.inf, 3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)),
)
# and the double-precision ones: w - 3.125 (w < 6.25), sqrt(w) - 3.25 (w < 16), sqrt(w) - 5.
ERF_INV_F64 = (
    (6.25, 3.125, (
        -3.64441206401782e-21, -1.6850591381820166e-19, 1.28584807152564e-18,
        1.1157877678025181e-17, -1.3331716628546209e-16, 2.0972767875968562e-17,
        6.6376381343583238e-15, -4.0545662729752069e-14, -8.1519341976054722e-14,
        2.6335093153082323e-12, -1.2975133253453532e-11, -5.4154120542946279e-11,
        1.0512122733215323e-09, -4.1126339803469837e-09, -2.9070369957882005e-08,
        4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
        0.00018673420803405714, -0.000740702534166267, -0.0060336708714301491,
        0.24015818242558962, 1.6536545626831027)),
    (16.0, 3.25, (
        2.2137376921775787e-09, 9.0756561938885391e-08, -2.7517406297064545e-07,
        1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
        2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
        6.8284851459573175e-05, 2.4031110387097894e-05, -0.00035503752036284748,
        0.0009532893797373805, -0.0016882755560235047, 0.0024914420961078508,
        -0.0037512085075692412, 0.0053709145535900636, 1.0052589676941592,
        3.0838856104922208)),
    (np.inf, 5.0, (
        -2.7109920616438573e-11, -2.5556418169965252e-10, 1.5076572693500548e-09,
        -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
        2.9147953450901081e-08, -6.7711997758452339e-08, 2.2900482228026655e-07,
        -9.9298272942317e-07, 4.5260625972231537e-06, -1.9681778105531671e-05,
        7.5995277030017761e-05, -0.00021503011930044477, -0.00013871931833623122,
        1.0103004648645344, 4.8499064014085844)),
)


def erf_inv(x: np.ndarray) -> np.ndarray:
    """The inverse error function as XLA computes it: Giles' polynomial for the region of
    ``w = -log1p(-x*x)``, evaluated by Horner's rule with fused multiply-adds; +-inf at +-1."""
    dtype = x.dtype.type
    regions = ERF_INV_F32 if x.dtype == np.float32 else ERF_INV_F64
    with np.errstate(all="ignore"):
        w = -xla_log1p(x * -x)
        result = np.zeros_like(x)
        lower = dtype(-np.inf)
        for index, (upper, shift, coefficients) in enumerate(regions):
            inside = (w >= lower) & (w < upper)
            centred = (w if index == 0 else np.sqrt(w)) - dtype(shift)
            value = np.full_like(x, coefficients[0])
            for coefficient in coefficients[1:]:
                value = fma(value, centred, np.full_like(x, coefficient))
            result = np.where(inside, value * x, result)
            lower = dtype(upper)
        # w is NaN outside [-1, 1] and for NaN inputs, so no region takes them.
        result = np.where(np.isnan(w), dtype(np.nan), result)
        return np.where(np.abs(x) == 1, x * dtype(np.inf), result).astype(x.dtype)
