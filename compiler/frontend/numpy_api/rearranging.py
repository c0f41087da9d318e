"""jax.numpy's functions that pick, rotate or splice array elements: ``rot90``/``fliplr``/
``flipud``/``rollaxis``, ``select``/``piecewise``/``choose``, ``compress``/``extract``/``place``/
``put``, ``insert``/``delete``/``append``/``resize``/``trim_zeros`` and ``block``.

Static positions become slices and gathers of the existing ops; a boolean selection whose result
size depends on values needs concrete input (or ``size=`` where JAX offers it)."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..trace import Tracer
from .arguments import as_array_argument, normalize_axis

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "append",
    "block",
    "choose",
    "compress",
    "delete",
    "extract",
    "fliplr",
    "flipud",
    "insert",
    "piecewise",
    "place",
    "put",
    "resize",
    "rollaxis",
    "rot90",
    "select",
    "trim_zeros",
)


def _array(value, function: str):
    return jnp.asarray(as_array_argument(value, function))


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (first towards second)."""
    m = _array(m, "rot90")
    if np.ndim(axes) != 1 or len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    first, second = (normalize_axis(axis, m.ndim, "rot90") for axis in axes)
    if first == second:
        raise ValueError("Axes must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return jnp.flip(jnp.flip(m, first), second)
    order = list(range(m.ndim))
    order[first], order[second] = order[second], order[first]
    if k == 1:
        return jnp.transpose(jnp.flip(m, second), order)
    return jnp.flip(jnp.transpose(m, order), second)


def fliplr(m):
    """``m`` with its second axis reversed."""
    m = _array(m, "fliplr")
    if m.ndim < 2:
        raise ValueError(f"fliplr requires an array with at least 2 dimensions, got {m.ndim}")
    return jnp.flip(m, 1)


def flipud(m):
    """``m`` with its first axis reversed."""
    m = _array(m, "flipud")
    if m.ndim < 1:
        raise ValueError(f"flipud requires an array with at least 1 dimension, got {m.ndim}")
    return jnp.flip(m, 0)


def rollaxis(a, axis: int, start: int = 0):
    """``a`` with ``axis`` moved to lie before position ``start``."""
    a = _array(a, "rollaxis")
    axis = normalize_axis(axis, a.ndim, "rollaxis")
    start = operator.index(start)
    if not -a.ndim <= start <= a.ndim:
        raise ValueError(f"start={start} must satisfy {-a.ndim}<=start<={a.ndim}")
    start = start + a.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return jnp.moveaxis(a, axis, start)


def select(condlist, choicelist, default=0):
    """Per element, the choice of the first true condition, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(choicelist)}), "
                         f"but got {len(condlist)}")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    conditions = [_array(condition, "select") for condition in condlist]
    for condition in conditions:
        if condition.dtype != np.bool_:
            raise TypeError(f"condlist must be boolean arrays, got {condition.dtype}")
    result = default
    for condition, choice in reversed(list(zip(conditions, choicelist))):
        result = jnp.where(condition, choice, result)
    return jnp.asarray(result)


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` where ``condlist[i]`` holds (later conditions win), with one extra
    function or constant for where none holds; constants stand for constant functions."""
    x = _array(x, "piecewise")
    conditions = [_array(condition, "piecewise") for condition in
                  (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
    if len(funclist) not in (len(conditions), len(conditions) + 1):
        raise ValueError(f"piecewise: funclist length {len(funclist)} must be the number of conditions "
                         f"({len(conditions)}) or one more")
    if len(funclist) == len(conditions) + 1:
        otherwise = _any_of(conditions)
        conditions = conditions + [jnp.logical_not(otherwise)]
        funclist = list(funclist[-1:]) + list(funclist[:-1])
        conditions = conditions[-1:] + conditions[:-1]
    result = jnp.zeros_like(x)
    for condition, function in zip(conditions, funclist):
        value = function(x, *args, **kw) if callable(function) else function
        result = jnp.where(condition, jnp.asarray(value, dtype=x.dtype), result)
    return result


def _any_of(conditions):
    """True where any of the conditions holds."""
    result = conditions[0]
    for condition in conditions[1:]:
        result = jnp.logical_or(result, condition)
    return result


def choose(a, choices, out=None, mode: str = "raise"):
    """``choices[a[i]][i]`` per element, the index array and choices broadcast together; ``mode``
    "wrap" or "clip" bounds the index ("raise" needs concrete indices)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _array(a, "choose")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"choose: index array must be integer typed, got {a.dtype}")
    count = len(choices)
    if mode == "raise":
        if not isinstance(a, Tracer) and bool(jnp.any((a < 0) | (a >= count))):
            raise ValueError("invalid entry in choice array")
        if isinstance(a, Tracer):
            raise ValueError("The error occurred because jnp.choose was jit-compiled with mode='raise'. "
                             "Use mode='wrap' or mode='clip' instead.")
    elif mode == "wrap":
        a = jnp.remainder(a, count)
    elif mode == "clip":
        a = jnp.clip(a, 0, count - 1)
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    arrays = jnp.broadcast_arrays(a, *[_array(choice, "choose") for choice in choices])
    stacked = jnp.stack(arrays[1:])
    return jnp.take_along_axis(stacked, arrays[0][None], axis=0)[0]


def _concrete_mask(condition, function: str) -> np.ndarray:
    if isinstance(condition, Tracer):
        raise TypeError(f"{function}: the result's shape depends on the traced condition; "
                        "pass a concrete condition (or use jnp.where)")
    return np.asarray(condition).astype(bool)


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` (flattened when None) where ``condition`` is true;
    under tracing give ``size`` (the result is padded with ``fill_value``)."""
    a = _array(a, "compress")
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = normalize_axis(axis, a.ndim, "compress")
    condition = _array(condition, "compress")
    if condition.ndim != 1:
        raise ValueError("condition must be a 1D array")
    condition = condition.astype(bool)
    if size is None:
        mask = _concrete_mask(condition, "compress")
        if mask.shape[0] > a.shape[axis] and mask[a.shape[axis]:].any():
            raise ValueError("compress: condition selects beyond the end of the axis")
        positions = np.flatnonzero(mask[: a.shape[axis]])
        return jnp.take(a, positions, axis=axis)
    condition = condition[: a.shape[axis]]
    positions = jnp.nonzero(condition, size=size, fill_value=a.shape[axis])[0]
    moved = jnp.moveaxis(a, axis, 0)
    padded = jnp.concatenate([moved, jnp.full((1,) + moved.shape[1:], fill_value, dtype=a.dtype)])
    return jnp.moveaxis(padded[positions], 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of the flattened ``arr`` where the flattened ``condition`` is true."""
    return compress(jnp.ravel(_array(condition, "extract")), jnp.ravel(_array(arr, "extract")),
                    size=size, fill_value=fill_value)


def place(arr, mask, vals, *, inplace: bool = True):
    """A copy of ``arr`` whose elements where ``mask`` is true take ``vals`` in order (repeated
    as needed); ``inplace=False`` is required, as in JAX."""
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    arr = _array(arr, "place")
    mask = _concrete_mask(_array(mask, "place"), "place").ravel()
    vals = jnp.ravel(_array(vals, "place"))
    positions = np.flatnonzero(mask)
    if positions.size and vals.shape[0] == 0:
        raise ValueError("Cannot place values from an empty array")
    repeated = jnp.take(vals, np.arange(positions.size) % max(vals.shape[0], 1))
    return jnp.ravel(arr).at[positions].set(repeated.astype(arr.dtype)).reshape(arr.shape)


def put(a, ind, v, mode=None, *, inplace: bool = True):
    """A copy of ``a`` whose flat positions ``ind`` take ``v`` (repeated as needed);
    ``inplace=False`` is required, as in JAX."""
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    a = _array(a, "put")
    ind = jnp.ravel(_array(ind, "put"))
    v = jnp.ravel(_array(v, "put"))
    if not ind.shape[0] or not v.shape[0]:
        return a
    values = jnp.take(v, np.arange(ind.shape[0]) % v.shape[0]).astype(a.dtype)
    size = int(np.prod(a.shape))
    if mode in (None, "fill", "drop", "promise_in_bounds"):
        ind = jnp.where(ind < 0, ind + size, ind)
        mode = "drop"
    elif mode == "wrap":
        ind = jnp.remainder(ind, size)
    elif mode == "clip":
        ind = jnp.clip(ind, 0, size - 1)
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return jnp.ravel(a).at[ind].set(values, mode="drop").reshape(a.shape)


def _static_positions(obj, size: int, function: str) -> np.ndarray:
    if isinstance(obj, Tracer):
        raise TypeError(f"jnp.{function}(): index must be static (a Python int, slice or concrete array)")
    if isinstance(obj, slice):
        return np.arange(size)[obj]
    positions = np.asarray(obj)
    if positions.dtype == np.bool_:
        if positions.shape != (size,):
            raise ValueError(f"{function}: boolean mask of shape {positions.shape} for an axis of size {size}")
        return np.flatnonzero(positions)
    if not np.issubdtype(positions.dtype, np.integer):
        raise TypeError(f"jnp.{function}(): index must be an integer, slice or integer array, got {obj!r}")
    return positions


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries at positions ``obj`` along ``axis`` (flattened when None)."""
    arr = _array(arr, "delete")
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim, "delete")
    size = arr.shape[axis]
    positions = _static_positions(obj, size, "delete").ravel()
    if positions.size and ((positions < -size) | (positions >= size)).any():
        raise IndexError(f"index {positions[(positions < -size) | (positions >= size)][0]} is out of "
                         f"bounds for axis {axis} with size {size}")
    keep = np.ones(size, bool)
    keep[positions % size if size else positions] = False
    return jnp.take(arr, np.flatnonzero(keep), axis=axis)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis`` (flattened
    when None), as numpy inserts them."""
    arr = _array(arr, "insert")
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim, "insert")
    size = arr.shape[axis]
    scalar_index = not isinstance(obj, slice) and np.ndim(obj) == 0 and not isinstance(obj, Tracer)
    positions = _static_positions(obj, size + 1, "insert").ravel()
    if ((positions < -size) | (positions > size)).any():
        raise IndexError(f"index out of bounds for axis {axis} with size {size}")
    positions = np.where(positions < 0, positions + size, positions)
    values = jnp.asarray(_array(values, "insert"), dtype=arr.dtype)
    if scalar_index:
        values = jnp.moveaxis(values, 0, axis) if values.ndim == arr.ndim else values
        count = values.shape[axis] if values.ndim == arr.ndim else 1
        positions = np.full(count, positions[0])
        if values.ndim != arr.ndim:
            values = jnp.expand_dims(values, axis) if values.ndim else values
    target = list(arr.shape)
    target[axis] = positions.size
    values = jnp.broadcast_to(values, tuple(target))
    order = np.argsort(positions, kind="stable")
    new_positions = np.empty(positions.size, int)
    new_positions[order] = positions[order] + np.arange(positions.size)
    old_positions = np.delete(np.arange(size + positions.size), new_positions)
    combined = jnp.concatenate([arr, values], axis=axis)
    source = np.empty(size + positions.size, int)
    source[old_positions] = np.arange(size)
    source[new_positions] = size + np.arange(positions.size)
    return jnp.take(combined, source, axis=axis)


def append(arr, values, axis=None):
    """``values`` appended to ``arr`` along ``axis`` (both flattened when None)."""
    arr, values = _array(arr, "append"), _array(values, "append")
    if axis is None:
        return jnp.concatenate([jnp.ravel(arr), jnp.ravel(values)])
    return jnp.concatenate([arr, values], axis=axis)


def resize(a, new_shape):
    """An array of ``new_shape`` filled with ``a``'s flattened elements, repeated cyclically."""
    a = _array(a, "resize")
    new_shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    new_shape = tuple(operator.index(size) for size in new_shape)
    if any(size < 0 for size in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = jnp.ravel(a)
    total = int(np.prod(new_shape))
    if not flat.shape[0]:
        return jnp.zeros(new_shape, dtype=a.dtype)
    return jnp.take(flat, np.arange(total) % flat.shape[0]).reshape(new_shape)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading ("f") and/or trailing ("b") all-zero slices along each of
    ``axis`` (every axis by default); concrete arrays only, as the result's shape depends on them."""
    filt = _array(filt, "trim_zeros")
    if isinstance(filt, Tracer):
        raise TypeError("trim_zeros: the result's shape depends on the values; pass a concrete array")
    values = np.asarray(filt)
    axes = range(filt.ndim) if axis is None else [normalize_axis(dim, filt.ndim, "trim_zeros")
                                                   for dim in (axis if np.ndim(axis) else [axis])]
    nonzero = np.nonzero(values)
    index = [slice(None)] * filt.ndim
    for dim in axes:
        if not nonzero[dim].size:
            index[dim] = slice(0, 0)
            continue
        start = int(nonzero[dim].min()) if "f" in trim.lower() else None
        stop = int(nonzero[dim].max()) + 1 if "b" in trim.lower() else None
        index[dim] = slice(start, stop)
    return filt[tuple(index)]


def _block_depth(arrays) -> int:
    if isinstance(arrays, tuple):
        raise TypeError("jax.numpy.block does not allow tuples, got a tuple")
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        depths = {_block_depth(item) for item in arrays}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched")
        return depths.pop() + 1
    return 0


def _block(arrays, depth: int, rank: int):
    if not isinstance(arrays, list):
        value = jnp.asarray(arrays)
        return jnp.reshape(value, (1,) * (rank - value.ndim) + value.shape)
    parts = [_block(item, depth - 1, rank) for item in arrays]
    return jnp.concatenate(parts, axis=-depth)


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost list joins along the last
    axis, the next along the one before, ...)."""
    depth = _block_depth(arrays)
    if depth == 0:
        return jnp.asarray(arrays)

    def max_rank(item):
        return max(max_rank(inner) for inner in item) if isinstance(item, list) else np.ndim(item)

    rank = max(depth, max_rank(arrays))
    return _block(arrays, depth, rank)

