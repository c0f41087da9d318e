"""The indexing family's JVP and transpose rules: gathers and dynamic slices are linear in their
operand (their transposes scatter-add or pad the cotangent back), scatters in operand and
updates, sort and top_k carry tangents along their permutations."""

from __future__ import annotations

from meshjit.ir import TensorType
from meshjit.ir.gather_scatter import GatherDims, ScatterDims

from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, add_tangents, full, single, type_of, zeros
from ..frontend.trace import bind


# --- autodiff ------------------------------------------------------------------------------------


jvp_rules.register("dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter_add")(linear_jvp)


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


def _scatter_attrs(gather_attrs, mode: str) -> dict:
    """The scatter that writes back where a gather with ``gather_attrs`` read."""
    return {"update_window_dims": gather_attrs["offset_dims"],
            "inserted_window_dims": gather_attrs["collapsed_slice_dims"],
            "scatter_dims_to_operand_dims": gather_attrs["start_index_map"],
            "operand_batching_dims": gather_attrs["operand_batching_dims"],
            "scatter_indices_batching_dims": gather_attrs["start_indices_batching_dims"],
            "mode": mode, "indices_are_sorted": False, "unique_indices": False}


def _gather_attrs(op, updates_type, fill=None) -> dict:
    """The gather that reads where a scatter ``op`` writes, in its updates' layout."""
    rank = op.operands[0].type.rank
    dims = ScatterDims.of(op.attrs).as_gather(rank, updates_type.shape)
    attrs = {name: getattr(dims, name) for name in GatherDims.NAMES}
    attrs["mode"] = op.attrs["mode"]
    if fill is not None:
        attrs["fill_value"] = fill
    return attrs


@transpose_rules.register("gather")
def _gather_transpose(op, cotangents, operands):
    # every element read goes back to where it came from; windows filled with fill_value read
    # nothing, and the scatter drops them alike
    operand, indices = operands
    blank = zeros(type_of(operand))
    attrs = _scatter_attrs(op.attrs, op.attrs["mode"])
    return [single("scatter_add", [blank, indices, cotangents[0]], attrs), None]


def take_last(values, indices):
    """``values`` at ``indices`` along the last dim, elementwise in the others (a gather whose
    leading dims are batching dims)."""
    rank = type_of(values).rank
    batch = tuple(range(rank - 1))
    vectors = single("expand_dims", [indices], {"dimensions": (rank,)})
    return single("gather", [values, vectors], {
        "offset_dims": (), "collapsed_slice_dims": (rank - 1,), "start_index_map": (rank - 1,),
        "operand_batching_dims": batch, "start_indices_batching_dims": batch, "slice_sizes": (1,) * rank,
        "mode": "clip"})


@jvp_rules.register("top_k")
def _top_k_jvp(op, primals, tangents):
    outputs = emit(op, primals)
    return outputs, [take_last(tangents[0], outputs[1]), None]


@transpose_rules.register("scatter_add")
def _scatter_add_transpose(op, cotangents, operands):
    operand, indices, updates = operands
    cotangent = cotangents[0]
    update_cotangent = None
    if isinstance(updates, LinearInput):
        attrs = _gather_attrs(op, type_of(updates), fill=0)
        update_cotangent = single("gather", [cotangent, indices], attrs)
    return [cotangent if isinstance(operand, LinearInput) else None, None, update_cotangent]


@transpose_rules.register("scatter")
def _scatter_transpose(op, cotangents, operands):
    """The operand's cotangent is zero where an update landed; each update gets the cotangent
    of its place if it is the one that won there (the last of repeated indices)."""
    operand, indices, updates = operands
    cotangent, updates_type = cotangents[0], type_of(updates)
    operand_cotangent = update_cotangent = None
    if isinstance(operand, LinearInput):
        operand_cotangent = single("scatter", [cotangent, indices, zeros(updates_type)], op.attrs)
    if isinstance(updates, LinearInput):
        update_cotangent = single("gather", [cotangent, indices], _gather_attrs(op, updates_type, fill=0))
        if not op.attrs.get("unique_indices", False):
            ids = single("reshape", [single("iota", [], {"dtype": "i32", "shape": (updates_type.size,),
                                                         "dimension": 0})], {"new_sizes": updates_type.shape})
            blank = full(TensorType(type_of(operand).shape, "i32"), -1)
            winners = single("scatter", [blank, indices, ids], op.attrs)
            read = single("gather", [winners, indices], _gather_attrs(op, updates_type, fill=-1))
            won = lax.eq(read, ids)
            update_cotangent = lax.select(won, update_cotangent, zeros(updates_type))
    return [operand_cotangent, None, update_cotangent]


