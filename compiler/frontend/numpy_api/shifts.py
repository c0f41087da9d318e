"""jax.numpy's ``pad``, ``roll`` and ``diff``: data moved along an axis, built from ``pad``,
static slices, ``rev`` and ``concatenate`` so that a sharded axis partitions by halo exchange
(a roll is a concatenate of two slices of one array: one collective_permute of the shifted
rows).

``pad`` works axis by axis, as numpy does (later axes pad the corners). Its reflecting and
wrapping modes take the index map numpy's own ``pad`` gives for ``arange(n)`` and cut it into
runs of consecutive indices, each a slice (reversed where it descends).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from ..trace import Tracer
from .arguments import (
    array_operand,
    as_array_argument,
    broadcast_to_shape,
    convert_operand,
    normalize_axis,
)
from .elementwise import not_equal, remainder, subtract
from .shape_ops import concatenate
from meshjit.ir.dtypes import is_float

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "diff",
    "pad",
    "roll",
)

_MODES = ("constant", "empty", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum", "minimum", "mean")


def _pairs(value, rank: int, name: str) -> list[tuple]:
    """numpy's broadcasting of a pad argument to one (before, after) pair per axis."""
    array = np.asarray(value, dtype=object)
    if array.ndim == 0:
        return [(value, value)] * rank
    if array.shape == (1,) or array.shape == (1, 1):
        item = array.reshape(-1)[0]
        return [(item, item)] * rank
    if array.shape == (2,):
        return [tuple(array)] * rank
    if array.shape == (1, 2):
        return [tuple(array[0])] * rank
    if array.shape == (rank, 1):
        return [(row[0], row[0]) for row in array]
    if array.shape == (rank, 2):
        return [tuple(row) for row in array]
    raise ValueError(f"pad: {name} of shape {array.shape} cannot broadcast to ({rank}, 2)")


def _widths(pad_width, rank: int) -> list[tuple[int, int]]:
    pairs = _pairs(pad_width, rank, "pad_width")
    try:
        widths = [(operator.index(before), operator.index(after)) for before, after in pairs]
    except TypeError:
        raise TypeError(f"pad: pad_width must hold ints, got {pad_width!r}") from None
    if any(before < 0 or after < 0 for before, after in widths):
        raise ValueError(f"pad: pad_width cannot be negative, got {pad_width!r}")
    return widths


def _rows(array, axis: int, start: int, stop: int):
    shape = shape_of(array)
    starts = [start if dim == axis else 0 for dim in range(len(shape))]
    limits = [stop if dim == axis else size for dim, size in enumerate(shape)]
    return lax.slice(array, starts, limits)


def _join(pieces, axis: int):
    pieces = [piece for piece in pieces if shape_of(piece)[axis]]
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _gather_runs(array, axis: int, indices) -> object:
    """``array`` indexed along ``axis`` by the static ``indices``: runs of consecutive indices
    become slices (reversed when descending), concatenated."""
    pieces, start = [], 0
    while start < len(indices):
        stop, step = start + 1, 0
        while stop < len(indices) and (step == 0 and abs(indices[stop] - indices[stop - 1]) == 1
                                       or step and indices[stop] - indices[stop - 1] == step):
            step = indices[stop] - indices[stop - 1]
            stop += 1
        low, high = min(indices[start:stop]), max(indices[start:stop]) + 1
        piece = _rows(array, axis, low, high)
        if step < 0:
            piece = lax.rev(piece, (axis,))
        pieces.append(piece)
        start = stop
    return _join(pieces, axis)


def _pad_axis_indexed(array, axis: int, before: int, after: int, mode: str, reflect_type: str):
    size = shape_of(array)[axis]
    if size == 0:
        raise ValueError(f"pad: cannot use mode {mode!r} on axis {axis} of size 0")
    if reflect_type == "odd" and mode in ("reflect", "symmetric"):
        return _pad_axis_odd(array, axis, before, after, mode)
    indices = np.pad(np.arange(size), (before, after), mode=mode).tolist()
    return _gather_runs(array, axis, indices)


