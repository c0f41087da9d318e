"""The compiler's rules for dynamic_slice, dynamic_update_slice, sort and gather: the dims they
index need the whole dim on every device; sort carries tangents as extra operands; gather's
transpose is a one-hot contraction.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op

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
from ..frontend.vmap.batching import at_front, emit_like, move_dim, unrolled
from .registries import batching_rules, factor_rule, local_attr_rules, sharding_rules

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


@batching_rules.register("gather")
def _batch_gather(op: Op, operands, dims, size):
    """Only the operand batched: the gathered axis shifts past the batch dim. Only the indices:
    the batch dim lands where the indices go, at ``axis``. Both: one gather from the examples
    laid end to end along the gathered axis, each example's indices offset into its own part."""
    (operand, indices), (operand_dim, index_dim) = operands, dims
    axis = op.attrs["axis"]
    if index_dim is None:
        return emit_like(op, [at_front(operand, operand_dim, size), indices], {**op.attrs, "axis": axis + 1}), [0]
    if operand_dim is None:
        return emit_like(op, [operand, move_dim(indices, index_dim, 0)]), [axis]
    return _gather_per_example(op, move_dim(operand, operand_dim, 0), move_dim(indices, index_dim, 0), size)


def _gather_per_example(op: Op, operand, indices, size):
    axis, mode = op.attrs["axis"], op.attrs["mode"]
    per_example = op.operands[0].type.shape
    length = per_example[axis]
    # (batch, gathered axis, the other dims) -> (batch * gathered, the other dims)
    others = [dim + 1 for dim in range(len(per_example)) if dim != axis]
    laid_out = lax.transpose(operand, (0, axis + 1, *others))
    flat = lax.reshape(laid_out, (size * length,) + tuple(per_example[dim - 1] for dim in others))
    index_type = type_of(indices)
    dtype = index_type.dtype
    offsets = lax.mul(lax.broadcasted_iota(dtype, index_type.shape, 0),
                      lax.full(index_type.shape, length, dtype))
    if mode == "clip":
        local = lax.clamp(scalar(0, dtype), indices, scalar(max(length - 1, 0), dtype))
    else:
        inside = lax.bitwise_and(lax.ge(indices, lax.full(index_type.shape, 0, dtype)),
                                 lax.lt(indices, lax.full(index_type.shape, length, dtype)))
        # an index out of its example's range stays out of the whole range, so it is filled
        local = lax.select(inside, indices, lax.full(index_type.shape, -1 - size * length, dtype))
    gathered = emit_like(op, [flat, lax.add(local, offsets)], {**op.attrs, "axis": 0})[0]
    # (batch, index dims, other dims) -> (batch, dims before axis, index dims, dims after axis)
    index_rank = len(index_type.shape) - 1
    before = [1 + index_rank + dim for dim in range(axis)]
    after = [1 + index_rank + dim for dim in range(axis, len(per_example) - 1)]
    order = (0, *before, *range(1, 1 + index_rank), *after)
    return [lax.transpose(gathered, order)], [0]
