"""jax.numpy's elementwise functions that numpy derives from the basic ones: angle units,
NaN-aware extrema, ``nan_to_num``, ``sinc``, ``heaviside``, the binary exponent functions
(``ldexp``, ``frexp``, ``spacing``) built on the IEEE bit layout, ``modf``, and the integer
``gcd``/``lcm`` (Euclid's algorithm as a ``while_loop``)."""

from __future__ import annotations

import numpy as np

from .. import lax_ops as lax
from .. import numpy_api as jnp
from ..lax_loops import while_loop
from ..operands import dtype_of
from .arguments import (
    as_array_argument,
    check_dtype_kind,
    convert_operand,
    inexact_dtype,
    is_inexact_dtype,
    result_dtype,
    with_weak_type,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "deg2rad",
    "degrees",
    "fabs",
    "float_power",
    "fmax",
    "fmin",
    "frexp",
    "gcd",
    "heaviside",
    "lcm",
    "ldexp",
    "logaddexp2",
    "modf",
    "nan_to_num",
    "rad2deg",
    "radians",
    "sinc",
    "spacing",
)

# (integer type of the same width, mantissa bits, exponent mask, exponent bias) per float type
_LAYOUT = {"f32": ("i32", 23, 0xFF, 127), "f64": ("i64", 52, 0x7FF, 1023), "f16": ("i16", 10, 0x1F, 15),
           "bf16": ("i16", 7, 0xFF, 127)}


def _inexact(function: str, *values):
    """The arguments promoted together, then to a floating type (integers become floats)."""
    values = [as_array_argument(value, function) for value in values]
    kind = inexact_dtype(result_dtype(*values)).name
    # as JAX's promote_dtypes_inexact: weakly typed only when every argument is (Python scalars)
    weak = all(dtype_of(value).weak for value in values)
    converted = [with_weak_type(convert_operand(value, kind), weak) for value in values]
    return converted if len(converted) > 1 else converted[0]


def _promoted(function: str, *values):
    values = [as_array_argument(value, function) for value in values]
    promoted = result_dtype(*values)
    # Python scalars stay weakly typed, as in JAX (``fmax(3, 7)`` is a weak i32)
    return [with_weak_type(convert_operand(value, promoted.name), promoted.weak) for value in values]


def deg2rad(x, /):
    """Angles in degrees converted to radians."""
    return jnp.multiply(_inexact("deg2rad", x), np.pi / 180)


def rad2deg(x, /):
    """Angles in radians converted to degrees."""
    return jnp.multiply(_inexact("rad2deg", x), 180 / np.pi)


def radians(x, /):
    """Alias of ``deg2rad``."""
    return deg2rad(x)


def degrees(x, /):
    """Alias of ``rad2deg``."""
    return rad2deg(x)


def fabs(x, /):
    """The absolute value as a float (integers are converted first)."""
    return jnp.absolute(_inexact("fabs", x))


def fmax(x1, x2):
    """The elementwise maximum, ignoring a NaN when the other operand is a number."""
    x1, x2 = _promoted("fmax", x1, x2)
    return jnp.where(jnp.logical_or(jnp.greater(x1, x2), jnp.isnan(x2)), x1, x2)