def _pad_axis_odd(array, axis: int, before: int, after: int, mode: str):
    """Odd reflection, as numpy grows it: each step mirrors at most one period of what is
    there so far about the current edge (``2 * edge - mirrored``), alternating sides."""
    skip = 1 if mode == "reflect" else 0
    while before or after:
        for side in ("before", "after"):
            remaining = before if side == "before" else after
            size = shape_of(array)[axis]
            chunk = min(remaining, max(size - skip, 1))
            if not chunk:
                continue
            if side == "before":
                mirrored = lax.rev(_rows(array, axis, skip, skip + chunk), (axis,))
                edge = _rows(array, axis, 0, 1)
            else:
                mirrored = lax.rev(_rows(array, axis, size - skip - chunk, size - skip), (axis,))
                edge = _rows(array, axis, size - 1, size)
            edge = broadcast_to_shape(edge, _with(shape_of(array), axis, chunk), "pad")
            piece = subtract(lax.mul(edge, 2), mirrored)
            array = _join([piece, array] if side == "before" else [array, piece], axis)
            if side == "before":
                before -= chunk
            else:
                after -= chunk
    return array


def _with(shape, axis: int, size: int) -> tuple[int, ...]:
    return tuple(size if dim == axis else extent for dim, extent in enumerate(shape))


def _stat(array, axis: int, rows, mode: str):
    """The max, min or mean of ``rows`` along ``axis`` (kept as a size-1 axis)."""
    reducer = {"maximum": lax.reduce_max, "minimum": lax.reduce_min, "mean": lax.reduce_sum}[mode]
    total = reducer(rows, (axis,))
    if mode == "mean":
        count = shape_of(rows)[axis]
        kind = dtype_of(array).name
        if is_float(kind):
            total = lax.div(total, lax.full(shape_of(total), count, kind))
        else:
            mean = lax.div(lax.convert_element_type(total, "f64" if kind == "i64" else "f32"), float(count))
            total = lax.convert_element_type(lax.round(mean, "to_nearest_even"), kind)
    return lax.expand_dims(total, (axis,))


def _pad_axis_stat(array, axis: int, before: int, after: int, mode: str, stat_length):
    size = shape_of(array)[axis]
    shape = shape_of(array)
    pieces = []
    for width, length, leading in ((before, stat_length[0], True), (after, stat_length[1], False)):
        if not width:
            pieces.append(None)
            continue
        length = size if length is None else min(max(int(length), 1), size)
        rows = _rows(array, axis, 0, length) if leading else _rows(array, axis, size - length, size)
        pieces.append(broadcast_to_shape(_stat(array, axis, rows, mode), _with(shape, axis, width), "pad"))
    return _join([piece for piece in (pieces[0], array, pieces[1]) if piece is not None], axis)


