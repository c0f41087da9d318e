"""The elementwise ops: one result of the operands' shape, element by element. Names, shape rules
and numpy reference implementations."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..dtypes import DTYPES, NARROW_FLOATS, real_dtype, to_numpy
from .. import libm_atanf, libm_cbrtf, libm_powf, libm_sincosf, libm_tanf, xla_math, xla_rsqrt
from ..float_math import erf_inv, fma
from ..reference import reference_impls
from .elementwise_complex import COMPLEX_PART_OPS, complex_abs, complex_divide, complex_sign, complex_square
from ..shape_rules import (
    BOOL_OR_INT,
    FLOATS,
    INEXACT,
    INTS,
    NUMERIC,
    NUMERIC_OR_COMPLEX,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    fail,
    int_attr,
    shape_rules,
)
from ..types import TensorType

# fmt: off
UNARY_FLOAT_OPS = (
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "sqrt",
    "rsqrt", "cbrt", "erf", "erf_inv", "floor", "ceil",
)
UNARY_NUMERIC_OPS = ("neg", "abs", "sign", "square")
BINARY_NUMERIC_OPS = ("add", "sub", "mul", "div", "rem", "max", "min")
# The ops that also take complex operands: the field's arithmetic, on (re, im) pairs.
COMPLEX_ARITHMETIC_OPS = ("neg", "sign", "square", "add", "sub", "mul", "div")
BINARY_FLOAT_OPS = ("pow", "atan2", "nextafter")
BINARY_BOOL_OR_INT_OPS = ("and", "or", "xor")
SHIFT_OPS = ("shift_left", "shift_right_arithmetic", "shift_right_logical")
OPS = (
    UNARY_FLOAT_OPS + UNARY_NUMERIC_OPS + BINARY_NUMERIC_OPS + BINARY_FLOAT_OPS
    + BINARY_BOOL_OR_INT_OPS + SHIFT_OPS
    + ("round", "is_finite", "not", "compare", "select", "clamp", "convert", "integer_pow")
    + ("fma", "bitcast_convert_type")
    + COMPLEX_PART_OPS
)
# fmt: on
COMPARE_DIRECTIONS = ("eq", "ne", "lt", "le", "gt", "ge")
ROUNDING_METHODS = ("away_from_zero", "to_nearest_even")

# --- shape rules -----------------------------------------------------------------------------


def expect_equal_types(op: str, operands: Sequence[TensorType]) -> None:
    for index, operand in enumerate(operands[1:], start=1):
        if operand != operands[0]:
            fail(
                op,
                f"operands must have equal shapes and dtypes, but operand 0 is {operands[0]} "
                f"and operand {index} is {operand}",
            )


def _elementwise_rule(arity: int, allowed: tuple[str, ...], result_dtype: str | None = None):
    def rule(op, operands, attrs, regions, meshes):
        expect_operand_count(op, operands, arity)
        expect_equal_types(op, operands)
        expect_dtype(op, "operand 0", operands[0], allowed)
        return (operands[0] if result_dtype is None else operands[0].with_dtype(result_dtype),)

    return rule


# (op names, operand count, allowed dtypes, result dtype or None for the operands' dtype)
_ELEMENTWISE_FAMILIES = (
    (UNARY_FLOAT_OPS, 1, FLOATS, None),
    (("neg", "sign", "square"), 1, NUMERIC_OR_COMPLEX, None),
    (("is_finite",), 1, FLOATS, "bool"),
    (("not",), 1, BOOL_OR_INT, None),
    (("rem", "max", "min"), 2, NUMERIC, None),
    (("add", "sub", "mul", "div"), 2, NUMERIC_OR_COMPLEX, None),
    (BINARY_FLOAT_OPS, 2, FLOATS, None),
    (("fma",), 3, FLOATS, None),
    (BINARY_BOOL_OR_INT_OPS, 2, BOOL_OR_INT, None),
    (SHIFT_OPS, 2, INTS, None),
)
for _names, _arity, _allowed, _result_dtype in _ELEMENTWISE_FAMILIES:
    shape_rules.register(*_names)(_elementwise_rule(_arity, _allowed, _result_dtype))

_unary_float = _elementwise_rule(1, FLOATS)


@shape_rules.register("abs")
def _abs(op, operands, attrs, regions, meshes):
    # |x| of a complex number is real (of its parts' type), as in XLA
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], NUMERIC_OR_COMPLEX)
    return (operands[0].with_dtype(real_dtype(operands[0].dtype)),)


@shape_rules.register("round")
def _round(op, operands, attrs, regions, meshes):
    choice_attr(op, attrs, "rounding_method", ROUNDING_METHODS, default="away_from_zero")
    return _unary_float(op, operands, attrs, regions, meshes)


@shape_rules.register("compare")
def _compare(op, operands, attrs, regions, meshes):
    choice_attr(op, attrs, "direction", COMPARE_DIRECTIONS)
    expect_operand_count(op, operands, 2)
    expect_equal_types(op, operands)
    return (operands[0].with_dtype("bool"),)


@shape_rules.register("select")
def _select(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 3)
    predicate, on_true, on_false = operands
    expect_dtype(op, "predicate", predicate, ("bool",))
    if on_true != on_false:
        fail(op, f"on_true and on_false must have equal types, got {on_true} and {on_false}")
    if predicate.rank != 0 and predicate.shape != on_true.shape:
        fail(op, f"predicate must be 0-d or have shape {on_true.shape}, got {predicate}")
    return (on_true,)


@shape_rules.register("clamp")
def _clamp(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 3)
    minimum, operand, maximum = operands
    expect_dtype(op, "operand", operand, NUMERIC)
    for what, bound in (("min", minimum), ("max", maximum)):
        if bound != operand and bound != TensorType((), operand.dtype):
            fail(op, f"{what} must be {operand} or {operand.dtype}[], got {bound}")
    return (operand,)


@shape_rules.register("convert")
def _convert(op, operands, attrs, regions, meshes):
    new_dtype = choice_attr(op, attrs, "new_dtype", DTYPES)
    expect_operand_count(op, operands, 1)
    return (operands[0].with_dtype(new_dtype),)


@shape_rules.register("bitcast_convert_type")
def _bitcast_convert_type(op, operands, attrs, regions, meshes):
    # Reinterpret the bits: equal widths keep the shape; a narrower type adds a minor dim of
    # the width ratio, a wider one consumes it (as XLA's bitcast-convert).
    new_dtype = choice_attr(op, attrs, "new_dtype", NUMERIC_OR_COMPLEX)
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    expect_dtype(op, "operand", operand, NUMERIC_OR_COMPLEX)
    width, new_width = to_numpy(operand.dtype).itemsize, to_numpy(new_dtype).itemsize
    if new_width == width:
        return (operand.with_dtype(new_dtype),)
    if new_width < width:
        return (TensorType(operand.shape + (width // new_width,), new_dtype),)
    ratio = new_width // width
    if not operand.shape or operand.shape[-1] != ratio:
        fail(op, f"casting {operand} to the wider {new_dtype} needs a minor dim of size {ratio}")
    return (TensorType(operand.shape[:-1], new_dtype),)


@shape_rules.register("integer_pow")
def _integer_pow(op, operands, attrs, regions, meshes):
    exponent = int_attr(op, attrs, "y")
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], NUMERIC_OR_COMPLEX)
    if exponent < 0 and operands[0].dtype not in INEXACT:
        fail(op, f"negative exponent {exponent} needs a float operand, got {operands[0]}")
    return (operands[0],)


# --- reference implementations ------------------------------------------------------------

_NARROW_FLOATS = frozenset(to_numpy(name) for name in NARROW_FLOATS)

# The same-width unsigned and signed sibling of every integer dtype (logical and arithmetic shifts).
_UNSIGNED = {np.dtype(f"{kind}{bits}"): np.dtype(f"uint{bits}") for kind in ("int", "uint") for bits in (8, 16, 32, 64)}
_SIGNED = {np.dtype(f"{kind}{bits}"): np.dtype(f"int{bits}") for kind in ("int", "uint") for bits in (8, 16, 32, 64)}


# NOTE: ``impl.numpy_function`` is the function the impl applies, with the result kept in the
# operand's dtype; the kernels call it directly, since plans run with floating-point warnings
# off already (runtime/float_errors.py) and an errstate per op costs more than a small op.
def _unary(function):
    def impl(attrs, operand):
        with np.errstate(all="ignore"):
            return (np.asarray(function(operand), dtype=operand.dtype),)

    impl.numpy_function = function
    return impl


def _binary(function):
    def impl(attrs, lhs, rhs):
        with np.errstate(all="ignore"):
            return (np.asarray(function(lhs, rhs), dtype=lhs.dtype),)

    impl.numpy_function = function
    return impl


# --- unary -----------------------------------------------------------------------------------

_erf_float64 = np.vectorize(math.erf, otypes=[np.float64])


def _logistic(operand):
    """JAX's ``1 / (1 + exp(-x))``: float32 as XLA fuses it (ir/xla_math.py); 16-bit floats op by
    op in their own type (exp through XLA's float32 one); float64 by numpy's exp."""
    if operand.dtype == np.float32:
        return xla_math.logistic(operand)
    one = operand.dtype.type(1)
    if operand.dtype in _NARROW_FLOATS:
        return one / (one + xla_math.exp((-operand).astype(np.float32)).astype(operand.dtype))
    return one / (one + np.exp(-operand))


def _rsqrt(operand):
    if operand.dtype == np.float32:
        return xla_rsqrt.rsqrt_f32(operand)  # XLA's CPU algorithm, as JAX's float32 rsqrt
    return operand.dtype.type(1) / np.sqrt(operand)


def _erf(operand):
    return _erf_float64(operand).astype(operand.dtype)


def _sign(operand):
    if operand.dtype.kind == "c":
        return complex_sign(operand)
    # XLA keeps the sign of zero: sign(-0.0) is -0.0, where numpy gives +0.0.
    return np.where(operand == 0, operand, np.sign(operand))


def _xla_f32(xla_function, numpy_function):
    """float32 (and 16-bit floats, through float32 as XLA computes them): XLA's CPU function
    (glibc's where XLA calls it, else XLA's own polynomial, ir/xla_math.py), in exact
    arithmetic; float64 and complex: numpy's."""
    def function(operand):
        if operand.dtype == np.float32:
            return xla_function(operand)
        if operand.dtype in _NARROW_FLOATS:
            return xla_function(operand.astype(np.float32)).astype(operand.dtype)
        return numpy_function(operand)

    return function


def _square(operand):
    if operand.dtype.kind != "c":
        return np.square(operand)
    return complex_square(operand)


def _abs(operand):
    return complex_abs(operand) if operand.dtype.kind == "c" else np.abs(operand)


_UNARY = {
    "exp": _xla_f32(xla_math.exp, np.exp),
    "exp2": _xla_f32(xla_math.exp2, np.exp2),
    "log": _xla_f32(xla_math.log, np.log),
    "log1p": _xla_f32(xla_math.log1p, np.log1p),
    "expm1": _xla_f32(xla_math.expm1, np.expm1),
    "tanh": _xla_f32(xla_math.tanh, np.tanh),
    "logistic": _logistic,
    "sin": _xla_f32(libm_sincosf.sin, np.sin),
    "cos": _xla_f32(libm_sincosf.cos, np.cos),
    "tan": _xla_f32(libm_tanf.tan, np.tan),
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "cbrt": _xla_f32(libm_cbrtf.cbrt, np.cbrt),
    "erf": _xla_f32(xla_math.erf, _erf),
    "erf_inv": erf_inv,
    "floor": np.floor,
    "ceil": np.ceil,
    "neg": np.negative,
    "square": _square,
    "sign": _sign,
    "not": np.invert,  # logical not on bool, bitwise not on ints
}
for _name, _function in _UNARY.items():
    reference_impls.register(_name)(_unary(_function))


def _round_half_away_from_zero(operand):
    truncated = np.trunc(operand)
    # NOTE: operand - truncated is exact, so halves are detected without rounding error.
    return np.where(np.abs(operand - truncated) >= 0.5, truncated + np.sign(operand), truncated)


@reference_impls.register("abs")
def _abs_impl(attrs, operand):
    with np.errstate(all="ignore"):
        return (np.asarray(_abs(operand)),)


_abs_impl.numpy_function = _abs


@reference_impls.register("round")
def _round(attrs, operand):
    method = attrs.get("rounding_method", "away_from_zero")
    function = np.rint if method == "to_nearest_even" else _round_half_away_from_zero
    return _unary(function)(attrs, operand)


@reference_impls.register("is_finite")
def _is_finite(attrs, operand):
    return (np.asarray(np.isfinite(operand)),)


# --- binary ----------------------------------------------------------------------------------


def _divide(lhs, rhs):
    if lhs.dtype.kind == "c":
        return complex_divide(lhs, rhs)
    if lhs.dtype.kind == "f":
        return np.divide(lhs, rhs)
    if lhs.dtype.kind == "u":
        # XLA: unsigned x / 0 is all ones.
        quotient = lhs // np.where(rhs == 0, 1, rhs).astype(rhs.dtype)
        return np.where(rhs == 0, np.iinfo(lhs.dtype).max, quotient).astype(lhs.dtype)
    # XLA: integer division truncates toward zero, x / 0 == -1 and INT_MIN / -1 == INT_MIN.
    safe = np.where((rhs == 0) | (rhs == -1), 1, rhs).astype(rhs.dtype)
    quotient = (lhs - np.fmod(lhs, safe)) // safe
    quotient = np.where(rhs == -1, np.negative(lhs), quotient)
    return np.where(rhs == 0, -1, quotient)


def _remainder(lhs, rhs):
    if lhs.dtype.kind == "f":
        return np.fmod(lhs, rhs)
    if lhs.dtype.kind == "u":
        return np.where(rhs == 0, lhs, lhs % np.where(rhs == 0, 1, rhs).astype(rhs.dtype))
    # XLA: the remainder takes the dividend's sign, x % 0 == x and INT_MIN % -1 == 0; a divisor
    # of -1 is replaced by 1 (same remainder) so numpy never meets INT_MIN % -1.
    safe = np.where((rhs == 0) | (rhs == -1), 1, rhs).astype(rhs.dtype)
    return np.where(rhs == 0, lhs, np.fmod(lhs, safe))


def _shift_in_range(lhs, rhs):
    """XLA treats shift amounts as unsigned: negative or >= bit width is out of range."""
    return (rhs >= 0) & (rhs < lhs.dtype.itemsize * 8)


def _shift_left(lhs, rhs):
    in_range = _shift_in_range(lhs, rhs)
    amount = np.where(in_range, rhs, 0).astype(lhs.dtype)
    return np.where(in_range, np.left_shift(lhs, amount), 0)


def _shift_right_logical(lhs, rhs):
    in_range = _shift_in_range(lhs, rhs)
    unsigned = lhs.astype(_UNSIGNED[lhs.dtype])
    amount = np.where(in_range, rhs, 0).astype(unsigned.dtype)
    return np.where(in_range, np.right_shift(unsigned, amount).astype(lhs.dtype), 0)


def _shift_right_arithmetic(lhs, rhs):
    # An out-of-range amount fills with the sign bit, exactly what a shift by width - 1 does;
    # unsigned operands shift their bits as the signed type of their width would (XLA).
    bits = lhs.dtype.itemsize * 8
    signed = lhs.astype(_SIGNED[lhs.dtype])
    amount = np.where(_shift_in_range(lhs, rhs), rhs, bits - 1).astype(signed.dtype)
    return np.right_shift(signed, amount).astype(lhs.dtype)


def _power(lhs, rhs):
    """float32 (and 16-bit floats through it): glibc's powf, which XLA's CPU code calls
    (ir/libm_powf.py); others: numpy's."""
    if lhs.dtype == np.float32:
        return libm_powf.pow(lhs, rhs)
    return np.power(lhs, rhs)


def _atan2(y, x):
    """float32 (and 16-bit floats, through float32): glibc's ``atan2f`` as XLA's CPU code runs
    it (ir/libm_atanf.py); float64: numpy's."""
    if y.dtype == np.float32 or y.dtype in _NARROW_FLOATS:
        return libm_atanf.atan2(y, x).astype(y.dtype)
    return np.arctan2(y, x)


_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _divide,
    "rem": _remainder,
    "pow": _power,
    "max": np.maximum,
    "min": np.minimum,
    "atan2": _atan2,
    "nextafter": np.nextafter,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shift_left": _shift_left,
    "shift_right_arithmetic": _shift_right_arithmetic,
    "shift_right_logical": _shift_right_logical,
}
for _name, _function in _BINARY.items():
    reference_impls.register(_name)(_binary(_function))

