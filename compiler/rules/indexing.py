"""The compiler's rules for dynamic_slice, dynamic_update_slice, sort, gather and the scatters:
the dims they index need the whole dim on every device (gather and scatter have partition rules
of their own, ``compiler/gather_scatter_partition.py``); sort carries tangents as extra
operands; gather and scatter_add transpose into each other.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.gather_scatter import GatherDims, ScatterDims
from meshjit.ir.ops.indexing import SCATTERS

from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.factor_types import check_unique, operand_type_text, varying_out_shape
from ..sharding.sharding_types import ShardingTypeError, format_type, named_sharding_text
from ..frontend.vmap.batching import at_front, emit_like, unrolled
from ..partitioning.dynamic_slice_partition import partition_dynamic_slice
from ..partitioning.gather_scatter_partition import partition_gather, partition_scatter
from ..partitioning.sort_partition import partition_sort, partition_top_k
from ..tables import (
    batching_rules,
    factor_rule,
    kernel_rules,
    local_attr_rules,
    partition_rules,
    sharding_rules,
    sharding_type_rules,
    typed,
    unreduced_not_implemented,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("dynamic_slice", "dynamic_update_slice")
def _dynamic_slice(op: Op) -> FactorRule:
    # dims the op cuts need the whole dim on every device; full-size dims pass through
    base, result = op.operands[0].type.shape, op.result.type.shape
    window = op.operands[1].type.shape if op.name == "dynamic_update_slice" else result
    names = letters(len(base))
    operand = [names[dim] if window[dim] == base[dim] else f"o{dim}" for dim in range(len(base))]
    kinds = {name: "replication" for name in operand if name[0] == "o"}
    if op.name == "dynamic_slice":
        outputs = [names[dim] if window[dim] == base[dim] else f"w{dim}"
                   for dim in range(len(base))]
        kinds.update({name: "replication" for name in outputs if name[0] == "w"})
        indices = ", []" * (len(op.operands) - 1)
        return factor_rule(op, f"{joined(operand)}{indices} -> {joined(outputs)}", kinds)
    update = [names[dim] if window[dim] == base[dim] else f"u{dim}" for dim in range(len(base))]
    kinds.update({name: "replication" for name in update if name[0] == "u"})
    indices = ", []" * (len(op.operands) - 2)
    return factor_rule(op, f"{joined(operand)}, {joined(update)}{indices} -> {joined(operand)}", kinds)


@sharding_rules.register("sort")
def _sort(op: Op) -> FactorRule:
    # every operand and result shares the factors; the sorted dim needs the whole dim
    names = letters(op.operands[0].type.rank)
    tensor = joined(names)
    operands = ", ".join([tensor] * len(op.operands))
    results = ", ".join([tensor] * len(op.results))
    return factor_rule(op, f"{operands} -> {results}", {names[op.attrs["dimension"]]: "replication"})


@sharding_rules.register("top_k")
def _top_k(op: Op) -> FactorRule:
    # every dim but the last passes; the last needs the whole dim, and the k kept elements
    # are a dim of their own
    names = letters(op.operands[0].type.rank - 1)
    kept = joined(names + ["q"])
    return factor_rule(op, f"{joined(names + ['r'])} -> {kept}, {kept}", {"r": "replication", "q": "replication"})


@sharding_rules.register("gather")
def _gather(op: Op) -> FactorRule:
    """Indices' batch dims pass to the result's batch dims; operand dims taken whole and not
    indexed pass to their offset dims; batching dims join all three; the indexed dims and the
    index vector need the whole dim."""
    dims = GatherDims.of(op.attrs)
    operand_shape, indices_rank = op.operands[0].type.shape, op.operands[1].type.rank
    batching = dict(zip(dims.operand_batching_dims, dims.start_indices_batching_dims))
    operand, kinds = [], {"v": "replication"}
    for dim, size in enumerate(operand_shape):
        if dim in batching:
            operand.append(f"b{batching[dim]}")
        elif dim not in dims.start_index_map and dims.slice_sizes[dim] == size:
            operand.append(f"p{dim}")
        else:
            operand.append(f"o{dim}")
            kinds[f"o{dim}"] = "replication"
    indices = [f"b{dim}" for dim in range(indices_rank - 1)] + ["v"]
    result_rank = len(dims.offset_dims) + indices_rank - 1
    result = [""] * result_rank
    for position, index_dim in zip(dims.batch_positions(result_rank), range(indices_rank - 1)):
        result[position] = f"b{index_dim}"
    for position, dim in zip(dims.offset_dims, dims.kept_dims(len(operand_shape))):
        result[position] = operand[dim] if operand[dim][0] == "p" else f"w{dim}"
        if result[position][0] == "w":
            kinds[result[position]] = "replication"
    return factor_rule(op, f"{joined(operand)}, {joined(indices)} -> {joined(result)}", kinds)


@sharding_rules.register(*SCATTERS)
def _scatter(op: Op) -> FactorRule:
    """The result is the operand's layout, indexed dims included (the partition rule lets each
    device apply the updates it owns); update window dims taken whole pass with their operand
    dims; the indices' batch dims pair with the update scatter dims (partial results of
    scatter_add/min/max when sharded); the index vector and partial windows need the whole dim."""
    dims = ScatterDims.of(op.attrs)
    operand_shape = op.operands[0].type.shape
    indices_rank, updates_shape = op.operands[1].type.rank, op.operands[2].type.shape
    batching = dict(zip(dims.operand_batching_dims, dims.scatter_indices_batching_dims))
    window = dict(zip(dims.window_operand_dims(len(operand_shape)), dims.update_window_dims))
    operand, kinds = [], {"v": "replication"}
    updates = [""] * len(updates_shape)
    for dim, size in enumerate(operand_shape):
        if dim in batching:
            operand.append(f"b{batching[dim]}")
        elif dim in window and dim not in dims.scatter_dims_to_operand_dims and updates_shape[window[dim]] == size:
            operand.append(f"p{dim}")
            updates[window[dim]] = f"p{dim}"
        else:
            operand.append(f"o{dim}")
            if dim in window:
                updates[window[dim]] = f"u{dim}"
                kinds[f"u{dim}"] = "replication"
    indices = [f"b{dim}" if dim in dims.scatter_indices_batching_dims else f"s{dim}"
               for dim in range(indices_rank - 1)] + ["v"]
    for position, name in zip(dims.scatter_positions(len(updates_shape)), indices[:-1]):
        updates[position] = name
        if name[0] == "s":
            kinds[name] = "reduction"
    spec = f"{joined(operand)}, {joined(indices)}, {joined(updates)} -> {joined(operand)}"
    return factor_rule(op, spec, kinds)


# --- sharding types (explicit mode) -------------------------------------------------------------


@sharding_type_rules.register("dynamic_slice")
def _dynamic_slice_type(op: Op, operands, mesh) -> list:
    unreduced_not_implemented(op, operands)
    operand = operands[0]
    value = op.operands[0]
    varying_out_shape("dynamic_slice", operand, value.type.shape, value.type.dtype, op.result.type.shape)
    return typed(mesh, [operand.dims], reduced=operand.reduced)


@sharding_type_rules.register("dynamic_update_slice")
def _dynamic_update_slice_type(op: Op, operands, mesh) -> list:
    operand, update = operands[:2]
    for what, attribute in (("sharding", "dims"), ("unreduced", "unreduced"), ("reduced", "reduced")):
        if getattr(operand, attribute) != getattr(update, attribute):
            verb = "sharding must be equal to update sharding" if what == "sharding" else (
                f"and update must be {what} along the same axes")
            raise ShardingTypeError(
                f"dynamic_update_slice operand {verb}, got operand sharding "
                f"{_with_axis_types(op, 0, operand)} and update sharding {_with_axis_types(op, 1, update)}.")
    return typed(mesh, [operand.dims], operand.unreduced, operand.reduced)


def _with_axis_types(op: Op, index: int, sharding) -> str:
    value = op.operands[index]
    return format_type(value.type.shape, to_numpy(value.type.dtype), sharding, mesh_axis_types=True)


@sharding_type_rules.register("sort")
def _sort_type(op: Op, operands, mesh) -> list:
    unreduced_not_implemented(op, operands)
    dimension = op.attrs["dimension"]
    placed = [operand for operand in operands if not operand.mesh.empty]
    for operand in placed:
        if operand.dims[dimension]:
            raise ShardingTypeError(f"Arguments to sort must be unsharded over the sorting dimension. Got arg "
                                    f"sharding={named_sharding_text(operand)} and sorting dimension={dimension}")
        if operand.dims != placed[0].dims:
            raise ShardingTypeError(f"Arguments to sort must have equal shardings, got: "
                                    f"{' '.join(named_sharding_text(other) for other in placed)}")
    dims = placed[0].dims if placed else operands[0].dims
    return typed(mesh, [dims] * len(op.results))


def _indices_text(op: Op, indices) -> str:
    """The indices as JAX's gather sees them, with their trailing index-vector dim."""
    value = op.operands[1]
    return format_type(value.type.shape, to_numpy(value.type.dtype), indices)


