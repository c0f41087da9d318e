"""Reference implementations of the shape and layout ops, dot_general, reductions, scans, sort,
gather and sharding_constraint (conventions in ``reference``)."""

from __future__ import annotations

import math

import numpy as np

from .dtypes import from_numpy, to_numpy
from .reference import reference_impls

# --- shape and layout ------------------------------------------------------------------------


@reference_impls.register("broadcast_in_dim")
def _broadcast_in_dim(attrs, operand):
    shape = attrs["shape"]
    aligned = [1] * len(shape)
    for size, dim in zip(operand.shape, attrs["broadcast_dimensions"]):
        aligned[dim] = size
    return (np.broadcast_to(operand.reshape(aligned), shape).copy(),)


@reference_impls.register("reshape")
def _reshape(attrs, operand):
    return (operand.reshape(attrs["new_sizes"]),)


@reference_impls.register("transpose")
def _transpose(attrs, operand):
    return (np.transpose(operand, attrs["permutation"]),)


@reference_impls.register("slice")
def _slice(attrs, operand):
    bounds = zip(attrs["start_indices"], attrs["limit_indices"], attrs["strides"])
    return (
        np.asarray(operand[tuple(slice(start, limit, stride) for start, limit, stride in bounds)]),
    )


def _clamped_window(starts, operand_shape, window_shape) -> tuple[slice, ...]:
    """XLA clamps dynamic start indices so that the whole window fits in the operand."""
    window = []
    for start, size, length in zip(starts, operand_shape, window_shape):
        clamped = min(max(int(start), 0), size - length)
        window.append(slice(clamped, clamped + length))
    return tuple(window)


@reference_impls.register("dynamic_slice")
def _dynamic_slice(attrs, operand, *starts):
    return (np.asarray(operand[_clamped_window(starts, operand.shape, attrs["slice_sizes"])]),)


@reference_impls.register("dynamic_update_slice")
def _dynamic_update_slice(attrs, operand, update, *starts):
    result = operand.copy()
    result[_clamped_window(starts, operand.shape, update.shape)] = update
    return (result,)


@reference_impls.register("pad")
def _pad(attrs, operand, padding_value):
    config = attrs["padding_config"]
    # First spread the elements apart by the interior padding, then add or crop the edges.
    spread_shape = [
        size + max(size - 1, 0) * interior for size, (_, _, interior) in zip(operand.shape, config)
    ]
    spread = np.full(spread_shape, padding_value, dtype=operand.dtype)
    spread[tuple(slice(None, None, interior + 1) for _, _, interior in config)] = operand
    result_shape = [low + size + high for size, (low, high, _) in zip(spread_shape, config)]
    result = np.full(result_shape, padding_value, dtype=operand.dtype)
    source, target = [], []
    for size, (low, _, _), length in zip(spread_shape, config, result_shape):
        # spread[index] lands at result[low + index] when that is inside the result.
        start = max(0, -low)
        stop = max(min(size, length - low), start)
        source.append(slice(start, stop))
        target.append(slice(start + low, stop + low))
    result[tuple(target)] = spread[tuple(source)]
    return (result,)


@reference_impls.register("concatenate")
def _concatenate(attrs, *operands):
    return (np.concatenate(operands, axis=attrs["dimension"]),)


@reference_impls.register("rev")
def _rev(attrs, operand):
    return (np.asarray(np.flip(operand, axis=tuple(attrs["dimensions"]))),)


@reference_impls.register("squeeze")
def _squeeze(attrs, operand):
    dimensions = attrs["dimensions"]
    return (operand.reshape([s for dim, s in enumerate(operand.shape) if dim not in dimensions]),)


@reference_impls.register("expand_dims")
def _expand_dims(attrs, operand):
    dimensions = attrs["dimensions"]
    sizes = iter(operand.shape)
    rank = operand.ndim + len(dimensions)
    return (operand.reshape([1 if dim in dimensions else next(sizes) for dim in range(rank)]),)


# --- contraction -----------------------------------------------------------------------------


def _group_dims(array: np.ndarray, *groups) -> np.ndarray:
    """Transpose ``array`` so that the dim groups come in order, then merge each group."""
    order = [dim for group in groups for dim in group]
    sizes = [math.prod(array.shape[dim] for dim in group) for group in groups]
    return np.transpose(array, order).reshape(sizes)


