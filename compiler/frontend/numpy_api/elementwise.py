"""jax.numpy's arithmetic, bitwise, logical and comparison functions, ``where`` and ``clip``.

Each promotes its arguments with JAX's lattice (weak Python scalars), broadcasts them with
numpy's rule, and applies one or a few lax ops; results of only-weak operands stay weak.
Floor division and ``mod`` follow Python's floor semantics, built from lax's C-style ``div``
and ``rem``.
"""

from __future__ import annotations

import math

from meshjit.ir.dtypes import is_unsigned

from .. import lax_complex
from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import DType, default_int, is_complex, is_float
from ..trace import Tracer
from .arguments import (
    as_array_argument,
    broadcast_shapes,
    broadcast_together,
    check_dtype_kind,
    convert_operand,
    inexact_dtype,
    promote_and_broadcast,
    result_dtype,
    with_weak_type,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "abs",
    "divmod",
    "absolute",
    "add",
    "arctan2",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "clip",
    "divide",
    "equal",
    "floor_divide",
    "fmod",
    "greater",
    "greater_equal",
    "invert",
    "left_shift",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "positive",
    "power",
    "reciprocal",
    "remainder",
    "right_shift",
    "sign",
    "square",
    "subtract",
    "true_divide",
    "where",
)


def _strong_int_if_bool(dtype: DType) -> DType:
    """Arithmetic that has no bool meaning (floor division, mod, power) computes bools as ints."""
    return DType(default_int(x64())) if dtype.name == "bool" else dtype


def _binary(name: str, kernel, allowed: str = "iuf", bool_kernel=None):
    """A promoting, broadcasting binary function; bools use ``bool_kernel`` when one exists."""

    def apply(x1, x2, /):
        (x1, x2), dtype = promote_and_broadcast(name, x1, x2)
        if dtype.name == "bool" and bool_kernel is not None:
            return bool_kernel(x1, x2)
        check_dtype_kind(name, dtype, allowed)
        return with_weak_type(kernel(x1, x2), dtype.weak)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise ``{name}`` with numpy broadcasting and JAX dtype promotion."
    return apply


# On bools, addition and maximum are logical or, multiplication and minimum logical and (numpy).
add = _binary("add", lax.add, "iufc", bool_kernel=lax.bitwise_or)
subtract = _binary("subtract", lax.sub, "iufc")
multiply = _binary("multiply", lax.mul, "iufc", bool_kernel=lax.bitwise_and)


def _complex_extremum(real_kernel, ordered):
    """max or min of complex numbers in lexicographic order (real part, then imaginary), as
    JAX's; real operands go to ``real_kernel``."""
    def kernel(x1, x2):
        if not is_complex(dtype_of(x1).name):
            return real_kernel(x1, x2)
        (real1, imaginary1), (real2, imaginary2) = lax_complex.parts(x1), lax_complex.parts(x2)
        first = lax.bitwise_or(ordered(real1, real2),
                               lax.bitwise_and(lax.eq(real1, real2), ordered(imaginary1, imaginary2)))
        return lax.select(first, x1, x2)

    return kernel


maximum = _binary("maximum", _complex_extremum(lax.max, lax.gt), "iufc", bool_kernel=lax.bitwise_or)
minimum = _binary("minimum", _complex_extremum(lax.min, lax.lt), "iufc", bool_kernel=lax.bitwise_and)


def _nonzero_int_divisor(x2):
    """JAX's integer remainders divide by 1 where the divisor is 0, so ``x % 0`` is 0."""
    dtype = dtype_of(x2).name
    if is_float(dtype) or dtype == "bool":
        return x2
    return lax.select(lax.eq(x2, 0), lax.full(shape_of(x2), 1, dtype), x2)


def _fmod(x1, x2):
    return lax.rem(x1, _nonzero_int_divisor(x2))


fmod = _binary("fmod", _fmod)
bitwise_and = _binary("bitwise_and", lax.bitwise_and, allowed="biu")
bitwise_or = _binary("bitwise_or", lax.bitwise_or, allowed="biu")
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor, allowed="biu")
left_shift = _binary("left_shift", lax.shift_left, allowed="iu")


def _shift_right(x1, x2):
    """numpy's right shift: arithmetic on signed integers, logical on unsigned ones (as JAX)."""
    unsigned = lax.shift_right_logical if str(x1.dtype).startswith("uint") else lax.shift_right_arithmetic
    return unsigned(x1, x2)


