"""The Python Array API standard's (2024.12) elementwise names: the aliases it spells apart from
numpy (``acos``, ``atan2``, ``pow``, ``bitwise_invert``, ...), the inverse hyperbolic functions,
``copysign hypot nextafter signbit`` (``real imag conj`` are in complex_functions.py)."""

from __future__ import annotations

import math

from .. import lax_complex_inverse
from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from .arguments import (
    as_array_argument,
    check_dtype_kind,
    convert_operand,
    inexact_dtype,
    promote_and_broadcast,
    result_dtype,
    with_weak_type,
)
from .elementwise import (
    arctan2,
    invert,
    left_shift,
    power,
    right_shift,
)
from .elementwise_math import arccos, arcsin, arctan
from meshjit.ir.dtypes import is_complex, is_float

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "acos",
    "acosh",
    "arccosh",
    "arcsinh",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "copysign",
    "hypot",
    "nextafter",
    "pow",
    "signbit",
)

acos = arccos
asin = arcsin
atan = arctan
atan2 = arctan2
pow = power  # noqa: A001 - the standard's name
bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift

# Above this magnitude x*x overflows; asinh(x) and acosh(x) are log(2x) there to the last bit.
_LARGE = {"f32": 1e18, "f64": 1e150}


def _inexact_operand(name: str, x):
    value = as_array_argument(x, name)
    dtype = inexact_dtype(dtype_of(value))
    return convert_operand(value, dtype.name), dtype


def _negative_sign(x):
    """True where ``x`` has its sign bit set (-0.0 and negative NaNs included)."""
    integer = {"f16": "i16", "bf16": "i16", "f32": "i32", "f64": "i64"}[dtype_of(x).name]
    return lax.lt(lax.bitcast_convert_type(x, integer), 0)


def _with_sign_of(magnitude, sign_source):
    return lax.select(_negative_sign(sign_source), lax.neg(magnitude), magnitude)


def arcsinh(x, /):
    """Inverse hyperbolic sine: ``log1p(a + a**2 / (1 + sqrt(1 + a**2)))`` of ``a = |x|`` (no
    cancellation near 0), ``log(2a)`` where ``a**2`` would overflow, with ``x``'s sign."""
    operand, dtype = _inexact_operand("asinh", x)
    if is_complex(dtype.name):
        return with_weak_type(lax_complex_inverse.asinh(operand), dtype.weak)
    magnitude = lax.abs(operand)
    square = lax.mul(magnitude, magnitude)
    moderate = lax.log1p(lax.add(magnitude, lax.div(square, lax.add(1.0, lax.sqrt(lax.add(1.0, square))))))
    large = lax.add(lax.log(magnitude), math.log(2.0))
    result = lax.select(lax.gt(magnitude, _LARGE[dtype.name]), large, moderate)
    return with_weak_type(_with_sign_of(result, operand), dtype.weak)


def arccosh(x, /):
    """Inverse hyperbolic cosine: ``log1p(t + sqrt(2t + t**2))`` of ``t = x - 1``, ``log(2x)``
    for huge ``x``, NaN below 1."""
    operand, dtype = _inexact_operand("acosh", x)
    if is_complex(dtype.name):
        return with_weak_type(lax_complex_inverse.acosh(operand), dtype.weak)
    shifted = lax.sub(operand, 1.0)
    moderate = lax.log1p(lax.add(shifted, lax.sqrt(lax.add(lax.mul(shifted, 2.0), lax.mul(shifted, shifted)))))
    large = lax.add(lax.log(operand), math.log(2.0))
    result = lax.select(lax.gt(operand, _LARGE[dtype.name]), large, moderate)
    result = lax.select(lax.lt(operand, 1.0), lax.full(shape_of(operand), math.nan, dtype.name), result)
    return with_weak_type(result, dtype.weak)


def arctanh(x, /):
    """Inverse hyperbolic tangent: ``0.5 * log1p(2x / (1 - x))``; ±inf at ±1, NaN beyond."""
    operand, dtype = _inexact_operand("atanh", x)
    if is_complex(dtype.name):
        return with_weak_type(lax_complex_inverse.atanh(operand), dtype.weak)
    result = lax.mul(lax.log1p(lax.div(lax.mul(operand, 2.0), lax.sub(1.0, operand))), 0.5)
    # NOTE: the formula gives -0.0 a +0.0 result; the standard keeps the sign of zero.
    result = lax.select(lax.eq(operand, 0.0), operand, result)
    return with_weak_type(result, dtype.weak)


asinh = arcsinh
acosh = arccosh
atanh = arctanh


def signbit(x, /):
    """True where the sign bit of ``x`` is set (-0.0 included); integers: ``x < 0``."""
    value = as_array_argument(x, "signbit")
    dtype = dtype_of(value)
    check_dtype_kind("signbit", dtype, "biuf")
    operand = convert_operand(value, dtype.name)
    if is_float(dtype.name):
        return _negative_sign(operand)
    if dtype.name[0] == "i":
        return lax.lt(operand, 0)
    return lax.full(shape_of(operand), False, "bool")


def copysign(x1, x2, /):
    """``|x1|`` with the sign bit of ``x2``, computed in floats."""
    dtype = inexact_dtype(result_dtype(as_array_argument(x1, "copysign"), as_array_argument(x2, "copysign")))
    (magnitude, sign), _ = promote_and_broadcast("copysign", x1, x2, dtype=dtype.name)
    return with_weak_type(_with_sign_of(lax.abs(magnitude), sign), dtype.weak)


def hypot(x1, x2, /):
    """``sqrt(x1**2 + x2**2)`` without overflow: the larger magnitude times
    ``sqrt(1 + ratio**2)``; inf wherever either is infinite (even against NaN)."""
    dtype = inexact_dtype(result_dtype(as_array_argument(x1, "hypot"), as_array_argument(x2, "hypot")))
    (first, second), _ = promote_and_broadcast("hypot", x1, x2, dtype=dtype.name)
    first, second = lax.abs(first), lax.abs(second)
    larger, smaller = lax.max(first, second), lax.min(first, second)
    is_zero = lax.eq(larger, 0.0)
    ratio = lax.div(smaller, lax.select(is_zero, lax.full(shape_of(larger), 1.0, dtype.name), larger))
    result = lax.select(is_zero, larger, lax.mul(larger, lax.sqrt(lax.add(1.0, lax.mul(ratio, ratio)))))
    infinite = lax.bitwise_or(lax.eq(first, math.inf), lax.eq(second, math.inf))
    result = lax.select(infinite, lax.full(shape_of(result), math.inf, dtype.name), result)
    return with_weak_type(result, dtype.weak)


def nextafter(x1, x2, /):
    """The next representable float after ``x1`` towards ``x2``."""
    dtype = inexact_dtype(result_dtype(as_array_argument(x1, "nextafter"), as_array_argument(x2, "nextafter")))
    (first, second), _ = promote_and_broadcast("nextafter", x1, x2, dtype=dtype.name)
    return with_weak_type(lax.nextafter(first, second), dtype.weak)
