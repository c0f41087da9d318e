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
from .registries import (
    LinearInput,
    add_tangents,
    jvp_rules,
    scalar,
    single,
    transpose_rules,
    type_of,
)

jvp_rules.register("gather")(linear_jvp)


@jvp_rules.register("dot_general")
def _dot_general(op, primals, tangents):
    (lhs, rhs), (tangent_lhs, tangent_rhs) = primals, tangents
    first = None if tangent_lhs is None else emit(op, [tangent_lhs, rhs])[0]
    second = None if tangent_rhs is None else emit(op, [lhs, tangent_rhs])[0]
    return emit(op, primals), [add_tangents(first, second)]


def _free_dims(rank: int, contracting, batch) -> list[int]:
    return [dim for dim in range(rank) if dim not in contracting and dim not in batch]


def _layout(op, linear_rank: int, side: int, other_first: bool) -> tuple[int, ...]:
    """Where each dim of the linear operand lands in the product of the cotangent with the
    other operand (taken in that order, or the other operand first): batch dims first, then
    the free dims of the first factor, then those of the second. The linear operand's free dims
    are the cotangent's free dims; its contracting dims pair with the other operand's remaining
    (contracting) dims, which keep their order."""
    contracting, batch = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    linear_free = _free_dims(linear_rank, contracting[side], batch[side])
    other_contracting = sorted(contracting[1 - side])
    batch_count = len(batch[side])
    free_start = batch_count + (len(other_contracting) if other_first else 0)
    contracting_start = batch_count if other_first else batch_count + len(linear_free)
    position = {dim: index for index, dim in enumerate(batch[side])}
    position.update({dim: free_start + index for index, dim in enumerate(linear_free)})
    for dim, other_dim in zip(contracting[side], contracting[1 - side]):
        position[dim] = contracting_start + other_contracting.index(other_dim)
    return tuple(position[dim] for dim in range(linear_rank))


def _transpose_side(op, cotangent, other, linear_rank: int, side: int):
    """The cotangent of dot_general operand ``side`` (0 lhs, 1 rhs): the result's cotangent
    contracted with the other operand over the other operand's free dims, laid out like the
    operand (the product's factor order is chosen to need no transpose when it can)."""
    contracting, batch = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    batch_count = len(batch[0])
    linear_free = _free_dims(linear_rank, contracting[side], batch[side])
    other_free = _free_dims(type_of(other).rank, contracting[1 - side], batch[1 - side])
    # The other operand's free dims sit in the result after the batch dims, and after the lhs
    # free dims when the other operand is the rhs.
    first_other = batch_count + (len(linear_free) if side == 0 else 0)
    cotangent_dims = (
        tuple(range(first_other, first_other + len(other_free))),
        tuple(range(batch_count)),
    )
    if type_of(other).dtype != type_of(cotangent).dtype:
        other = lax.convert_element_type(other, type_of(cotangent).dtype)
    identity = tuple(range(linear_rank))
    other_first = _layout(op, linear_rank, side, True) == identity
    if other_first:
        attrs = {
            "contracting_dims": (tuple(other_free), cotangent_dims[0]),
            "batch_dims": (tuple(batch[1 - side]), cotangent_dims[1]),
        }
        return single("dot_general", [other, cotangent], attrs)
    attrs = {
        "contracting_dims": (cotangent_dims[0], tuple(other_free)),
        "batch_dims": (cotangent_dims[1], tuple(batch[1 - side])),
    }
    product = single("dot_general", [cotangent, other], attrs)
    permutation = _layout(op, linear_rank, side, False)
    if permutation == identity:
        return product
    return single("transpose", [product], {"permutation": permutation})


@transpose_rules.register("dot_general")
def _dot_general_transpose(op, cotangents, operands):
    lhs, rhs = operands
    if isinstance(lhs, LinearInput) and isinstance(rhs, LinearInput):
        raise AssertionError("autodiff internal error: dot_general of two tangents is not linear")
    cotangent = cotangents[0]
    if isinstance(lhs, LinearInput):
        result = _transpose_side(op, cotangent, rhs, lhs.type.rank, 0)
        return [lax.convert_element_type(result, lhs.type.dtype), None]
    result = _transpose_side(op, cotangent, lhs, rhs.type.rank, 1)
    return [None, lax.convert_element_type(result, rhs.type.dtype)]


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
