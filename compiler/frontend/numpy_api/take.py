"""``take``, ``take_along_axis`` and ``put_along_axis``: gathers (and a scatter) along one axis
with JAX's out-of-range modes.

In mode "fill" (the default) negative indices count from the end and indices still out of range
give ``fill_value`` (by default NaN, the most negative int, or True); "clip" and
"promise_in_bounds" clamp indices into range (``take`` clamps negative ones to 0, as JAX does,
where ``take_along_axis`` counts them from the end first); "wrap" (``take`` only) wraps around.
"""

from __future__ import annotations

import math

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import default_int
from .arguments import (
    array_operand,
    as_array_argument,
    broadcast_shapes,
    broadcast_to_shape,
    convert_operand,
    normalize_axis,
    with_weak_type,
)
from .elementwise import remainder
from meshjit.ir.dtypes import is_float

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "take",
    "take_along_axis",
    "put_along_axis",
)

_MODES = ("fill", "clip", "wrap", "promise_in_bounds")


def _check_mode(mode, function: str, allowed=_MODES) -> str:
    mode = "fill" if mode is None else mode
    if mode not in allowed:
        raise ValueError(f"{function}: mode must be one of {', '.join(allowed)}, got {mode!r}")
    return mode


def _index_operand(indices, function: str):
    """Integer (or bool) indices as a lax operand of the default int dtype."""
    value = as_array_argument(indices, function)
    if is_float(dtype_of(value).name):
        raise TypeError(f"{function}: indices must be integers, got dtype {dtype_of(value).name}")
    return convert_operand(value, default_int(x64()))


def _prepare_index(index, size: int, mode: str, function: str, wrap_negative: bool):
    """Indices made ready for a gather on an axis of ``size``: wrapped around, counted from the
    end (always when ``wrap_negative``, else only in mode "fill") and clamped as ``mode`` says."""
    if mode == "wrap":
        return remainder(index, max(size, 1))
    if wrap_negative or mode == "fill":
        index = lax.select(lax.lt(index, 0), lax.add(index, size), index)
    if mode == "fill":
        return index
    if size == 0 and math.prod(shape_of(index)) > 0:
        raise IndexError(f"{function}: cannot take elements of an axis of size 0")
    return lax.clamp(0, index, max(size - 1, 0))


def _in_range(index, size: int):
    return lax.bitwise_and(lax.ge(index, 0), lax.lt(index, size))


def _with_fill_value(result, inside, fill_value):
    """``result`` with ``fill_value`` where ``inside`` (of the result's shape) is false."""
    name = dtype_of(result).name
    fill = lax.full(shape_of(result), convert_operand(fill_value, name), name)
    return lax.select(inside, result, fill)


def take(a, indices, axis=None, mode=None, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (None: of the flattened array); the
    result's shape is ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``."""
    mode = _check_mode(mode, "take")
    operand = array_operand(a, "take")
    if axis is None:
        operand = lax.reshape(operand, (math.prod(shape_of(operand)),))
    dim = normalize_axis(0 if axis is None else axis, len(shape_of(operand)), "take")
    size = shape_of(operand)[dim]
    # As in JAX, take counts negative indices from the end only in mode "fill".
    index = _prepare_index(_index_operand(indices, "take"), size, mode, "take", wrap_negative=False)
    gather_mode = "fill" if mode == "fill" else "clip"
    result = lax.gather_along_axis(operand, index, dim, mode=gather_mode)
    result = with_weak_type(result, dtype_of(operand).weak)
    if mode != "fill" or fill_value is None:
        return result
    index_dims = tuple(range(dim, dim + len(shape_of(index))))
    inside = lax.broadcast_in_dim(_in_range(index, size), shape_of(result), index_dims)
    return _with_fill_value(result, inside, fill_value)


def _along_axis_shapes(shape, index_shape, dim: int):
    """The result shape (the other dims broadcast) and the operand's shape broadcast to it."""
    if len(index_shape) != len(shape):
        raise ValueError(
            f"take_along_axis: indices of shape {index_shape} must have the rank of arr {shape}"
        )
    others = tuple(size for position, size in enumerate(shape) if position != dim)
    index_others = tuple(size for position, size in enumerate(index_shape) if position != dim)
    broadcast = broadcast_shapes("take_along_axis", others, index_others)
    result_shape = broadcast[:dim] + (index_shape[dim],) + broadcast[dim:]
    return result_shape, broadcast[:dim] + (shape[dim],) + broadcast[dim:]


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """``arr`` at ``indices`` along ``axis``, elementwise in the other dims (which broadcast);
    ``axis=None`` takes from the flattened array."""
    mode = _check_mode(mode, "take_along_axis", ("fill", "clip", "promise_in_bounds"))
    operand = array_operand(arr, "take_along_axis")
    index = _index_operand(indices, "take_along_axis")
    if axis is None:
        flat_index = lax.reshape(index, (math.prod(shape_of(index)),))
        return take(operand, flat_index, None, mode=mode, fill_value=fill_value)
    dim = normalize_axis(axis, len(shape_of(operand)), "take_along_axis")
    size = shape_of(operand)[dim]
    result_shape, operand_shape = _along_axis_shapes(shape_of(operand), shape_of(index), dim)
    operand = broadcast_to_shape(operand, operand_shape, "take_along_axis")
    index = _prepare_index(index, size, mode, "take_along_axis", wrap_negative=True)
    index = broadcast_to_shape(index, result_shape, "take_along_axis")
    gather_mode = "fill" if mode == "fill" else "clip"
    result = lax.gather_elements_along_axis(operand, index, dim, mode=gather_mode, fill_value=fill_value)
    return with_weak_type(result, dtype_of(operand).weak)


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (the other dims matched
    elementwise, as ``take_along_axis`` reads them); ``inplace=False`` is required, as in JAX."""
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    from .index_update import IndexUpdateHelper

    operand = array_operand(arr, "put_along_axis")
    index = _index_operand(indices, "put_along_axis")
    if axis is None:
        flat = lax.reshape(operand, (math.prod(shape_of(operand)),))
        flat_index = lax.reshape(index, (math.prod(shape_of(index)),))
        return lax.reshape(put_along_axis(flat, flat_index, values, 0, inplace=False, mode=mode), shape_of(operand))
    shape = shape_of(operand)
    dim = normalize_axis(axis, len(shape), "put_along_axis")
    if len(shape_of(index)) != len(shape):
        raise ValueError(f"put_along_axis: indices of shape {shape_of(index)} must have the rank of arr {shape}")
    entries = []
    for position in range(len(shape)):
        if position == dim:
            entries.append(index)
        else:
            coordinates = lax.broadcasted_iota(default_int(x64()), (shape[position],), 0)
            entries.append(lax.reshape(coordinates, tuple(shape[position] if d == position else 1
                                                            for d in range(len(shape)))))
    return IndexUpdateHelper(operand)[tuple(entries)].set(values, mode=mode)
