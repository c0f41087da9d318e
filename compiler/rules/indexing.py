"""The compiler's rules for dynamic_slice, dynamic_update_slice, sort and gather: the dims they
index need the whole dim on every device; sort carries tangents as extra operands; gather's
transpose is a one-hot contraction.
"""

from __future__ import annotations

from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..factor_rules import FactorRule, joined, letters
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp
from ..frontend.autodiff.registries import (
    LinearInput,
    jvp_rules,
    scalar,
    single,
    transpose_rules,
    type_of,
    zeros,
)
from ..frontend.trace import bind
from ..factor_types import check_unique, operand_type_text, varying_out_shape
from ..frontend.sharding_types import named_sharding_text
from ..frontend.sharding_types import ShardingTypeError, format_type
from .registries import factor_rule, sharding_rules, sharding_type_rules, typed, unreduced_not_implemented

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


@sharding_rules.register("gather")
def _gather(op: Op) -> FactorRule:
    axis = op.attrs["axis"]
    operand_rank, index_rank = op.operands[0].type.rank, op.operands[1].type.rank
    operand = [f"o{dim}" for dim in range(operand_rank)]
    indices = [f"x{dim}" for dim in range(index_rank)]
    result = operand[:axis] + indices + operand[axis + 1:]
    return factor_rule(op, f"{joined(operand)}, {joined(indices)} -> {joined(result)}",
                 {operand[axis]: "replication"})


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
    """The indices as JAX's gather sees them: with a trailing index-vector dim of size 1."""
    value = op.operands[1]
    shape = value.type.shape + (1,)
    return format_type(shape, to_numpy(value.type.dtype), indices.with_dims(indices.dims + ((),)))


@sharding_type_rules.register("gather")
def _gather_type(op: Op, operands, mesh) -> list:
    """The gathered dim must be unsplit; the result's dims are the operand's around the
    indices' (JAX asks for ``out_sharding`` when that is ambiguous)."""
    unreduced_not_implemented(op, operands)
    operand, indices = operands
    axis = op.attrs["axis"]
    dims = operand.dims[:axis] + indices.dims + operand.dims[axis + 1:]
    used = [name for axes in dims for name in axes]
    if operand.dims[axis] or len(set(used)) != len(used):
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather indexing as out "
            "sharding could not be resolved unambiguously (or would require collectives on inputs). Got "
            f"operand=ShapedArray({operand_type_text(op, 0, operand)}), "
            f"indices=ShapedArray({_indices_text(op, indices)})")
    check_unique(dims)
    return typed(mesh, [dims])


# --- autodiff ------------------------------------------------------------------------------------


jvp_rules.register("dynamic_slice", "dynamic_update_slice", "gather")(linear_jvp)


@transpose_rules.register("dynamic_slice")
def _dynamic_slice_transpose(op, cotangents, operands):
    blank = zeros(type_of(operands[0]))
    return [single("dynamic_update_slice", [blank, cotangents[0], *operands[1:]])] + [None] * (
        len(operands) - 1
    )


@transpose_rules.register("dynamic_update_slice")
def _dynamic_update_slice_transpose(op, cotangents, operands):
    operand, update, starts = operands[0], operands[1], operands[2:]
    cotangent, update_type = cotangents[0], type_of(update)
    operand_cotangent = update_cotangent = None
    if isinstance(operand, LinearInput):
        operand_cotangent = single("dynamic_update_slice", [cotangent, zeros(update_type), *starts])
    if isinstance(update, LinearInput):
        update_cotangent = single(
            "dynamic_slice", [cotangent, *starts], {"slice_sizes": update_type.shape}
        )
    return [operand_cotangent, update_cotangent] + [None] * len(starts)


@jvp_rules.register("sort")
def _sort(op, primals, tangents):
    outputs = emit(op, primals)
    keys = primals[: op.attrs["num_keys"]]
    moving = [index for index, tangent in enumerate(tangents) if tangent is not None]
    carried = emit(op, list(keys) + [tangents[index] for index in moving])[len(keys) :]
    output_tangents = [None] * len(primals)
    for index, tangent in zip(moving, carried):
        output_tangents[index] = tangent
    return outputs, output_tangents


@transpose_rules.register("sort")
def _sort_transpose(op, cotangents, operands):
    num_keys, dimension = op.attrs["num_keys"], op.attrs["dimension"]
    keys = operands[:num_keys]
    if any(isinstance(key, LinearInput) for key in keys):
        raise AssertionError("autodiff internal error: sort is linear in its non-key operands only")
    shape = type_of(keys[0]).shape
    positions = single("iota", [], {"dtype": "i32", "shape": shape, "dimension": dimension})
    attrs = {"dimension": dimension, "is_stable": True, "num_keys": num_keys}
    permutation = bind("sort", list(keys) + [positions], attrs)[-1]
    results = [None] * len(operands)
    back = {"dimension": dimension, "is_stable": True, "num_keys": 1}
    for index, (operand, cotangent) in enumerate(zip(operands, cotangents)):
        if index < num_keys or not isinstance(operand, LinearInput):
            continue
        cotangent = zeros(operand.type) if cotangent is None else cotangent
        # Sorting by the permutation sends element i back to position permutation[i].
        results[index] = bind("sort", [permutation, cotangent], back)[1]
    return results


@transpose_rules.register("gather")
def _gather_transpose(op, cotangents, operands):
    operand, indices = operands
    operand_type, index_type = type_of(operand), type_of(indices)
    axis, size = op.attrs["axis"], operand_type.shape[op.attrs["axis"]]
    if op.attrs["mode"] == "clip":
        indices = single(
            "clamp", [scalar(0, index_type.dtype), indices, scalar(size - 1, index_type.dtype)]
        )
    # Out-of-range indices (fill mode) match no position, so they scatter nothing.
    onehot_shape = index_type.shape + (size,)
    index_rank = index_type.rank
    spread = single(
        "broadcast_in_dim",
        [indices],
        {"shape": onehot_shape, "broadcast_dimensions": tuple(range(index_rank))},
    )
    positions = single(
        "iota", [], {"dtype": index_type.dtype, "shape": onehot_shape, "dimension": index_rank}
    )
    cotangent = cotangents[0]
    onehot = lax.convert_element_type(lax.eq(spread, positions), type_of(cotangent).dtype)
    attrs = {
        "contracting_dims": (tuple(range(axis, axis + index_rank)), tuple(range(index_rank))),
        "batch_dims": ((), ()),
    }
    scattered = single("dot_general", [cotangent, onehot], attrs)
    rank = operand_type.rank
    permutation = tuple(range(axis)) + (rank - 1,) + tuple(range(axis, rank - 1))
    if permutation != tuple(range(rank)):
        scattered = single("transpose", [scattered], {"permutation": permutation})
    return [scattered, None]
