"""jax.numpy's reductions (``sum mean max min prod argmax argmin var std all any``), scans
(``cumsum cumprod``) and sorting (``sort argsort``), with numpy's axis and keepdims rules and
JAX's result dtypes (sums of bools and narrow ints give the default int, means give floats);
and the whole-array comparisons built on ``all``: ``isclose allclose array_equal``.
"""

from __future__ import annotations

import builtins
import math

from meshjit.ir.dtypes import NARROW_FLOATS
from meshjit.ir.dtypes import real_dtype

from .. import lax_complex
from .. import lax_ops as lax
from .. import sharding_ops
from ..operands import dtype_of, shape_of, x64
from ..trace import Tracer
from ..promotion import DType, default_int, is_complex, is_float, is_int
from .arguments import (
    as_array_argument,
    broadcast_to_shape,
    convert_operand,
    dtype_argument,
    inexact_dtype,
    normalize_axes,
    normalize_axis,
    promote_and_broadcast,
    result_dtype,
    with_weak_type,
)
from .creation import asarray
from .elementwise import equal, logical_and, logical_or, maximum, minimum, subtract
from .elementwise_math import isfinite, isnan, sqrt
from .reduction_masks import highest, lowest, masked_count, with_mask

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "array_equal",
    "cumprod",
    "cumsum",
    "isclose",
    "max",
    "mean",
    "min",
    "prod",
    "sort",
    "sort_complex",
    "std",
    "sum",
    "var",
)


def _keep_dims(result, axes, keepdims: bool):
    """Put the reduced ``axes`` back as size-1 dims when ``keepdims`` asks for it."""
    return lax.expand_dims(result, axes) if keepdims and axes else result


def _prepare(function: str, a, axis, dtype, default_dtype):
    """The operand converted to the accumulation dtype, the reduced axes and that dtype."""
    value = as_array_argument(a, function)
    axes = normalize_axes(axis, len(shape_of(value)), function)
    name = dtype_argument(dtype, function) if dtype is not None else default_dtype(dtype_of(value))
    # As in JAX, reductions give strongly typed results even for weakly typed operands.
    return with_weak_type(convert_operand(value, name), False), axes, name


def _summation_dtype(dtype: DType) -> str:
    # JAX (like numpy) accumulates bools and signed ints narrower than the default int in the
    # default int, and unsigned ones narrower than it in the unsigned int of its width.
    default = default_int(x64())
    if dtype.name == "bool":
        return default
    if is_int(dtype.name) and int(dtype.name[1:]) < int(default[1:]):
        return ("u" if dtype.name.startswith("u") else "i") + default[1:]
    return dtype.name


def _in_float32(compute, operand, name: str):
    """``compute(operand, name)``, in f32 for the 16-bit floats and rounded back once (as JAX's
    sum, prod, mean and var accumulate them, so that sharded partial sums stay f32 too)."""
    if name not in NARROW_FLOATS:
        return compute(operand, name)
    return convert_operand(compute(convert_operand(operand, "f32"), "f32"), name)


def _with_initial(result, initial, combine, name: str, function: str):
    if initial is None:
        return result
    bound = convert_operand(as_array_argument(initial, function), name)
    return combine(result, lax.broadcast_in_dim(bound, shape_of(result), ()))


def sum(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=None):
    """Sum over ``axis`` (None: every axis) of the elements ``where`` keeps, plus ``initial``;
    bools and narrow ints sum in the default int."""
    operand, axes, name = _prepare("sum", a, axis, dtype, _summation_dtype)
    result = _in_float32(lambda value, _: lax.reduce_sum(with_mask(value, where, 0, "sum"), axes), operand, name)
    return _keep_dims(_with_initial(result, initial, lax.add, name, "sum"), axes, keepdims)


def prod(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=None):
    """Product over ``axis`` of the elements ``where`` keeps, times ``initial``; bools and
    narrow ints multiply in the default int."""
    operand, axes, name = _prepare("prod", a, axis, dtype, _summation_dtype)
    result = _in_float32(lambda value, _: lax.reduce_prod(with_mask(value, where, 1, "prod"), axes), operand, name)
    return _keep_dims(_with_initial(result, initial, lax.mul, name, "prod"), axes, keepdims)


