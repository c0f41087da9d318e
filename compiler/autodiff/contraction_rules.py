"""JVP and transpose rules of dot_general and gather (the ops that contract or pick along dims).

dot_general is bilinear: its tangent is the sum of the products with one tangent each, and the
transpose with respect to one operand contracts the cotangent with the other operand.

gather's transpose is a scatter-add. The IR has no scatter op, so it is written as a one-hot
contraction: ``onehot[index, v] = (indices[index] == v)`` contracted with the cotangent over the
index dims. That costs ``size(indices) * size(operand)`` multiply-adds but partitions like any
other dot (an embedding table's gradient is a matmul, as on TPUs).
"""

from __future__ import annotations

from .. import lax_ops as lax
from .evaluate import emit
from .jvp import linear_jvp
from .registries import LinearInput, add_tangents, jvp_rules, scalar, single, transpose_rules, type_of

jvp_rules.register("gather")(linear_jvp)


@jvp_rules.register("dot_general")
def _dot_general(op, primals, tangents):
    (lhs, rhs), (tangent_lhs, tangent_rhs) = primals, tangents
    first = None if tangent_lhs is None else emit(op, [tangent_lhs, rhs])[0]
    second = None if tangent_rhs is None else emit(op, [lhs, tangent_rhs])[0]
    return emit(op, primals), [add_tangents(first, second)]


def _free_dims(rank: int, contracting, batch) -> list[int]:
    return [dim for dim in range(rank) if dim not in contracting and dim not in batch]


def _transpose_side(op, cotangent, other, linear_rank: int, linear_is_lhs: bool):
    """The cotangent of one dot_general operand: the result's cotangent contracted with the
    other operand over the other operand's free dims, then laid out like the operand."""
    contracting, batch = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    side, other_side = (0, 1) if linear_is_lhs else (1, 0)
    other_rank = type_of(other).rank
    batch_count = len(batch[0])
    linear_free = _free_dims(linear_rank, contracting[side], batch[side])
    other_free = _free_dims(other_rank, contracting[other_side], batch[other_side])
    # Where the other operand's free dims sit in the result: after the batch dims, and after
    # the lhs free dims when the other operand is the rhs.
    first_other = batch_count + (len(linear_free) if linear_is_lhs else 0)
    cotangent_contracting = tuple(range(first_other, first_other + len(other_free)))
    cotangent_batch = tuple(range(batch_count))
    other = lax.convert_element_type(other, type_of(cotangent).dtype) if type_of(other).dtype != type_of(cotangent).dtype else other
    attrs = {"contracting_dims": (cotangent_contracting, tuple(other_free)),
             "batch_dims": (cotangent_batch, tuple(batch[other_side]))}
    product = single("dot_general", [cotangent, other], attrs)
    # product dims: batch, the linear operand's free dims, then the other operand's remaining
    # (contracting) dims in their own order, which pair with the linear operand's contracting dims.
    other_contracting_sorted = sorted(contracting[other_side])
    position = {}
    for index, dim in enumerate(batch[side]):
        position[dim] = index
    for index, dim in enumerate(linear_free):
        position[dim] = batch_count + index
    for dim, other_dim in zip(contracting[side], contracting[other_side]):
        position[dim] = batch_count + len(linear_free) + other_contracting_sorted.index(other_dim)
    permutation = tuple(position[dim] for dim in range(linear_rank))
    if permutation != tuple(range(linear_rank)):
        product = single("transpose", [product], {"permutation": permutation})
    return product


@transpose_rules.register("dot_general")
def _dot_general_transpose(op, cotangents, operands):
    lhs, rhs = operands
    if isinstance(lhs, LinearInput) and isinstance(rhs, LinearInput):
        raise AssertionError("autodiff internal error: dot_general of two tangents is not linear")
    cotangent = cotangents[0]
    if isinstance(lhs, LinearInput):
        result = _transpose_side(op, cotangent, rhs, lhs.type.rank, linear_is_lhs=True)
        return [lax.convert_element_type(result, lhs.type.dtype), None]
    result = _transpose_side(op, cotangent, lhs, rhs.type.rank, linear_is_lhs=False)
    return [None, lax.convert_element_type(result, rhs.type.dtype)]


@transpose_rules.register("gather")
def _gather_transpose(op, cotangents, operands):
    operand, indices = operands
    operand_type, index_type = type_of(operand), type_of(indices)
    axis, size = op.attrs["axis"], operand_type.shape[op.attrs["axis"]]
    if op.attrs["mode"] == "clip":
        indices = single("clamp", [scalar(0, index_type.dtype), indices, scalar(size - 1, index_type.dtype)])
    # Out-of-range indices (fill mode) match no position, so they scatter nothing.
    onehot_shape = index_type.shape + (size,)
    index_rank = index_type.rank
    spread = single("broadcast_in_dim", [indices], {"shape": onehot_shape, "broadcast_dimensions": tuple(range(index_rank))})
    positions = single("iota", [], {"dtype": index_type.dtype, "shape": onehot_shape, "dimension": index_rank})
    cotangent = cotangents[0]
    onehot = lax.convert_element_type(lax.eq(spread, positions), type_of(cotangent).dtype)
    attrs = {"contracting_dims": (tuple(range(axis, axis + index_rank)), tuple(range(index_rank))),
             "batch_dims": ((), ())}
    scattered = single("dot_general", [cotangent, onehot], attrs)
    rank = operand_type.rank
    permutation = tuple(range(axis)) + (rank - 1,) + tuple(range(axis, rank - 1))
    if permutation != tuple(range(rank)):
        scattered = single("transpose", [scattered], {"permutation": permutation})
    return [scattered, None]
