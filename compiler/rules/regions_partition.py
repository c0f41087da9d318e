"""Partitioning the control flow ops (the regions family's scan, while and cond).

Each region is partitioned once, by the same partition rules as the program, into a per-device
region of a per-device op: a loop body's collectives stay inside the loop (they run on every
trip) and nothing is unrolled. Every loop-carried value gets one layout for the whole loop: the
layout its body result was propagated to (so the body ends without a reshard), else the op
result's. The initial value is resharded to it before the loop, and consumers of the result
reshard after it, so a carry is made consistent outside the loop whenever the body allows.
Scanned operands keep their loop dim whole (resharded before the loop if it came split); a cond
index and a while predicate are made replicated, since every device must take the same branch.
A scan carry that accumulates partial sums may stay pending over their axes for the whole loop,
so the all-reduce runs once after it (XLA's all-reduce code motion), when that saves traffic.
"""

from __future__ import annotations

from collections.abc import Sequence

from meshjit.ir import Block, DimSharding, Op, TensorSharding, Value
from meshjit.ir.ops.regions import scan_parts

from ..analysis.collectives import COLLECTIVES
from ..analysis.cost import value_bytes
from ..partitioning.reshard import reshard
from ..partitioning.spmd_builder import Local, SpmdBuilder, describe, local_type, replicated
from ..tables import partition_rules
from meshjit.ir.dtypes import is_float


def clean(sharding: TensorSharding) -> TensorSharding:
    """Closed dims and no pending reductions: the layout a value crosses a region boundary in."""
    return TensorSharding(sharding.mesh_name, tuple(DimSharding(dim.axes) for dim in sharding.dims),
                          sharding.replicated)


def _sliced(sharding: TensorSharding) -> TensorSharding:
    """A stacked value's layout without its leading loop dim (one step's slice)."""
    return TensorSharding(sharding.mesh_name, sharding.dims[1:], sharding.replicated)


def _stacked(sharding: TensorSharding) -> TensorSharding:
    """One step's layout with a whole leading loop dim in front."""
    return TensorSharding(sharding.mesh_name, (DimSharding(()),) + sharding.dims, sharding.replicated)


def _propagated(block: Block, value: Value) -> TensorSharding | None:
    """The sharding propagation gave ``value`` where ``block`` defines it (None if none)."""
    for index, arg in enumerate(block.args):
        if arg.id == value.id:
            return block.arg_sharding(index)
    for op in block.ops:
        for index, result in enumerate(op.results):
            if result.id == value.id:
                return op.sharding_of(index)
    return None


def _argument_layout(partitioner, op: Op, regions: Sequence[Block], position: int, operand: int) -> TensorSharding:
    """The layout argument ``position`` of ``regions`` takes, operand ``operand`` resharded to
    it before the op: what propagation gave the argument when every region agrees (so the
    reshard a body needs happens once, outside), else the operand's own layout."""
    found = {region.arg_sharding(position) for region in regions}
    if len(found) == 1 and None not in found:
        return clean(found.pop())
    return clean(partitioner.locals[op.operands[operand].id].sharding)


def _result_layout(partitioner, op: Op, index: int) -> TensorSharding:
    result = op.results[index]
    return clean(partitioner.sharding_of(result, op.sharding_of(index)))


def _loop_layout(partitioner, op: Op, body: Block, index: int) -> TensorSharding:
    """The layout of loop-carried value ``index`` (see the module docstring)."""
    inner = _propagated(body, body.returns[index])
    return clean(inner) if inner is not None else _result_layout(partitioner, op, index)


def _operand(partitioner, op: Op, index: int, target: TensorSharding | None = None) -> Local:
    """Operand ``index`` of ``op``, resharded before the op to ``target`` (default: its own
    layout without pending reductions)."""
    local = partitioner.locals[op.operands[index].id]
    return reshard(partitioner.builder, local, target or clean(local.sharding), describe(op, index))


