"""The indexing ops: dynamic_slice, dynamic_update_slice, sort, gather and the scatters, whose
reads or writes depend on index values. Gather and scatter take XLA's dimension numbers
(``meshjit.ir.gather_scatter``); the scatters combine an update with what is there by
replacing it (``scatter``), adding, multiplying, or keeping the min or max."""

from __future__ import annotations

import numpy as np

from ..dtypes import NARROW_FLOATS, kind_of, to_numpy
from ..reference import reference_impls
from ..gather_scatter import MODES, GatherDims, ScatterDims, check_gather, check_scatter
from ..shape_rules import (
    INTS,
    NUMERIC,
    bool_attr,
    check_dim,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    expect_scalar,
    fail,
    int_attr,
    per_dim_attr,
    shape_rules,
)
from ..types import TensorType

OPS = ("dynamic_slice", "dynamic_update_slice", "sort", "top_k", "gather", "scatter", "scatter_add", "scatter_mul",
       "scatter_min", "scatter_max")
SCATTERS = OPS[5:]


def _check_start_indices(op: str, operand: TensorType, starts) -> None:
    if len(starts) != operand.rank:
        fail(
            op,
            f"expected {operand.rank} start indices (one per dim of {operand}), got {len(starts)}",
        )
    for index, start in enumerate(starts):
        expect_scalar(op, f"start index {index}", start)
        expect_dtype(op, f"start index {index}", start, INTS)


@shape_rules.register("dynamic_slice")
def _dynamic_slice(op, operands, attrs, regions, meshes):
    if not operands:
        fail(op, "expected an operand and its start indices, got no operands")
    operand, starts = operands[0], operands[1:]
    _check_start_indices(op, operand, starts)
    sizes = per_dim_attr(op, attrs, "slice_sizes", operand.rank, minimum=0)
    for dim, (size, limit) in enumerate(zip(sizes, operand.shape)):
        if size > limit:
            fail(op, f"slice_sizes {sizes}: dim {dim} has size {limit}, smaller than {size}")
    return (operand.with_shape(sizes),)


@shape_rules.register("dynamic_update_slice")
def _dynamic_update_slice(op, operands, attrs, regions, meshes):
    if len(operands) < 2:
        fail(op, f"expected an operand, an update and start indices, got {len(operands)} operands")
    operand, update, starts = operands[0], operands[1], operands[2:]
    _check_start_indices(op, operand, starts)
    if update.dtype != operand.dtype or update.rank != operand.rank:
        fail(op, f"update {update} must have the dtype and rank of the operand {operand}")
    if any(part > whole for part, whole in zip(update.shape, operand.shape)):
        fail(op, f"update {update} does not fit in the operand {operand}")
    return (operand,)


@shape_rules.register("sort")
def _sort(op, operands, attrs, regions, meshes):
    if not operands:
        fail(op, "expected at least one operand, got none")
    for index, operand in enumerate(operands):
        if operand.shape != operands[0].shape:
            fail(op, f"operand {index} is {operand}, expected the shape of operand 0 {operands[0]}")
    check_dim(op, "dimension", int_attr(op, attrs, "dimension"), operands[0].rank)
    bool_attr(op, attrs, "is_stable")
    num_keys = int_attr(op, attrs, "num_keys")
    if not 1 <= num_keys <= len(operands):
        fail(op, f"num_keys {num_keys} must be between 1 and the {len(operands)} operands")
    return tuple(operands)


