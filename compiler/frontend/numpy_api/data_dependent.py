"""Functions whose result shape depends on the values: ``nonzero`` and the standard's
``unique_all unique_counts unique_inverse unique_values``.

On concrete arrays they compute eagerly. Under tracing ``nonzero`` needs ``size`` (the result is
then the first ``size`` positions, padded with ``fill_value``), as in jax.jit; the unique
functions need concrete arrays.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import default_int
from ..trace import ConcretizationTypeError, Tracer
from .arguments import as_array_argument, convert_operand
from .creation import asarray
from .reductions import argsort

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "flatnonzero",
    "nonzero",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
)


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _concrete(value, function: str, hint: str) -> np.ndarray:
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(
            f"{function}: the result's shape depends on the values of a traced array of type "
            f"{value.value.type}; {hint}"
        )
    return np.asarray(value)


def _index_array(values: np.ndarray):
    return asarray(np.asarray(values).astype(to_numpy(default_int(x64()))))


def nonzero(a, *, size: int | None = None, fill_value=None):
    """The indices of ``a``'s nonzero elements, one array per dim (numpy's order); with
    ``size``, exactly ``size`` of them, padded with ``fill_value`` (default 0)."""
    value = as_array_argument(a, "nonzero")
    if not shape_of(value):
        raise ValueError("nonzero: calling nonzero on 0-d arrays is not allowed; use atleast_1d first")
    if size is None:
        mask = _concrete(value, "nonzero", "pass size= to get a fixed number of indices")
        return tuple(_index_array(positions) for positions in np.nonzero(mask))
    return _first_nonzero(value, int(size), fill_value)


def _first_nonzero(value, size: int, fill_value):
    """The first ``size`` nonzero positions of any (traced) array: a stable sort that puts the
    nonzero elements first, their flat indices split into one coordinate per dim."""
    shape = shape_of(value)
    count = math.prod(shape)
    index = default_int(x64())
    flat = lax.reshape(lax.ne(convert_operand(value, dtype_of(value).name), lax.full(shape, 0, dtype_of(value).name)),
                       (count,))
    order = argsort(lax.convert_element_type(lax.bitwise_not(flat), index), stable=True)
    positions = lax.iota(index, size)
    first = lax.gather_along_axis(order, lax.min(positions, max(count - 1, 0)), 0, mode="clip") if count else positions
    total = lax.reduce_sum(lax.convert_element_type(flat, index), (0,))
    found = lax.lt(positions, lax.broadcast_in_dim(total, (size,), ()))
    fills = fill_value if isinstance(fill_value, tuple) else (0 if fill_value is None else fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of {len(shape)} scalars, got {fill_value!r}")
    coordinates, stride = [], count
    for size_of_dim, fill in zip(shape, fills):
        stride //= max(size_of_dim, 1)
        coordinate = lax.rem(lax.div(first, max(stride, 1)), max(size_of_dim, 1))
        coordinates.append(lax.select(found, coordinate, lax.full((size,), fill, index)))
    return tuple(coordinates)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero elements of the flattened ``a``."""
    value = as_array_argument(a, "flatnonzero")
    return nonzero(lax.reshape(value, (math.prod(shape_of(value)),)) if shape_of(value) else
                   lax.reshape(value, (1,)), size=size, fill_value=fill_value)[0]


_UNIQUE_HINT = "unique functions need a concrete array (call them outside jit)"


def _unique_operand(x, function: str) -> np.ndarray:
    return _concrete(as_array_argument(x, function), function, _UNIQUE_HINT)


def _unique(x, function: str, **returns):
    """numpy's sorted unique of a concrete ``x``, each NaN distinct as the standard says."""
    return np.unique(_unique_operand(x, function), equal_nan=False, **returns)


def unique_values(x, /):
    """The distinct values of ``x``, sorted."""
    return asarray(_unique(x, "unique_values"))


def unique_counts(x, /):
    """The distinct values of ``x`` and how often each occurs."""
    values, counts = _unique(x, "unique_counts", return_counts=True)
    return UniqueCountsResult(asarray(values), _index_array(counts))


def unique_inverse(x, /):
    """The distinct values of ``x`` and, for each element of ``x``, its value's position
    (an array of ``x``'s shape)."""
    values, inverse = _unique(x, "unique_inverse", return_inverse=True)
    return UniqueInverseResult(asarray(values), _index_array(inverse.reshape(shape_of(x))))


def unique_all(x, /):
    """The distinct values, the index of each one's first occurrence, the inverse indices and
    the counts."""
    values, indices, inverse, counts = _unique(x, "unique_all", return_index=True, return_inverse=True,
                                               return_counts=True)
    return UniqueAllResult(asarray(values), _index_array(indices),
                           _index_array(inverse.reshape(shape_of(x))), _index_array(counts))