def partition_region(partitioner, op: Op, block: Block, arg_layouts: Sequence[TensorSharding],
                     return_layouts: Sequence[TensorSharding], what: str) -> Block:
    """``block`` partitioned into a per-device block whose arguments arrive in ``arg_layouts``
    and whose results leave in ``return_layouts`` (resharded inside the region if need be)."""
    outer = partitioner.builder
    builder = SpmdBuilder(partitioner.mesh_name, partitioner.mesh, poison_padding=outer.poison_padding)
    partitioner.builder = builder
    try:
        args = []
        for arg, layout in zip(block.args, arg_layouts):
            value = Value.fresh(local_type(arg.type, layout, partitioner.mesh), arg.hint)
            partitioner.locals[arg.id] = Local(value, layout, arg.type.shape)
            args.append(value)
        for inner in block.ops:
            for value, local in zip(inner.results, partition_rules[inner.name](partitioner, inner)):
                partitioner.locals[value.id] = local
        where = f" at {op.location}" if op.location else ""
        returns = [reshard(builder, partitioner.locals[value.id], layout,
                           f"result {index} of the {what} of {op.name}{where}").value
                   for index, (value, layout) in enumerate(zip(block.returns, return_layouts))]
    finally:
        partitioner.builder = outer
    outer.collective_reasons.update(builder.collective_reasons)
    outer.rematerializations.extend(builder.rematerializations)
    return Block(tuple(args), tuple(builder.ops), tuple(returns), tuple(arg_layouts))


def _emit(partitioner, op: Op, operands: list[Local], regions, layouts) -> list[Local]:
    values = partitioner.builder.emit(op.name, [local.value for local in operands], dict(op.attrs),
                                      regions=tuple(regions), location=op.location)
    return [Local(value, layout, result.type.shape) for value, layout, result in zip(values, layouts, op.results)]


def _scan_with(partitioner, op: Op, carry_layouts: list[TensorSharding]) -> tuple[list[Local], Block]:
    """The per-device scan with its carries laid out as ``carry_layouts``, and its body."""
    body = op.regions[0]
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    consts, _, xs = scan_parts(range(len(op.operands)), num_consts, num_carry)
    operands = [_operand(partitioner, op, index, _argument_layout(partitioner, op, [body], index, index))
                for index in consts]
    operands += [_operand(partitioner, op, num_consts + index, layout) for index, layout in enumerate(carry_layouts)]
    for index in xs:
        found = body.arg_sharding(index)
        layout = clean(found) if found is not None else _sliced(clean(partitioner.locals[op.operands[index].id].sharding))
        operands.append(_operand(partitioner, op, index, _stacked(layout)))
    y_layouts = []
    for index in range(num_carry, len(op.results)):
        inner = _propagated(body, body.returns[index])
        y_layouts.append(clean(inner) if inner is not None else _sliced(_result_layout(partitioner, op, index)))
    arg_layouts = [local.sharding for local in operands[:num_consts + num_carry]]
    arg_layouts += [_sliced(local.sharding) for local in operands[num_consts + num_carry:]]
    region = partition_region(partitioner, op, body, arg_layouts, carry_layouts + y_layouts, "body")
    layouts = carry_layouts + [_stacked(layout) for layout in y_layouts]
    return _emit(partitioner, op, operands, [region], layouts), region


@partition_rules.register("scan")
def _partition_scan(partitioner, op: Op) -> list[Local]:
    """The scan with one layout per carry; a carry that accumulates partial sums (a gradient
    summed over the steps) is tried pending over their axes too, and kept so when its body then
    communicates less: the all-reduce runs once after the loop instead of on every step."""
    body = op.regions[0]
    carry_layouts = [_loop_layout(partitioner, op, body, index) for index in range(op.attrs["num_carry"])]
    before = _Snapshot(partitioner)
    results, region = _scan_with(partitioner, op, carry_layouts)
    pending = [_pending_layout(partitioner, body, index, layout) for index, layout in enumerate(carry_layouts)]
    if pending == carry_layouts:
        return results
    cost = _collective_bytes(region)
    before.restore(partitioner)
    pending_results, pending_region = _scan_with(partitioner, op, pending)
    if _collective_bytes(pending_region) < cost:
        return pending_results
    before.restore(partitioner)
    return _scan_with(partitioner, op, carry_layouts)[0]


