"""jax.numpy's joining and splitting conveniences built on concatenate, stack and split:
``vstack``/``hstack``/``dstack``/``column_stack``, ``atleast_1d/2d/3d`` and
``array_split``/``hsplit``/``vsplit``/``dsplit``, with numpy's (and JAX's) rank rules."""

from __future__ import annotations

from .. import lax_ops as lax
from ..operands import shape_of
from .arguments import array_operand, as_array_argument
from .shape_ops import concatenate, split

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "column_stack",
    "dsplit",
    "dstack",
    "hsplit",
    "hstack",
    "vsplit",
    "vstack",
)


def _at_least(array, rank: int, function: str):
    """``array`` with unit dims added as numpy's atleast_Nd adds them (a 1-d x becomes [1, n, 1])."""
    operand = as_array_argument(array, function)
    shape = shape_of(operand)
    if len(shape) >= rank:
        return operand
    if len(shape) == 0:
        return lax.reshape(operand, (1,) * rank)
    if len(shape) == 1:
        return lax.reshape(operand, ((1,) + shape + (1,))[:rank] if rank == 3 else (1,) + shape)
    return lax.reshape(operand, shape + (1,))


def _each(arrays, rank: int, function: str):
    result = [_at_least(array, rank, function) for array in arrays]
    return result[0] if len(result) == 1 else result


def atleast_1d(*arrays):
    """Each array with at least one dim (a list when given several)."""
    return _each(arrays, 1, "atleast_1d")


def atleast_2d(*arrays):
    """Each array with at least two dims: a 1-d x becomes [1, n]."""
    return _each(arrays, 2, "atleast_2d")


def atleast_3d(*arrays):
    """Each array with at least three dims: 1-d becomes [1, n, 1] and 2-d [m, n, 1]."""
    return _each(arrays, 3, "atleast_3d")


def _sequence(tup, function: str) -> list:
    if isinstance(tup, (str, bytes)) or not hasattr(tup, "__iter__"):
        raise TypeError(f"{function}: expected a sequence of arrays, got {type(tup).__name__}")
    return list(tup)


def vstack(tup, dtype=None):
    """The arrays (1-d ones as rows) joined along the first axis."""
    return concatenate([_at_least(array, 2, "vstack") for array in _sequence(tup, "vstack")], 0, dtype)


def hstack(tup, dtype=None):
    """The arrays joined along the second axis (the first for 1-d arrays)."""
    arrays = [_at_least(array, 1, "hstack") for array in _sequence(tup, "hstack")]
    axis = 0 if arrays and len(shape_of(arrays[0])) == 1 else 1
    return concatenate(arrays, axis, dtype)


def dstack(tup, dtype=None):
    """The arrays joined along the third axis."""
    return concatenate([_at_least(array, 3, "dstack") for array in _sequence(tup, "dstack")], 2, dtype)


def column_stack(tup):
    """1-d arrays as columns (2-d ones as they are) joined along the second axis."""
    columns = []
    for array in _sequence(tup, "column_stack"):
        operand = as_array_argument(array, "column_stack")
        shape = shape_of(operand)
        # a scalar is a 1x1 column, a 1-d array a column, as JAX
        columns.append(lax.reshape(operand, (1,) * (2 - len(shape)) + shape if not shape else shape + (1,))
                       if len(shape) < 2 else operand)
    return concatenate(columns, 1)


def array_split(ary, indices_or_sections, axis: int = 0):
    """As ``split``, but sections need not divide the axis: the first ones get one more."""
    if not isinstance(indices_or_sections, int):
        return split(ary, indices_or_sections, axis)
    operand = array_operand(ary, "array_split")
    size = shape_of(operand)[axis]
    sections = indices_or_sections
    if sections <= 0:
        raise ValueError(f"array_split: number sections must be larger than 0, got {sections}")
    base, extra = divmod(size, sections)
    points, position = [], 0
    for index in range(sections - 1):
        position += base + (1 if index < extra else 0)
        points.append(position)
    return split(operand, points, axis)


def _split_along(ary, indices_or_sections, axis: int, minimum: int, function: str):
    operand = array_operand(ary, function)
    if len(shape_of(operand)) < minimum:
        raise ValueError(f"{function} only works on arrays of {minimum} or more dimensions")
    return split(operand, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """``split`` along the second axis (the first for 1-d arrays)."""
    operand = array_operand(ary, "hsplit")
    return _split_along(operand, indices_or_sections, 0 if len(shape_of(operand)) == 1 else 1, 1, "hsplit")


def vsplit(ary, indices_or_sections):
    """``split`` along the first axis (1-d arrays too, as JAX)."""
    return _split_along(ary, indices_or_sections, 0, 1, "vsplit")


def dsplit(ary, indices_or_sections):
    """``split`` along the third axis of an array of three or more dims."""
    return _split_along(ary, indices_or_sections, 2, 3, "dsplit")
