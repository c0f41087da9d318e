"""jax.numpy's array creation: ``array asarray``, filled arrays (``zeros ones full`` and their
``_like`` forms), ranges (``arange linspace``, from concrete Python bounds only) and the
triangle family (``eye identity tri tril triu``).
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
from meshjit.ir.dtypes import real_dtype, to_numpy

from .. import lax_ops as lax
from .. import sharding_ops
from ..operands import canonical_numpy, dtype_of, is_python_scalar, shape_of, x64
from ..promotion import default_float, default_int, promote_all
from ..trace import ConcretizationTypeError, Tracer, current_trace, is_concrete_array, operand_sharding_type
from .arguments import (
    broadcast_shapes,
    array_operand,
    broadcast_to_shape,
    convert_operand,
    dtype_argument,
    inexact_dtype,
    result_dtype,
    with_weak_type,
)
from .shape_ops import _shape_argument

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "arange",
    "array",
    "asarray",
    "copy",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "identity",
    "linspace",
    "ones",
    "ones_like",
    "tri",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
)


def _placing(function):
    """``function`` with the standard's ``device=``: its result moved to that device or
    Sharding (outside jit; inside jit place values with out_sharding or
    with_sharding_constraint)."""

    @functools.wraps(function)
    def apply(*args, device=None, **kwargs):
        result = function(*args, **kwargs)
        if device is None:
            return result
        parts = result if isinstance(result, tuple) else (result,)  # linspace with retstep
        if any(isinstance(part, Tracer) for part in parts):
            raise ValueError(f"{function.__name__}: device= is not supported inside jit; use out_sharding= or "
                             f"with_sharding_constraint")
        placed = tuple(part.to_device(device) if hasattr(part, "to_device") else part for part in parts)
        return placed if isinstance(result, tuple) else placed[0]

    return apply


def _holds_traced(value) -> bool:
    if isinstance(value, Tracer) or is_concrete_array(value):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_traced(item) for item in value)


def _strong_dtype(sequence) -> str:
    """The dtype of ``jnp.array(sequence)``: its elements' promoted dtype (JAX's lattice result,
    weak Python scalars included), which the array holds strongly."""
    def leaves(value):
        if isinstance(value, (list, tuple)):
            for item in value:
                yield from leaves(item)
        else:
            yield dtype_of(value)

    return promote_all(leaves(sequence), x64()).name


def _stacked(sequence, name: str):
    """A sequence holding traced values as one array of dtype ``name``: each element converted
    (a weak one made strong) and given its new leading dim in turn, then concatenated, as JAX
    stages it."""
    expanded = [lax.expand_dims(array(item, name), (0,)) for item in sequence]
    shapes = [shape_of(item)[1:] for item in expanded]
    if any(shape != shapes[0] for shape in shapes):
        raise ValueError(f"stack: all arrays must have the same shape, got {', '.join(map(str, shapes))}")
    return expanded[0] if len(expanded) == 1 else lax.concatenate(expanded, 0)


@_placing
def array(object, dtype=None, copy: bool = True, ndmin: int = 0, *, device=None, out_sharding=None):
    """An array from a scalar, a (nested) sequence, a numpy array or another array, laid out as
    ``out_sharding`` when given."""
    name = dtype_argument(dtype, "array") if dtype is not None else None
    if isinstance(object, (list, tuple)) and _holds_traced(object):
        # A sequence holding traced or device values is built by stacking, not as a constant.
        if not object:
            raise ValueError("array: an empty sequence holds no traced values")
        result = _stacked(object, name or _strong_dtype(object))
    elif isinstance(object, Tracer) or is_concrete_array(object):
        result = (
            object if name is None else lax._convert_element_type(object, name, weak_type=False)
        )
    else:
        weak = name is None and is_python_scalar(object) and dtype_of(object).weak
        try:
            constant = canonical_numpy(object, name)
        except TypeError as error:
            raise TypeError(f"array: {error}") from None
        result = with_weak_type(lax._constant(constant), weak)
    missing = ndmin - len(shape_of(result))
    result = lax.reshape(result, (1,) * missing + shape_of(result)) if missing > 0 else result
    return sharding_ops.apply_out_sharding(result, out_sharding, "jnp.array")


def copy(a, order=None):
    """A copy of ``a``: outside jit a new Array in the same layout; inside jit the traced value
    itself, since values are immutable there (XLA drops JAX's copy too)."""
    if order not in (None, "K"):
        raise ValueError(f"copy: meshjit arrays have no memory order to choose, so order must be None or "
                         f"'K' (as in JAX), got {order!r}")
    value = asarray(a)
    # NOTE: numpy and Python values already became a new array; only a device array needs a copy.
    return lax._array_copy(value) if value is a and is_concrete_array(value) else value


@_placing
def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
    """``a`` as an array; arrays and traced values of the right dtype come back unchanged."""
    return sharding_ops.apply_out_sharding(array(a, dtype), out_sharding, "jnp.asarray")


def _fill_dtype(dtype, fill_value, function: str) -> str:
    if dtype is not None:
        return dtype_argument(dtype, function)
    return result_dtype(fill_value).name


@_placing
def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
    """An array of ``shape`` filled with ``fill_value`` (a scalar or a broadcastable array), laid
    out as ``out_sharding`` when given."""
    shape = _shape_argument(shape, "full")
    if out_sharding is not None:
        return sharding_ops.apply_out_sharding(full(shape, fill_value, dtype), out_sharding, "jnp.full")
    if any(size < 0 for size in shape):
        raise TypeError(f"full: negative dimensions are not allowed, got shape {shape}")
    if is_python_scalar(fill_value) or (
        isinstance(fill_value, (np.ndarray, np.generic)) and fill_value.ndim == 0
    ):
        name = _fill_dtype(dtype, fill_value, "full")
        weak = dtype is None and dtype_of(fill_value).weak
        return with_weak_type(lax.full(shape, canonical_numpy(fill_value, name), name), weak)
    value = array_operand(fill_value, "full")
    name = _fill_dtype(dtype, value, "full")
    return broadcast_to_shape(convert_operand(value, name), shape, "full")


def _filled(function: str, shape, fill, dtype, device, out_sharding):
    result = full(shape, fill, dtype or default_float(x64()))
    return sharding_ops.apply_out_sharding(result, out_sharding, f"jnp.{function}")


@_placing
def zeros(shape, dtype=None, *, device=None, out_sharding=None):
    return _filled("zeros", shape, 0, dtype, device, out_sharding)


@_placing
def ones(shape, dtype=None, *, device=None, out_sharding=None):
    return _filled("ones", shape, 1, dtype, device, out_sharding)


@_placing
def empty(shape, dtype=None, *, device=None, out_sharding=None):
    return _filled("empty", shape, 0, dtype, device, out_sharding)


def _like(function: str, a, fill_value, dtype, shape, device, out_sharding):
    """An array like ``a`` (its shape unless given, its dtype unless given, and, in explicit mode,
    its sharding unless ``out_sharding`` or a new shape is given) filled with ``fill_value``."""
    value = array_operand(a, function)
    weak = dtype is None and dtype_of(value).weak
    name = dtype_argument(dtype, function) if dtype is not None else dtype_of(value).name
    target = shape_of(value) if shape is None else _shape_argument(shape, function)
    result = full(target, fill_value, name)
    if out_sharding is None and shape is None:
        like = operand_sharding_type(value)
        if not like.is_trivial:
            result = sharding_ops.reshard_to(result, like)
    else:
        result = sharding_ops.apply_out_sharding(result, out_sharding, f"jnp.{function}")
    return with_weak_type(result, weak)


@_placing
def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    return _like("zeros_like", a, 0, dtype, shape, device, out_sharding)


@_placing
def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    return _like("ones_like", a, 1, dtype, shape, device, out_sharding)


@_placing
def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
    return _like("full_like", a, fill_value, dtype, shape, device, out_sharding)


empty_like = zeros_like


# -- ranges ---------------------------------------------------------------------------------------
def _concrete_number(value, function: str, argument: str):
    """A Python number from a concrete scalar; traced values cannot size an array."""
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(
            f"{function}: argument {argument!r} is a traced value {value.value.type}; the size "
            f"of the result must be known while tracing, so pass a concrete Python number "
            f"(mark the argument static with static_argnums/static_argnames)"
        )
    if np.ndim(value) != 0:
        raise TypeError(
            f"{function}: argument {argument!r} must be a scalar, got shape {np.shape(value)}"
        )
    scalar = np.asarray(value).item()
    if isinstance(scalar, complex) or not isinstance(scalar, (bool, int, float)):
        raise TypeError(f"{function}: argument {argument!r} must be a real number, got {value!r}")
    return scalar


def _affine_range(count: int, start, step, name: str):
    """``start + step * [0, 1, ..., count-1]`` in dtype ``name``, from an iota."""
    compute = name if name != "bool" else default_int(x64())
    values = lax.iota(compute, count)
    if step != 1:
        values = lax.mul(values, lax.full((count,), step, compute))
    if start != 0:
        values = lax.add(values, lax.full((count,), start, compute))
    return lax.convert_element_type(values, name)


@_placing
def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
    """Evenly spaced values in ``[start, stop)`` from concrete bounds (numpy's arange), laid out
    as ``out_sharding`` when given."""
    if start is None and stop is None:
        raise TypeError("arange: argument 'start' must be a real number, got None")
    if out_sharding is not None:
        return sharding_ops.apply_out_sharding(arange(start, stop, step, dtype), out_sharding, "jnp.arange")
    bounds = {"start": start, "stop": stop, "step": step}
    numbers = {
        key: _concrete_number(value, "arange", key)
        for key, value in bounds.items()
        if value is not None
    }
    if stop is None:
        numbers = {
            "start": 0,
            "stop": numbers["start"],
            **({"step": numbers["step"]} if step is not None else {}),
        }
    first, last, increment = numbers["start"], numbers["stop"], numbers.get("step", 1)
    if increment == 0:
        raise ValueError("arange: step must not be zero")
    count = max(math.ceil((last - first) / increment), 0)
    all_integers = all(isinstance(number, int) for number in (first, last, increment))
    default = default_int(x64()) if all_integers else default_float(x64())
    name = dtype_argument(dtype, "arange") if dtype is not None else default
    return _affine_range(count, first, increment, name)


def _linspace_bound(value):
    """The bound as an operand, and whether it is a constant of a traced program (a Python or
    numpy value inside jit, which XLA folds)."""
    embedded = not isinstance(value, Tracer) and not is_concrete_array(value)
    return array_operand(value, "linspace"), embedded and current_trace() is not None


def _evenly_spaced(first, last, num: int, endpoint: bool, axis: int, folded: bool):
    """The values of ``linspace`` from bounds of one inexact dtype and one shape, along
    ``axis``, and the step. The arithmetic is XLA's on CPU for JAX's formula
    ``start * (1 - i / d) + stop * (i / d)`` so the values are JAX's bit for bit: the
    division becomes a product with the reciprocal, and LLVM contracts the sum with a product
    into an fma, which product depends on the shape of the bounds; bounds that are constants of
    a traced program are folded, without an fma. (Bounds of different shapes, one broadcast
    against the other, take the array form; XLA fuses those differently, within 1 ulp.)"""
    name = dtype_of(first).name
    bounds_shape = shape_of(first)
    shape = bounds_shape[:axis] + (num,) + bounds_shape[axis:]
    intervals = (num - 1) if endpoint else num
    if intervals == 0:
        # A single value is the start; with endpoint numpy reports the undefined step as NaN.
        values = lax.broadcast_in_dim(first, shape, _around(len(shape), axis))
        step = lax.full((), float("nan"), name) if endpoint else lax.sub(last, first)
        return values, step
    numpy_dtype = to_numpy(name)
    real = np.finfo(numpy_dtype).dtype.type if numpy_dtype.kind == "c" else numpy_dtype.type
    reciprocal = float(real(1) / real(intervals))
    step = lax.mul(lax.sub(last, first), reciprocal)
    inner = bounds_shape[:axis] + (intervals,) + bounds_shape[axis:]
    dims = _around(len(inner), axis)
    lower = lax.broadcast_in_dim(first, inner, dims)
    upper = lax.broadcast_in_dim(last, inner, dims)
    if numpy_dtype.kind == "c":
        fraction = lax.mul(lax.broadcasted_iota(real_dtype(name), inner, axis), reciprocal)
        fraction = lax.convert_element_type(fraction, name)
        values = lax.add(lax.mul(lower, lax.sub(1.0, fraction)), lax.mul(upper, fraction))
        return _with_endpoint(values, last, axis, endpoint), step
    position = lax.broadcasted_iota(name, inner, axis)
    fraction = lax.mul(position, reciprocal)
    start_part = lax.mul(lower, lax.sub(1.0, fraction))
    if folded or name not in ("f32", "f64"):
        values = lax.add(start_part, lax.mul(position, lax.mul(upper, reciprocal)))
    elif bounds_shape == ():
        values = lax.fma(position, lax.mul(upper, reciprocal), start_part)
    else:
        values = lax.fma(upper, fraction, start_part)
    return _with_endpoint(values, last, axis, endpoint), step


def _with_endpoint(values, last, axis: int, endpoint: bool):
    return lax.concatenate([values, lax.expand_dims(last, (axis,))], axis) if endpoint else values


def _around(rank: int, axis: int) -> tuple:
    """The dims of a bounds-shaped operand in a result with ``axis`` inserted."""
    return tuple(dim for dim in range(rank) if dim != axis)


@_placing
def linspace(
    start,
    stop,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype=None,
    axis: int = 0,
    *,
    device=None,
):
    """``num`` evenly spaced values from ``start`` to ``stop`` (arrays broadcast against each
    other, traced or not) along ``axis`` of the result; ``num`` must be concrete."""
    num = operator.index(_concrete_number(num, "linspace", "num"))
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    (first, first_folded), (last, last_folded) = (
        _linspace_bound(start), _linspace_bound(stop))
    compute = inexact_dtype(result_dtype(first, last)).name
    first, last = (
        with_weak_type(convert_operand(bound, compute), False) for bound in (first, last)
    )
    bounds_shape = broadcast_shapes("linspace", shape_of(first), shape_of(last))
    first, last = (broadcast_to_shape(bound, bounds_shape, "linspace") for bound in (first, last))
    rank = len(bounds_shape) + 1
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {rank}")
    axis = axis % rank
    if num == 0:
        values = lax.full(bounds_shape[:axis] + (0,) + bounds_shape[axis:], 0, compute)
        step = lax.full((), float("nan"), compute)
    else:
        values, step = _evenly_spaced(first, last, num, endpoint, axis, first_folded and last_folded)
    name = dtype_argument(dtype, "linspace") if dtype is not None else compute
    if to_numpy(name).kind in "iub":
        values = lax.floor(values)
    result = lax.convert_element_type(values, name)
    return (result, step) if retstep else result


# -- triangles ------------------------------------------------------------------------------------
def _diagonal_offsets(rows: int, columns: int):
    """``column - row`` at every position of a rows x columns matrix."""
    index = default_int(x64())
    row = lax.broadcasted_iota(index, (rows, columns), 0)
    column = lax.broadcasted_iota(index, (rows, columns), 1)
    return lax.sub(column, row)


@_placing
def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None):
    """A matrix with ones on the ``k``-th diagonal."""
    rows = operator.index(_concrete_number(N, "eye", "N"))
    columns = rows if M is None else operator.index(_concrete_number(M, "eye", "M"))
    name = dtype_argument(dtype, "eye") if dtype is not None else default_float(x64())
    return lax.convert_element_type(lax.eq(_diagonal_offsets(rows, columns), int(k)), name)