@sharding_type_rules.register("gather")
def _gather_type(op: Op, operands, mesh) -> list:
    """The dims the gather indexes (and windows that do not span a dim) must be unsplit; the
    result's batch dims are the indices', its offset dims the operand's kept dims (JAX asks for
    ``out_sharding`` when that is ambiguous)."""
    unreduced_not_implemented(op, operands)
    operand, indices = operands
    attrs = op.attrs
    operand_shape = op.operands[0].type.shape
    dropped = set(attrs["collapsed_slice_dims"]) | set(attrs["operand_batching_dims"])
    kept = [dim for dim in range(len(operand_shape)) if dim not in dropped]
    whole = [dim for dim in range(len(operand_shape))
             if dim in dropped or dim in attrs["start_index_map"] or attrs["slice_sizes"][dim] != operand_shape[dim]]
    rank = len(attrs["offset_dims"]) + len(indices.dims) - 1
    batch_positions = [dim for dim in range(rank) if dim not in attrs["offset_dims"]]
    dims = [()] * rank
    for position, axes in zip(batch_positions, indices.dims[:-1]):
        dims[position] = axes
    for position, dim in zip(attrs["offset_dims"], kept):
        dims[position] = operand.dims[dim]
    dims = tuple(dims)
    used = [name for axes in dims for name in axes]
    if any(operand.dims[dim] for dim in whole) or indices.dims[-1] or len(set(used)) != len(used):
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather indexing as out "
            "sharding could not be resolved unambiguously (or would require collectives on inputs). Got "
            f"operand=ShapedArray({operand_type_text(op, 0, operand)}), "
            f"indices=ShapedArray({_indices_text(op, indices)})")
    check_unique(dims)
    return typed(mesh, [dims])


