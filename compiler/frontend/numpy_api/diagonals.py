"""jax.numpy's diagonals and index arrays: ``diagonal``/``trace``/``diag``/``diagflat``,
``fill_diagonal`` (a new array, as JAX's arrays are immutable), the triangle and diagonal index
helpers, ``indices``, ``ix_``, ``unravel_index`` and ``ravel_multi_index``.

A diagonal is a gather with static indices, so a sharded batch axis stays sharded."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..operands import shape_of
from ..trace import Tracer
from .arguments import as_array_argument, normalize_axis

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "diag",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diagonal",
    "fill_diagonal",
    "indices",
    "ix_",
    "ravel_multi_index",
    "trace",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
)


def _integer(value, function: str, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{function}: {name} must be a static integer, got {value!r}") from None


def _diagonal_positions(rows: int, columns: int, offset: int):
    """The (row, column) numpy index arrays of a ``rows x columns`` matrix's diagonal."""
    start_row, start_column = max(-offset, 0), max(offset, 0)
    length = max(0, min(rows - start_row, columns - start_column))
    steps = np.arange(length)
    return steps + start_row, steps + start_column


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset`` diagonal of the matrices spanned by ``axis1`` and ``axis2``, as the last axis."""
    a = as_array_argument(a, "diagonal")
    offset = _integer(offset, "diagonal", "offset")
    rank = len(shape_of(a))
    if rank < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {shape_of(a)}")
    axis1, axis2 = normalize_axis(axis1, rank, "diagonal"), normalize_axis(axis2, rank, "diagonal")
    if axis1 == axis2:
        raise ValueError("diagonal: axis1 and axis2 must be different")
    moved = jnp.moveaxis(a, (axis1, axis2), (-2, -1))
    rows, columns = _diagonal_positions(*shape_of(moved)[-2:], offset)
    return moved[..., rows, columns]


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """The sum along a diagonal."""
    if out is not None:
        raise ValueError("trace: the 'out' argument is not supported (JAX arrays are immutable)")
    return jnp.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v, k: int = 0):
    """A 1-d ``v``'s square matrix with ``v`` on diagonal ``k``, or a 2-d ``v``'s diagonal ``k``."""
    v = jnp.asarray(as_array_argument(v, "diag"))
    k = _integer(k, "diag", "k")
    shape = shape_of(v)
    if len(shape) == 2:
        return diagonal(v, k)
    if len(shape) != 1:
        raise ValueError("diag input must be 1d or 2d")
    size = shape[0] + abs(k)
    rows, columns = _diagonal_positions(size, size, k)
    return jnp.zeros((size, size), dtype=v.dtype).at[rows, columns].set(v)


def diagflat(v, k: int = 0):
    """``diag`` of the flattened input."""
    return diag(jnp.ravel(as_array_argument(v, "diagflat")), k)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated cyclically); JAX arrays are
    immutable, so ``inplace=False`` is required, as in JAX."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    a = jnp.asarray(as_array_argument(a, "fill_diagonal"))
    shape = shape_of(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    if len(shape) == 2:
        length = min(shape[0], shape[1]) if not wrap else len(range(0, shape[0] * shape[1], shape[1] + 1))
        flat = np.arange(length) * (shape[1] + 1)
        positions = np.unravel_index(flat, shape)
    else:
        positions = (np.arange(shape[0]),) * len(shape)
        length = shape[0]
    values = jnp.ravel(jnp.asarray(val, dtype=a.dtype))
    values = jnp.tile(values, -(-length // max(values.shape[0], 1)))[:length]
    return a.at[positions].set(values)


def _index_pair(rows, columns):
    return jnp.asarray(rows, dtype=jnp.int32), jnp.asarray(columns, dtype=jnp.int32)


def _triangle_indices(function: str, n, k, m, numpy_function):
    n = _integer(n, function, "n")
    k = _integer(k, function, "k")
    m = n if m is None else _integer(m, function, "m")
    return _index_pair(*numpy_function(n, k, m))


def tril_indices(n: int, k: int = 0, m: int | None = None):
    """The row and column indices of an ``n x m`` matrix's lower triangle (below diagonal ``k``)."""
    return _triangle_indices("tril_indices", n, k, m, np.tril_indices)


def triu_indices(n: int, k: int = 0, m: int | None = None):
    """The row and column indices of an ``n x m`` matrix's upper triangle (above diagonal ``k``)."""
    return _triangle_indices("triu_indices", n, k, m, np.triu_indices)


