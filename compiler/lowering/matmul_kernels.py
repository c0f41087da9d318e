"""The matmul kernels: dot_general over plan buffers as BLAS calls (the leading mesh dims and
batch dims as matmul's batch, small GEMMs of several devices stacked into one), and an
all_reduce of a dot as one GEMM over the devices' contracting shards (contraction_fusion.py)."""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..tables import shifted_axes
from .launch import matmul, reshaped


def matmul_operand(op: Op, lead: int, side: int):
    """``buffer -> array``: a dot_general's operand ``side`` (0 lhs, 1 rhs) as ``matmul``'s:
    the leading dims and batch dims first, then the free dims flattened to the matrix rows
    (lhs) or columns (rhs) and the contracting dims to the inner dim (views where the layout
    allows), in the result's dtype."""
    operand = op.operands[side].type
    contracting, batch = op.attrs["contracting_dims"][side], op.attrs["batch_dims"][side]
    free = [d for d in range(operand.rank) if d not in contracting and d not in batch]
    order = list(batch) + (free + list(contracting) if side == 0 else list(contracting) + free)
    order = tuple(range(lead)) + shifted_axes(order, lead)
    batch_shape = tuple(operand.shape[d] for d in batch)
    inner = math.prod(operand.shape[d] for d in contracting)
    outer = math.prod(operand.shape[d] for d in free)
    matrix = (outer, inner) if side == 0 else (inner, outer)
    dtype = to_numpy(op.result.type.dtype)

    def prepare(buffer):
        array = reshaped(np.transpose(buffer, order), buffer.shape[:lead] + batch_shape + matrix)
        return array if array.dtype == dtype else array.astype(dtype)

    return prepare


# NOTE: the devices' rows are stacked into one GEMM (``_stacked_matmul``) only while a GEMM's
# rows of the left operand and of the result hold fewer elements than this: stacking copies
# both (the left operand's rows of every device side by side, the product back to the devices'
# order), about 0.3 ns an element, against ~1 us a BLAS call saves; a training step's
# 128 x 64 x 16 GEMMs on 8 devices took 165 us stacked and 46 us as 8 calls
STACK_MAX_ELEMENTS = 4096


def _stacks(op: Op, side_shapes) -> bool:
    """Whether ``_stacked_matmul`` pays for ``op``'s GEMMs (``side_shapes``: the left and right
    matrices' (rows, inner) and (inner, columns))."""
    (rows, inner), (_, columns) = side_shapes
    return rows * (inner + columns) < STACK_MAX_ELEMENTS


def _matrix_shapes(op: Op) -> tuple[tuple[int, int], tuple[int, int]]:
    """The left and right matrices' shapes of ``op``'s GEMMs."""
    lhs, rhs = op.operands[0].type, op.operands[1].type
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    inner = math.prod(lhs.shape[d] for d in lhs_contracting)
    rows = math.prod(lhs.shape[d] for d in range(lhs.rank) if d not in lhs_contracting and d not in lhs_batch)
    columns = math.prod(rhs.shape[d] for d in range(rhs.rank) if d not in rhs_contracting and d not in rhs_batch)
    return (rows, inner), (inner, columns)


def dot_kernel(op: Op, lead: int):
    """The dot_general kernel rule (rules/dot.py registers it). Batch dims and the leading dims become matmul's batch; free dims are flattened to the
    matrix rows and columns, contracting dims to the inner dim: one BLAS call per batch."""
    left_operand, right_operand = matmul_operand(op, lead, 0), matmul_operand(op, lead, 1)
    stacking = not op.attrs["batch_dims"][0] and _stacks(op, _matrix_shapes(op))
    result_local = op.result.type.shape

    def run(lhs, rhs):
        left, right = left_operand(lhs), right_operand(rhs)
        shared = [axis for axis in range(lead) if rhs.shape[axis] == 1 and lhs.shape[axis] > 1]
        if stacking and shared:
            return (_stacked_matmul(left, right, shared, lead).reshape(
                np.broadcast_shapes(lhs.shape[:lead], rhs.shape[:lead]) + result_local),)
        product = matmul(left, right)
        return (product.reshape(product.shape[:lead] + result_local),)

    return run


