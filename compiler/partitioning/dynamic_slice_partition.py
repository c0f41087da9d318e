"""Partitioning a dynamic_slice whose cut dim arrives sharded, without gathering it: each device
cuts the window from its own rows (zeros where the window lies outside them: its shard padded
with one window of zeros on either side) and the result is pending a sum over the dim's axes,
reduced where a consumer needs it. One all-reduce of the window instead of an all-gather of the
operand; priced against the generic plan, the choice kept for ``explain()``.
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Op, Value

from .factor_choice import Decision, Strategy
from .gather_scatter_partition import _around, _axes_text, _price
from .reshard import reshard
from ..tables import sharding_rules
from .spmd_builder import Local, SpmdBuilder, describe


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
    factor_axes = _around(partitioner, strategy.factor_axes, [axis for axes in owned.values() for axis in axes])
    for dim, axes in owned.items():
        factor_axes[rule.operands[0][dim][0]] = axes
    factor_axes = chooser.valid(rule, factor_axes)
    owned = {dim: factor_axes[rule.operands[0][dim][0]] for dim in owned if factor_axes[rule.operands[0][dim][0]]}
    if not owned:
        return partitioner.partition_generic(op, strategy)
    pending = tuple(axis for axes in owned.values() for axis in axes)
    targets = chooser.operand_targets(rule, operands, Strategy(factor_axes))
    result_sharding = replace(chooser.required_sharding(rule, rule.results[0], factor_axes), unreduced=pending,
                              reduction="sum")
    own_bytes = _price(partitioner, operands, targets, [(op.result, result_sharding)], wanted)
    generic_bytes = chooser.price(op, rule, operands, wanted, strategy)[0]
    mine = f"each device cuts the window from its rows over {_axes_text(pending)}, then a sum"
    chooser.decisions.append(Decision(op.name, op.location, mine if own_bytes < generic_bytes else "gather the rows",
                                      {f"{mine} (bytes/device)": own_bytes,
                                       "gather the rows (bytes/device)": generic_bytes}))
    if own_bytes >= generic_bytes:
        return partitioner.partition_generic(op, strategy)
    builder = partitioner.builder
    resharded = [reshard(builder, local, target, describe(op, index))
                 for index, (local, target) in enumerate(zip(operands, targets))]
    value = _masked_window(builder, op, resharded, owned)
    return [Local(value, result_sharding, op.result.type.shape)]


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