_COMPARISONS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@reference_impls.register("compare")
def _compare(attrs, lhs, rhs):
    return (np.asarray(_COMPARISONS[attrs["direction"]](lhs, rhs), dtype=np.bool_),)


# --- select, clamp, convert, integer_pow -----------------------------------------------------


@reference_impls.register("select")
def _select(attrs, predicate, on_true, on_false):
    return (np.asarray(np.where(predicate, on_true, on_false), dtype=on_true.dtype),)


@reference_impls.register("clamp")
def _clamp(attrs, minimum, operand, maximum):
    # XLA's clamp is min(max(operand, minimum), maximum); NaN anywhere gives NaN.
    return (np.asarray(np.minimum(np.maximum(operand, minimum), maximum), dtype=operand.dtype),)


def _float_to_int(operand, target: np.dtype):
    # XLA converts float to int saturating: NaN becomes 0, out-of-range values the nearest bound.
    info = np.iinfo(target)
    truncated = np.trunc(operand.astype(np.float64))
    # exact in float64, unlike INT_MAX: 2**31, 2**63, 2**32, 2**64
    low, high = float(info.min), 2.0 ** (info.bits - (1 if target.kind == "i" else 0))
    inside = (truncated >= low) & (truncated < high)
    result = np.where(inside, truncated, 0).astype(target)
    result = np.where(truncated >= high, info.max, result)
    return np.where(truncated < low, info.min, result).astype(target)