def identity(n: int, dtype=None):
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """Ones at and below the ``k``-th diagonal."""
    rows = operator.index(_concrete_number(N, "tri", "N"))
    columns = rows if M is None else operator.index(_concrete_number(M, "tri", "M"))
    name = dtype_argument(dtype, "tri") if dtype is not None else default_float(x64())
    return lax.convert_element_type(lax.le(_diagonal_offsets(rows, columns), int(k)), name)


def _triangle(function: str, m, k: int, keep_below: bool):
    operand = array_operand(m, function)
    shape = shape_of(operand)
    if len(shape) < 2:
        raise ValueError(f"{function}: needs at least 2 dims, got shape {shape}")
    offsets = _diagonal_offsets(shape[-2], shape[-1])
    keep = lax.le(offsets, int(k)) if keep_below else lax.ge(offsets, int(k))
    if len(shape) > 2:
        keep = lax.broadcast_in_dim(keep, shape, (len(shape) - 2, len(shape) - 1))
    return lax.select(keep, operand, lax.full(shape, 0, dtype_of(operand).name))


def tril(m, k: int = 0):
    """``m`` with the elements above the ``k``-th diagonal zeroed."""
    return _triangle("tril", m, k, keep_below=True)


def triu(m, k: int = 0):
    """``m`` with the elements below the ``k``-th diagonal zeroed."""
    return _triangle("triu", m, k, keep_below=False)
