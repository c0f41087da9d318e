"""Partitioning a dynamic_slice whose cut dim arrives sharded, without gathering it: each device
cuts the window from its own rows (zeros where the window lies outside them: its shard padded
with one window of zeros on either side) and the result is pending a sum over the dim's axes,
reduced where a consumer needs it. One all-reduce of the window instead of an all-gather of the
operand; priced against the generic plan, the choice kept for ``explain()``.
"""

from __future__ import annotations


from meshjit.ir import Op, Value

from .gather_scatter_partition import partition_masked
from ..tables import sharding_rules
from .spmd_builder import Local, SpmdBuilder


def _owned_dims(op: Op, local: Local) -> dict[int, list]:
    """The dims the op cuts that arrive split over whole axes."""
    shape, sizes = op.operands[0].type.shape, op.attrs["slice_sizes"]
    return {dim: list(local.sharding.dims[dim].axes) for dim in range(len(shape))
            if sizes[dim] != shape[dim] and local.sharding.dims[dim].axes
            and not any(axis.is_sub_axis for axis in local.sharding.dims[dim].axes)}


def partition_dynamic_slice(partitioner, op: Op) -> list[Local]:
    operands = [partitioner.locals[value.id] for value in op.operands]
    owned = _owned_dims(op, operands[0])
    if not owned or operands[0].unreduced or op.result.type.dtype == "bool" or 0 in op.result.type.shape:
        return partitioner.partition_generic(op)
    rule = sharding_rules[op.name](op)
    wanted = partitioner.result_shardings(op)
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, operands, wanted)
    return partition_masked(partitioner, op, operands, rule, wanted, strategy, owned,
                            "each device cuts the window from its rows over {}, then a sum",
                            lambda builder, resharded, owned, result_sharding: _masked_window(
                                builder, op, resharded, owned))


def _masked_window(builder: SpmdBuilder, op: Op, operands: list[Local], owned) -> Value:
    """The window cut from this device's rows along the owned dims, zero where it lies outside
    them; the other dims are cut as the op says (whole dims at their local size)."""
    shape, sizes = op.operands[0].type.shape, op.attrs["slice_sizes"]
    value = operands[0].value
    local_shape = value.type.shape
    starts, local_sizes = [], []
    for dim, index in enumerate(operands[1:]):
        start = index.value
        if start.type.dtype != "i32":
            start = builder.emit1("convert", [start], {"new_dtype": "i32"})
        if dim not in owned:
            starts.append(start)
            local_sizes.append(local_shape[dim] if sizes[dim] == shape[dim] else sizes[dim])
            continue
        size, local_size = sizes[dim], local_shape[dim]
        value = builder.mask_padding(value, dim, shape[dim], owned[dim], 0)
        start = builder.emit1("clamp", [builder.scalar(0, "i32"), start, builder.scalar(shape[dim] - size, "i32")])
        start = builder.emit1("sub", [start, builder.shard_offset(owned[dim], local_size)])
        start = builder.emit1("clamp", [builder.scalar(-size, "i32"), start, builder.scalar(local_size, "i32")])
        starts.append(builder.emit1("add", [start, builder.scalar(size, "i32")]))
        local_sizes.append(size)
        config = tuple((size, size, 0) if d == dim else (0, 0, 0) for d in range(len(shape)))
        value = builder.emit1("pad", [value, builder.scalar(0, value.type.dtype)], {"padding_config": config})
    return builder.emit1("dynamic_slice", [value, *starts], {"slice_sizes": tuple(local_sizes)}, location=op.location)