@reference_impls.register("convert")
def _convert(attrs, operand):
    target = to_numpy(attrs["new_dtype"])
    if operand.dtype in _NARROW_FLOATS:
        operand = operand.astype(np.float32)  # exact; numpy's kind letter of bfloat16 is not "f"
    if target == np.bool_:
        return (np.asarray(operand != 0),)
    if operand.dtype.kind == "c" and target.kind != "c":
        operand = np.real(operand)  # XLA: a complex number converts to a real type by its real part
    if operand.dtype.kind == "f" and target.kind in "iu":
        return (_float_to_int(operand, target),)
    with np.errstate(all="ignore"):
        # int to int wraps; float64 to float32 rounds to nearest and overflows to infinity.
        return (operand.astype(target),)


@reference_impls.register("fma")
def _fma(attrs, a, b, c):
    return (fma(a, b, c),)


@reference_impls.register("bitcast_convert_type")
def _bitcast_convert_type(attrs, operand):
    target = to_numpy(attrs["new_dtype"])
    contiguous = np.array(operand, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    if target.itemsize == operand.dtype.itemsize:
        return (contiguous.view(target),)
    if target.itemsize < operand.dtype.itemsize:
        ratio = operand.dtype.itemsize // target.itemsize
        return (contiguous.reshape(operand.shape + (1,)).view(target).reshape(operand.shape + (ratio,)),)
    return (contiguous.view(target).reshape(operand.shape[:-1]),)


@reference_impls.register("integer_pow")
def _integer_pow(attrs, operand):
    exponent = attrs["y"]
    # Square-and-multiply in the operand's dtype, as XLA expands integer_pow into multiplies (the
    # first factor taken as is, not multiplied by 1: 1 * (1 + inf i) would be NaN + inf i).
    result = None
    power = operand
    remaining = abs(exponent)
    with np.errstate(all="ignore"):
        while remaining:
            if remaining & 1:
                result = power if result is None else result * power
            power = power * power
            remaining >>= 1
        if result is None:
            result = np.ones_like(operand)
        if exponent < 0:
            result = operand.dtype.type(1) / result
    return (np.asarray(result, dtype=operand.dtype),)
