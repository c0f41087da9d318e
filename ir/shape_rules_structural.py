"""Shape rules of the shape and layout ops, dot_general, reductions, scans, sort and gather."""

from __future__ import annotations

import math

from .dtypes import is_float
from .shape_rules import (
    BOOL_OR_INT,
    INTS,
    NUMERIC,
    bool_attr,
    check_dim,
    check_dims,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    expect_scalar,
    fail,
    int_attr,
    ints_attr,
    is_int,
    required_attr,
    shape_rules,
)
from .types import TensorType

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


def _per_dim(op: str, attrs, name: str, rank: int, **limits) -> tuple[int, ...]:
    values = ints_attr(op, attrs, name, **limits)
    if len(values) != rank:
        fail(op, f"{name} {values} must have one entry per dim (rank {rank})")
    return values


@shape_rules.register("slice")
def _slice(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    starts = _per_dim(op, attrs, "start_indices", operand.rank)
    limits = _per_dim(op, attrs, "limit_indices", operand.rank)
    strides = _per_dim(op, attrs, "strides", operand.rank, minimum=1)
    for dim, (start, limit, size) in enumerate(zip(starts, limits, operand.shape)):
        if not 0 <= start <= limit <= size:
            fail(op, f"dim {dim}: need 0 <= start {start} <= limit {limit} <= size {size}")
    shape = (-(-(limit - start) // stride) for start, limit, stride in zip(starts, limits, strides))
    return (operand.with_shape(shape),)


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
    sizes = _per_dim(op, attrs, "slice_sizes", operand.rank, minimum=0)
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


# --- contraction -----------------------------------------------------------------------------


def _dims_pair(op: str, attrs, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    value = required_attr(op, attrs, name)
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(side, tuple) and all(is_int(d) for d in side) for side in value)
    ):
        fail(op, f"attribute {name!r} must be a pair ((lhs dims..), (rhs dims..)), got {value!r}")
    if len(value[0]) != len(value[1]):
        fail(op, f"{name} {value} must list as many lhs dims as rhs dims")
    return value


def _dot_result_dtype(op: str, operand_dtype: str, attrs) -> str:
    preferred = attrs.get("preferred_element_type", operand_dtype)
    if preferred not in NUMERIC:
        fail(op, f"preferred_element_type must be one of {', '.join(NUMERIC)}, got {preferred!r}")
    if is_float(operand_dtype) and not is_float(preferred):
        fail(op, f"preferred_element_type {preferred} cannot hold {operand_dtype} products")
    return preferred


@shape_rules.register("dot_general")
def _dot_general(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    lhs, rhs = operands
    expect_dtype(op, "lhs", lhs, NUMERIC)
    if rhs.dtype != lhs.dtype:
        fail(op, f"operands must have equal dtypes, got lhs {lhs} and rhs {rhs}")
    contracting = _dims_pair(op, attrs, "contracting_dims")
    batch = _dims_pair(op, attrs, "batch_dims")
    for side, (name, operand) in enumerate((("lhs", lhs), ("rhs", rhs))):
        used = contracting[side] + batch[side]
        check_dims(op, f"{name} contracting and batch dims", used, operand.rank)
    for kind, (lhs_dims, rhs_dims) in (("contracting", contracting), ("batch", batch)):
        for lhs_dim, rhs_dim in zip(lhs_dims, rhs_dims):
            if lhs.shape[lhs_dim] != rhs.shape[rhs_dim]:
                fail(
                    op,
                    f"{kind} dim {lhs_dim} of lhs has size {lhs.shape[lhs_dim]} but {kind} "
                    f"dim {rhs_dim} of rhs has size {rhs.shape[rhs_dim]}",
                )
    shape = tuple(lhs.shape[dim] for dim in batch[0])
    for side, operand in enumerate(operands):
        used = contracting[side] + batch[side]
        shape += tuple(size for dim, size in enumerate(operand.shape) if dim not in used)
    return (TensorType(shape, _dot_result_dtype(op, lhs.dtype, attrs)),)


# --- reductions, scans, sort and gather ------------------------------------------------------


def _reduction_rule(allowed: tuple[str, ...]):
    def rule(op, operands, attrs, regions, meshes):
        expect_operand_count(op, operands, 1)
        (operand,) = operands
        expect_dtype(op, "operand 0", operand, allowed)
        axes = ints_attr(op, attrs, "axes")
        check_dims(op, "axes", axes, operand.rank)
        return (operand.with_shape(s for dim, s in enumerate(operand.shape) if dim not in axes),)

    return rule


shape_rules.register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")(
    _reduction_rule(NUMERIC)
)
shape_rules.register("reduce_and", "reduce_or")(_reduction_rule(BOOL_OR_INT))


@shape_rules.register("argmax", "argmin")
def _arg_reduction(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    axis = int_attr(op, attrs, "axis")
    check_dim(op, "axis", axis, operand.rank)
    index_dtype = choice_attr(op, attrs, "index_dtype", INTS)
    if operand.shape[axis] == 0:
        fail(op, f"axis {axis} of {operand} is empty; {op} needs at least one element")
    shape = operand.shape[:axis] + operand.shape[axis + 1 :]
    return (TensorType(shape, index_dtype),)


@shape_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _cumulative(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], NUMERIC)
    check_dim(op, "axis", int_attr(op, attrs, "axis"), operands[0].rank)
    bool_attr(op, attrs, "reverse")
    return (operands[0],)


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
