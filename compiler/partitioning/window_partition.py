"""Partition rules for convolutions and window reductions with a sharded spatial (windowed) dim:
the output keeps the input's sharding there, and each device fetches the input window its
output shard reads (its own rows plus halos from its neighbours, ``halo.dilated_window``), then
runs the op on that window with no padding on the dim. The other dims follow the generic
factor partitioner (a convolution's input features may stay split, leaving partial sums).
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import DimSharding, Op, TensorSharding, Value
from meshjit.ir.ops.windows import dilated

from .factor_choice import Strategy
from .halo import dilated_window, split_dim
from .halo_partition import HALO, choose_plan
from .reshard import reshard
from ..tables import sharding_rules
from .spmd_builder import Local, describe


def _cut(partitioner, factor_axes, taken) -> dict[int, list]:
    """Factor axes cut before the first axis in ``taken``."""
    result = {}
    for factor, axes in factor_axes.items():
        kept = []
        for axis in axes:
            if any(axis.overlaps(other, partitioner.mesh) for other in taken):
                break
            kept.append(axis)
        result[factor] = kept
    return result


def _with_dim(sharding: TensorSharding, dim: int, axes) -> TensorSharding:
    dims = list(sharding.dims)
    dims[dim] = DimSharding(tuple(axes))
    return replace(sharding, dims=tuple(dims))


def _windowed_strategy(partitioner, op: Op, spatial_factors: dict[int, int]):
    """The generic strategy for the op's other factors, with each windowed factor taking the
    axes the result is sharded on there; None when no windowed dim of the result is sharded."""
    rule = sharding_rules[op.name](op)
    operands = [partitioner.locals[value.id] for value in op.operands]
    (wanted,) = partitioner.result_shardings(op)
    sharded = {factor: list(wanted.dims[dim].axes) for factor, dim in spatial_factors.items()
               if wanted.dims[dim].axes}
    if not sharded:
        return None
    passing = partitioner._passing(op, operands)
    strategy = partitioner.chooser.choose(op, rule, operands, [wanted], passing)
    factor_axes = _cut(partitioner, strategy.factor_axes, [axis for axes in sharded.values() for axis in axes])
    factor_axes.update(sharded)
    return rule, operands, Strategy(partitioner.chooser.valid(rule, factor_axes), strategy.passing)


def _fetched_input(partitioner, op: Op, builder, local: Local, target: TensorSharding, dim: int, out_dim: int,
                   result: TensorSharding, stride: int, low: int, span: int, dilation: int, fill: Value) -> Value:
    """The window of input rows along ``dim`` each output shard (split along ``out_dim`` like
    ``result``) reads: from dilated position ``stride * first_output - low``, ``stride * (t - 1) +
    span`` rows."""
    axes = result.dims[out_dim].axes
    out = split_dim(builder, op.result.type.shape[out_dim], axes)
    source = split_dim(builder, op.operands[0].type.shape[dim], target.dims[dim].axes)
    firsts = [stride * j * out.shard - low for j in range(out.count)]
    length = stride * (out.shard - 1) + span
    reason = f"{op.name} along dim {dim} sharded over {[axis.name for axis in axes]}: halo rows"
    return dilated_window(builder, local.value, dim, source, axes, firsts, length, dilation, fill, reason=reason)


def partition_conv(partitioner, op: Op) -> list[Local]:
    lhs_spec, out_spec = op.attrs["lhs_spec"], op.attrs["out_spec"]
    rule = sharding_rules[op.name](op)
    spatial = {rule.results[0][out_spec[2 + index]][0]: out_spec[2 + index] for index in range(len(lhs_spec) - 2)}
    plans = {}
    chosen = _windowed_strategy(partitioner, op, spatial)
    if chosen is not None:
        plans[HALO] = lambda builder: _conv_halo(partitioner, op, builder, *chosen)
    split = _kernel_split(partitioner, op, rule)
    if split is not None:
        plans[KERNEL_SPLIT] = split
    if not plans:
        return partitioner.partition_generic(op)
    return choose_plan(partitioner, op, plans)


KERNEL_SPLIT = "convolve each kernel part with the input under it, partial sums"


def _conv_halo(partitioner, op: Op, builder, rule, operands, strategy) -> list[Local]:
    lhs_spec, out_spec = op.attrs["lhs_spec"], op.attrs["out_spec"]
    chooser = partitioner.chooser
    targets = chooser.operand_targets(rule, operands, strategy)
    for index in range(len(lhs_spec) - 2):
        dim = lhs_spec[2 + index]
        if not operands[0].sharding.dims[dim].axes:
            # NOTE: an input held whole along the dim: each device cuts its window locally
            targets[0] = _with_dim(targets[0], dim, ())
    resharded = [reshard(builder, local, target, describe(op, index))
                 for index, (local, target) in enumerate(zip(operands, targets))]
    resharded = partitioner._mask_partial_padding(op, rule, strategy.factor_axes, resharded, builder)
    (result,) = chooser.result_targets(op, rule, strategy)
    lhs = resharded[0]
    attrs = dict(op.attrs)
    padding, lhs_dilation = list(attrs["padding"]), list(attrs["lhs_dilation"])
    zero = builder.scalar(0, lhs.value.type.dtype)
    value = lhs.value
    kernel_shape = op.operands[1].type.shape
    for index in range(len(lhs_spec) - 2):
        dim, out_dim = lhs_spec[2 + index], out_spec[2 + index]
        if not result.dims[out_dim].axes:
            continue
        span = dilated(kernel_shape[op.attrs["rhs_spec"][2 + index]], attrs["rhs_dilation"][index])
        value = _fetched_input(partitioner, op, builder, Local(value, lhs.sharding, lhs.global_shape), targets[0],
                               dim, out_dim, result, attrs["window_strides"][index], padding[index][0], span,
                               lhs_dilation[index], zero)
        padding[index], lhs_dilation[index] = (0, 0), 1
    attrs.update(padding=tuple(padding), lhs_dilation=tuple(lhs_dilation))
    local = builder.emit1(op.name, [value, resharded[1].value], attrs, location=op.location)
    return [Local(local, result, op.result.type.shape)]


def _kernel_split(partitioner, op: Op, rule):
    """A convolution whose kernel arrives split along a spatial dim the output keeps whole (the
    weight gradient of a convolution with that spatial dim sharded, whose "kernel" is the
    output's cotangent): each device convolves its kernel rows with the input window under
    them (a halo fetch) and the results are partial sums over the kernel's axes. Returns the
    plan's emit function, or None when no kernel dim arrives split."""
    attrs = op.attrs
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    operands = [partitioner.locals[value.id] for value in op.operands]
    (wanted,) = partitioner.result_shardings(op)
    splits = {index: operands[1].sharding.dims[rhs_spec[2 + index]].axes for index in range(len(lhs_spec) - 2)
              if operands[1].sharding.dims[rhs_spec[2 + index]].axes and attrs["lhs_dilation"][index] == 1}
    if not splits or any(local.unreduced for local in operands) or op.result.type.dtype == "bool":
        return None
    index, axes = next(iter(splits.items()))
    if wanted.dims[out_spec[2 + index]].axes:
        wanted = _with_dim(wanted, out_spec[2 + index], ())
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, operands, [wanted])
    factor_axes = chooser.valid(rule, _cut(partitioner, strategy.factor_axes, axes))
    targets = chooser.operand_targets(rule, operands, Strategy(factor_axes))
    lhs_dim, rhs_dim = lhs_spec[2 + index], rhs_spec[2 + index]
    own = operands[0].sharding.dims[lhs_dim].axes
    targets[0] = _with_dim(targets[0], lhs_dim, axes if tuple(own) == tuple(axes) else ())
    targets[1] = _with_dim(targets[1], rhs_dim, axes)
    (result,) = chooser.result_targets(op, rule, Strategy(factor_axes))
    result = replace(result, unreduced=tuple(result.unreduced) + tuple(axes), reduction="sum")

    def emit(builder) -> list[Local]:
        lhs, rhs = (reshard(builder, local, target, describe(op, position))
                    for position, (local, target) in enumerate(zip(operands, targets)))
        (lhs, rhs) = partitioner._mask_partial_padding(op, rule, factor_axes, [lhs, rhs], builder)
        kernel = rhs.value
        kernel = builder.mask_padding(kernel, rhs_dim, op.operands[1].type.shape[rhs_dim], axes, 0)
        rows = kernel.type.shape[rhs_dim]
        stride, dilation = attrs["window_strides"][index], attrs["rhs_dilation"][index]
        count = op.result.type.shape[out_spec[2 + index]]
        source = split_dim(builder, op.operands[0].type.shape[lhs_dim], targets[0].dims[lhs_dim].axes)
        firsts = [dilation * j * rows - attrs["padding"][index][0] for j in range(builder.shard_count(axes))]
        length = dilation * (rows - 1) + stride * (count - 1) + 1
        reason = f"{op.name} with its kernel split over {[axis.name for axis in axes]}: the input under each part"
        window = dilated_window(builder, lhs.value, lhs_dim, source, axes, firsts, length, 1,
                                builder.scalar(0, lhs.value.type.dtype), reason=reason)
        local_attrs = dict(attrs)
        padding = list(attrs["padding"])
        padding[index] = (0, 0)
        local_attrs["padding"] = tuple(padding)
        value = builder.emit1(op.name, [window, kernel], local_attrs, location=op.location)
        return [Local(value, result, op.result.type.shape)]

    return emit