@shape_rules.register("top_k")
def _top_k(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    expect_dtype(op, "operand", operand, NUMERIC)
    if operand.rank == 0:
        fail(op, f"operand {operand} needs a last dim to take the largest elements of")
    k = int_attr(op, attrs, "k")
    if not 0 <= k <= operand.shape[-1]:
        fail(op, f"k {k} must be between 0 and the last dim {operand.shape[-1]} of {operand}")
    shape = operand.shape[:-1] + (k,)
    return (operand.with_shape(shape), TensorType(shape, "i32"))


@shape_rules.register("gather")
def _gather(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    operand, indices = operands
    dims = check_gather(op, attrs, operand, indices)
    choice_attr(op, attrs, "mode", MODES)
    if "fill_value" in attrs and not isinstance(attrs["fill_value"], (bool, int, float)):
        fail(op, f"attribute 'fill_value' must be a number or a bool, got {attrs['fill_value']!r}")
    return (operand.with_shape(dims.result_shape(operand.shape, indices.shape)),)


@shape_rules.register(*SCATTERS)
def _scatter(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 3)
    operand, indices, updates = operands
    check_scatter(op, attrs, operand, indices, updates)
    choice_attr(op, attrs, "mode", MODES)
    for name in ("indices_are_sorted", "unique_indices"):
        if not isinstance(attrs.get(name, False), bool):
            fail(op, f"attribute {name!r} must be a bool, got {attrs[name]!r}")
    return (operand,)


# --- reference implementations ------------------------------------------------------------

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


# --- sort, gather, sharding_constraint -------------------------------------------------------


_NARROW_FLOATS = frozenset(to_numpy(name) for name in NARROW_FLOATS)


def _orderable(array: np.ndarray) -> np.ndarray:
    """Sort keys numpy orders with NaNs last: the 16-bit floats as (exact) f32."""
    return array.astype(np.float32) if array.dtype in _NARROW_FLOATS else array


@reference_impls.register("sort")
def _sort(attrs, *operands):
    dimension = attrs["dimension"]
    keys = []
    for key in operands[: attrs["num_keys"]]:
        # a complex key orders by its real part, then its imaginary part (each NaN last), as JAX
        keys.extend((key.real, key.imag) if key.dtype.kind == "c" else (_orderable(key),))
    # lexsort takes its primary key last and is stable; like JAX's comparator it puts NaNs last
    # and treats -0.0 and 0.0 as equal. A stable order is also a valid unstable one.
    order = np.lexsort(keys[::-1], axis=dimension)
    return tuple(np.take_along_axis(operand, order, axis=dimension) for operand in operands)


@reference_impls.register("top_k")
def _top_k(attrs, operand):
    """The k largest along the last dim, largest first; NaN counts as the largest and equal
    elements come in index order (as XLA's TopK)."""
    positions = np.broadcast_to(np.arange(operand.shape[-1]), operand.shape)
    order = np.lexsort((-positions, _orderable(operand)), axis=-1)[..., ::-1][..., : attrs["k"]]
    return np.take_along_axis(operand, order, axis=-1), order.astype(np.int32)


def fill_value(attrs, dtype: np.dtype):
    """What a gather in mode "fill" gives for windows out of range: the ``fill_value`` attribute,
    else NaN (NaN + 0i for complex), True, the most negative signed int or the largest unsigned one (as JAX)."""
    if "fill_value" in attrs:
        with np.errstate(all="ignore"):
            return np.asarray(attrs["fill_value"]).astype(dtype)
    if kind_of(dtype) == "f" or dtype.kind == "c":
        return np.nan
    if dtype.kind == "c":
        return complex(np.nan, 0.0)
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max if dtype.kind == "u" else np.iinfo(dtype).min


@reference_impls.register("gather")
def _gather(attrs, operand, indices):
    dims = GatherDims.of(attrs)
    positions, fits = dims.windows.positions(operand.shape, indices, attrs["mode"])
    taken = operand[positions]
    batch_rank = indices.ndim - 1
    if not fits.all():
        inside = fits.reshape(fits.shape + (1,) * operand.ndim)
        taken = np.where(inside, taken, fill_value(attrs, operand.dtype)).astype(operand.dtype)
    kept = dims.kept_dims(operand.ndim)
    taken = taken.reshape(taken.shape[:batch_rank] + tuple(dims.slice_sizes[dim] for dim in kept))
    # the batch axes go to the result dims that are not offset dims, in order
    rank = taken.ndim
    batch_positions = dims.batch_positions(rank)
    order = [batch_positions.index(dim) if dim in batch_positions else batch_rank + dims.offset_dims.index(dim)
             for dim in range(rank)]
    return (np.transpose(taken, order).copy(),)


def _last_writes(result: np.ndarray, positions, values: np.ndarray) -> None:
    """``result[positions] = values`` where the last of repeated positions wins (as XLA's CPU
    scatter, which applies updates in order)."""
    flat = np.ravel_multi_index(positions, result.shape) if result.ndim else np.zeros(len(values), np.int64)
    _, last = np.unique(flat[::-1], return_index=True)
    keep = len(flat) - 1 - last
    result.reshape(-1)[flat[keep]] = values[keep]


_COMBINE = {
    "scatter": _last_writes,
    "scatter_add": np.add.at,
    "scatter_mul": np.multiply.at,
    "scatter_min": np.minimum.at,
    "scatter_max": np.maximum.at,
}


def scatter_updates(attrs, operand, indices, updates):
    """The operand positions a scatter writes (one flat array per operand dim) and the values
    written there, in update order, without the windows that mode "fill" drops."""
    dims = ScatterDims.of(attrs)
    windows = dims.windows(operand.ndim, updates.shape)
    positions, fits = windows.positions(operand.shape, indices, attrs["mode"])
    batch_rank = indices.ndim - 1
    moved = np.transpose(updates, dims.scatter_positions(updates.ndim) + list(dims.update_window_dims))
    moved = moved.reshape(moved.shape[:batch_rank] + windows.sizes)
    keep = np.broadcast_to(fits.reshape(fits.shape + (1,) * operand.ndim), moved.shape)
    return tuple(position[keep] for position in positions), moved[keep]


def _scatter_impl(name: str):
    combine = _COMBINE[name]

    def impl(attrs, operand, indices, updates):
        positions, values = scatter_updates(attrs, operand, indices, updates)
        result = operand.copy()
        with np.errstate(all="ignore"):
            combine(result, positions, values)
        return (result,)

    return impl


for _name in SCATTERS:
    reference_impls.register(_name)(_scatter_impl(_name))
del _name
