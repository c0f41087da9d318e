"""Partitioning gather and the scatters where an indexed dim of the operand is sharded, without
gathering it (GSPMD's "trivially sliced operand" strategy; Megatron's vocab-parallel embedding).

Gather: each device takes, from the rows it holds, the elements whose indices fall in them, and
zeros elsewhere; the result is pending a sum over the row axes, reduced (all_reduce or
reduce_scatter) where a consumer needs it. Scatter: each device applies the updates that land
in the rows it holds and drops the others, so the result keeps the operand's layout; sharded
updates of scatter_add/min/max leave partial results (a sum, min or max over their axes).
Each plan is priced against gathering the operand (the generic partitioner) by the bytes every
device sends, and the choice is kept for ``explain()``.
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Op, TensorSharding, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.gather_scatter import GatherDims, ScatterDims
from meshjit.ir.ops.indexing import fill_value
from meshjit.ir.printer import format_axis

from ..analysis.collectives import COLLECTIVES
from .factor_choice import Decision, Strategy, collective_cost
from .reshard import reshard
from ..tables import sharding_rules
from .spmd_builder import Local, SpmdBuilder, describe, local_type

# the reduction a scatter's partial results combine with, where the scatter has one
PARTIAL = {"scatter_add": "sum", "scatter_min": "min", "scatter_max": "max"}


def _price(partitioner, operands: list[Local], targets, results: list[tuple[Value, TensorSharding]], wanted) -> float:
    """Bytes each device sends to lay the operands out as ``targets`` and to bring the results,
    laid out as given, to ``wanted``."""
    scratch = SpmdBuilder(partitioner.mesh_name, partitioner.mesh)
    for local, target in zip(operands, targets):
        reshard(scratch, local, target, "pricing")
    for (value, sharding), target in zip(results, wanted):
        fresh = Value.fresh(local_type(value.type, sharding, partitioner.mesh))
        reshard(scratch, Local(fresh, sharding, value.type.shape), target, "pricing")
    return sum(collective_cost(emitted, partitioner.mesh)[0] for emitted in scratch.ops if emitted.name in COLLECTIVES)


def _axes_text(axes) -> str:
    return ", ".join(format_axis(axis) for axis in axes)


def _overlaps(partitioner, axis, used) -> bool:
    return any(axis.overlaps(other, partitioner.mesh) for other in used)


class _IndexColumns:
    """The index vectors of a local indices value, one column per component, and the i32
    arithmetic a partition rule does on them."""

    def __init__(self, builder: SpmdBuilder, indices: Value):
        self.builder = builder
        self.shape = indices.type.shape
        self.dtype = indices.type.dtype
        rank = len(self.shape)
        self.columns = []
        for component in range(self.shape[-1]):
            self.columns.append(builder.emit1("slice", [indices], {
                "start_indices": (0,) * (rank - 1) + (component,),
                "limit_indices": self.shape[:-1] + (component + 1,), "strides": (1,) * rank}))

    def constant(self, number) -> Value:
        return self.builder.broadcast_scalar(self.builder.scalar(number, self.dtype), self.columns[0].type.shape)

    def spread(self, scalar: Value) -> Value:
        if scalar.type.dtype != self.dtype:
            scalar = self.builder.emit1("convert", [scalar], {"new_dtype": self.dtype})
        return self.builder.broadcast_scalar(scalar, self.columns[0].type.shape)

    def compare(self, left: Value, direction: str, right: Value) -> Value:
        return self.builder.emit1("compare", [left, right], {"direction": direction})

    def both(self, left: Value | None, right: Value) -> Value:
        return right if left is None else self.builder.emit1("and", [left, right])

    def clamp(self, component: int, low: int, high: int) -> None:
        column = self.columns[component]
        self.columns[component] = self.builder.emit1("clamp", [self.constant(low), column, self.constant(high)])

    def inside(self, component: int, low: int, high: int) -> Value:
        """Whether a column lies in ``[low, high]``."""
        column = self.columns[component]
        return self.both(self.compare(column, "ge", self.constant(low)), self.compare(column, "le", self.constant(high)))

    def joined(self) -> Value:
        if len(self.columns) == 1:
            return self.columns[0]
        return self.builder.emit1("concatenate", self.columns, {"dimension": len(self.shape) - 1})

    def batch_mask(self, mask: Value, shape, batch_positions) -> Value:
        """A ``batch + (1,)`` mask broadcast over a result of ``shape`` whose batch dims sit at
        ``batch_positions``."""
        flat = self.builder.emit1("reshape", [mask], {"new_sizes": self.shape[:-1]})
        return self.builder.emit1("broadcast_in_dim", [flat], {"shape": tuple(shape),
                                                               "broadcast_dimensions": tuple(batch_positions)})


def _localize(columns: _IndexColumns, builder: SpmdBuilder, component: int, axes, local_size: int) -> Value:
    """Turn a column of global indices along a dim split over ``axes`` into this device's local
    indices; returns whether they fall in this device's rows."""
    offset = columns.spread(builder.shard_offset(axes, local_size))
    columns.columns[component] = builder.emit1("sub", [columns.columns[component], offset])
    return columns.inside(component, 0, local_size - 1)


