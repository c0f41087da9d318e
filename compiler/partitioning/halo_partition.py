"""Partition rules for slice, pad, rev and concatenate along dims the result is sharded on: each
device fetches the window of the operand its output shard needs (``halo.fetch``: the rows its
neighbours hold come by collective_permute) and applies the op to it locally. A concatenate of
slices of one value reads the slices' source directly, so ``jnp.roll`` (two slices, rotated)
is one cyclic fetch of the shifted rows. Changed dims the result keeps whole are computed whole
(the operand gathered there when it arrives split). The plan is priced against the generic
partitioner (gather, compute, slice) and the choice is kept for ``explain()``.
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import DimSharding, Op, TensorSharding, Value

from ..analysis.collectives import COLLECTIVES
from .factor_choice import Decision, collective_cost
from .halo import dilated_window, fetch, split_dim
from .halo_chains import THROUGH_PAD, slice_through_pad
from .reshard import reshard
from ..tables import sharding_rules
from .spmd_builder import Local, SpmdBuilder, describe


def _changed_dims(op: Op) -> list[int]:
    shape = op.operands[0].type.shape
    if op.name == "slice":
        return [dim for dim, entry in enumerate(zip(op.attrs["start_indices"], op.attrs["limit_indices"],
                                                    op.attrs["strides"])) if entry != (0, shape[dim], 1)]
    if op.name == "pad":
        return [dim for dim, config in enumerate(op.attrs["padding_config"]) if tuple(config) != (0, 0, 0)]
    if op.name == "rev":
        return sorted(op.attrs["dimensions"])
    return [op.attrs["dimension"]]


def _operand_target(local: Local, wanted: TensorSharding, changed) -> TensorSharding:
    """The operand's layout for a windowed op: the result's axes on every dim, except that a
    changed dim the operand holds whole stays whole (each device cuts its window locally)."""
    dims = []
    for dim, target in enumerate(wanted.dims):
        whole = dim in changed and not local.sharding.dims[dim].axes
        dims.append(DimSharding(() if whole else tuple(target.axes)))
    return TensorSharding(wanted.mesh_name, tuple(dims))


def _bytes(builder: SpmdBuilder, mesh, start: int) -> float:
    return sum(collective_cost(op, mesh)[0] for op in builder.ops[start:] if op.name in COLLECTIVES)


HALO = "fetch each shard's window (halo exchange)"
GENERIC = "gather the dim (generic)"


def choose_plan(partitioner, op: Op, plans: dict, sources=()) -> list[Local]:
    """Price each plan (``name -> emit(builder)``, emitted into a scratch builder with its
    results brought to the layouts propagation chose) against the generic partitioner, keep
    the choice for ``explain()``, and emit the cheapest (a plan before the generic one on ties).
    With ``sources`` (values the op's operands were sliced from, read through), the generic
    plan is priced as gathering them: what computing the slices whole takes."""
    wanted = partitioner.result_shardings(op)
    prices = {}
    for name, emit in plans.items():
        scratch = SpmdBuilder(partitioner.mesh_name, partitioner.mesh)
        for local, target in zip(emit(scratch), wanted):
            reshard(scratch, local, target, "pricing")
        prices[name] = _bytes(scratch, partitioner.mesh, 0)
    rule = sharding_rules[op.name](op)
    operands = [partitioner.locals[value.id] for value in op.operands]
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, operands, wanted, partitioner._passing(op, operands))
    generic_bytes = chooser.price(op, rule, operands, wanted, strategy)[0]
    dim = op.attrs.get("dimension")
    scratch = SpmdBuilder(partitioner.mesh_name, partitioner.mesh)
    for source in sources:
        local = partitioner.locals[source.id]
        dims = tuple(DimSharding(() if d == dim else tuple(target.axes)) for d, target in enumerate(wanted[0].dims))
        reshard(scratch, local, TensorSharding(local.sharding.mesh_name, dims), "pricing")
    prices[GENERIC] = generic_bytes + _bytes(scratch, partitioner.mesh, 0)
    chosen = min(prices, key=prices.get)
    chooser.decisions.append(Decision(op.name, op.location, chosen,
                                      {f"{name} (bytes/device)": price for name, price in prices.items()}))
    if chosen == GENERIC:
        return partitioner.partition_generic(op, strategy)
    return plans[chosen](partitioner.builder)


def emit_chosen(partitioner, op: Op, name: str, emit) -> list[Local]:
    """Emit the one plan ``name``, its price kept for ``explain()``."""
    scratch = SpmdBuilder(partitioner.mesh_name, partitioner.mesh)
    for local, target in zip(emit(scratch), partitioner.result_shardings(op)):
        reshard(scratch, local, target, "pricing")
    partitioner.chooser.decisions.append(Decision(op.name, op.location, name,
                                                  {f"{name} (bytes/device)": _bytes(scratch, partitioner.mesh, 0)}))
    return emit(partitioner.builder)


# --- slice, pad, rev ----------------------------------------------------------------------------


def _short_of(partitioner, sharding: TensorSharding, taken) -> TensorSharding:
    """``sharding`` with each dim's axes cut before the first one in ``taken``."""
    dims = []
    for dim in sharding.dims:
        kept = []
        for axis in dim.axes:
            if any(axis.overlaps(other, partitioner.mesh) for other in taken):
                break
            kept.append(axis)
        dims.append(DimSharding(tuple(kept)))
    return sharding.with_dims(dims)


def partition_windowed(partitioner, op: Op) -> list[Local]:
    """slice, pad and rev: per changed dim the result is sharded on, a fetch of the window of
    rows the output shard reads, then the op on that window."""
    (wanted,) = partitioner.result_shardings(op)
    local = partitioner.locals[op.operands[0].id]
    # a pending reduction rides through the data movement where the algebra allows
    passing = partitioner._passing(op, [partitioner.locals[value.id] for value in op.operands])
    if passing is not None:
        wanted = _short_of(partitioner, wanted, passing.axes)
    changed = _changed_dims(op)
    if not any(wanted.dims[dim].axes for dim in changed) or 0 in op.operands[0].type.shape \
            or 0 in op.result.type.shape:
        # NOTE: an empty operand or result has no rows to exchange: the generic plan builds it
        return partitioner.partition_generic(op)
    target = _operand_target(local, wanted, changed)
    result_sharding = wanted
    if passing is not None:
        target = replace(target, unreduced=local.unreduced, reduction=local.sharding.reduction)
        result_sharding = replace(wanted, unreduced=passing.axes, reduction=passing.result_reduction)

    def emit(builder: SpmdBuilder) -> list[Local]:
        operand = reshard(builder, local, target, describe(op, 0))
        fill = None
        if op.name == "pad":
            fill = reshard(builder, partitioner.locals[op.operands[1].id],
                           TensorSharding(wanted.mesh_name, ()), describe(op, 1)).value
        value = operand.value
        for dim in changed:
            value = _window_dim(builder, op, value, dim, target.dims[dim].axes, wanted.dims[dim].axes, fill)
        return [Local(value, result_sharding, op.result.type.shape)]

    through = slice_through_pad(partitioner, op, wanted, _strided) if op.name == "slice" and passing is None else None
    if through is not None:
        # NOTE: the pads' own partitioning is paid already and dies with them, so the other
        # plans' prices here would leave it out: reading through is a shift, never dearer
        return emit_chosen(partitioner, op, THROUGH_PAD, through)
    return choose_plan(partitioner, op, {HALO: emit})


def _window_dim(builder: SpmdBuilder, op: Op, value: Value, dim: int, source_axes, result_axes, fill) -> Value:
    """``op`` applied along one dim of the local ``value``: on the whole dim when the result
    keeps it whole, else on the window each output shard reads."""
    size = op.operands[0].type.shape[dim]
    if not result_axes:
        return _whole_dim(builder, op, value, dim, fill)
    source = split_dim(builder, size, source_axes)
    out = split_dim(builder, op.result.type.shape[dim], result_axes)
    zero = builder.scalar(0, value.type.dtype)
    reason = f"{op.name} along dim {dim} sharded over {[axis.name for axis in result_axes]}: halo rows"
    positions = range(out.count)
    if op.name == "slice":
        start, stride = op.attrs["start_indices"][dim], op.attrs["strides"][dim]
        starts = [start + stride * j * out.shard for j in positions]
        window = fetch(builder, value, dim, source, result_axes, starts, stride * (out.shard - 1) + 1, zero,
                       reason=reason)
        return _strided(builder, window, dim, 0, window.type.shape[dim], stride)
    if op.name == "rev":
        starts = [size - (j + 1) * out.shard for j in positions]
        window = fetch(builder, value, dim, source, result_axes, starts, out.shard, zero, reason=reason)
        return builder.emit1("rev", [window], {"dimensions": (dim,)})
    low, _, interior = op.attrs["padding_config"][dim]
    firsts = [j * out.shard - low for j in positions]
    return dilated_window(builder, value, dim, source, result_axes, firsts, out.shard, interior + 1, fill,
                          reason=reason)


def _whole_dim(builder: SpmdBuilder, op: Op, value: Value, dim: int, fill) -> Value:
    rank = value.type.rank
    if op.name == "rev":
        return builder.emit1("rev", [value], {"dimensions": (dim,)})
    if op.name == "pad":
        config = tuple(tuple(op.attrs["padding_config"][dim]) if d == dim else (0, 0, 0) for d in range(rank))
        return builder.emit1("pad", [value, fill], {"padding_config": config})
    start, limit, stride = (op.attrs[name][dim] for name in ("start_indices", "limit_indices", "strides"))
    return _strided(builder, value, dim, start, limit, stride)


def _strided(builder: SpmdBuilder, value: Value, dim: int, start: int, limit: int, stride: int) -> Value:
    shape = value.type.shape
    if (start, limit, stride) == (0, shape[dim], 1):
        return value
    return builder.emit1("slice", [value], {
        "start_indices": tuple(start if d == dim else 0 for d in range(len(shape))),
        "limit_indices": tuple(limit if d == dim else extent for d, extent in enumerate(shape)),
        "strides": tuple(stride if d == dim else 1 for d in range(len(shape)))})


# --- concatenate --------------------------------------------------------------------------------


def _slice_source(partitioner, value: Value, dim: int):
    """(source value, first row) when ``value`` is a stride-1 slice of another value along
    ``dim`` only; else (value, 0)."""
    producer = partitioner.producers.get(value.id)
    if producer is None or producer.name != "slice":
        return value, 0
    source_shape = producer.operands[0].type.shape
    for d, (start, limit, stride) in enumerate(zip(producer.attrs["start_indices"], producer.attrs["limit_indices"],
                                                   producer.attrs["strides"])):
        if stride != 1 or (d != dim and (start, limit) != (0, source_shape[d])):
            return value, 0
    return producer.operands[0], producer.attrs["start_indices"][dim]


def _pieces(partitioner, op: Op, dim: int) -> list[tuple[Value, int, int, int]]:
    """Per operand: (value read, its first row there, its offset in the result, its size)."""
    pieces, offset = [], 0
    for operand in op.operands:
        source, first = _slice_source(partitioner, operand, dim)
        size = operand.type.shape[dim]
        pieces.append((source, first, offset, size))
        offset += size
    return pieces


def _rotation(pieces, size: int) -> tuple[Value, int] | None:
    """(source, shift) when the pieces are all of one value's rows in cyclic order (a roll)."""
    source = pieces[0][0]
    if any(piece[0] is not source for piece in pieces) or sum(piece[3] for piece in pieces) != size:
        return None
    expected = pieces[0][1]
    for _, first, _, length in pieces:
        if first != expected % size:
            return None
        expected = first + length
    return source, pieces[0][1]


def partition_concatenate(partitioner, op: Op) -> list[Local]:
    dim = op.attrs["dimension"]
    (wanted,) = partitioner.result_shardings(op)
    axes = wanted.dims[dim].axes
    if not axes or op.result.type.shape[dim] == 0:
        # NOTE: an empty result reads no rows: the generic plan builds it without a halo
        return partitioner.partition_generic(op)
    pieces = _pieces(partitioner, op, dim)
    out_size = op.result.type.shape[dim]
    rotation = _rotation(pieces, out_size) if pieces[0][0].type.shape[dim] == out_size else None

    def emit(builder: SpmdBuilder) -> list[Local]:
        out = split_dim(builder, out_size, axes)
        reason = f"concatenate along dim {dim} sharded over {[axis.name for axis in axes]}: halo rows"
        if rotation is not None:
            source, shift = rotation
            local = reshard(builder, partitioner.locals[source.id],
                            _source_target(partitioner.locals[source.id], wanted, dim), describe(op, 0))
            split = split_dim(builder, source.type.shape[dim], local.sharding.dims[dim].axes)
            starts = [j * out.shard + shift for j in range(out.count)]
            value = fetch(builder, local.value, dim, split, axes, starts, out.shard, None, cyclic=True, reason=reason)
            return [Local(value, wanted, op.result.type.shape)]
        value = None
        for index, (source, first, offset, size) in enumerate(pieces):
            starts = [j * out.shard - offset + first for j in range(out.count)]
            if all(start + out.shard <= first or start >= first + size for start in starts):
                continue
            local = reshard(builder, partitioner.locals[source.id],
                            _source_target(partitioner.locals[source.id], wanted, dim), describe(op, index))
            split = split_dim(builder, source.type.shape[dim], local.sharding.dims[dim].axes)
            zero = builder.scalar(0, local.value.type.dtype)
            window = fetch(builder, local.value, dim, split, axes, starts, out.shard, zero, reason=reason)
            value = window if value is None else _choose_rows(builder, dim, axes, out, offset, size, window, value)
        return [Local(value, wanted, op.result.type.shape)]

    sources = {piece[0].id: piece[0] for piece, operand in zip(pieces, op.operands) if piece[0] is not operand}
    return choose_plan(partitioner, op, {HALO: emit}, list(sources.values()))


def _source_target(local: Local, wanted: TensorSharding, dim: int) -> TensorSharding:
    """A concatenated operand's layout: the result's on the other dims; along ``dim`` its own
    axes when they are the result's, whole otherwise (each device cuts its window locally)."""
    own = local.sharding.dims[dim].axes
    dims = [DimSharding(tuple(target.axes)) for target in wanted.dims]
    dims[dim] = DimSharding(tuple(own) if tuple(own) == tuple(wanted.dims[dim].axes) else ())
    return TensorSharding(wanted.mesh_name, tuple(dims))


def _choose_rows(builder: SpmdBuilder, dim: int, axes, out, offset: int, size: int, window: Value,
                 value: Value) -> Value:
    """``window``'s rows where the output position lies in ``[offset, offset + size)``,
    ``value``'s elsewhere."""
    shape = window.type.shape
    iota = builder.emit1("iota", [], {"dtype": "i32", "shape": shape, "dimension": dim})
    first = builder.broadcast_scalar(builder.shard_offset(axes, out.shard), shape)
    positions = builder.emit1("add", [iota, first])
    low = builder.emit1("compare", [positions, builder.broadcast_scalar(builder.scalar(offset, "i32"), shape)],
                        {"direction": "ge"})
    high = builder.emit1("compare", [positions, builder.broadcast_scalar(builder.scalar(offset + size, "i32"), shape)],
                         {"direction": "lt"})
    inside = builder.emit1("and", [low, high])
    return builder.emit1("select", [inside, window, value])