right_shift = _binary("right_shift", _shift_right, allowed="iu")


def true_divide(x1, x2, /):
    """``x1 / x2``; integers and bools divide as floats (JAX's true division).

    JAX's true_divide is a jitted function, so even eagerly XLA sees the divisor's broadcast and
    multiplies by the broadcast reciprocal instead (``x / 100`` for an array x is 0.29999998 at
    30); eagerly meshjit does the same here, and under jit the ``rewrite_divisions`` pass does."""
    values = [as_array_argument(value, "true_divide") for value in (x1, x2)]
    dtype = inexact_dtype(result_dtype(*values))
    (x1, x2), dtype = promote_and_broadcast("true_divide", *values, dtype=dtype.name)
    divisor = values[1]
    if not any(isinstance(value, Tracer) for value in values) and _spread(divisor, x2):
        small = convert_operand(divisor, dtype.name)
        reciprocal = lax.div(lax.full(shape_of(small), 1, dtype.name), small)
        (_, spread), _ = promote_and_broadcast("true_divide", x1, reciprocal, dtype=dtype.name)
        return with_weak_type(lax.mul(x1, spread), dtype.weak)
    return with_weak_type(lax.div(x1, x2), dtype.weak)


def _spread(divisor, broadcast) -> bool:
    """Whether a real float divisor was broadcast to more elements than it has (complex division
    is left as it is: XLA's rule was checked on real floats only)."""
    return is_float(dtype_of(broadcast).name) and math.prod(shape_of(divisor)) < math.prod(shape_of(broadcast))


divide = true_divide


def _floor_divide_float(x1, x2):
    # Python's float floor division: divide the exact multiple x1 - fmod(x1, x2), step down when
    # the remainder's sign differs from the divisor's, then snap the near-integer quotient.
    remainder = lax.rem(x1, x2)
    quotient = lax.div(lax.sub(x1, remainder), x2)
    needs_step = lax.bitwise_and(lax.ne(remainder, 0), lax.ne(lax.lt(x2, 0), lax.lt(remainder, 0)))
    quotient = lax.select(needs_step, lax.sub(quotient, 1), quotient)
    floored = lax.floor(quotient)
    quotient = lax.select(lax.gt(lax.sub(quotient, floored), 0.5), lax.add(floored, 1), floored)
    # A zero divisor gives numpy's x / 0 (an infinity or NaN).
    return lax.select(lax.eq(x2, 0), lax.div(x1, x2), quotient)


def _floor_divide_int(x1, x2):
    # As JAX: step down where the signs differ and the division is inexact. A zero divisor has
    # sign 0, so XLA's x / 0 == -1 steps to -2 for every nonzero x (unsigned: XLA's quotient).
    quotient = lax.div(x1, x2)
    if is_unsigned(dtype_of(x1).name):
        return quotient
    signs_differ = lax.ne(lax.sign(x1), lax.sign(x2))
    needs_step = lax.bitwise_and(lax.ne(lax.rem(x1, x2), 0), signs_differ)
    return lax.select(needs_step, lax.sub(quotient, 1), quotient)


def floor_divide(x1, x2, /):
    """``x1 // x2`` rounding toward negative infinity, as Python and numpy do."""
    values = [as_array_argument(value, "floor_divide") for value in (x1, x2)]
    dtype = _strong_int_if_bool(result_dtype(*values))
    (x1, x2), dtype = promote_and_broadcast("floor_divide", *values, dtype=dtype.name)
    kernel = _floor_divide_float if is_float(dtype.name) else _floor_divide_int
    return with_weak_type(kernel(x1, x2), dtype.weak)


def remainder(x1, x2, /):
    """``x1 % x2`` with the sign of the divisor, as Python and numpy do."""
    values = [as_array_argument(value, "remainder") for value in (x1, x2)]
    dtype = _strong_int_if_bool(result_dtype(*values))
    (x1, x2), dtype = promote_and_broadcast("remainder", *values, dtype=dtype.name)
    x2 = _nonzero_int_divisor(x2)
    truncated = lax.rem(x1, x2)
    needs_shift = lax.bitwise_and(lax.ne(truncated, 0), lax.ne(lax.lt(x2, 0), lax.lt(truncated, 0)))
    return with_weak_type(lax.select(needs_shift, lax.add(truncated, x2), truncated), dtype.weak)


mod = remainder