def _matrix_shape(arr, function: str) -> tuple[int, int]:
    shape = np.shape(arr) if not isinstance(arr, Tracer) else shape_of(arr)
    if len(shape) != 2:
        raise ValueError(f"{function}: input array must be 2-d, got shape {tuple(shape)}")
    return shape


def tril_indices_from(arr, k: int = 0):
    """``tril_indices`` for the shape of the 2-d ``arr``."""
    rows, columns = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(rows, k, columns)


def triu_indices_from(arr, k: int = 0):
    """``triu_indices`` for the shape of the 2-d ``arr``."""
    rows, columns = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(rows, k, columns)


def diag_indices(n: int, ndim: int = 2):
    """``ndim`` copies of ``arange(n)``: the main diagonal of an ``n x ... x n`` array."""
    n, ndim = _integer(n, "diag_indices", "n"), _integer(ndim, "diag_indices", "ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (jnp.arange(n, dtype=jnp.int32),) * ndim


def diag_indices_from(arr):
    """``diag_indices`` for the array ``arr``, whose dimensions must all be equal."""
    shape = np.shape(arr) if not isinstance(arr, Tracer) else shape_of(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def indices(dimensions, dtype=None, sparse: bool = False):
    """The grid of each axis's index over an array of shape ``dimensions`` (stacked, or one
    broadcastable array per axis when ``sparse``)."""
    dimensions = tuple(_integer(size, "indices", "dimensions") for size in dimensions)
    dtype = jnp.int32 if dtype is None else dtype
    grids = []
    for axis, size in enumerate(dimensions):
        shape = tuple(size if other == axis else 1 for other in range(len(dimensions)))
        grid = jnp.reshape(jnp.arange(size, dtype=dtype), shape)
        grids.append(grid if sparse else jnp.broadcast_to(grid, dimensions))
    if sparse:
        return tuple(grids)
    return jnp.stack(grids) if grids else jnp.zeros((0,), dtype=dtype)


def ix_(*args):
    """Open-mesh index arrays: the i-th 1-d argument reshaped to lie along axis i."""
    results = []
    for position, value in enumerate(args):
        value = jnp.asarray(value)
        if value.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {value.shape}")
        if value.dtype == np.bool_:
            raise TypeError("Boolean arguments to jax.numpy.ix_ are not supported")
        shape = [1] * len(args)
        shape[position] = value.shape[0]
        results.append(jnp.reshape(value, tuple(shape)))
    return tuple(results)


def _dims(shape, function: str) -> tuple[int, ...]:
    shape = (shape,) if np.ndim(shape) == 0 else shape
    return tuple(_integer(size, function, "shape") for size in shape)


def unravel_index(indices, shape):
    """The coordinates, one array per axis, of flat ``indices`` into an array of ``shape``
    (negative indices count from the end; out-of-range ones are clipped, as in JAX)."""
    dims = _dims(shape, "unravel_index")
    indices = jnp.asarray(as_array_argument(indices, "unravel_index"))
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"unravel_index: indices must be integers, got {indices.dtype}")
    total = int(np.prod(dims))
    flat = jnp.clip(jnp.where(jnp.less(indices, 0), indices + total, indices), 0, max(total - 1, 0))
    coordinates = []
    for size in reversed(dims):
        coordinates.append(jnp.remainder(flat, size) if size else flat * 0)
        flat = jnp.floor_divide(flat, size) if size else flat
    return tuple(reversed(coordinates))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """The flat indices of coordinate arrays ``multi_index`` into an array of shape ``dims``
    (``mode`` "wrap" or "clip"; "raise" needs concrete indices)."""
    dims = _dims(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for {len(dims)} dimensions")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    coordinates = [jnp.asarray(as_array_argument(index, "ravel_multi_index")) for index in multi_index]
    for coordinate in coordinates:
        if not np.issubdtype(coordinate.dtype, np.integer):
            raise TypeError(f"only int indices permitted, got {coordinate.dtype}")
    if mode == "raise":
        if any(isinstance(coordinate, Tracer) for coordinate in coordinates):
            raise ValueError("The error occurred because ravel_multi_index was jit-compiled with "
                             "mode='raise'. Use mode='wrap' or mode='clip' instead.")
        if any(bool(jnp.any((c < 0) | (c >= size))) for c, size in zip(coordinates, dims)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        coordinates = [jnp.remainder(c, size) for c, size in zip(coordinates, dims)]
    else:
        coordinates = [jnp.clip(c, 0, size - 1) for c, size in zip(coordinates, dims)]
    axes = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    result = None
    for axis in axes:
        result = coordinates[axis] if result is None else result * dims[axis] + coordinates[axis]
    return result