def fmin(x1, x2):
    """The elementwise minimum, ignoring a NaN when the other operand is a number."""
    x1, x2 = _promoted("fmin", x1, x2)
    return jnp.where(jnp.logical_or(jnp.less(x1, x2), jnp.isnan(x2)), x1, x2)


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan`` and the infinities by ``posinf``/``neginf`` (the type's largest
    finite values by default); integer and boolean arrays come back unchanged."""
    x = jnp.asarray(as_array_argument(x, "nan_to_num"))
    if not is_inexact_dtype(x.dtype):
        return x
    info = jnp.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    result = jnp.where(jnp.isnan(x), jnp.asarray(nan, dtype=x.dtype), x)
    result = jnp.where(jnp.isposinf(result), jnp.asarray(posinf, dtype=x.dtype), result)
    return jnp.where(jnp.isneginf(result), jnp.asarray(neginf, dtype=x.dtype), result)


def heaviside(x1, x2, /):
    """0 where ``x1 < 0``, 1 where ``x1 > 0`` and ``x2`` where ``x1 == 0``."""
    x1, x2 = _inexact("heaviside", x1, x2)
    zero = jnp.zeros_like(x1)
    result = jnp.where(jnp.less(x1, zero), zero, jnp.where(jnp.greater(x1, zero), jnp.ones_like(x1), x2))
    return jnp.where(jnp.isnan(x1), x1, result)


def sinc(x, /):
    """The normalised sinc, ``sin(pi x) / (pi x)``, 1 at 0 (with derivative 0 there)."""
    x = _inexact("sinc", x)
    at_zero = jnp.equal(x, 0)
    scaled = jnp.multiply(jnp.where(at_zero, jnp.ones_like(x), x), np.pi)
    return jnp.where(at_zero, jnp.ones_like(x), jnp.divide(jnp.sin(scaled), scaled))


def logaddexp2(x1, x2, /):
    """``log2(2**x1 + 2**x2)`` without overflow."""
    x1, x2 = _inexact("logaddexp2", x1, x2)
    largest = jnp.maximum(x1, x2)
    delta = jnp.subtract(x1, x2)
    tail = jnp.divide(jnp.log1p(jnp.exp2(jnp.negative(jnp.absolute(delta)))), np.log(2))
    return jnp.where(jnp.isnan(delta), jnp.add(x1, x2), jnp.add(largest, tail))


def float_power(x1, x2, /):
    """``x1 ** x2`` computed in floating point."""
    x1, x2 = _inexact("float_power", x1, x2)
    return jnp.power(x1, x2)


def _power_of_two(exponent, kind: str):
    """``2 ** exponent`` exactly, built from its bits (exponent within the normal range)."""
    integer, mantissa_bits, _, bias = _LAYOUT[kind]
    bits = jnp.left_shift(jnp.add(convert_operand(exponent, integer), bias), mantissa_bits)
    return lax.bitcast_convert_type(bits, kind)


def ldexp(x1, x2, /):
    """``x1 * 2 ** x2`` for an integer ``x2``, exact while the result is representable."""
    x2 = as_array_argument(x2, "ldexp")
    check_dtype_kind("ldexp", dtype_of(x2), "iu")
    x1 = _inexact("ldexp", x1)
    kind = dtype_of(x1).name
    _, _, mask, bias = _LAYOUT[kind]
    # the exponent clamped, then applied in three steps so that no factor overflows on its own
    limit = 2 * bias + 1 + _LAYOUT[kind][1]
    exponent = jnp.clip(convert_operand(x2, _LAYOUT[kind][0]), -limit, limit)
    third = jnp.floor_divide(exponent, 3)
    rest = jnp.subtract(exponent, jnp.multiply(third, 2))
    result = jnp.multiply(jnp.multiply(x1, _power_of_two(third, kind)), _power_of_two(third, kind))
    return jnp.multiply(result, _power_of_two(rest, kind))


def frexp(x, /):
    """The mantissa in [0.5, 1) and the integer exponent with ``x == mantissa * 2 ** exponent``
    (0, infinities and NaN give themselves and exponent 0)."""
    x = _inexact("frexp", x)
    kind = dtype_of(x).name
    integer, mantissa_bits, mask, bias = _LAYOUT[kind]
    subnormal = jnp.less(jnp.absolute(x), float(2.0 ** (1 - bias)))
    scaled = jnp.where(subnormal, jnp.multiply(x, float(2 ** mantissa_bits)), x)
    bits = lax.bitcast_convert_type(scaled, integer)
    biased = jnp.bitwise_and(jnp.right_shift(bits, mantissa_bits), mask)
    exponent = jnp.subtract(biased, jnp.where(subnormal, bias - 1 + mantissa_bits, bias - 1))
    kept = jnp.bitwise_and(bits, ~(mask << mantissa_bits))
    mantissa = lax.bitcast_convert_type(jnp.bitwise_or(kept, (bias - 1) << mantissa_bits), kind)
    special = jnp.logical_or(jnp.equal(x, 0), jnp.logical_not(jnp.isfinite(x)))
    return jnp.where(special, x, mantissa), jnp.where(special, 0, exponent).astype(np.int32)


def modf(x, /):
    """The fractional and integral parts, each with the sign of ``x``."""
    x = _inexact("modf", x)
    whole = jnp.trunc(x)
    return jnp.subtract(x, whole), whole


def spacing(x, /):
    """The distance from ``x`` to the next representable number away from zero."""
    x = _inexact("spacing", x)
    away = jnp.where(jnp.signbit(x), -np.inf, np.inf).astype(x.dtype)
    return jnp.subtract(jnp.nextafter(x, away), x)


def _integers(function: str, x1, x2):
    x1, x2 = _promoted(function, x1, x2)
    check_dtype_kind(function, dtype_of(x1), "iub")
    return x1, x2


def _gcd(x1, x2):
    def step(state):
        a, b = state
        nonzero = jnp.not_equal(b, 0)
        return jnp.where(nonzero, b, a), jnp.where(nonzero, jnp.remainder(a, jnp.where(nonzero, b, 1)), 0)

    start = tuple(jnp.broadcast_arrays(jnp.absolute(x1), jnp.absolute(x2)))
    return while_loop(lambda state: jnp.any(jnp.not_equal(state[1], 0)), step, start)[0]


def gcd(x1, x2):
    """The greatest common divisor of integers (``gcd(0, 0) == 0``)."""
    return _gcd(*_integers("gcd", x1, x2))


def lcm(x1, x2):
    """The least common multiple of integers (0 when either is 0)."""
    x1, x2 = _integers("lcm", x1, x2)
    divisor = _gcd(x1, x2)
    safe = jnp.where(jnp.equal(divisor, 0), 1, divisor)
    product = jnp.multiply(jnp.absolute(x1), jnp.floor_divide(jnp.absolute(x2), safe))
    return jnp.where(jnp.equal(divisor, 0), 0, product)