# --- gather ---------------------------------------------------------------------------------------


def _owned_gather_dims(partitioner, op: Op, operand: Local) -> dict[int, list]:
    """The indexed operand dims (collapsed, slice size 1) that arrive sharded: each device can
    take from its own rows."""
    dims = GatherDims.of(op.attrs)
    used, owned = [], {}
    for dim in dims.start_index_map:
        axes = list(operand.sharding.dims[dim].axes)
        if not axes or dim not in dims.collapsed_slice_dims or any(_overlaps(partitioner, axis, used) for axis in axes):
            continue
        owned[dim] = axes
        used += axes
    return owned


def _around(partitioner, factor_axes, taken) -> dict[int, list]:
    """``factor_axes`` with each factor's axes cut before the first one in ``taken``."""
    result = {}
    for factor, axes in factor_axes.items():
        kept = []
        for axis in axes:
            if _overlaps(partitioner, axis, taken):
                break
            kept.append(axis)
        result[factor] = kept
    return result


def partition_gather(partitioner, op: Op) -> list[Local]:
    operands = [partitioner.locals[value.id] for value in op.operands]
    operand = operands[0]
    if operand.unreduced or op.result.type.dtype == "bool":
        return partitioner.partition_generic(op)
    rule = sharding_rules[op.name](op)
    wanted = partitioner.result_shardings(op)
    chooser = partitioner.chooser
    strategy = chooser.choose(op, rule, operands, wanted)
    owned = _owned_gather_dims(partitioner, op, operand)
    if not owned:
        return partitioner.partition_generic(op, strategy)
    return partition_masked(partitioner, op, operands, rule, wanted, strategy, owned,
                            "each device takes the indices in its rows over {}, then a sum",
                            lambda builder, resharded, owned, result_sharding: _masked_gather(
                                builder, op, resharded, owned, result_sharding, partitioner.mesh))


def partition_masked(partitioner, op: Op, operands: list[Local], rule, wanted, strategy, owned, plan: str,
                     emit) -> list[Local]:
    """The plan a lookup along sharded dims shares (gather, dynamic_slice): the ``owned`` operand
    dims keep their axes, each device looks up in its own rows under a mask (``emit(builder,
    resharded operands, owned, result sharding)`` builds the local op) and the result is pending a
    sum over those axes. Priced against ``strategy``'s generic plan; ``plan`` (with ``{}`` for the
    axes) names the choice in ``explain()``; ``rule`` and ``wanted`` are the op's sharding rule and
    result shardings, as the caller chose ``strategy`` with them."""
    chooser = partitioner.chooser
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
    mine = plan.format(_axes_text(pending))
    chooser.decisions.append(Decision(op.name, op.location, mine if own_bytes < generic_bytes else "gather the rows",
                                      {f"{mine} (bytes/device)": own_bytes,
                                       "gather the rows (bytes/device)": generic_bytes}))
    if own_bytes >= generic_bytes:
        return partitioner.partition_generic(op, strategy)
    builder = partitioner.builder
    resharded = [reshard(builder, local, target, describe(op, index))
                 for index, (local, target) in enumerate(zip(operands, targets))]
    value = emit(builder, resharded, owned, result_sharding)
    return [Local(value, result_sharding, op.result.type.shape)]


