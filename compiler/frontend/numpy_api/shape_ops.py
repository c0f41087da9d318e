"""jax.numpy's shape and layout functions: reshape, transposes, adding and removing unit dims,
broadcasting, joining and splitting, flipping and repeating. Each checks its axes and shapes
and names the function, the argument and the shapes in its errors.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import lax_ops as lax
from .. import sharding_ops
from ..operands import shape_of
from .arguments import (
    array_operand,
    as_array_argument,
    broadcast_shapes,
    broadcast_to_shape,
    convert_operand,
    dtype_argument,
    normalize_axes,
    normalize_axis,
    result_dtype,
    with_weak_type,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "broadcast_arrays",
    "broadcast_to",
    "concatenate",
    "expand_dims",
    "flip",
    "matrix_transpose",
    "moveaxis",
    "ndim",
    "ravel",
    "repeat",
    "reshape",
    "shape",
    "size",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "transpose",
)


def _shape_argument(shape, function: str) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints."""
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(size) for size in shape)
    except TypeError:
        raise TypeError(
            f"{function}: shape must be an int or a sequence of ints, got {shape!r}"
        ) from None


def _resolve_shape(new_shape, old_shape, function: str) -> tuple[int, ...]:
    """``new_shape`` with its one -1 inferred; a TypeError (JAX's type) if the sizes do not match."""
    size = math.prod(old_shape)
    known = math.prod(extent for extent in new_shape if extent != -1)
    unknown = new_shape.count(-1)
    valid = unknown <= 1 and all(extent >= -1 for extent in new_shape)
    if valid and unknown:
        valid = known != 0 and size % known == 0
        new_shape = (
            tuple(size // known if extent == -1 else extent for extent in new_shape)
            if valid
            else new_shape
        )
    if not valid or math.prod(new_shape) != size:
        raise TypeError(
            f"{function}: cannot reshape an array of shape {tuple(old_shape)} (size {size}) "
            f"into shape {tuple(new_shape)}"
        )
    return tuple(new_shape)


def reshape(a, shape, order: str = "C", *, copy=None, out_sharding=None):
    """``a`` with a new shape of the same size (one -1 is inferred); order 'C' or 'F';
    ``out_sharding`` gives the result's sharding where explicit mode cannot infer it."""
    operand = array_operand(a, "reshape")
    new_shape = _resolve_shape(_shape_argument(shape, "reshape"), shape_of(operand), "reshape")
    if order in ("C", "A"):
        return lax.reshape(operand, new_shape, out_sharding=out_sharding)
    if out_sharding is not None:
        raise ValueError("reshape: out_sharding is supported with order='C' only")
    if order != "F":
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
    # Column-major order is row-major order of the reversed dims.
    reversed_operand = lax.transpose(operand, tuple(reversed(range(len(shape_of(operand))))))
    reshaped = lax.reshape(reversed_operand, tuple(reversed(new_shape)))
    return lax.transpose(reshaped, tuple(reversed(range(len(new_shape)))))


def ravel(a, order: str = "C", *, out_sharding=None):
    """``a`` flattened to one dim."""
    return reshape(a, (-1,), order, out_sharding=out_sharding)


def transpose(a, axes=None):
    """``a`` with its dims permuted (None: reversed)."""
    operand = array_operand(a, "transpose")
    rank = len(shape_of(operand))
    if axes is None:
        return lax.transpose(operand, tuple(reversed(range(rank))))
    permutation = tuple(normalize_axis(axis, rank, "transpose") for axis in axes)
    if sorted(permutation) != list(range(rank)):
        raise TypeError(
            f"transpose: axes {tuple(axes)} are not a permutation of the {rank} dims "
            f"of shape {shape_of(operand)}"
        )
    return lax.transpose(operand, permutation)


def matrix_transpose(a):
    """``a`` with its last two dims swapped (``.mT``)."""
    operand = array_operand(a, "matrix_transpose")
    rank = len(shape_of(operand))
    if rank < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dims, got shape {shape_of(operand)}")
    return lax.transpose(operand, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def swapaxes(a, axis1: int, axis2: int):
    operand = array_operand(a, "swapaxes")
    rank = len(shape_of(operand))
    first, second = (normalize_axis(axis, rank, "swapaxes") for axis in (axis1, axis2))
    permutation = list(range(rank))
    permutation[first], permutation[second] = second, first
    return lax.transpose(operand, tuple(permutation))


def moveaxis(a, source, destination):
    """``a`` with the ``source`` dims moved to positions ``destination``, others in order."""
    operand = array_operand(a, "moveaxis")
    rank = len(shape_of(operand))
    sources = [source] if isinstance(source, (int, np.integer)) else list(source)
    destinations = (
        [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    )
    if len(sources) != len(destinations):
        raise ValueError(
            f"moveaxis: source {source} and destination {destination} must have the "
            f"same number of elements"
        )
    sources = [normalize_axis(axis, rank, "moveaxis") for axis in sources]
    destinations = [normalize_axis(axis, rank, "moveaxis") for axis in destinations]
    if len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations):
        raise ValueError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    rest = iter(dim for dim in range(rank) if dim not in sources)
    placed = dict(zip(destinations, sources))
    return lax.transpose(
        operand, tuple(placed[dim] if dim in placed else next(rest) for dim in range(rank))
    )


def expand_dims(a, axis):
    """``a`` with size-1 dims inserted at ``axis`` (positions in the result)."""
    operand = array_operand(a, "expand_dims")
    rank = len(shape_of(operand)) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return lax.expand_dims(operand, normalize_axes(axis, rank, "expand_dims"))


def squeeze(a, axis=None):
    """``a`` without its size-1 dims (None: all of them)."""
    operand = array_operand(a, "squeeze")
    shape = shape_of(operand)
    if axis is None:
        dims = tuple(dim for dim, size in enumerate(shape) if size == 1)
    else:
        dims = normalize_axes(axis, len(shape), "squeeze")
    for dim in dims:
        if shape[dim] != 1:
            raise ValueError(
                f"squeeze: cannot select axis {dim} of shape {shape}: "
                f"its size is {shape[dim]}, not 1"
            )
    return lax.squeeze(operand, dims) if dims else operand


def broadcast_to(array, shape, *, out_sharding=None):
    """``array`` broadcast to ``shape`` by numpy's rule."""
    operand = array_operand(array, "broadcast_to")
    result = broadcast_to_shape(operand, _shape_argument(shape, "broadcast_to"), "broadcast_to")
    return sharding_ops.apply_out_sharding(result, out_sharding, "broadcast_to")


def broadcast_arrays(*args):
    """Every argument broadcast to their common shape (dtypes unchanged)."""
    operands = [array_operand(arg, "broadcast_arrays") for arg in args]
    shape = broadcast_shapes("broadcast_arrays", *(shape_of(operand) for operand in operands))
    return [broadcast_to_shape(operand, shape, "broadcast_arrays") for operand in operands]


def _joined_operands(arrays, function: str, dtype):
    """The arrays of a concatenate/stack, promoted together (or to ``dtype``)."""
    if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__iter__"):
        raise TypeError(f"{function}: expected a sequence of arrays, got {type(arrays).__name__}")
    values = [as_array_argument(array, function) for array in arrays]
    if not values:
        raise ValueError(f"{function}: need at least one array, got an empty sequence")
    promoted = result_dtype(*values)
    name = dtype_argument(dtype, function) if dtype is not None else promoted.name
    weak = promoted.weak and dtype is None
    return [convert_operand(value, name) for value in values], weak


def concatenate(arrays, axis=0, dtype=None):
    """The arrays joined along an existing ``axis`` (None: flattened first)."""
    operands, weak = _joined_operands(arrays, "concatenate", dtype)
    if axis is None:
        operands = [lax.reshape(operand, (math.prod(shape_of(operand)),)) for operand in operands]
        axis = 0
    shapes = [shape_of(operand) for operand in operands]
    if len(shapes[0]) == 0:
        # NOTE: as JAX, a 0-d array later in the list is a rank mismatch (TypeError) below
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    dim = normalize_axis(axis, len(shapes[0]), "concatenate")
    for shape in shapes:
        if (
            len(shape) != len(shapes[0])
            or shape[:dim] + shape[dim + 1 :] != shapes[0][:dim] + shapes[0][dim + 1 :]
        ):
            raise TypeError(
                f"concatenate: shapes {', '.join(map(str, shapes))} "
                f"do not match outside axis {axis}"
            )
    return with_weak_type(
        operands[0] if len(operands) == 1 else lax.concatenate(operands, dim), weak
    )


def stack(arrays, axis=0, dtype=None):
    """The arrays (all of one shape) joined along a new ``axis``."""
    operands, weak = _joined_operands(arrays, "stack", dtype)
    shapes = [shape_of(operand) for operand in operands]
    if any(shape != shapes[0] for shape in shapes):
        raise ValueError(
            f"stack: all arrays must have the same shape, got {', '.join(map(str, shapes))}"
        )
    dim = normalize_axis(axis, len(shapes[0]) + 1, "stack")
    expanded = [lax.expand_dims(operand, (dim,)) for operand in operands]
    return with_weak_type(
        expanded[0] if len(expanded) == 1 else lax.concatenate(expanded, dim), weak
    )


def _split_points(indices_or_sections, size: int, axis: int) -> list[int]:
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or size % sections:
            raise ValueError(
                f"split: array split does not result in an equal division: axis {axis} "
                f"of size {size} into {sections} sections"
            )
        return [size // sections * part for part in range(1, sections)]
    # numpy clips split indices into [0, size] and lets them decrease (empty pieces).
    return [
        min(max(int(index) + (size if index < 0 else 0), 0), size) for index in indices_or_sections
    ]


def split(ary, indices_or_sections, axis: int = 0):
    """``ary`` cut along ``axis`` into equal sections (an int) or at the given indices."""
    operand = array_operand(ary, "split")
    shape = shape_of(operand)
    dim = normalize_axis(axis, len(shape), "split")
    points = _split_points(indices_or_sections, shape[dim], axis)
    pieces = []
    for start, stop in zip([0] + points, points + [shape[dim]]):
        stop = max(start, stop)
        starts = [0] * len(shape)
        limits = list(shape)
        starts[dim], limits[dim] = start, stop
        pieces.append(lax.slice(operand, starts, limits))
    return pieces


def flip(m, axis=None):
    """``m`` reversed along ``axis`` (None: every axis)."""
    operand = array_operand(m, "flip")
    dims = normalize_axes(axis, len(shape_of(operand)), "flip")
    return lax.rev(operand, dims) if dims else operand


def repeat(a, repeats: int, axis=None, *, total_repeat_length=None, out_sharding=None):
    """Each element repeated ``repeats`` times along ``axis`` (None: of the flattened array);
    an array of ``repeats`` gives each element its own count."""
    if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, bool):
        from .repeat_counts import repeat_by_counts

        return repeat_by_counts(a, repeats, axis, total_repeat_length, out_sharding)
    if repeats < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats!r}")
    operand = array_operand(a, "repeat")
    if axis is None:
        operand, axis = ravel(operand), 0
    shape = shape_of(operand)
    dim = normalize_axis(axis, len(shape), "repeat")
    widened = shape[: dim + 1] + (int(repeats),) + shape[dim + 1 :]
    if total_repeat_length is not None and total_repeat_length != shape[dim] * int(repeats):
        raise ValueError(f"repeat: total_repeat_length={total_repeat_length} does not equal {shape[dim]} x "
                         f"{repeats} repeats")
    copies = lax.broadcast_in_dim(
        operand, widened, tuple(d for d in range(len(widened)) if d != dim + 1)
    )
    new_shape = shape[:dim] + (shape[dim] * int(repeats),) + shape[dim + 1:]
    return lax.reshape(copies, new_shape, out_sharding=out_sharding)


def tile(a, reps):
    """``a`` repeated ``reps`` times per dim (numpy's tile)."""
    operand = array_operand(a, "tile")
    reps = _shape_argument(reps, "tile")
    if any(rep < 0 for rep in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    rank = max(len(reps), len(shape_of(operand)))
    reps = (1,) * (rank - len(reps)) + reps
    operand = lax.reshape(operand, (1,) * (rank - len(shape_of(operand))) + shape_of(operand))
    shape = shape_of(operand)
    # Interleave a repeat dim before each dim, broadcast, then merge each pair.
    widened = tuple(size for pair in zip(reps, shape) for size in pair)
    copies = lax.broadcast_in_dim(operand, widened, tuple(range(1, 2 * rank, 2)))
    return lax.reshape(copies, tuple(rep * size for rep, size in zip(reps, shape)))


def shape(a) -> tuple[int, ...]:
    return tuple(shape_of(as_array_argument(a, "shape")))


def ndim(a) -> int:
    return len(shape_of(as_array_argument(a, "ndim")))


def size(a, axis: int | tuple[int, ...] | None = None) -> int:
    """The number of elements of ``a``, or of its dims ``axis`` (an int or a tuple)."""
    shape = shape_of(as_array_argument(a, "size"))
    if axis is None:
        return math.prod(shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return math.prod(shape[normalize_axis(one, len(shape), "size")] for one in axes)
