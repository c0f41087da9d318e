"""The indexing ops: dynamic_slice, dynamic_update_slice, sort and gather, whose reads depend
on index values."""

from __future__ import annotations

import numpy as np

from ..reference import reference_impls
from ..shape_rules import (
    INTS,
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

OPS = ("dynamic_slice", "dynamic_update_slice", "sort", "gather")


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


@shape_rules.register("gather")
def _gather(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    operand, indices = operands
    expect_dtype(op, "indices", indices, INTS)
    axis = int_attr(op, attrs, "axis")
    check_dim(op, "axis", axis, operand.rank)
    mode = choice_attr(op, attrs, "mode", ("clip", "fill"))
    if mode == "clip" and operand.shape[axis] == 0 and indices.size > 0:
        fail(op, f"mode 'clip' cannot take from the empty axis {axis} of {operand}")
    shape = operand.shape[:axis] + indices.shape + operand.shape[axis + 1 :]
    return (operand.with_shape(shape),)


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


@reference_impls.register("sort")
def _sort(attrs, *operands):
    dimension = attrs["dimension"]
    keys = operands[: attrs["num_keys"]]
    # lexsort takes its primary key last and is stable; like JAX's comparator it puts NaNs last
    # and treats -0.0 and 0.0 as equal. A stable order is also a valid unstable one.
    order = np.lexsort(keys[::-1], axis=dimension)
    return tuple(np.take_along_axis(operand, order, axis=dimension) for operand in operands)


def _fill_value(dtype: np.dtype):
    # jnp.take's fill: NaN, True, the most negative signed value, the largest unsigned value
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max if dtype.kind == "u" else np.iinfo(dtype).min


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