def divmod(x1, x2, /):  # noqa: A001 - numpy's name
    """``(x1 // x2, x1 % x2)`` elementwise, as numpy's and JAX's divmod."""
    return floor_divide(x1, x2), remainder(x1, x2)


def _integer_power(x1, exponent: int):
    """``x1 ** exponent`` for a Python int exponent, as lax.integer_pow (repeated multiplies)."""
    value = as_array_argument(x1, "power")
    dtype = _strong_int_if_bool(result_dtype(value, exponent))
    if not (is_float(dtype.name) or is_complex(dtype.name)) and exponent < 0:
        raise ValueError(
            f"power: integers cannot be raised to negative powers, got exponent {exponent}"
        )
    return with_weak_type(lax.integer_pow(convert_operand(value, dtype.name), exponent), dtype.weak)


def _integer_power_by_squaring(base, exponent, dtype: str):
    # lax.pow is float only: square-and-multiply over every bit an exponent of this type can set.
    # The first factor is taken as is (1 * (1 + inf i) would be NaN + inf i), as integer_pow does.
    result = lax.full(shape_of(base), 1, dtype_of(base).name)
    unset = lax.full(shape_of(base), True, "bool")
    for bit in range(63 if dtype == "i64" else 31):
        bit_is_set = lax.ne(lax.bitwise_and(lax.shift_right_arithmetic(exponent, bit), 1), 0)
        result = lax.select(bit_is_set, lax.select(unset, base, lax.mul(result, base)), result)
        unset = lax.bitwise_and(unset, lax.bitwise_not(bit_is_set))
        base = lax.mul(base, base)
    return result


def _integer_power_array(x1, x2, dtype: str):
    positive = _integer_power_by_squaring(x1, x2, dtype)
    # A negative exponent truncates 1 / x1**|x2| to 0 except for bases 1 and -1.
    odd = lax.ne(lax.bitwise_and(x2, 1), 0)
    minus_one_power = lax.select(
        odd, lax.full(shape_of(x1), -1, dtype), lax.full(shape_of(x1), 1, dtype)
    )
    negative = lax.select(
        lax.eq(x1, 1), lax.full(shape_of(x1), 1, dtype), lax.full(shape_of(x1), 0, dtype)
    )
    negative = lax.select(lax.eq(x1, -1), minus_one_power, negative)
    return lax.select(lax.lt(x2, 0), negative, positive)


def _complex_integer_power(base, exponent, exponent_dtype: str):
    magnitude = lax.select(lax.lt(exponent, 0), lax.neg(exponent), exponent)
    positive = _integer_power_by_squaring(base, magnitude, exponent_dtype)
    return lax.select(lax.lt(exponent, 0), lax.div(lax.full(shape_of(base), 1, dtype_of(base).name), positive), positive)


def power(x1, x2, /):
    """``x1 ** x2``; a Python int exponent becomes lax.integer_pow, as in JAX."""
    if type(x2) is int:
        return _integer_power(x1, x2)
    values = [as_array_argument(value, "power") for value in (x1, x2)]
    dtype = _strong_int_if_bool(result_dtype(*values))
    exponent_dtype = dtype_of(values[1]).name
    (x1, x2), dtype = promote_and_broadcast("power", *values, dtype=dtype.name)
    if is_complex(dtype.name) and exponent_dtype in ("i32", "i64"):
        # an integer exponent multiplies, as JAX's x ** 2 does, instead of exp(2 log x)
        exponent = lax.convert_element_type(lax_complex.real(x2), exponent_dtype)
        return with_weak_type(_complex_integer_power(x1, exponent, exponent_dtype), dtype.weak)
    if is_float(dtype.name) or is_complex(dtype.name):
        return with_weak_type(lax.pow(x1, x2), dtype.weak)
    return with_weak_type(_integer_power_array(x1, x2, dtype.name), dtype.weak)


def arctan2(x1, x2, /):
    values = [as_array_argument(value, "arctan2") for value in (x1, x2)]
    dtype = inexact_dtype(result_dtype(*values))
    (x1, x2), dtype = promote_and_broadcast("arctan2", *values, dtype=dtype.name)
    return with_weak_type(lax.atan2(x1, x2), dtype.weak)


# -- comparisons and logic ------------------------------------------------------------------------
def _comparison(name: str, kernel):
    def apply(x1, x2, /):
        (x1, x2), dtype = promote_and_broadcast(name, x1, x2)
        # JAX keeps the weak flag of the promoted operands on the bool result.
        return with_weak_type(kernel(x1, x2), dtype.weak)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = (
        f"Elementwise ``{name}`` after promotion (``x == 1.5`` compares as floats); bool."
    )
    return apply