@reference_impls.register("dot_general")
def _dot_general(attrs, lhs, rhs):
    lhs_contracting, rhs_contracting = attrs["contracting_dims"]
    lhs_batch, rhs_batch = attrs["batch_dims"]
    dtype = to_numpy(attrs.get("preferred_element_type", from_numpy(lhs.dtype)))
    lhs_free = [dim for dim in range(lhs.ndim) if dim not in lhs_contracting + lhs_batch]
    rhs_free = [dim for dim in range(rhs.ndim) if dim not in rhs_contracting + rhs_batch]
    # As (batch, free, contracting) @ (batch, contracting, free), computed in the result dtype.
    lhs_matrices = _group_dims(lhs.astype(dtype), lhs_batch, lhs_free, lhs_contracting)
    rhs_matrices = _group_dims(rhs.astype(dtype), rhs_batch, rhs_contracting, rhs_free)
    with np.errstate(all="ignore"):
        product = np.matmul(lhs_matrices, rhs_matrices)
    shape = [lhs.shape[dim] for dim in lhs_batch + tuple(lhs_free)]
    shape += [rhs.shape[dim] for dim in rhs_free]
    return (product.reshape(shape),)


# --- reductions and scans --------------------------------------------------------------------


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


# Each reduces over a tuple of axes; the initial values make empty reductions well defined,
# and bitwise and/or act as logical and/or on bool.
_REDUCTIONS = {
    "reduce_sum": lambda x, axes: np.sum(x, axis=axes, dtype=x.dtype),
    "reduce_prod": lambda x, axes: np.prod(x, axis=axes, dtype=x.dtype),
    "reduce_max": lambda x, axes: np.max(x, axis=axes, initial=_lowest(x.dtype)),
    "reduce_min": lambda x, axes: np.min(x, axis=axes, initial=_highest(x.dtype)),
    "reduce_and": lambda x, axes: np.bitwise_and.reduce(x, axis=axes),
    "reduce_or": lambda x, axes: np.bitwise_or.reduce(x, axis=axes),
}


def _reduction(function):
    def impl(attrs, operand):
        with np.errstate(all="ignore"):
            reduced = function(operand, tuple(attrs["axes"]))
        return (np.asarray(reduced, dtype=operand.dtype),)

    return impl


for _name, _function in _REDUCTIONS.items():
    reference_impls.register(_name)(_reduction(_function))


def _arg_reduction(function):
    # numpy's argmax and argmin return the first occurrence and treat NaN as the extreme value,
    # so the first NaN wins, as in jnp.
    def impl(attrs, operand):
        indices = function(operand, axis=attrs["axis"])
        return (np.asarray(indices, dtype=to_numpy(attrs["index_dtype"])),)

    return impl


reference_impls.register("argmax")(_arg_reduction(np.argmax))
reference_impls.register("argmin")(_arg_reduction(np.argmin))


def _cumulative(ufunc):
    def impl(attrs, operand):
        axis = attrs["axis"]
        ordered = np.flip(operand, axis) if attrs["reverse"] else operand
        with np.errstate(all="ignore"):
            result = ufunc.accumulate(ordered, axis=axis, dtype=operand.dtype)
        return (np.flip(result, axis) if attrs["reverse"] else result,)

    return impl


_SCANS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum, "cummin": np.minimum}
for _name, _ufunc in _SCANS.items():
    reference_impls.register(_name)(_cumulative(_ufunc))


# --- sort, gather, sharding_constraint -------------------------------------------------------


@reference_impls.register("sort")
def _sort(attrs, *operands):
    dimension = attrs["dimension"]
    keys = operands[: attrs["num_keys"]]
    # lexsort takes its primary key last and is stable; like JAX's comparator it puts NaNs last
    # and treats -0.0 and 0.0 as equal. A stable order is also a valid unstable one.
    order = np.lexsort(keys[::-1], axis=dimension)
    return tuple(np.take_along_axis(operand, order, axis=dimension) for operand in operands)


def _fill_value(dtype: np.dtype):
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).min


@reference_impls.register("gather")
def _gather(attrs, operand, indices):
    axis = attrs["axis"]
    size = operand.shape[axis]
    if attrs["mode"] == "clip":
        return (np.asarray(np.take(operand, np.clip(indices, 0, size - 1), axis=axis)),)
    shape = operand.shape[:axis] + indices.shape + operand.shape[axis + 1 :]
    if size == 0:
        return (np.full(shape, _fill_value(operand.dtype), dtype=operand.dtype),)
    valid = (indices >= 0) & (indices < size)
    taken = np.take(operand, np.where(valid, indices, 0), axis=axis)
    valid = valid.reshape((1,) * axis + indices.shape + (1,) * (operand.ndim - axis - 1))
    return (np.asarray(np.where(valid, taken, _fill_value(operand.dtype)), dtype=operand.dtype),)


@reference_impls.register("sharding_constraint")
def _sharding_constraint(attrs, operand):
    return (operand,)
