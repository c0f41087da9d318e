"""Partition rules for sort and top_k along a sharded dim, choosing the cheapest correct plan
by the bytes every device sends and saying so in ``explain()``.

sort: gather the sorted dim (the generic plan), or move its axes to another dim with an
all_to_all, sort whole rows locally, and leave the result there (the consumer's reshard moves
them back if it needs to; the price counts that too).
top_k: each device takes the top k of its own shard (padding sent to the bottom), the k
candidates per shard (values and global indices) are all-gathered, and the top k of those is
the answer: ``P * k`` elements per row gathered instead of the whole dim.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op, SymbolRef, Value
from meshjit.ir.dtypes import kind_of, to_numpy

from ..analysis.collectives import COLLECTIVES
from .factor_choice import Decision, Strategy, collective_cost
from .reshard import reshard
from ..tables import sharding_rules
from .spmd_builder import Local, SpmdBuilder, describe


def _count(partitioner, axes) -> int:
    return partitioner.builder.shard_count(axes)


def partition_sort(partitioner, op: Op) -> list[Local]:
    dim = op.attrs["dimension"]
    operands = [partitioner.locals[value.id] for value in op.operands]
    moving = operands[0].sharding.dims[dim].axes
    if not moving or any(local.unreduced for local in operands):
        return partitioner.partition_generic(op)
    rule = sharding_rules[op.name](op)
    wanted = partitioner.result_shardings(op)
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, operands, wanted)
    plans = {"gather the sorted dim": (strategy, chooser.price(op, rule, operands, wanted, strategy)[0])}
    shape = op.operands[0].type.shape
    taken = [axis for used in strategy.factor_axes.values() for axis in used]
    if any(axis.overlaps(other, partitioner.mesh) for axis in moving for other in taken):
        return partitioner.partition_generic(op, strategy)
    for other in range(len(shape)):
        factor = rule.operands[0][other][0]
        axes = list(strategy.factor_axes[factor]) + list(moving)
        if other == dim or shape[other] % _count(partitioner, axes):
            continue
        factor_axes = dict(strategy.factor_axes)
        factor_axes[factor] = axes
        factor_axes = chooser.valid(rule, factor_axes)
        if factor_axes[factor] != axes:
            continue
        candidate = Strategy(factor_axes)
        name = f"move {[axis.name for axis in moving]} to dim {other} (all_to_all), sort whole rows"
        plans[name] = (candidate, chooser.price(op, rule, operands, wanted, candidate)[0])
    chosen = min(plans, key=lambda name: plans[name][1])
    if len(plans) > 1:
        chooser.decisions.append(Decision(op.name, op.location, chosen,
                                          {f"{name} (bytes/device)": cost for name, (_, cost) in plans.items()}))
    return partitioner.partition_generic(op, plans[chosen][0])


def _lowest(dtype: str):
    numpy_dtype = to_numpy(dtype)
    return float("-inf") if kind_of(numpy_dtype) == "f" else int(np.iinfo(numpy_dtype).min)


def partition_top_k(partitioner, op: Op) -> list[Local]:
    (operand,) = [partitioner.locals[value.id] for value in op.operands]
    last = op.operands[0].type.rank - 1
    axes = operand.sharding.dims[last].axes
    k = op.attrs["k"]
    if not axes or operand.unreduced or any(axis.is_sub_axis for axis in axes) or not k \
            or k > operand.value.type.shape[last]:
        return partitioner.partition_generic(op)
    rule = sharding_rules[op.name](op)
    wanted = partitioner.result_shardings(op)
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, [operand], wanted)
    factor_axes = {factor: [axis for axis in used if not any(axis.overlaps(other, partitioner.mesh) for other in axes)]
                   for factor, used in strategy.factor_axes.items()}
    factor_axes[rule.operands[0][last][0]] = list(axes)
    target = chooser.operand_targets(rule, [operand], Strategy(factor_axes))[0]
    results = chooser.result_targets(op, rule, Strategy({**factor_axes, rule.operands[0][last][0]: []}))

    def emit(builder: SpmdBuilder) -> list[Local]:
        local = reshard(builder, operand, target, describe(op, 0))
        return _candidates_top_k(builder, op, local, axes, results)

    scratch = SpmdBuilder(partitioner.mesh_name, partitioner.mesh)
    locals_ = emit(scratch)
    for local, want in zip(locals_, wanted):
        reshard(scratch, local, want, "pricing")
    mine = sum(collective_cost(item, partitioner.mesh)[0] for item in scratch.ops if item.name in COLLECTIVES)
    generic = chooser.price(op, rule, [operand], wanted, strategy)[0]
    name = f"top {k} of each shard over {[axis.name for axis in axes]}, gather the candidates, top {k} again"
    chosen = name if mine <= generic else "gather the dim"
    chooser.decisions.append(Decision(op.name, op.location, chosen, {f"{name} (bytes/device)": mine,
                                                                    "gather the dim (bytes/device)": generic}))
    if chosen != name:
        return partitioner.partition_generic(op, strategy)
    return emit(partitioner.builder)


def _candidates_top_k(builder: SpmdBuilder, op: Op, local: Local, axes, results) -> list[Local]:
    value = local.value
    last = value.type.rank - 1
    size = value.type.shape[last]
    k = op.attrs["k"]
    value = builder.mask_padding(value, last, op.operands[0].type.shape[last], axes, _lowest(value.type.dtype))
    values, indices = builder.emit("top_k", [value], {"k": k}, location=op.location)
    offset = builder.broadcast_scalar(builder.shard_offset(axes, size), indices.type.shape)
    indices = builder.emit1("add", [indices, offset])
    names = tuple(axis.name for axis in axes)
    reason = f"top_k along a dim sharded over {list(names)}: each shard's {k} candidates"
    gather = {"axes": names, "dim": last, "mesh": SymbolRef(builder.mesh_name)}
    values = builder.emit1("all_gather", [values], gather, reason=reason)
    indices = builder.emit1("all_gather", [indices], gather, reason=reason)
    best, position = builder.emit("top_k", [values], {"k": k}, location=op.location)
    chosen = _take_last(builder, indices, position)
    return [Local(best, results[0], op.results[0].type.shape), Local(chosen, results[1], op.results[1].type.shape)]


def _take_last(builder: SpmdBuilder, values: Value, positions: Value) -> Value:
    rank = values.type.rank
    batch = tuple(range(rank - 1))
    vectors = builder.emit1("expand_dims", [positions], {"dimensions": (rank,)})
    return builder.emit1("gather", [values, vectors], {
        "offset_dims": (), "collapsed_slice_dims": (rank - 1,), "start_index_map": (rank - 1,),
        "operand_batching_dims": batch, "start_indices_batching_dims": batch, "slice_sizes": (1,) * rank,
        "mode": "clip"})
