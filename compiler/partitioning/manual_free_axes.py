"""Partitioning a partial-manual shard_map body over its free (automatic) mesh axes.

With ``axis_names`` a subset of the mesh, a body's values are per-device along the manual axes
and whole along the others. Seen on its own, the body is a program over the free axes: its
arguments arrive split along them as the operands already are, its results leave as the
program around wants them, and propagation (with the per-device collectives' rules along free
axes, ``manual_body_rules``) lays out everything between. The partitioner then runs the body's
ops one by one as it runs any op, so the body works on its shards along the free axes instead
of repeating the whole work on every device along them.
"""

from __future__ import annotations

from meshjit.ir import Block, DimSharding, Func, Module, Op, TensorSharding
from meshjit.ir.ops.regions import manual_part

from ..propagation.manual_bodies import free_axes, free_part
from ..propagation.propagate_shardings import analyze_shardings, apply_shardings
from .reshard import reshard
from ..tables import partition_rules
from .spmd_builder import Local, describe


def _combined(manual: TensorSharding, free: TensorSharding) -> TensorSharding:
    """The global layout of a body value: each dim's manual axes, then its free ones."""
    dims = tuple(DimSharding(tuple(m.axes) + tuple(f.axes)) for m, f in zip(manual.dims, free.dims))
    return TensorSharding(manual.mesh_name, dims, unreduced=free.unreduced, reduction=free.reduction)


def partition_over_free_axes(partitioner, op: Op) -> list[Local] | None:
    """The manual computation's results with its body partitioned over the free axes, or None
    when the mesh has no free axis of more than one device."""
    mesh, manual_axes = partitioner.mesh, op.attrs["manual_axes"]
    if not free_axes(mesh, manual_axes):
        return None
    body = op.regions[0]
    mesh_name = partitioner.mesh_name
    operand_free = []
    for arg, value in zip(body.args, op.operands):
        outer = partitioner.locals[value.id].sharding
        operand_free.append(free_part(outer, manual_axes, arg.type.shape, mesh))
    result_free = []
    for index, (value, result) in enumerate(zip(body.returns, op.results)):
        wanted = op.sharding_of(index)
        result_free.append(TensorSharding.replicated_over(mesh_name, value.type.rank) if wanted is None
                           else free_part(wanted, manual_axes, value.type.shape, mesh))
    func = Func("main", Block(body.args, body.ops, body.returns), tuple(operand_free), tuple(result_free))
    sub_module = Module(((mesh_name, mesh),), (func,))
    propagated = apply_shardings(sub_module, analyze_shardings(sub_module)).main
    builder = partitioner.builder
    for index, (arg, value, sharding, free) in enumerate(zip(body.args, op.operands, op.attrs["in_shardings"],
                                                           operand_free)):
        target = _combined(manual_part(sharding, manual_axes), free)
        local = reshard(builder, partitioner.locals[value.id], target, describe(op, index))
        partitioner.locals[arg.id] = Local(local.value, free, arg.type.shape)
    for inner in propagated.body.ops:
        for value, local in zip(inner.results, partition_rules[inner.name](partitioner, inner)):
            partitioner.locals[value.id] = local
    results = []
    for index, (value, free, sharding, result) in enumerate(zip(body.returns, result_free, op.attrs["out_shardings"],
                                                                op.results)):
        local = reshard(builder, partitioner.locals[value.id], free, describe(op) + f" result {index}")
        layout = _combined(manual_part(sharding, manual_axes), free)
        results.append(Local(local.value, layout, result.type.shape))
    return results
