"""jax.numpy's set functions (``unique``, ``isin``, ``union1d``, ``intersect1d``,
``setdiff1d``, ``setxor1d``) and the order helpers ``argwhere``, ``partition``,
``argpartition`` and ``lexsort``.

A set result's length depends on the values: on concrete arrays it is computed; under tracing,
``size=`` fixes it (padded with ``fill_value``, by default the smallest element), as in JAX.
The 1-d set operations sort once (a sharded input is gathered by the sort) and pick the first
element of each run of equal values."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..trace import ConcretizationTypeError, Tracer
from .arguments import as_array_argument, is_inexact_dtype, normalize_axis

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "argpartition",
    "argwhere",
    "intersect1d",
    "isin",
    "lexsort",
    "partition",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique",
)


def _array(value, function: str):
    return jnp.asarray(as_array_argument(value, function))


def _run_starts(ordered, equal_nan: bool):
    """True at the first element of each run of equal values of a sorted 1-d array."""
    if not ordered.shape[0]:
        return jnp.zeros((0,), dtype=bool)
    different = ordered[1:] != ordered[:-1]
    if equal_nan and is_inexact_dtype(ordered.dtype):
        different = different & ~(jnp.isnan(ordered[1:]) & jnp.isnan(ordered[:-1]))
    return jnp.concatenate([jnp.ones((1,), dtype=bool), different])


def _result_size(picked, size, function: str) -> int:
    if size is not None:
        return operator.index(size)
    if isinstance(picked, Tracer):
        raise ConcretizationTypeError(
            f"{function}: the result's size depends on the values of a traced array; pass a static "
            f"size= argument (and optionally fill_value=) under jit")
    return int(np.sum(np.asarray(picked)))


def _pick(ordered, picked, size: int, fill_value):
    """The first ``size`` picked elements of ``ordered``, padded with ``fill_value`` (the
    smallest picked element by default), and their positions in ``ordered``."""
    positions = jnp.nonzero(picked, size=size, fill_value=0)[0] if ordered.shape[0] else jnp.zeros(size, jnp.int32)
    found = jnp.arange(size) < jnp.sum(picked)
    values = ordered[positions] if ordered.shape[0] else jnp.zeros(size, ordered.dtype)
    fill = values[0] if fill_value is None and size else fill_value
    return jnp.where(found, values, jnp.asarray(0 if fill is None else fill, dtype=ordered.dtype)), positions, found


def _unique_flat(flat, return_index, return_inverse, return_counts, equal_nan, size, fill_value):
    if jnp.iscomplexobj(flat):
        # a complex number with a NaN part is NaN + 0i, sorted last (JAX's canonical complex NaN)
        flat = jnp.where(jnp.isnan(flat), jnp.asarray(complex(np.nan, 0), flat.dtype), flat)
    order = jnp.argsort(flat, stable=True)
    ordered = flat[order]
    starts = _run_starts(ordered, equal_nan)
    count = _result_size(starts, size, "unique")
    values, positions, found = _pick(ordered, starts, count, fill_value)
    results = [values]
    if return_index:
        results.append(order[positions] if flat.shape[0] else positions)
    run = jnp.cumsum(starts) - 1
    if return_inverse:
        results.append(jnp.zeros(flat.shape, run.dtype).at[order].set(run))
    if return_counts:
        results.append(jnp.zeros(count, run.dtype).at[run].add(1, mode="drop"))
    return results


def _unique_along(ar, axis, return_index, return_inverse, return_counts, size):
    """``unique`` of the slices along ``axis`` (concrete only: numpy finds them, then the
    slices are taken from ``ar``)."""
    if isinstance(ar, Tracer):
        raise ConcretizationTypeError("unique: with axis= the input must be concrete (call it outside jit)")
    axis = normalize_axis(axis, ar.ndim, "unique")
    _, index, inverse, counts = np.unique(np.asarray(ar), return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    results = [jnp.take(ar, index, axis=axis)]
    if return_index:
        results.append(jnp.asarray(index, dtype=jnp.int32))
    if return_inverse:
        results.append(jnp.asarray(inverse.ravel(), dtype=jnp.int32))
    if return_counts:
        results.append(jnp.asarray(counts, dtype=jnp.int32))
    return results


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis=None, *, equal_nan: bool = True, size=None, fill_value=None, sorted: bool = True):  # noqa: A002
    """The sorted distinct elements of ``ar`` (flattened unless ``axis``), optionally with each
    one's first index, the inverse map and the counts; ``size=`` fixes the length under jit."""
    ar = _array(ar, "unique")
    if axis is None:
        flat = jnp.ravel(ar)
        results = _unique_flat(flat, return_index, return_inverse, return_counts, equal_nan, size, fill_value)
        if return_inverse:
            position = 1 + return_index
            results[position] = jnp.reshape(results[position], ar.shape)
    else:
        results = _unique_along(ar, axis, return_index, return_inverse, return_counts, size)
    return results[0] if len(results) == 1 else tuple(results)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, method: str = "auto"):
    """True where an element of ``element`` occurs in ``test_elements`` (compared with every one)."""
    element, test = _array(element, "isin"), jnp.ravel(_array(test_elements, "isin"))
    found = jnp.any(jnp.equal(element[..., None], test), axis=-1) if test.shape[0] else jnp.zeros(element.shape, bool)
    return jnp.logical_not(found) if invert else found


