"""jax.numpy's transcendental, rounding and floating-point-class functions.

Integers and bools become the default float first (JAX's ``promote_args_inexact``), except in
the rounding functions, which leave integers unchanged. Functions the IR has no op for
(``log2``, ``arcsin``, ``sinh``, ...) are written with the ops it has.
"""

from __future__ import annotations

import math

from .. import lax_complex, lax_complex_inverse
from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from ..promotion import is_complex, is_float
from .arguments import (
    as_array_argument,
    check_dtype_kind,
    convert_operand,
    inexact_dtype,
    promote_and_broadcast,
    result_dtype,
    with_weak_type,
)
from .elementwise import floor_divide, multiply, remainder

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "arccos",
    "arcsin",
    "arctan",
    "around",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "floor",
    "isfinite",
    "isinf",
    "isneginf",
    "isposinf",
    "isnan",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "rint",
    "round",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
)


def _inexact_unary(name: str, kernel):
    def apply(x, /):
        value = as_array_argument(x, name)
        dtype = inexact_dtype(dtype_of(value))
        return with_weak_type(kernel(convert_operand(value, dtype.name)), dtype.weak)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise ``{name}``; integers and bools are computed as floats."
    return apply


def _log_base(base: float):
    def kernel(x):
        if not is_complex(dtype_of(x).name):
            return lax.mul(lax.log(x), 1.0 / math.log(base))
        # each part over log(base): a complex product would make inf * 0 = NaN parts
        real, imaginary = lax_complex.parts(lax.log(x))
        return lax_complex.make(lax.div(real, math.log(base)), lax.div(imaginary, math.log(base)))

    return kernel


def _real_or_complex(real_kernel, complex_kernel):
    """``real_kernel`` for real operands, ``complex_kernel`` (lax_complex*.py) for complex ones."""
    return lambda x: complex_kernel(x) if is_complex(dtype_of(x).name) else real_kernel(x)


def _one_minus_square(x):
    # (1 - x)(1 + x) keeps precision near |x| = 1, where 1 - x*x cancels.
    return lax.mul(lax.sub(1, x), lax.add(1, x))


exp = _inexact_unary("exp", lax.exp)
exp2 = _inexact_unary("exp2", lax.exp2)
expm1 = _inexact_unary("expm1", lax.expm1)
log = _inexact_unary("log", lax.log)
log1p = _inexact_unary("log1p", lax.log1p)
log2 = _inexact_unary("log2", _log_base(2.0))
log10 = _inexact_unary("log10", _log_base(10.0))
sqrt = _inexact_unary("sqrt", lax.sqrt)
cbrt = _inexact_unary("cbrt", lax.cbrt)
sin = _inexact_unary("sin", lax.sin)
cos = _inexact_unary("cos", lax.cos)
tan = _inexact_unary("tan", lax.tan)
tanh = _inexact_unary("tanh", lax.tanh)
arcsin = _inexact_unary(
    "arcsin", _real_or_complex(lambda x: lax.atan2(x, lax.sqrt(_one_minus_square(x))), lax_complex_inverse.asin)
)
arccos = _inexact_unary(
    "arccos", _real_or_complex(lambda x: lax.atan2(lax.sqrt(_one_minus_square(x)), x), lax_complex_inverse.acos)
)
arctan = _inexact_unary(
    "arctan",
    _real_or_complex(lambda x: lax.atan2(x, lax.full(shape_of(x), 1, dtype_of(x).name)), lax_complex_inverse.atan),
)
_LOG_HALF = -math.log(2.0)


def _sinh(x):
    """JAX's expansion: (e + e / (e + 1)) / 2 with e = expm1(x) below |x| = 1 (no cancellation),
    else exp(x - ln2) - exp(-ln2 - x) (no overflow before sinh does)."""
    e = lax.expm1(x)
    small = lax.mul(lax.add(e, lax.div(e, lax.add(e, 1.0))), 0.5)
    large = lax.sub(lax.exp(lax.add(x, _LOG_HALF)), lax.exp(lax.sub(_LOG_HALF, x)))
    return lax.select(lax.lt(lax.abs(x), 1.0), small, large)


def _cosh(x):
    """JAX's expansion: exp(x - ln2) + exp(-ln2 - x)."""
    return lax.add(lax.exp(lax.add(x, _LOG_HALF)), lax.exp(lax.sub(_LOG_HALF, x)))


sinh = _inexact_unary("sinh", _real_or_complex(_sinh, lax_complex.sinh))
cosh = _inexact_unary("cosh", _real_or_complex(_cosh, lax_complex.cosh))


def _float_or_identity(name: str, kernel):
    """A rounding function: floats go through ``kernel``, integers and bools come back as is."""

    def apply(x, /):
        value = as_array_argument(x, name)
        dtype = dtype_of(value)
        operand = convert_operand(value, dtype.name)
        result = kernel(operand) if is_float(dtype.name) else operand
        return with_weak_type(result, dtype.weak)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise ``{name}``; integer and bool arrays are returned unchanged."
    return apply