def _masked_gather(builder: SpmdBuilder, op: Op, operands: list[Local], owned, result_sharding, mesh) -> Value:
    """The local gather from this device's rows, zero where an index is not in them; in mode
    "fill" the first device along the row axes contributes the fill value of windows out of range."""
    dims = GatherDims.of(op.attrs)
    operand, indices = operands
    global_shape = op.operands[0].type.shape
    columns = _IndexColumns(builder, indices.value)
    fill_mode = op.attrs["mode"] == "fill"
    fits = mine = None
    for component, dim in enumerate(dims.start_index_map):
        high = global_shape[dim] - dims.slice_sizes[dim]
        if fill_mode:
            fits = columns.both(fits, columns.inside(component, 0, high))
        columns.clamp(component, 0, high)
        if dim in owned:
            local_size = operand.value.type.shape[dim]
            mine = columns.both(mine, _localize(columns, builder, component, owned[dim], local_size))
            columns.clamp(component, 0, local_size - 1)
    local_shape = result_sharding.local_shape(op.result.type.shape, mesh)
    attrs = dict(op.attrs)
    attrs["mode"] = "clip"
    attrs["slice_sizes"] = tuple(operand.value.type.shape[dim] if size == global_shape[dim] else size
                                 for dim, size in enumerate(dims.slice_sizes))
    attrs.pop("fill_value", None)
    taken = builder.emit1("gather", [operand.value, columns.joined()], attrs, location=op.location)
    batch_positions = dims.batch_positions(len(local_shape))
    dtype = taken.type.dtype
    zero = builder.broadcast_scalar(builder.scalar(0, dtype), local_shape)
    value = builder.emit1("select", [columns.batch_mask(mine, local_shape, batch_positions), taken, zero])
    if not fill_mode:
        return value
    pending = [axis for axes in owned.values() for axis in axes]
    first = builder.emit1("compare", [builder.shard_position(pending), builder.scalar(0, "i32")], {"direction": "eq"})
    fill = builder.broadcast_scalar(builder.scalar(fill_value(op.attrs, to_numpy(dtype)), dtype), local_shape)
    filler = builder.emit1("select", [builder.broadcast_scalar(first, local_shape), fill, zero])
    return builder.emit1("select", [columns.batch_mask(fits, local_shape, batch_positions), value, filler])


# --- scatter --------------------------------------------------------------------------------------


def _scatter_candidates(partitioner, op: Op, rule, operands: list[Local], wanted: TensorSharding) -> dict:
    """Factor axes worth pricing, by name: the updates' owners apply them; partial results over
    the updates' axes (scatter_add/min/max); the operand's indexed dims and the updates
    gathered."""
    chooser = partitioner.chooser
    dims = ScatterDims.of(op.attrs)
    rank = op.operands[0].type.rank
    window = dims.window_sizes(rank, op.operands[2].type.shape)
    follow = chooser._result_axes(rule, [wanted])
    indexed = {rule.operands[0][dim][0] for dim in range(rank) if rule.kinds[rule.operands[0][dim][0]] == "pass"
               and (dim in dims.scatter_dims_to_operand_dims or dim in dims.inserted_window_dims
                    or window[dim] != op.operands[0].type.shape[dim])}
    ownable = {rule.operands[0][dim][0] for dim in dims.scatter_dims_to_operand_dims if window[dim] == 1} & indexed
    partial_ok = op.name in PARTIAL and op.result.type.dtype != "bool"
    batch_factors = [factor for factor, kind in enumerate(rule.kinds) if kind == "reduction"]

    def with_batch(factor_axes, allowed: bool):
        factor_axes = {factor: list(axes) for factor, axes in factor_axes.items()}
        used = [axis for axes in factor_axes.values() for axis in axes]
        for factor in batch_factors:
            lists = [chooser.project(local.sharding, dims_factors, rule).get(factor, [])
                     for local, dims_factors in zip(operands[1:], rule.operands[1:])]
            axes = [axis for axis in max(lists, key=len) if not _overlaps(partitioner, axis, used)] if allowed else []
            factor_axes[factor] = axes
            used += axes
        return factor_axes

    owners = {factor: (axes if factor not in indexed or factor in ownable else []) for factor, axes in follow.items()}
    bare = {factor: ([] if factor in indexed else axes) for factor, axes in follow.items()}
    candidates = {"each device applies the updates in its rows": with_batch(owners, partial_ok)}
    if partial_ok:
        candidates["partial results over the updates' axes"] = with_batch(bare, True)
    candidates["gather the updates and the rows"] = with_batch(bare, False)
    distinct = {}
    for name, factor_axes in candidates.items():
        factor_axes = chooser.valid(rule, factor_axes)
        if factor_axes not in distinct.values():
            distinct[name] = factor_axes
    return distinct