def _set_result(values, keep, size, fill_value, function: str):
    """The sorted distinct ``values`` where ``keep`` (a function of the value) holds."""
    ordered = jnp.sort(values)
    picked = _run_starts(ordered, True) & keep(ordered)
    count = _result_size(picked, size, function)
    return _pick(ordered, picked, count, fill_value)[0]


def _pair(ar1, ar2, function: str):
    ar1, ar2 = jnp.ravel(_array(ar1, function)), jnp.ravel(_array(ar2, function))
    dtype = jnp.result_type(ar1.dtype, ar2.dtype)
    return ar1.astype(dtype), ar2.astype(dtype)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct elements of either array."""
    ar1, ar2 = _pair(ar1, ar2, "union1d")
    values = jnp.concatenate([ar1, ar2])
    return _set_result(values, lambda ordered: jnp.ones(ordered.shape, bool), size, fill_value, "union1d")


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted distinct elements of ``ar1`` that are not in ``ar2``."""
    ar1, ar2 = _pair(ar1, ar2, "setdiff1d")
    fill_value = 0 if fill_value is None else fill_value
    return _set_result(ar1, lambda ordered: isin(ordered, ar2, invert=True), size, fill_value, "setdiff1d")


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted distinct elements in exactly one of the arrays."""
    ar1, ar2 = _pair(ar1, ar2, "setxor1d")
    values = jnp.concatenate([ar1, ar2])
    return _set_result(values, lambda ordered: isin(ordered, ar1) ^ isin(ordered, ar2), size, fill_value,
                       "setxor1d")


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *, size=None,
                fill_value=None):
    """The sorted distinct elements in both arrays (and, with ``return_indices``, the index of
    each one's first occurrence in either array)."""
    ar1, ar2 = _pair(ar1, ar2, "intersect1d")
    values = _set_result(ar1, lambda ordered: isin(ordered, ar2), size, fill_value, "intersect1d")
    if not return_indices:
        return values
    first1 = jnp.argmax(jnp.equal(values[:, None], ar1[None, :]), axis=1)
    first2 = jnp.argmax(jnp.equal(values[:, None], ar2[None, :]), axis=1)
    return values, first1, first2


def argwhere(a, *, size=None, fill_value=None):
    """The coordinates of the nonzero elements, one row each."""
    a = _array(a, "argwhere")
    if a.ndim == 0:
        a = jnp.reshape(a, (1,))
        return jnp.stack(jnp.nonzero(a, size=size, fill_value=fill_value), axis=1)[:, :0]
    return jnp.stack(jnp.nonzero(a, size=size, fill_value=fill_value), axis=1)


def _kth(kth, size: int, function: str) -> int:
    kth = operator.index(kth)
    if not -size <= kth < size:
        raise ValueError(f"{function}: kth={kth} out of bounds for an axis of size {size}")
    return kth + size if kth < 0 else kth


def partition(a, kth: int, axis: int = -1):
    """``a`` rearranged along ``axis`` so that element ``kth`` is in its sorted place, the smaller
    ones before it in ascending order and the larger after it in descending order (as JAX)."""
    a = _array(a, "partition")
    axis = normalize_axis(axis, a.ndim, "partition")
    moved = jnp.moveaxis(a, axis, -1)
    kth = _kth(kth, moved.shape[-1], "partition")
    ascending = jnp.sort(moved, axis=-1)
    descending = jnp.sort(moved, axis=-1, descending=True)
    result = jnp.concatenate([ascending[..., : kth + 1], descending[..., : moved.shape[-1] - kth - 1]], axis=-1)
    return jnp.moveaxis(result, -1, axis)


def argpartition(a, kth: int, axis: int = -1):
    """The indices that ``partition`` would take along ``axis``."""
    a = _array(a, "argpartition")
    axis = normalize_axis(axis, a.ndim, "argpartition")
    moved = jnp.moveaxis(a, axis, -1)
    kth = _kth(kth, moved.shape[-1], "argpartition")
    ascending = jnp.argsort(moved, axis=-1, stable=True)
    # the kth + 1 smallest in order, then the other indices in increasing index order (as JAX)
    rank = jnp.argsort(ascending, axis=-1, stable=True)
    rest = jnp.argsort((rank <= kth).astype(jnp.int32), axis=-1, stable=True)
    result = jnp.concatenate([ascending[..., : kth + 1], rest[..., : moved.shape[-1] - kth - 1]], axis=-1)
    return jnp.moveaxis(result, -1, axis)


def lexsort(keys, axis: int = -1):
    """The indices that sort by the last key, then the one before it, ... (stable)."""
    keys = [_array(key, "lexsort") for key in (keys if isinstance(keys, (tuple, list)) else list(keys))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({key.shape for key in keys}) != 1:
        raise ValueError("all keys need to be the same shape")
    axis = normalize_axis(axis, keys[0].ndim, "lexsort")
    order = jnp.broadcast_to(jnp.reshape(jnp.arange(keys[0].shape[axis]),
                                         tuple(-1 if dim == axis else 1 for dim in range(keys[0].ndim))),
                             keys[0].shape)
    for key in keys:
        step = jnp.argsort(jnp.take_along_axis(key, order, axis=axis), axis=axis, stable=True)
        order = jnp.take_along_axis(order, step, axis=axis)
    return order
