"""The compiler's rules for dot_general: batch and free dims pass through, contracting dims are
reduction factors; the kernel is one BLAS call over all devices' shards; the JVP is bilinear.
"""

from __future__ import annotations


from meshjit.ir import Op

from ..sharding.factor_rules import FactorRule, joined
from ..sharding.factor_types import check_unique, operand_type_text
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, add_tangents, single, type_of
from ..sharding.sharding_types import ShardingTypeError
from ..frontend.vmap.batching import emit_like, move_dim, shifted
from ..lowering.matmul_kernels import dot_kernel
from ..sharding.partial_sums import SUM, PartialRule, partial_sum_rules
from ..tables import (
    batching_rules,
    common_reduced,
    factor_rule,
    kernel_rules,
    partial_result_rules,
    sharding_rules,
    sharding_type_rules,
    typed,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("dot_general")
def _dot_general(op: Op) -> FactorRule:
    lhs_rank, rhs_rank = op.operands[0].type.rank, op.operands[1].type.rank
    (lhs_contracting, rhs_contracting) = op.attrs["contracting_dims"]
    (lhs_batch, rhs_batch) = op.attrs["batch_dims"]
    lhs = [None] * lhs_rank
    rhs = [None] * rhs_rank
    result = []
    for index, (left, right) in enumerate(zip(lhs_batch, rhs_batch)):
        lhs[left] = rhs[right] = f"b{index}"
        result.append(f"b{index}")
    for index, (left, right) in enumerate(zip(lhs_contracting, rhs_contracting)):
        lhs[left] = rhs[right] = f"k{index}"
    for dim in range(lhs_rank):
        if lhs[dim] is None:
            lhs[dim] = f"i{dim}"
            result.append(lhs[dim])
    for dim in range(rhs_rank):
        if rhs[dim] is None:
            rhs[dim] = f"j{dim}"
            result.append(rhs[dim])
    kinds = {f"k{index}": "reduction" for index in range(len(lhs_contracting))}
    return factor_rule(op, f"{joined(lhs)}, {joined(rhs)} -> {joined(result)}", kinds)


# --- kernels -------------------------------------------------------------------------------------

# NOTE: the matmul kernels live with lowering (lowering/matmul_kernels.py), beside contraction fusion.
kernel_rules.register("dot_general")(dot_kernel)


# --- sharding types (explicit mode) -------------------------------------------------------------
# JAX's rule: batch dims and contracting dims must agree where both operands split them; when
# both split a contracting dim the result is ambiguous (all_reduce, reduce_scatter on either
# free dim, or a pending sum), so ``out_sharding`` must say which. Otherwise the result has
# the lhs's batch axes, then each operand's free dims' axes. Operands may not be unreduced.


def _spec_tuple(operand, dims) -> tuple:
    entries = operand.entries()
    return tuple(entries[dim] for dim in dims)


def _check_agree(lhs_spec, rhs_spec, message: str) -> None:
    for lhs, rhs in zip(lhs_spec, rhs_spec):
        if lhs is not None and rhs is not None and lhs != rhs:
            raise ShardingTypeError(message)


@sharding_type_rules.register("dot_general")
def _dot_general_type(op: Op, operands, mesh) -> list:
    lhs, rhs = operands
    if lhs.unreduced or rhs.unreduced:
        raise ShardingTypeError(f"lhs or rhs passed to dot_general cannot be unreduced. Got "
                                f"lhs=ShapedArray({operand_type_text(op, 0, lhs)}) and "
                                f"rhs=ShapedArray({operand_type_text(op, 1, rhs)})")
    (lhs_contracting, rhs_contracting) = op.attrs["contracting_dims"]
    (lhs_batch, rhs_batch) = op.attrs["batch_dims"]
    lhs_batch_spec, rhs_batch_spec = _spec_tuple(lhs, lhs_batch), _spec_tuple(rhs, rhs_batch)
    _check_agree(lhs_batch_spec, rhs_batch_spec,
                 f"dot_general requires lhs batch dimensions and rhs batch dimensions to have the consistent "
                 f"sharding, got {lhs_batch_spec} and {rhs_batch_spec}.")
    lhs_spec, rhs_spec = _spec_tuple(lhs, lhs_contracting), _spec_tuple(rhs, rhs_contracting)
    _check_agree(lhs_spec, rhs_spec, f"dot_general requires contracting dimensions to have consistent sharding, "
                                     f"got {lhs_spec} and {rhs_spec}.")
    if any(left is not None and right is not None for left, right in zip(lhs_spec, rhs_spec)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be sharded. Please "
            "specify the output sharding via the `out_sharding` parameter. Got "
            f"lhs_contracting_spec={lhs_spec} and rhs_contracting_spec={rhs_spec}")
    lhs_free = [lhs.dims[dim] for dim in range(lhs.rank) if dim not in lhs_contracting + lhs_batch]
    rhs_free = [rhs.dims[dim] for dim in range(rhs.rank) if dim not in rhs_contracting + rhs_batch]
    dims = tuple(lhs.dims[dim] for dim in lhs_batch) + tuple(lhs_free) + tuple(rhs_free)
    check_unique(dims)
    return typed(mesh, [dims], reduced=common_reduced(op, operands))


# --- autodiff ------------------------------------------------------------------------------------


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


# --- partial sums --------------------------------------------------------------------------------


@partial_sum_rules.register("dot_general")
def _dot_partial(op: Op) -> PartialRule:
    # (a1 + a2) * b = a1 * b + a2 * b: linear in each operand separately, never in both at once
    # ((a1 + a2) * (b1 + b2) has cross terms).
    return PartialRule((0, 1), "one", SUM)


# --- partial results -------------------------------------------------------------------------

# a contracting dim split over devices leaves each a partial sum of products
partial_result_rules.register("dot_general")(lambda op: "sum")
# --- vmap ----------------------------------------------------------------------------------------


@batching_rules.register("dot_general")
def _batch_dot_general(op: Op, operands, dims, size):
    """Both operands batched: the batch dims pair up as a new leading batch dimension. One
    batched: its batch dim is a free dim, which dot_general puts after the batch dims (lhs) or
    after the lhs free dims (rhs)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (op.attrs["contracting_dims"],
                                                           op.attrs["batch_dims"])
    lhs, rhs = (move_dim(operand, dim, 0) if dim is not None else operand
                for operand, dim in zip(operands, dims))
    lhs_shift, rhs_shift = (0 if dim is None else 1 for dim in dims)
    contracting = (shifted(lhs_contract, lhs_shift), shifted(rhs_contract, rhs_shift))
    batch = (shifted(lhs_batch, lhs_shift), shifted(rhs_batch, rhs_shift))
    if dims[0] is not None and dims[1] is not None:
        batch = ((0,) + batch[0], (0,) + batch[1])
        out_dim = 0
    elif dims[0] is not None:
        out_dim = len(lhs_batch)
    else:
        lhs_rank = op.operands[0].type.rank
        out_dim = len(lhs_batch) + lhs_rank - len(lhs_contract) - len(lhs_batch)
    attrs = {**op.attrs, "contracting_dims": contracting, "batch_dims": batch}
    return emit_like(op, [lhs, rhs], attrs), [out_dim]