def _extremum(function: str, reduce, combine, bool_reduce, bool_combine, identity):
    def apply(a, axis=None, keepdims: bool = False, initial=None, *, where=None):
        operand, axes, name = _prepare(function, a, axis, None, lambda dtype: dtype.name)
        shape = shape_of(operand)
        if initial is None and builtins.any(shape[dim] == 0 for dim in axes):
            raise ValueError(
                f"{function}: zero-size array to reduction operation {function} which has no "
                f"identity (reducing axes {axes} of shape {shape}); pass initial="
            )
        if initial is None and where is not None:
            raise ValueError(
                f"reduction operation {function} does not have an identity, so to use a where "
                f"mask one has to specify 'initial'"
            )
        operand = with_mask(operand, where, identity(name), function)
        # On bools, max is logical or and min logical and.
        is_bool = name == "bool"
        result = (bool_reduce if is_bool else reduce)(operand, axes)
        if initial is not None:
            bound = convert_operand(as_array_argument(initial, function), name)
            bound = lax.broadcast_in_dim(bound, shape_of(result), ())
            result = (bool_combine if is_bool else combine)(result, bound)
        return _keep_dims(result, axes, keepdims)

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = f"``{function}`` over ``axis``; an empty reduction needs ``initial``."
    return apply


def _lexicographic(reduce_real, fill: float):
    """A max or min reduction in JAX's complex order (real part, then imaginary part): the
    extreme real part, then the extreme imaginary part among the elements that have it (a NaN
    real part matches a NaN extreme); real operands go to ``reduce_real`` itself."""

    def reduce(operand, axes):
        if not is_complex(dtype_of(operand).name):
            return reduce_real(operand, axes)
        real, imaginary = lax_complex.parts(operand)
        extreme = reduce_real(real, axes)
        kept = tuple(dim for dim in range(len(shape_of(real))) if dim not in axes)
        spread = lax.broadcast_in_dim(extreme, shape_of(real), kept)
        ties = lax.bitwise_or(lax.eq(real, spread), lax.bitwise_and(isnan(real), isnan(spread)))
        candidates = lax.select(ties, imaginary, lax.full(shape_of(imaginary), fill, dtype_of(imaginary).name))
        return lax_complex.make(extreme, reduce_real(candidates, axes))

    return reduce


max = _extremum("max", _lexicographic(lax.reduce_max, -math.inf), maximum, lax.reduce_or, lax.bitwise_or, lowest)
min = _extremum("min", _lexicographic(lax.reduce_min, math.inf), minimum, lax.reduce_and, lax.bitwise_and, highest)
amax = max
amin = min


def all(a, axis=None, keepdims: bool = False, *, where=None):
    """Whether every element ``where`` keeps along ``axis`` is non-zero (True for none)."""
    operand, axes, _ = _prepare("all", a, axis, "bool", None)
    return _keep_dims(lax.reduce_and(with_mask(operand, where, True, "all"), axes), axes, keepdims)


def any(a, axis=None, keepdims: bool = False, *, where=None):
    """Whether some element ``where`` keeps along ``axis`` is non-zero (False for none)."""
    operand, axes, _ = _prepare("any", a, axis, "bool", None)
    return _keep_dims(lax.reduce_or(with_mask(operand, where, False, "any"), axes), axes, keepdims)


def _count(shape, axes) -> int:
    return math.prod(shape[dim] for dim in axes)


def _count_of(operand, axes, where, function: str, name: str, ddof=0):
    """The elements counted along ``axes`` (less ``ddof``, at least 0): a number without a
    mask, an array of the reduced shape with one."""
    if where is None:
        count = float(_count(shape_of(operand), axes) - ddof)
        return count if count > 0 else 0.0
    count = masked_count(where, operand, axes, function, name)
    return lax.max(lax.sub(count, float(ddof)), 0.0) if ddof else count


def divide_as_compiled(value, divisor: float):
    """``value / divisor`` (a Python number) as JAX computes it in its library functions, which
    are jitted even when called eagerly: XLA multiplies by the reciprocal of a constant divisor,
    rounded to the dtype (compiler/optimize/reciprocals.py). Traced, the division is staged as it
    is and that pass rewrites it; eagerly the reciprocal is applied here."""
    if isinstance(value, Tracer) or not (is_float(dtype_of(value).name) or is_complex(dtype_of(value).name)):
        return lax.div(value, divisor)
    reciprocal = lax.div(asarray(1, dtype=dtype_of(value).name), divisor)
    return lax.mul(value, lax.broadcast_in_dim(reciprocal, shape_of(value), ()))