def partition_scatter(partitioner, op: Op) -> list[Local]:
    operands = [partitioner.locals[value.id] for value in op.operands]
    rule = sharding_rules[op.name](op)
    (wanted,) = partitioner.result_shardings(op)
    chooser = partitioner.chooser
    plans = {}
    for name, factor_axes in _scatter_candidates(partitioner, op, rule, operands, wanted).items():
        targets = chooser.operand_targets(rule, operands, Strategy(factor_axes))
        pending = tuple(axis for factor, kind in enumerate(rule.kinds) if kind == "reduction"
                        for axis in factor_axes[factor])
        result = chooser.required_sharding(rule, rule.results[0], factor_axes)
        if pending:
            result = replace(result, unreduced=pending, reduction=PARTIAL[op.name])
        plans[name] = (factor_axes, targets, result, _price(partitioner, operands, targets, [(op.result, result)],
                                                           [wanted]))
    chosen = min(plans, key=lambda name: plans[name][3])
    if len(plans) > 1:
        chooser.decisions.append(Decision(op.name, op.location, chosen,
                                          {f"{name} (bytes/device)": plan[3] for name, plan in plans.items()}))
    factor_axes, targets, result_sharding, _ = plans[chosen]
    builder = partitioner.builder
    resharded = [reshard(builder, local, target, describe(op, index))
                 for index, (local, target) in enumerate(zip(operands, targets))]
    value = _owned_scatter(builder, op, resharded, result_sharding)
    return [Local(value, result_sharding, op.result.type.shape)]


def _owned_scatter(builder: SpmdBuilder, op: Op, operands: list[Local], result_sharding: TensorSharding) -> Value:
    """The local scatter: indices made local along the sharded indexed dims (updates outside
    this device's rows, and windows out of range in mode "fill", are dropped); a scatter_add
    pending over the updates' axes starts from the operand on the first device along them and
    from zeros on the others."""
    dims = ScatterDims.of(op.attrs)
    operand, indices, updates = operands
    global_shape = op.operands[0].type.shape
    window = dims.window_sizes(len(global_shape), updates.value.type.shape)
    base = operand.value
    pending = list(result_sharding.unreduced)
    if pending and op.name == "scatter_add":
        first = builder.emit1("compare", [builder.shard_position(pending), builder.scalar(0, "i32")],
                              {"direction": "eq"})
        zero = builder.broadcast_scalar(builder.scalar(0, base.type.dtype), base.type.shape)
        base = builder.emit1("select", [builder.broadcast_scalar(first, base.type.shape), base, zero])
    owned = {dim: result_sharding.dims[dim].axes for dim in dims.scatter_dims_to_operand_dims
             if result_sharding.dims[dim].axes}
    attrs = dict(op.attrs)
    if not owned and not pending:
        return builder.emit1(op.name, [base, indices.value, updates.value], attrs, location=op.location)
    columns = _IndexColumns(builder, indices.value)
    keep = None
    for component, dim in enumerate(dims.scatter_dims_to_operand_dims):
        high = global_shape[dim] - window[dim]
        if op.attrs["mode"] == "fill":
            keep = columns.both(keep, columns.inside(component, 0, high))
        else:
            columns.clamp(component, 0, high)
        if dim in owned:
            _localize(columns, builder, component, owned[dim], operand.value.type.shape[dim])
    # the padding of updates split unevenly holds no updates
    for dim, size in enumerate(op.operands[1].type.shape[:-1]):
        real = _real_positions(builder, columns.columns[0].type.shape, dim, size, indices.sharding.dims[dim].axes)
        keep = keep if real is None else columns.both(keep, real)
    if keep is not None:
        gone = columns.constant(-1)
        columns.columns = [builder.emit1("select", [keep, column, gone]) for column in columns.columns]
    attrs["mode"] = "fill"
    return builder.emit1(op.name, [base, columns.joined(), updates.value], attrs, location=op.location)


def _real_positions(builder: SpmdBuilder, shape, dim: int, global_size: int, axes) -> Value | None:
    """Where a local value of ``shape`` split over ``axes`` along ``dim`` holds data rather
    than padding (None when the dim splits evenly)."""
    if not axes or shape[dim] * builder.shard_count(axes) == global_size:
        return None
    iota = builder.emit1("iota", [], {"dtype": "i32", "shape": shape, "dimension": dim})
    offset = builder.broadcast_scalar(builder.shard_offset(axes, shape[dim]), shape)
    positions = builder.emit1("add", [iota, offset])
    limit = builder.broadcast_scalar(builder.scalar(global_size, "i32"), shape)
    return builder.emit1("compare", [positions, limit], {"direction": "lt"})