def _stacked_matmul(left: np.ndarray, right: np.ndarray, shared: list[int], lead: int) -> np.ndarray:
    """``matmul(left, right)`` where ``right`` is the same along the leading axes ``shared``:
    the devices' rows along them are stacked into one GEMM per distinct right operand, instead
    of one small GEMM per device (with every device's rows when ``right`` is the same on all)."""
    kept = [axis for axis in range(lead) if axis not in shared]
    rows, inner, columns = left.shape[-2], left.shape[-1], right.shape[-1]
    full = np.broadcast_shapes(left.shape[:lead], right.shape[:lead])
    kept_shape = tuple(full[axis] for axis in kept)
    shared_shape = tuple(left.shape[axis] for axis in shared)
    left = np.broadcast_to(left, full + (rows, inner)).transpose(kept + shared + [lead, lead + 1])
    left = left.reshape(kept_shape + (math.prod(shared_shape) * rows, inner))
    right = np.broadcast_to(right, tuple(1 if axis in shared else full[axis] for axis in range(lead))
                            + (inner, columns)).reshape(kept_shape + (inner, columns))
    product = matmul(left, right).reshape(kept_shape + shared_shape + (rows, columns))
    order = [0] * lead
    for position, axis in enumerate(kept + shared):
        order[axis] = position
    return product.transpose(order + [lead, lead + 1])


def reduced_contraction(dot: Op, reduce_axes: tuple[int, ...], lead: int, mesh_shape: tuple[int, ...]):
    """``all_reduce(dot_general(lhs, rhs))`` over the leading dims ``reduce_axes`` as ONE matmul.

    Every device along the reduced axes contracts its shard of K and the all_reduce sums the
    partial products; summed over devices that is the contraction over all the devices' K
    shards laid side by side, so the devices' leading dims join the contracting dim and the
    sum comes out of the GEMM itself (no partial results, no separate reduction pass). A
    buffer the same on every device along a reduced axis (leading dim 1) still counts once
    per device there: operands are broadcast to the mesh's size along the reduced axes.
    """
    lhs_type, rhs_type = dot.operands[0].type, dot.operands[1].type
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dot.attrs["contracting_dims"], dot.attrs["batch_dims"]
    lhs_free = [d for d in range(lhs_type.rank) if d not in lhs_contracting and d not in lhs_batch]
    rhs_free = [d for d in range(rhs_type.rank) if d not in rhs_contracting and d not in rhs_batch]
    others = [axis for axis in range(lead) if axis not in reduce_axes]
    lhs_order = _reduced_left_order(dot, reduce_axes, lead)
    rhs_order = others + list(shifted_axes(rhs_batch, lead)) + list(reduce_axes) + list(
        shifted_axes(list(rhs_contracting) + rhs_free, lead))
    batch_shape = tuple(lhs_type.shape[d] for d in lhs_batch)
    rows = int(np.prod([lhs_type.shape[d] for d in lhs_free]))
    columns = int(np.prod([rhs_type.shape[d] for d in rhs_free]))
    inner = int(np.prod([lhs_type.shape[d] for d in lhs_contracting]))
    dtype = to_numpy(dot.result.type.dtype)
    result_local = dot.result.type.shape
    stacking = not batch_shape and _stacks(dot, ((rows, inner), (inner, columns)))
    if not sums_in_the_gemm(dot):
        return _summed_contraction(dot, reduce_axes, lead, mesh_shape)

    def run(lhs, rhs):
        full = list(np.broadcast_shapes(lhs.shape[:lead], rhs.shape[:lead]))
        for axis in reduce_axes:
            full[axis] = mesh_shape[axis]
        group = int(np.prod([full[axis] for axis in reduce_axes]))
        other_shape = tuple(full[axis] for axis in others)
        # the right operand is broadcast only along the axes it is not the same over: along
        # the others, the devices' rows are stacked into one GEMM (_stacked_matmul)
        shared = [position for position, axis in enumerate(others)
                  if rhs.shape[axis] == 1 and lhs.shape[axis] > 1] if stacking else []
        right_full = [1 if axis in [others[position] for position in shared] else size
                      for axis, size in enumerate(full)]
        left = np.broadcast_to(lhs, tuple(full) + lhs.shape[lead:]).transpose(lhs_order)
        right = np.broadcast_to(rhs, tuple(right_full) + rhs.shape[lead:]).transpose(rhs_order)
        left = reshaped(left, other_shape + batch_shape + (rows, group * inner)).astype(dtype, copy=False)
        right_other = tuple(right_full[axis] for axis in others)
        right = reshaped(right, right_other + batch_shape + (group * inner, columns)).astype(dtype, copy=False)
        product = _stacked_matmul(left, right, shared, len(others)) if shared else matmul(left, right)
        lead_shape = tuple(1 if axis in reduce_axes else full[axis] for axis in range(lead))
        return (product.reshape(lead_shape + result_local),)

    return run