# --- partitioning ----------------------------------------------------------------------------

partition_rules.register("gather")(partition_gather)
partition_rules.register("dynamic_slice")(partition_dynamic_slice)
# NOTE: the kernels are imported when a program runs the op, so that Numba starts only then.
@kernel_rules.register("gather")
def _gather_kernel(op, lead: int):
    from ..lowering.index_kernels import gather_kernel

    return gather_kernel(op, lead)

@kernel_rules.register("dynamic_slice")
def _dynamic_slice_kernel(op, lead: int):
    from ..lowering.dynamic_slice_kernels import dynamic_slice_kernel

    return dynamic_slice_kernel(op, lead)

@kernel_rules.register("dynamic_update_slice")
def _dynamic_update_slice_kernel(op, lead: int):
    from ..lowering.dynamic_slice_kernels import dynamic_update_slice_kernel

    return dynamic_update_slice_kernel(op, lead)

@kernel_rules.register(*SCATTERS)
def _scatter_kernel(op, lead: int):
    from ..lowering.index_kernels import scatter_kernel

    return scatter_kernel(op, lead)

partition_rules.register("sort")(partition_sort)
partition_rules.register("top_k")(partition_top_k)
partition_rules.register(*SCATTERS)(partition_scatter)


# --- local attributes ------------------------------------------------------------------------

local_attr_rules.register("dynamic_slice")(
    lambda op, local_result_shapes: {**op.attrs, "slice_sizes": tuple(local_result_shapes[0])})


# --- vmap ----------------------------------------------------------------------------------------


@batching_rules.register("sort")
def _batch_sort(op: Op, operands, dims, size):
    ready = [at_front(operand, dim, size) for operand, dim in zip(operands, dims)]
    results = emit_like(op, ready, {**op.attrs, "dimension": op.attrs["dimension"] + 1})
    return results, [0] * len(results)


@batching_rules.register("dynamic_slice", "dynamic_update_slice")
def _batch_dynamic_slice(op: Op, operands, dims, size):
    """Start indices the same for every example: the batch dim is one more dim the window
    spans whole. Start indices per example: the op once per example."""
    windowed = 1 if op.name == "dynamic_slice" else 2
    if any(dim is not None for dim in dims[windowed:]):
        return unrolled(op, operands, dims, size)
    arrays = [at_front(operand, dim, size) for operand, dim in zip(operands[:windowed], dims)]
    starts = [np.zeros((), np.int32), *operands[windowed:]]
    attrs = dict(op.attrs)
    if op.name == "dynamic_slice":
        attrs["slice_sizes"] = (size,) + tuple(attrs["slice_sizes"])
    return emit_like(op, arrays + starts, attrs), [0]


@local_attr_rules.register("gather")
def _gather_local_attrs(op: Op, local_result_shapes) -> dict:
    """Operand dims a gather takes whole (offset dims) may be sharded: take the local extent."""
    attrs = dict(op.attrs)
    rank = op.operands[0].type.rank
    dropped = set(attrs["collapsed_slice_dims"]) | set(attrs["operand_batching_dims"])
    kept = [dim for dim in range(rank) if dim not in dropped]
    sizes = list(attrs["slice_sizes"])
    for dim, position in zip(kept, attrs["offset_dims"]):
        if sizes[dim] == op.operands[0].type.shape[dim]:
            sizes[dim] = local_result_shapes[0][position]
    attrs["slice_sizes"] = tuple(sizes)
    return attrs


# NOTE: gather, the scatters and top_k batch by running once per example (vmap's generic rule);
# a gather with the batch as one more batching dim would be the faster rule.
batching_rules.register("gather", "top_k", *SCATTERS)(unrolled)