equal = _comparison("equal", lax.eq)
not_equal = _comparison("not_equal", lax.ne)
less = _comparison("less", lax.lt)
less_equal = _comparison("less_equal", lax.le)
greater = _comparison("greater", lax.gt)
greater_equal = _comparison("greater_equal", lax.ge)


def _logical(name: str, kernel):
    def apply(x1, x2, /):
        (x1, x2), _ = promote_and_broadcast(name, x1, x2, dtype="bool")
        return kernel(x1, x2)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise ``{name}`` of the arguments' truth values (non-zero is true)."
    return apply


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x, /):
    return lax.bitwise_not(convert_operand(as_array_argument(x, "logical_not"), "bool"))


# -- unary arithmetic -----------------------------------------------------------------------------
def _unary_argument(name: str, x, allowed: str):
    value = as_array_argument(x, name)
    dtype = dtype_of(value)
    check_dtype_kind(name, dtype, allowed)
    return convert_operand(value, dtype.name), dtype


def negative(x, /):
    operand, dtype = _unary_argument("negative", x, "iufc")
    return with_weak_type(lax.neg(operand), dtype.weak)


def positive(x, /):
    operand, dtype = _unary_argument("positive", x, "biufc")
    return with_weak_type(operand, dtype.weak)


def absolute(x, /):
    operand, dtype = _unary_argument("absolute", x, "biufc")
    # NOTE: bools and unsigned ints are their own absolute value
    result = operand if dtype.name == "bool" or is_unsigned(dtype.name) else lax.abs(operand)
    return with_weak_type(result, dtype.weak)


abs = absolute


def sign(x, /):
    operand, dtype = _unary_argument("sign", x, "iufc")
    if is_unsigned(dtype.name):  # 1 where nonzero: an unsigned value has no sign to take
        return with_weak_type(lax.convert_element_type(lax.ne(operand, 0), dtype.name), dtype.weak)
    return with_weak_type(lax.sign(operand), dtype.weak)


def invert(x, /):
    operand, dtype = _unary_argument("invert", x, "biu")
    return with_weak_type(lax.bitwise_not(operand), dtype.weak)


bitwise_not = invert


def square(x, /):
    """``x * x``; bools square as (strong) ints."""
    value = as_array_argument(x, "square")
    dtype = _strong_int_if_bool(dtype_of(value))
    return with_weak_type(lax.square(convert_operand(value, dtype.name)), dtype.weak)


def reciprocal(x, /):
    return true_divide(1, x)


# -- selection ------------------------------------------------------------------------------------
def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` is true, else ``y``, all three broadcast together; with the
    condition alone, ``nonzero(condition, size=size, fill_value=fill_value)``."""
    if x is None and y is None:
        from .data_dependent import nonzero  # noqa: PLC0415 - data_dependent imports this module

        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where function.")
    if x is None or y is None:
        raise TypeError(
            f"where requires ndarray or scalar arguments, got {type(None)} at position "
            f"{1 if x is None else 2}."
        )
    condition = as_array_argument(condition, "where")
    values = [as_array_argument(value, "where") for value in (x, y)]
    shape = broadcast_shapes("where", shape_of(condition), *(shape_of(value) for value in values))
    (on_true, on_false), dtype = promote_and_broadcast("where", *values)
    predicate = convert_operand(condition, "bool")
    if shape_of(predicate):
        predicate, on_true, on_false = broadcast_together([predicate, on_true, on_false], shape, "where")
    else:
        # NOTE: as JAX, a 0-d condition selects whole arrays without being broadcast
        on_true, on_false = broadcast_together([on_true, on_false], shape, "where")
    return with_weak_type(lax.select(predicate, on_true, on_false), dtype.weak)


def clip(x, /, min=None, max=None, *, a_min=None, a_max=None):
    """``x`` limited to ``[min, max]`` (either bound may be None); NaN bounds give NaN."""
    lower = min if min is not None else a_min
    upper = max if max is not None else a_max
    value = as_array_argument(x, "clip")
    result = with_weak_type(convert_operand(value, dtype_of(value).name), dtype_of(value).weak)
    if lower is not None:
        result = maximum(result, lower)
    if upper is not None:
        result = minimum(result, upper)
    return result