class _Snapshot:
    """What the partitioner has emitted so far, to go back to after a trial."""

    def __init__(self, partitioner):
        builder = partitioner.builder
        self.ops = len(builder.ops)
        self.reasons = dict(builder.collective_reasons)
        self.rematerializations = len(builder.rematerializations)
        self.axis_indices = dict(builder._axis_index_cache)
        self.decisions = len(partitioner.chooser.decisions)

    def restore(self, partitioner) -> None:
        builder = partitioner.builder
        del builder.ops[self.ops:]
        builder.collective_reasons = dict(self.reasons)
        del builder.rematerializations[self.rematerializations:]
        builder._axis_index_cache = dict(self.axis_indices)
        del partitioner.chooser.decisions[self.decisions:]


def _pending_layout(partitioner, body: Block, index: int, layout: TensorSharding) -> TensorSharding:
    """``layout`` pending over the sum axes of the partial results the op computing carry
    ``index``'s next value read (as partitioned in the last trial), or ``layout`` if none."""
    returned = body.returns[index]
    if not is_float(returned.type.dtype) or layout.unreduced:
        return layout
    defining = next((op for op in body.ops if returned in op.results), None)
    if defining is None:
        return layout
    taken = layout.used_axes()
    axes = []
    for operand in defining.operands:
        local = partitioner.locals.get(operand.id)
        if local is None or local.sharding.reduction != "sum":
            continue
        axes += [axis for axis in local.unreduced if axis not in axes and axis not in taken]
    if not axes:
        return layout
    return TensorSharding(layout.mesh_name, layout.dims, layout.replicated, tuple(axes), "sum")


def _collective_bytes(region: Block) -> int:
    """What one trip of a loop body sends (operand bytes of its collectives)."""
    return sum(value_bytes(op.operands[0]) for op in region.walk() if op.name in COLLECTIVES)


@partition_rules.register("while")
def _partition_while(partitioner, op: Op) -> list[Local]:
    cond, body = op.regions
    num_consts = op.attrs["num_consts"]
    carry_layouts = [_loop_layout(partitioner, op, body, index) for index in range(len(op.results))]
    operands = [_operand(partitioner, op, index, _argument_layout(partitioner, op, op.regions, index, index))
                for index in range(num_consts)]
    operands += [_operand(partitioner, op, num_consts + index, layout) for index, layout in enumerate(carry_layouts)]
    arg_layouts = [local.sharding for local in operands]
    predicate = [replicated(partitioner.mesh_name, 0)]
    regions = [partition_region(partitioner, op, cond, arg_layouts, predicate, "cond"),
               partition_region(partitioner, op, body, arg_layouts, carry_layouts, "body")]
    return _emit(partitioner, op, operands, regions, carry_layouts)


@partition_rules.register("cond")
def _partition_cond(partitioner, op: Op) -> list[Local]:
    operands = [_operand(partitioner, op, 0, replicated(partitioner.mesh_name, 0))]
    operands += [_operand(partitioner, op, index, _argument_layout(partitioner, op, op.regions, index - 1, index))
                 for index in range(1, len(op.operands))]
    arg_layouts = [local.sharding for local in operands[1:]]
    result_layouts = [_result_layout(partitioner, op, index) for index in range(len(op.results))]
    regions = [partition_region(partitioner, op, branch, arg_layouts, result_layouts, f"branch {number}")
               for number, branch in enumerate(op.regions)]
    return _emit(partitioner, op, operands, regions, result_layouts)