def _pad_axis_ramp(array, axis: int, before: int, after: int, end_values):
    shape = shape_of(array)
    kind = dtype_of(array).name
    compute = kind if kind in ("f32", "f64") else "f32"
    pieces = []
    for width, end, edge_index, ascending in ((before, end_values[0], 0, True),
                                             (after, end_values[1], shape[axis] - 1, False)):
        if not width:
            pieces.append(None)
            continue
        edge = lax.convert_element_type(_rows(array, axis, edge_index, edge_index + 1), compute)
        steps = lax.broadcasted_iota(compute, _with(shape, axis, width), axis)
        fraction = lax.div(steps, float(width)) if ascending else lax.div(lax.sub(float(width), lax.add(steps, 1.0)),
                                                                          float(width))
        start = lax.full(_with(shape, axis, width), end, compute)
        ramp = lax.add(start, lax.mul(lax.sub(broadcast_to_shape(edge, _with(shape, axis, width), "pad"), start),
                                      fraction))
        if compute != kind:
            ramp = lax.convert_element_type(lax.floor(ramp) if kind != "bool" else ramp, kind)
        pieces.append(ramp)
    return _join([piece for piece in (pieces[0], array, pieces[1]) if piece is not None], axis)


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy's ``pad`` for modes constant (``constant_values``), empty, edge, wrap, reflect and
    symmetric (``reflect_type``), linear_ramp (``end_values``), maximum, minimum and mean
    (``stat_length``)."""
    operand = array_operand(array, "pad")
    rank = len(shape_of(operand))
    if callable(mode) or mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"}}.get(mode, set())
    unexpected = set(kwargs) - allowed
    if unexpected:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: {sorted(unexpected)}")
    widths = _widths(pad_width, rank)
    kind = dtype_of(operand).name
    result = operand
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        if mode in ("constant", "empty"):
            values = _pairs(kwargs.get("constant_values", 0), rank, "constant_values")[axis]
            sides = [((before, after), values[0])] if _same_constant(*values) else \
                [((before, 0), values[0]), ((0, after), values[1])]
            for (low, high), value in sides:
                config = [(0, 0, 0)] * rank
                config[axis] = (low, high, 0)
                result = lax.pad(result, convert_operand(as_array_argument(value, "pad"), kind), config)
        elif mode in ("edge", "wrap", "reflect", "symmetric"):
            reflect_type = kwargs.get("reflect_type", "even")
            if reflect_type not in ("even", "odd"):
                raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
            result = _pad_axis_indexed(result, axis, before, after, mode, reflect_type)
        elif mode == "linear_ramp":
            result = _pad_axis_ramp(result, axis, before, after,
                                    _pairs(kwargs.get("end_values", 0), rank, "end_values")[axis])
        else:
            result = _pad_axis_stat(result, axis, before, after, mode,
                                    _pairs(kwargs.get("stat_length", None), rank, "stat_length")[axis])
    return result


def _same_constant(first, second) -> bool:
    """Whether both sides of an axis pad with one known constant (then one pad op, as JAX's)."""
    if first is second:
        return True
    numbers = (int, float, complex, bool, np.number, np.bool_)
    return isinstance(first, numbers) and isinstance(second, numbers) and first == second


def roll(a, shift, axis=None):
    """``a`` shifted by ``shift`` along ``axis`` (None: of the flattened array), wrapping
    around: static shifts are two slices concatenated, traced ones a dynamic slice of the axis
    repeated twice."""
    operand = array_operand(a, "roll")
    shape = shape_of(operand)
    if axis is None:
        flat = lax.reshape(operand, (math.prod(shape),))
        return lax.reshape(roll(flat, shift, 0), shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = tuple(shifts) * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have one length")
    result = operand
    for amount, ax in zip(shifts, axes):
        result = _roll_axis(result, amount, normalize_axis(ax, len(shape), "roll"))
    return result


def _roll_axis(operand, shift, axis: int):
    size = shape_of(operand)[axis]
    if size == 0:
        return operand
    if isinstance(shift, Tracer) or (hasattr(shift, "shape") and not isinstance(shift, np.ndarray)):
        start = remainder(lax.neg(lax.convert_element_type(shift, "i32")), size)
        doubled = lax.concatenate([operand, operand], axis)
        starts = [start if dim == axis else 0 for dim in range(len(shape_of(operand)))]
        return lax.dynamic_slice(doubled, starts, shape_of(operand))
    shift = operator.index(np.asarray(shift).item()) % size
    if shift == 0:
        return operand
    return lax.concatenate([_rows(operand, axis, size - shift, size), _rows(operand, axis, 0, size - shift)], axis)


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th differences along ``axis`` (``!=`` for bools), after joining ``prepend`` and
    ``append`` (scalars are broadcast to one row)."""
    operand = array_operand(a, "diff")
    shape = shape_of(operand)
    if not shape:
        raise ValueError("diff: a must be at least one-dimensional")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    dim = normalize_axis(axis, len(shape), "diff")
    pieces = [_edge_values(extra, operand, dim) for extra in (prepend,) if extra is not None]
    pieces += [operand] + [_edge_values(extra, operand, dim) for extra in (append,) if extra is not None]
    if len(pieces) > 1:
        operand = concatenate(pieces, dim)
    for _ in range(n):
        size = shape_of(operand)[dim]
        later, earlier = _rows(operand, dim, 1, size), _rows(operand, dim, 0, max(size - 1, 0))
        operand = not_equal(later, earlier) if dtype_of(operand).name == "bool" else subtract(later, earlier)
    return operand


def _edge_values(extra, operand, dim: int):
    """``prepend``/``append`` of diff: a scalar becomes one row of the operand's shape."""
    value = as_array_argument(extra, "diff")
    if shape_of(value):
        return value
    return broadcast_to_shape(convert_operand(value, dtype_of(value).name), _with(shape_of(operand), dim, 1), "diff")