def mean(a, axis=None, dtype=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean over ``axis`` of the elements ``where`` keeps, in a float dtype (NaN for
    empty reductions, as numpy)."""
    operand, axes, name = _prepare("mean", a, axis, dtype, lambda dtype: inexact_dtype(dtype).name)
    if not (is_float(name) or is_complex(name)):
        raise TypeError(f"mean: dtype must be a float or complex dtype, got {name}")

    def average(value, dtype: str):
        total = lax.reduce_sum(with_mask(value, where, 0, "mean"), axes)
        count = _count_of(value, axes, where, "mean", dtype)
        return divide_as_compiled(total, count) if isinstance(count, float) else lax.div(total, count)

    result = _in_float32(average, operand, name)
    return _keep_dims(result, axes, keepdims)


def _degrees_of_freedom(function: str, ddof, correction):
    """``ddof`` or the Array API's ``correction`` (its name for the same number), not both."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{function}: ddof and correction can't both be specified, got ddof={ddof!r} "
                         f"and correction={correction!r}")
    return correction


def var(
    a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None
):
    """Variance over ``axis`` of the elements ``where`` keeps, dividing by ``n - ddof``
    (``correction`` is the Array API's ddof)."""
    ddof = _degrees_of_freedom("var", ddof, correction)
    operand, axes, name = _prepare("var", a, axis, dtype, lambda dtype: inexact_dtype(dtype).name)
    if not is_float(name):
        raise TypeError(f"var: dtype must be a float dtype, got {name}")
    def variance(value, dtype: str):
        centered = subtract(value, mean(value, axes, keepdims=True, where=where))
        squares = lax.reduce_sum(with_mask(lax.mul(centered, centered), where, 0, "var"), axes)
        # numpy divides by max(n - ddof, 0): too few elements give inf or NaN, not an error.
        count = _count_of(value, axes, where, "var", dtype, ddof)
        return divide_as_compiled(squares, count) if isinstance(count, float) else lax.div(squares, count)

    return _keep_dims(_in_float32(variance, operand, name), axes, keepdims)


def std(
    a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None
):
    """Standard deviation over ``axis``: the square root of ``var``."""
    ddof = _degrees_of_freedom("std", ddof, correction)
    return sqrt(var(a, axis, dtype, ddof, keepdims, where=where))


def _arg_extremum(function: str, reduce):
    def apply(a, axis=None, keepdims: bool = False):
        value = as_array_argument(a, function)
        operand = convert_operand(value, dtype_of(value).name)
        shape = shape_of(operand)
        if axis is None:
            operand = lax.reshape(operand, (math.prod(shape),))
            dim = 0
        else:
            dim = normalize_axis(axis, len(shape), function)
        if shape_of(operand)[dim] == 0:
            raise ValueError(
                f"{function}: attempt to get {function} of an empty sequence "
                f"(shape {shape}, axis {axis})"
            )
        result = reduce(operand, dim, default_int(x64()))
        if not keepdims:
            return result
        return (
            lax.reshape(result, (1,) * len(shape))
            if axis is None
            else lax.expand_dims(result, (dim,))
        )

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = (
        f"Index of the first {function[3:]}imum along ``axis`` (None: of the flattened array)."
    )
    return apply


argmax = _arg_extremum("argmax", lax.argmax)
argmin = _arg_extremum("argmin", lax.argmin)


def _flatten_or_axis(function: str, value, axis):
    """The operand and dim for functions where ``axis=None`` means "of the flattened array"."""
    shape = shape_of(value)
    if axis is None:
        return lax.reshape(value, (math.prod(shape),)), 0
    return value, normalize_axis(axis, len(shape), function)


def _scan(function: str, scan):
    def apply(a, axis=None, dtype=None):
        value = as_array_argument(a, function)
        default = dtype_of(value).name if dtype_of(value).name != "bool" else default_int(x64())
        name = dtype_argument(dtype, function) if dtype is not None else default
        if name == "bool":
            raise TypeError(f"{function}: dtype bool is not supported; use an integer dtype")
        operand, dim = _flatten_or_axis(
            function, with_weak_type(convert_operand(value, name), False), axis
        )
        return scan(operand, dim)

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = f"Inclusive ``{function}`` along ``axis`` (None: of the flattened array)."
    return apply