def windowed_dims(op: Op) -> list[int]:
    """The dims a window reduction's windows span (or pad, stride or dilate)."""
    return [dim for dim in range(op.operands[0].type.rank)
            if (op.attrs["window_dimensions"][dim], op.attrs["window_strides"][dim], tuple(op.attrs["padding"][dim]),
                op.attrs["base_dilation"][dim]) != (1, 1, (0, 0), 1)]


def partition_reduce_window(partitioner, op: Op) -> list[Local]:
    windowed = windowed_dims(op)
    rule = sharding_rules[op.name](op)
    chosen = _windowed_strategy(partitioner, op, {rule.results[0][dim][0]: dim for dim in windowed})
    if chosen is None:
        return partitioner.partition_generic(op)
    rule, operands, strategy = chosen
    chooser, builder = partitioner.chooser, partitioner.builder
    targets = chooser.operand_targets(rule, operands, strategy)
    for dim in windowed:
        if not operands[0].sharding.dims[dim].axes:
            targets[0] = _with_dim(targets[0], dim, ())
    operand, init = (reshard(builder, local, target, describe(op, index))
                     for index, (local, target) in enumerate(zip(operands, targets)))
    (result,) = chooser.result_targets(op, rule, strategy)
    attrs = dict(op.attrs)
    padding, base_dilation = list(attrs["padding"]), list(attrs["base_dilation"])
    value = operand.value
    for dim in windowed:
        if not result.dims[dim].axes:
            continue
        span = dilated(attrs["window_dimensions"][dim], attrs["window_dilation"][dim])
        value = _fetched_input(partitioner, op, builder, Local(value, operand.sharding, operand.global_shape),
                               targets[0], dim, dim, result, attrs["window_strides"][dim], padding[dim][0], span,
                               base_dilation[dim], init.value)
        padding[dim], base_dilation[dim] = (0, 0), 1
    attrs.update(padding=tuple(padding), base_dilation=tuple(base_dilation))
    local = builder.emit1(op.name, [value, init.value], attrs, location=op.location)
    return [Local(local, result, op.result.type.shape)]
