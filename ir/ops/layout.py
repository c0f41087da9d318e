"""The layout ops: broadcast, reshape, transpose, slice, pad, concatenate, rev, squeeze,
expand_dims and sharding_constraint, which move elements without computing new ones."""

from __future__ import annotations

import math

import numpy as np

from ..reference import reference_impls
from ..shape_rules import (
    check_dim,
    check_dims,
    check_sharding,
    expect_operand_count,
    fail,
    find_mesh,
    int_attr,
    ints_attr,
    is_int,
    required_attr,
    shape_rules,
    typed_attr,
)
from ..sharding import TensorSharding
from ..types import TensorType

# fmt: off
OPS = (
    "broadcast_in_dim", "reshape", "transpose", "slice", "pad", "concatenate", "rev", "squeeze",
    "expand_dims", "sharding_constraint",
)
# fmt: on

# --- shape and layout ------------------------------------------------------------------------


@shape_rules.register("broadcast_in_dim")
def _broadcast_in_dim(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    shape = ints_attr(op, attrs, "shape", minimum=0)
    dims = ints_attr(op, attrs, "broadcast_dimensions")
    if len(dims) != operand.rank:
        fail(op, f"broadcast_dimensions {dims} needs one entry per dim of the operand {operand}")
    check_dims(op, "broadcast_dimensions", dims, len(shape))
    if list(dims) != sorted(dims):
        fail(op, f"broadcast_dimensions {dims} must be strictly increasing")
    for index, (size, dim) in enumerate(zip(operand.shape, dims)):
        if size not in (1, shape[dim]):
            fail(op, f"operand dim {index} of size {size} cannot broadcast to size {shape[dim]}")
    return (TensorType(shape, operand.dtype),)


@shape_rules.register("reshape")
def _reshape(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    new_sizes = ints_attr(op, attrs, "new_sizes", minimum=0)
    if math.prod(new_sizes) != operands[0].size:
        fail(
            op,
            f"new_sizes {new_sizes} hold {math.prod(new_sizes)} elements, {operands[0]} "
            f"holds {operands[0].size}",
        )
    return (operands[0].with_shape(new_sizes),)


@shape_rules.register("transpose")
def _transpose(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    permutation = ints_attr(op, attrs, "permutation")
    if sorted(permutation) != list(range(operand.rank)):
        fail(op, f"permutation {permutation} is not a permutation of the {operand.rank} dims")
    return (operand.with_shape(operand.shape[dim] for dim in permutation),)


def per_dim_attr(op: str, attrs, name: str, rank: int, **limits) -> tuple[int, ...]:
    values = ints_attr(op, attrs, name, **limits)
    if len(values) != rank:
        fail(op, f"{name} {values} must have one entry per dim (rank {rank})")
    return values


@shape_rules.register("slice")
def _slice(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    starts = per_dim_attr(op, attrs, "start_indices", operand.rank)
    limits = per_dim_attr(op, attrs, "limit_indices", operand.rank)
    strides = per_dim_attr(op, attrs, "strides", operand.rank, minimum=1)
    for dim, (start, limit, size) in enumerate(zip(starts, limits, operand.shape)):
        if not 0 <= start <= limit <= size:
            fail(op, f"dim {dim}: need 0 <= start {start} <= limit {limit} <= size {size}")
    shape = (-(-(limit - start) // stride) for start, limit, stride in zip(starts, limits, strides))
    return (operand.with_shape(shape),)


@shape_rules.register("pad")
def _pad(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    operand, padding_value = operands
    if padding_value != TensorType((), operand.dtype):
        fail(op, f"padding_value must be {operand.dtype}[], got {padding_value}")
    config = required_attr(op, attrs, "padding_config")
    if not isinstance(config, tuple) or not all(
        isinstance(entry, tuple) and len(entry) == 3 and all(is_int(n) for n in entry)
        for entry in config
    ):
        fail(
            op,
            f"attribute 'padding_config' must be a tuple of (lo, hi, interior) int "
            f"triples, got {config!r}",
        )
    if len(config) != operand.rank:
        fail(
            op,
            f"padding_config has {len(config)} entries, the operand {operand} has rank "
            f"{operand.rank}",
        )
    shape = []
    for dim, ((low, high, interior), size) in enumerate(zip(config, operand.shape)):
        if interior < 0:
            fail(op, f"dim {dim}: interior padding must be >= 0, got {interior}")
        padded = low + high + size + max(size - 1, 0) * interior
        if padded < 0:
            fail(
                op,
                f"dim {dim}: padding ({low}, {high}, {interior}) of size {size} gives "
                f"negative size {padded}",
            )
        shape.append(padded)
    return (operand.with_shape(shape),)


@shape_rules.register("concatenate")
def _concatenate(op, operands, attrs, regions, meshes):
    if not operands:
        fail(op, "expected at least one operand, got none")
    first = operands[0]
    dimension = int_attr(op, attrs, "dimension")
    check_dim(op, "dimension", dimension, first.rank)
    for index, operand in enumerate(operands):
        others_match = operand.shape[:dimension] + operand.shape[dimension + 1 :] == (
            first.shape[:dimension] + first.shape[dimension + 1 :]
        )
        if operand.dtype != first.dtype or operand.rank != first.rank or not others_match:
            fail(
                op,
                f"operand {index} is {operand}, which does not concatenate with {first} "
                f"along dim {dimension}",
            )
    size = sum(operand.shape[dimension] for operand in operands)
    shape = first.shape[:dimension] + (size,) + first.shape[dimension + 1 :]
    return (first.with_shape(shape),)


@shape_rules.register("rev")
def _rev(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    check_dims(op, "dimensions", ints_attr(op, attrs, "dimensions"), operands[0].rank)
    return (operands[0],)


@shape_rules.register("squeeze")
def _squeeze(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    dimensions = ints_attr(op, attrs, "dimensions")
    check_dims(op, "dimensions", dimensions, operand.rank)
    for dim in dimensions:
        if operand.shape[dim] != 1:
            fail(op, f"dim {dim} of {operand} has size {operand.shape[dim]}, expected 1")
    return (operand.with_shape(s for dim, s in enumerate(operand.shape) if dim not in dimensions),)


@shape_rules.register("expand_dims")
def _expand_dims(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    dimensions = ints_attr(op, attrs, "dimensions")
    rank = operand.rank + len(dimensions)
    check_dims(op, "dimensions", dimensions, rank)
    sizes = iter(operand.shape)
    return (operand.with_shape(1 if dim in dimensions else next(sizes) for dim in range(rank)),)


@shape_rules.register("sharding_constraint")
def _sharding_constraint(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    sharding = typed_attr(op, attrs, "sharding", TensorSharding, "a TensorSharding")
    mesh = None if meshes is None else find_mesh(op, sharding.mesh_name, meshes)
    check_sharding(op, "sharding", sharding, operands[0], mesh)
    return (operands[0],)


# --- reference implementations ------------------------------------------------------------

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


@reference_impls.register("sharding_constraint")
def _sharding_constraint(attrs, operand):
    return (operand,)
