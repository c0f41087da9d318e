"""The layout family's transpose rules (data movement is linear: each op's transpose moves the
cotangent back) and its partition rule for sharding_constraint."""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import DimSharding, Op, TensorSharding

from ..frontend import lax_ops as lax
from ..frontend.autodiff.jvp import linear_jvp
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, scalar, single, type_of
from ..partitioning.reshard import reshard
from ..partitioning.spmd_builder import describe
from ..tables import (
    partition_rules,
)


# --- autodiff ------------------------------------------------------------------------------------


jvp_rules.register("broadcast_in_dim", "reshape", "transpose", "slice", "pad", "concatenate", "rev", "squeeze", "expand_dims", "sharding_constraint")(linear_jvp)


@transpose_rules.register("broadcast_in_dim")
def _broadcast_in_dim_transpose(op, cotangents, operands):
    # Sum over the new dims and over the size-1 dims that were stretched, then restore the
    # operand's size-1 dims.
    operand_type = type_of(operands[0])
    shape, dims = op.attrs["shape"], op.attrs["broadcast_dimensions"]
    stretched = [
        dim for size, dim in zip(operand_type.shape, dims) if size == 1 and shape[dim] != 1
    ]
    axes = tuple(sorted(set(range(len(shape))) - set(dims) | set(stretched)))
    summed = single("reduce_sum", [cotangents[0]], {"axes": axes}) if axes else cotangents[0]
    if type_of(summed).shape != operand_type.shape:
        summed = single("reshape", [summed], {"new_sizes": operand_type.shape})
    return [summed]


@transpose_rules.register("reshape")
def _reshape_transpose(op, cotangents, operands):
    return [single("reshape", [cotangents[0]], {"new_sizes": type_of(operands[0]).shape})]


@transpose_rules.register("transpose")
def _transpose_transpose(op, cotangents, operands):
    permutation = op.attrs["permutation"]
    inverse = tuple(permutation.index(dim) for dim in range(len(permutation)))
    return [single("transpose", [cotangents[0]], {"permutation": inverse})]


@transpose_rules.register("rev")
def _rev_transpose(op, cotangents, operands):
    return [single("rev", [cotangents[0]], {"dimensions": op.attrs["dimensions"]})]


@transpose_rules.register("squeeze")
def _squeeze_transpose(op, cotangents, operands):
    return [single("expand_dims", [cotangents[0]], {"dimensions": op.attrs["dimensions"]})]


@transpose_rules.register("expand_dims")
def _expand_dims_transpose(op, cotangents, operands):
    return [single("squeeze", [cotangents[0]], {"dimensions": op.attrs["dimensions"]})]


@transpose_rules.register("slice")
def _slice_transpose(op, cotangents, operands):
    # Each kept element goes back to its place; the rest of the operand gets zeros.
    operand_shape = type_of(operands[0]).shape
    result_shape = type_of(cotangents[0]).shape
    config = []
    for size, start, stride, count in zip(
        operand_shape, op.attrs["start_indices"], op.attrs["strides"], result_shape
    ):
        spread = count + (count - 1) * (stride - 1) if count else 0
        config.append((start, size - start - spread, stride - 1 if count else 0))
    padding = scalar(0, type_of(cotangents[0]).dtype)
    return [single("pad", [cotangents[0], padding], {"padding_config": tuple(config)})]


@transpose_rules.register("pad")
def _pad_transpose(op, cotangents, operands):
    # Undo the edges (negative padding crops), then keep every (interior + 1)-th element; the
    # padding value received everything else.
    cotangent = cotangents[0]
    config = op.attrs["padding_config"]
    unpadded = single(
        "pad",
        [cotangent, scalar(0, type_of(cotangent).dtype)],
        {"padding_config": tuple((-low, -high, 0) for low, high, _ in config)},
    )
    shape = type_of(unpadded).shape
    strides = tuple(interior + 1 for _, _, interior in config)
    operand_cotangent = lax.slice(unpadded, (0,) * len(shape), shape, strides)
    padding_cotangent = None
    if isinstance(operands[1], LinearInput):
        every_axis = tuple(range(len(shape)))
        total = single("reduce_sum", [cotangent], {"axes": every_axis})
        kept = single("reduce_sum", [operand_cotangent], {"axes": every_axis})
        padding_cotangent = lax.sub(total, kept)
    return [operand_cotangent if isinstance(operands[0], LinearInput) else None, padding_cotangent]


@transpose_rules.register("concatenate")
def _concatenate_transpose(op, cotangents, operands):
    dimension = op.attrs["dimension"]
    cotangent = cotangents[0]
    shape = type_of(cotangent).shape
    results, offset = [], 0
    for operand in operands:
        size = type_of(operand).shape[dimension]
        if isinstance(operand, LinearInput):
            start = tuple(offset if dim == dimension else 0 for dim in range(len(shape)))
            limit = tuple(
                offset + size if dim == dimension else shape[dim] for dim in range(len(shape))
            )
            results.append(lax.slice(cotangent, start, limit))
        else:
            results.append(None)
        offset += size
    return results


@transpose_rules.register("sharding_constraint")
def _sharding_constraint_transpose(op, cotangents, operands):
    return [single("sharding_constraint", [cotangents[0]], op.attrs)]


# --- partitioning ----------------------------------------------------------------------------


@partition_rules.register("sharding_constraint")
def _partition_constraint(partitioner, op: Op) -> list:
    """A reshard to the constraint's layout. A pending reduction the constraint's dims and
    unreduced axes leave room for stays pending (the layout is the user's; when the value is
    reduced is the partitioner's); the rest is reduced here."""
    local = partitioner.locals[op.operands[0].id]
    target = constraint_target(op)
    passing = partitioner._passing(op, [local])
    if passing is not None and (not target.unreduced or target.reduction == passing.result_reduction):
        taken = target.used_axes()
        kept = tuple(axis for axis in passing.axes
                     if not any(axis.overlaps(other, partitioner.mesh) for other in taken))
        if kept:
            target = replace(target, unreduced=target.unreduced + kept,
                             reduction=passing.result_reduction)
    return [reshard(partitioner.builder, local, target, describe(op))]


def constraint_target(op: Op) -> TensorSharding:
    """The layout a constraint asks for: its closed dims as written, its open dims as propagation
    grew them (an open dim asks only that its listed axes come first, so it keeps the axes the
    value arrived with instead of being gathered to them). Without a propagated result sharding
    that agrees with the constraint, the constraint as written."""
    asked = op.attrs["sharding"]
    grown = op.sharding_of(0)
    if grown is None or all(dim.is_closed for dim in asked.dims) or len(grown.dims) != len(asked.dims):
        return asked
    agrees = all(dim.axes == mine.axes if dim.is_closed else mine.axes[:len(dim.axes)] == dim.axes
                 for dim, mine in zip(asked.dims, grown.dims))
    if not agrees or grown.unreduced != asked.unreduced:
        return asked
    dims = tuple(DimSharding(mine.axes) for mine in grown.dims)
    return replace(asked, dims=dims)
