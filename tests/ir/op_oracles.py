"""Independent oracles for the op table: every op's meaning re-derived element by element with
Python's ``math``/``decimal`` (or numpy in float64), never by calling ``meshjit.ir.reference``."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

import ml_dtypes
import numpy as np

INFINITY = math.inf
NUMPY_DTYPES = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
}


def kind(dtype: np.dtype) -> str:
    """numpy's kind letter, "f" for ml_dtypes' bfloat16 too."""
    return "f" if dtype == NUMPY_DTYPES["bf16"] else dtype.kind


def wrap(value: int, dtype: np.dtype) -> int:
    """A Python int wrapped into the two's complement (or unsigned) range of ``dtype``."""
    if dtype.kind == "u":
        return value % 2 ** (dtype.itemsize * 8)
    half = 2 ** (dtype.itemsize * 8 - 1)
    return (value + half) % (2 * half) - half


def to_array(values, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        values = [wrap(int(value), dtype) for value in values]
    with np.errstate(all="ignore"):
        return np.array(values, dtype=dtype).reshape(shape)


def elementwise(function, result_dtype=None, like: int = 0):
    """An oracle applying ``function`` to Python scalars; 0-d operands broadcast.

    The result dtype is ``result_dtype`` or that of operand ``like``; ints wrap, floats round.
    """

    def oracle(attrs, *arrays):
        shape = np.broadcast_shapes(*(array.shape for array in arrays))
        flat = [np.broadcast_to(array, shape).ravel().tolist() for array in arrays]
        values = [function(*scalars) for scalars in zip(*flat)]
        return (to_array(values, shape, result_dtype or arrays[like].dtype),)

    return oracle


def build(shape, dtype, element) -> np.ndarray:
    """The array whose element at each index of ``shape`` is ``element(index)``."""
    return to_array([element(index) for index in np.ndindex(*shape)], shape, dtype)


# --- scalar functions ------------------------------------------------------------------------


def guarded(function, on_overflow=INFINITY):
    def scalar(x):
        try:
            return function(x)
        except OverflowError:
            return on_overflow
        except ValueError:
            return math.nan

    return scalar


def log(x):
    if x == 0:
        return -INFINITY
    return math.log(x) if x > 0 else math.nan


def log1p(x):
    if x == -1:
        return -INFINITY
    return math.log1p(x) if x > -1 else math.nan


def sqrt(x):
    return math.sqrt(x) if x >= 0 else math.nan


def rsqrt(x):
    if x == 0:
        return math.copysign(INFINITY, x)
    return 1 / math.sqrt(x) if x > 0 else math.nan


def logistic(x):
    if x < -700:
        return 0.0
    return 1 / (1 + math.exp(-x))


def erf(x):
    """Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7."""
    if math.isnan(x):
        return x
    t = 1 / (1 + 0.3275911 * abs(x))
    polynomial = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return math.copysign(1 - polynomial * math.exp(-x * x), x)


def integral(function):
    """floor/ceil: keep infinities and NaN, and the operand's sign on a zero result."""

    def scalar(x):
        if not math.isfinite(x):
            return x
        result = float(function(x))
        return math.copysign(0.0, x) if result == 0 else result

    return scalar


def rounding(mode):
    def scalar(x):
        if not math.isfinite(x):
            return x
        result = float(Decimal(x).quantize(Decimal(1), rounding=mode))
        return math.copysign(0.0, x) if result == 0 else result

    return scalar


ROUND_AWAY_FROM_ZERO = rounding(ROUND_HALF_UP)  # decimal's HALF_UP rounds halves away from zero
ROUND_TO_NEAREST_EVEN = rounding(ROUND_HALF_EVEN)


def sign(x):
    if isinstance(x, float) and (math.isnan(x) or x == 0):
        return x
    return (x > 0) - (x < 0)


def divide(x, y):
    if isinstance(x, float):
        if y == 0:
            if x == 0 or math.isnan(x):
                return math.nan
            return math.copysign(INFINITY, x) * math.copysign(1, y)
        return x / y
    if y == 0:
        return -1
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


def remainder(x, y):
    if isinstance(x, float):
        try:
            return math.fmod(x, y)
        except ValueError:
            return math.nan
    if y == 0:
        return x
    result = abs(x) % abs(y)
    return -result if x < 0 else result


def maximum(x, y):
    if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):
        return math.nan
    return max(x, y)


def minimum(x, y):
    if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):
        return math.nan
    return min(x, y)


def power(x, y):
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(x), np.float64(y)))


def shifts(bits: int):
    """Left, logical right and arithmetic right shifts on ``bits``-wide ints; the arithmetic
    shift reads an unsigned operand's bits as two's complement (XLA)."""

    def in_range(amount):
        return 0 <= amount < bits

    def left(x, amount):
        return x << amount if in_range(amount) else 0

    def right_logical(x, amount):
        return (x % 2**bits) >> amount if in_range(amount) else 0

    def right_arithmetic(x, amount):
        signed = wrap(x, np.dtype(f"int{bits}"))
        return signed >> amount if in_range(amount) else (-1 if signed < 0 else 0)

    return left, right_logical, right_arithmetic


def float_to_int(x, dtype: np.dtype):
    """Saturating float-to-int conversion: NaN is 0, out-of-range values the nearest bound."""
    if math.isnan(x):
        return 0
    info = np.iinfo(dtype)
    if x >= info.max:
        return int(info.max)
    if x <= info.min:
        return int(info.min)
    return int(x)


def convert(new_dtype: np.dtype):
    def scalar(x):
        if new_dtype.kind == "b":
            return x != 0
        if new_dtype.kind in "iu" and isinstance(x, float):
            return float_to_int(x, new_dtype)
        return int(x) if new_dtype.kind in "iu" else float(x)

    return scalar


def integer_pow(exponent):
    def scalar(x):
        if isinstance(x, int):
            return x**exponent
        return power(x, exponent)

    return scalar


def clamp(low, x, high):
    if isinstance(x, float) and any(math.isnan(value) for value in (low, x, high)):
        return math.nan
    return min(max(x, low), high)


def erf_inv(x):
    """The inverse of math.erf by bisection in float64 (x in (-1, 1)); +-inf at +-1."""
    if math.isnan(x) or abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(INFINITY, x)
    low, high = -10.0, 10.0
    for _ in range(60):
        middle = (low + high) / 2
        if math.erf(middle) < x:
            low = middle
        else:
            high = middle
    # Newton's steps from the bracket's middle; tiny inputs start from erf's linear term.
    y = (low + high) / 2 if abs(x) > 1e-8 else x * math.sqrt(math.pi) / 2
    for _ in range(4):
        slope = 2 / math.sqrt(math.pi) * math.exp(-y * y)
        if slope == 0:
            break
        y -= (math.erf(y) - x) / slope
    return y


def fma(a, b, c):
    """``a * b + c`` rounded once: exact in fractions, rounded by the caller's dtype."""
    if not all(math.isfinite(value) for value in (a, b, c)):
        return a * b + c
    from fractions import Fraction

    return float(Fraction(a) * Fraction(b) + Fraction(c))


def nextafter(x, y):
    return math.nextafter(x, y)