cumsum = _scan("cumsum", lax.cumsum)
cumprod = _scan("cumprod", lax.cumprod)


def _check_sort_options(function: str, kind, order) -> None:
    if order is not None:
        raise TypeError(f"{function}: order is not supported (meshjit arrays have no record fields), got {order!r}")
    if kind is not None and kind not in ("quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"{function}: kind must be one of quicksort, mergesort, heapsort, stable, got {kind!r}")


def sort(a, axis=-1, *, kind=None, order=None, stable: bool = True, descending: bool = False):
    """Sorted copy along ``axis`` (None: of the flattened array); NaNs sort last (first when
    ``descending``)."""
    _check_sort_options("sort", kind, order)
    value = as_array_argument(a, "sort")
    operand, dim = _flatten_or_axis("sort", convert_operand(value, dtype_of(value).name), axis)
    result = lax.sort(operand, dim, is_stable=bool(stable))
    if descending:
        result = lax.rev(result, (dim,))
    return with_weak_type(result, dtype_of(value).weak)


def sort_complex(a):
    """``a`` sorted along its last axis, as complex numbers (the complex type of ``a``'s)."""
    value = as_array_argument(a, "sort_complex")
    result = sort(value, axis=-1)
    name = dtype_of(result).name
    if is_complex(name):
        return result
    target = "c128" if name == "f64" or (name in ("i64", "u64") and x64()) else "c64"
    return lax.convert_element_type(result, target)


def argsort(a, axis=-1, *, kind=None, order=None, stable: bool = True, descending: bool = False, dtype=None):
    """Indices that sort ``a`` along ``axis``: a sort of (values, positions) pairs; equal
    values keep their order when ``stable`` (also when ``descending``)."""
    _check_sort_options("argsort", kind, order)
    value = as_array_argument(a, "argsort")
    operand, dim = _flatten_or_axis("argsort", convert_operand(value, dtype_of(value).name), axis)
    index_dtype = default_int(x64()) if dtype is None else dtype_argument(dtype, "argsort")
    if descending:
        # sort the reversed values and count positions from the end: ties keep their order
        operand = lax.rev(operand, (dim,))
    positions = lax.broadcasted_iota(index_dtype, shape_of(operand), dim,
                                     out_sharding=sharding_ops.layout_of(operand))
    order = lax.sort([operand, positions], dim, is_stable=bool(stable), num_keys=1)[1]
    if descending:
        last = lax.full(shape_of(order), shape_of(operand)[dim] - 1, index_dtype)
        order = lax.rev(lax.sub(last, order), (dim,))
    return order


# -- closeness and equality of whole arrays -------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` in the promoted float dtype (JAX's and
    numpy's test, asymmetric in ``b``); infinities are close only to themselves, and NaNs to
    each other only when ``equal_nan``. A strongly typed bool array."""
    return _isclose("isclose", a, b, rtol, atol, equal_nan)


def _isclose(function: str, a, b, rtol, atol, equal_nan: bool):
    values = [as_array_argument(value, function) for value in (a, b)]
    dtype = inexact_dtype(result_dtype(*values)).name
    (a, b), _ = promote_and_broadcast(function, *values, dtype=dtype)
    # NOTE: the tolerances take the operands' dtype, as in JAX (an f64 rtol does not widen f32);
    # for complex operands that of their parts, which |a - b| has
    rtol, atol = (broadcast_to_shape(convert_operand(as_array_argument(tolerance, function), real_dtype(dtype)),
                                     shape_of(a), function) for tolerance in (rtol, atol))
    within = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    close = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(isfinite(b), within))
    if equal_nan:
        close = lax.bitwise_or(close, lax.bitwise_and(lax.ne(a, a), lax.ne(b, b)))
    return with_weak_type(close, False)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of ``isclose(a, b, ...)`` holds (a 0-d bool array)."""
    return all(_isclose("allclose", a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether ``a1`` and ``a2`` have one shape and equal elements (after promotion), NaNs equal
    only when ``equal_nan``; arrays of different shapes give False rather than broadcasting."""
    a1, a2 = asarray(a1), asarray(a2)
    if shape_of(a1) != shape_of(a2):
        return asarray(False)
    equal_elements = equal(a1, a2)
    if equal_nan:
        equal_elements = logical_or(equal_elements, logical_and(isnan(a1), isnan(a2)))
    return all(equal_elements)