def sums_in_the_gemm(dot: Op) -> bool:
    """Whether ``reduced_contraction`` lays the devices' contracting shards side by side in
    one GEMM (else it sums the devices' products, ``_summed_contraction``)."""
    (rows, inner), (_, columns) = _matrix_shapes(dot)
    return rows * columns >= inner * (rows + columns)


def _reduced_left_order(dot: Op, reduce_axes: tuple[int, ...], lead: int) -> list[int]:
    """The order in which ``reduced_contraction``'s GEMM reads its left operand's dims (the
    leading ones included): the other leading dims, batch and free dims, then the reduced
    leading dims and the contracting dims, which it merges into the inner dim."""
    lhs_type = dot.operands[0].type
    (lhs_contracting, _), (lhs_batch, _) = dot.attrs["contracting_dims"], dot.attrs["batch_dims"]
    lhs_free = [d for d in range(lhs_type.rank) if d not in lhs_contracting and d not in lhs_batch]
    others = [axis for axis in range(lead) if axis not in reduce_axes]
    return others + list(shifted_axes(list(lhs_batch) + lhs_free, lead)) + list(reduce_axes) + list(
        shifted_axes(lhs_contracting, lead))


def reduced_left_order(dot: Op, reduce_axes: tuple[int, ...], lead: int) -> tuple[int, ...] | None:
    """The order of the left operand's dims in which ``reduced_contraction`` reads it without a
    copy (laid out so, its GEMM's left matrix is a view), or None where it sums the products."""
    return tuple(_reduced_left_order(dot, reduce_axes, lead)) if sums_in_the_gemm(dot) else None


def _summed_contraction(dot: Op, reduce_axes: tuple[int, ...], lead: int, mesh_shape: tuple[int, ...]):
    """``all_reduce(dot_general(lhs, rhs))`` as every device's product, then their sum over
    ``reduce_axes``: for products smaller than their operands (a weight's gradient, summed over
    the batch's devices), where laying the operands side by side would copy more than the sum
    reads. A product the same on every device along a reduced axis counts once per device."""
    plain = dot_kernel(dot, lead)

    def run(lhs, rhs):
        (product,) = plain(lhs, rhs)
        varying = tuple(axis for axis in reduce_axes if product.shape[axis] > 1)
        total = np.add.reduce(product, axis=varying, dtype=product.dtype, keepdims=True) if varying else product
        copies = math.prod(mesh_shape[axis] for axis in reduce_axes if product.shape[axis] == 1)
        return (total * total.dtype.type(copies) if copies > 1 else total,)

    return run