floor = _float_or_identity("floor", lax.floor)
ceil = _float_or_identity("ceil", lax.ceil)
trunc = _float_or_identity("trunc", lambda x: lax.select(lax.lt(x, 0), lax.ceil(x), lax.floor(x)))
fix = trunc


def rint(x, /):
    """Round to the nearest integer, halves to even; as JAX, integers and bools become (strong)
    floats and a complex number's parts are rounded each."""
    value = as_array_argument(x, "rint")
    dtype = dtype_of(value)
    if is_complex(dtype.name):
        operand = convert_operand(value, dtype.name)
        parts = [lax.round(part(operand), "to_nearest_even") for part in (lax_complex.real, lax_complex.imag)]
        return with_weak_type(lax_complex.complex(*parts), dtype.weak)
    if not is_float(dtype.name):
        return lax.convert_element_type(value, inexact_dtype(dtype).name)
    return with_weak_type(lax.round(convert_operand(value, dtype.name), "to_nearest_even"), dtype.weak)


def _round_integers(value, decimals: int):
    # Round to a multiple of 10**-decimals, halves to the even multiple, exactly in integers.
    step = 10**-decimals
    quotient = floor_divide(value, step)
    twice_rest = multiply(remainder(value, step), 2)
    odd = lax.ne(lax.bitwise_and(quotient, 1), 0)
    rounds_up = lax.bitwise_or(
        lax.gt(twice_rest, step), lax.bitwise_and(lax.eq(twice_rest, step), odd)
    )
    quotient = lax.select(rounds_up, lax.add(quotient, 1), quotient)
    return lax.mul(quotient, step)


def round(x, decimals: int = 0):
    """Round half to even, to ``decimals`` digits (negative: to tens, hundreds, ...)."""
    if type(decimals) is not int:
        raise TypeError(f"round: decimals must be a Python int, got {decimals!r}")
    value = as_array_argument(x, "round")
    dtype = dtype_of(value)
    operand = convert_operand(value, dtype.name)
    if not is_float(dtype.name):
        result = (
            operand if decimals >= 0 or dtype.name == "bool" else _round_integers(operand, decimals)
        )
        return with_weak_type(result, dtype.weak)
    if decimals == 0:
        return with_weak_type(lax.round(operand, "to_nearest_even"), dtype.weak)
    scale = 10.0**decimals
    scaled = lax.round(lax.mul(operand, scale), "to_nearest_even")
    return with_weak_type(lax.div(scaled, scale), dtype.weak)


around = round


# -- floating-point classes -----------------------------------------------------------------------
def _float_class(name: str, kernel, default: bool, keeps_weak: bool = False):
    def apply(x, /):
        value = as_array_argument(x, name)
        dtype = dtype_of(value)
        check_dtype_kind(name, dtype, "biufc")
        if is_complex(dtype.name):
            # a complex number is finite when both parts are, NaN or infinite when either is
            operand = convert_operand(value, dtype.name)
            parts = kernel(lax_complex.real(operand)), kernel(lax_complex.imag(operand))
            result = lax.bitwise_and(*parts) if default else lax.bitwise_or(*parts)
        elif not is_float(dtype.name):
            result = lax.full(shape_of(value), default, "bool")
        else:
            result = kernel(convert_operand(value, dtype.name))
        # as JAX: isfinite and isnan of a Python scalar are weakly typed, isinf's are not
        return with_weak_type(result, dtype.weak and keeps_weak)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = (
        f"Elementwise ``{name}`` (bool); integers are always {'finite' if default else 'not'}."
    )
    return apply


isfinite = _float_class("isfinite", lax.is_finite, True, keeps_weak=True)
isnan = _float_class("isnan", lambda x: lax.ne(x, x), False, keeps_weak=True)
isinf = _float_class("isinf", lambda x: lax.eq(lax.abs(x), float("inf")), False)
isposinf = _float_class("isposinf", lambda x: lax.eq(x, float("inf")), False)
isneginf = _float_class("isneginf", lambda x: lax.eq(x, float("-inf")), False)


def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow: the larger plus log1p of the gap."""
    values = [as_array_argument(value, "logaddexp") for value in (x1, x2)]
    dtype = inexact_dtype(result_dtype(*values))
    (x1, x2), _ = promote_and_broadcast("logaddexp", *values, dtype=dtype.name)
    larger = lax.max(x1, x2)
    gap = lax.sub(x1, x2)
    result = lax.add(larger, lax.log1p(lax.exp(lax.neg(lax.abs(gap)))))
    # Equal infinities make the gap NaN; their sum is the right answer (inf or -inf).
    result = lax.select(lax.ne(gap, gap), lax.add(x1, x2), result)
    return with_weak_type(result, dtype.weak)