@transpose_rules.register("scatter_mul")
def _scatter_mul_transpose(op, cotangents, operands):
    # linear in the operand only: each element is multiplied by the updates landing on it
    operand, indices, updates = operands
    if isinstance(updates, LinearInput):
        raise AssertionError("autodiff internal error: scatter_mul is linear in its operand only")
    return [single("scatter_mul", [cotangents[0], indices, updates], op.attrs), None, None]


@jvp_rules.register("scatter_mul")
def _scatter_mul_jvp(op, primals, tangents):
    """d(x * prod u) = dx * prod u + x * sum_i du_i * prod_(j != i) u_j over the updates landing
    on an element; the product of the others is the product of the non-zero updates there
    divided by u_i, or zero when another update there is zero."""
    outputs = emit(op, primals)
    operand, indices, updates = primals
    operand_tangent, _, update_tangent = tangents
    operand_type, updates_type = type_of(operand), type_of(updates)
    result = None
    if operand_tangent is not None:
        result = single("scatter_mul", [operand_tangent, indices, updates], op.attrs)
    if update_tangent is not None:
        read = _gather_attrs(op, updates_type, fill=0)
        zero = lax.eq(updates, zeros(updates_type))
        safe = lax.select(zero, full(updates_type, 1), updates)
        nonzero_product = single("scatter_mul", [full(operand_type, 1), indices, safe], op.attrs)
        zero_count = single("scatter_add", [zeros(operand_type), indices,
                                            lax.convert_element_type(zero, operand_type.dtype)], op.attrs)
        others_zero = lax.sub(single("gather", [zero_count, indices], read),
                              lax.convert_element_type(zero, operand_type.dtype))
        others = lax.div(single("gather", [nonzero_product, indices], read), safe)
        others = lax.select(lax.gt(others_zero, zeros(updates_type)), zeros(updates_type), others)
        spread = single("scatter_add", [zeros(operand_type), indices, lax.mul(update_tangent, others)], op.attrs)
        result = add_tangents(result, lax.mul(operand, spread))
    return outputs, [result]


@jvp_rules.register("scatter_min", "scatter_max")
def _scatter_extremal_jvp(op, primals, tangents):
    """The tangent of the element that won, averaged over ties (the operand's own value
    counting as one of them), as JAX does."""
    outputs = emit(op, primals)
    operand, indices, updates = primals
    operand_tangent, _, update_tangent = tangents
    operand_type, updates_type = type_of(operand), type_of(updates)
    read = _gather_attrs(op, updates_type, fill=0)
    one = full(updates_type, 1)
    won = lax.eq(updates, single("gather", [outputs[0], indices], read))
    wins = single("scatter_add", [zeros(operand_type), indices,
                                  lax.select(won, one, zeros(updates_type))], _add_attrs(op))
    kept = lax.eq(operand, outputs[0])
    ties = lax.add(wins, lax.convert_element_type(kept, operand_type.dtype))
    share = lax.div(full(operand_type, 1), lax.max(ties, full(operand_type, 1)))
    result = None
    if operand_tangent is not None:
        result = lax.mul(operand_tangent, lax.select(kept, share, zeros(operand_type)))
    if update_tangent is not None:
        weights = lax.select(won, single("gather", [share, indices], read), zeros(updates_type))
        spread = single("scatter_add", [zeros(operand_type), indices, lax.mul(update_tangent, weights)],
                        _add_attrs(op))
        result = add_tangents(result, spread)
    return outputs, [result]


def _add_attrs(op) -> dict:
    return {**op.attrs, "indices_are_sorted": False, "unique_indices": False}
