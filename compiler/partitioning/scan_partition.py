"""Partitioning cumsum, cumprod, cummax and cummin along a sharded dim.

Two plans, priced by the bytes every device sends: scan where the shards lie (each device scans
its shard, the shards' totals are all-gathered and combined into an offset; the result keeps the
operand's layout and is resharded to what propagation chose for it), or, when that choice has
the scanned dim whole, reshard the operand to it first and scan locally (XLA's order: the
all_to_all the result needed anyway, and no totals).
"""

from __future__ import annotations

from meshjit.ir import Op, SymbolRef, Value

from ..analysis.collectives import COLLECTIVES
from .factor_choice import Decision, collective_cost
from .reshard import reshard
from .spmd_builder import Local, SpmdBuilder, describe, reduction_identity

# How each scan combines a shard's values with the total of the shards before it.
_SCAN_COMBINE = {"cumsum": ("add", "reduce_sum"), "cumprod": ("mul", "reduce_prod"),
                 "cummax": ("max", "reduce_max"), "cummin": ("min", "reduce_min")}


def scan_identity(name: str, dtype: str):
    """The value that leaves the scan's combination unchanged (what padding is filled with)."""
    if name == "cumprod":
        return 1
    return reduction_identity(_SCAN_COMBINE[name][1].removeprefix("reduce_"), dtype)


def partition_cumulative(partitioner, op: Op) -> list:
    """A scan along a sharded dim without gathering it (``scan_sharded``), or after moving the
    operand to the result's layout where that layout has the dim whole and sends fewer bytes.

    Where the scanned dim is whole, or the operand holds a pending reduction or sub-axes on that
    dim, the generic factor partitioner gathers the dim instead."""
    (local,) = [partitioner.locals[value.id] for value in op.operands]
    dim = op.attrs["axis"]
    axes = local.sharding.dims[dim].axes
    if not axes or local.unreduced or any(axis.is_sub_axis for axis in axes) \
            or local.value.type.shape[dim] == 0:
        return partitioner.partition_generic(op)
    wanted = partitioner.result_shardings(op)[0]
    if not wanted.dims[dim].axes and not wanted.unreduced:
        sharded, moved = _price_both(partitioner, op, local, wanted)
        partitioner.chooser.decisions.append(Decision(
            op.name, op.location, "scan the shards" if sharded <= moved else "move, then scan whole",
            {"scan the shards (bytes/device)": sharded, "move, then scan whole (bytes/device)": moved}))
        if moved < sharded:
            builder = partitioner.builder
            moved_local = reshard(builder, local, wanted, describe(op, 0))
            value = builder.emit1(op.name, [moved_local.value], dict(op.attrs), location=op.location)
            return [Local(value, moved_local.sharding, op.result.type.shape)]
    return [scan_sharded(partitioner.builder, op, local)]


def _price_both(partitioner, op: Op, local: Local, wanted) -> tuple[float, float]:
    """Bytes per device of scanning the shards and then resharding the result to ``wanted``,
    and of resharding the operand to ``wanted`` first."""
    mesh = partitioner.mesh

    def sent(scratch: SpmdBuilder) -> float:
        return sum(collective_cost(emitted, mesh)[0] for emitted in scratch.ops if emitted.name in COLLECTIVES)

    first = SpmdBuilder(partitioner.mesh_name, mesh)
    scanned = scan_sharded(first, op, local)
    reshard(first, Local(Value.fresh(scanned.value.type), scanned.sharding, scanned.global_shape), wanted, "pricing")
    second = SpmdBuilder(partitioner.mesh_name, mesh)
    reshard(second, local, wanted, "pricing")
    return sent(first), sent(second)


def scan_sharded(builder: SpmdBuilder, op: Op, local: Local) -> Local:
    """Each device scans its own shard, the shards' totals (one element per row) are all-gathered
    over the dim's axes, each device combines the totals of the shards before it (after it for
    ``reverse``) into one offset, and combines that offset into its local scan. The result keeps
    the operand's layout."""
    dim, reverse = op.attrs["axis"], op.attrs["reverse"]
    axes = local.sharding.dims[dim].axes
    combine, reduce = _SCAN_COMBINE[op.name]
    dtype = op.result.type.dtype
    fill = scan_identity(op.name, dtype)
    value = builder.mask_padding(local.value, dim, local.global_shape[dim], axes, fill)
    scanned = builder.emit1(op.name, [value], dict(op.attrs), location=op.location)
    shape = scanned.type.shape
    # the shard's total is its scan's last element (first, scanning in reverse)
    edge = 0 if reverse else shape[dim] - 1
    total = builder.emit1("slice", [scanned], {
        "start_indices": tuple(edge if d == dim else 0 for d in range(len(shape))),
        "limit_indices": tuple(edge + 1 if d == dim else size for d, size in enumerate(shape)),
        "strides": (1,) * len(shape)})
    names = [axis.name for axis in axes]
    totals = builder.emit1("all_gather", [total], {
        "axes": tuple(names), "dim": dim, "mesh": SymbolRef(builder.mesh_name)},
        reason=f"{op.name} along a dim sharded over {names}: the shards' totals")
    # keep the totals of the shards before this one (after it, in reverse)
    position = builder.broadcast_scalar(builder.shard_position(axes), totals.type.shape)
    shards = builder.emit1("iota", [], {"dtype": "i32", "shape": totals.type.shape, "dimension": dim})
    earlier = builder.emit1("compare", [shards, position], {"direction": "gt" if reverse else "lt"})
    identity = builder.broadcast_scalar(builder.scalar(fill, dtype), totals.type.shape)
    kept = builder.emit1("select", [earlier, totals, identity])
    offset = builder.emit1(reduce, [kept], {"axes": (dim,)})
    kept_dims = tuple(d for d in range(len(shape)) if d != dim)
    offset = builder.emit1("broadcast_in_dim", [offset], {"shape": shape, "broadcast_dimensions": kept_dims})
    result = builder.emit1(combine, [scanned, offset])
    return Local(result, local.sharding, op.result.type.shape)
