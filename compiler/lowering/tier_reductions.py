"""The reductions of a fused group on the first tier (tiers.py), in the order its kernel
(codegen_reductions.py) reduces them, so both tiers give the same bits.

A ``columns`` kernel (a reduction over the leading dims) adds each column's rows one after
another into the identity, with no reassociation: numpy's reduce over the rows from the identity
repeats that order where two or more columns lie innermost, ``np.add.accumulate`` where one does
(its first partial sum is the first row itself, which differs from ``0 + row`` only in a -0, so
adding the identity at the end makes them agree). A ``rows`` kernel's
max, min, and, or and integer sums give one result in any order, so numpy's reductions do,
float max/min with llvm.maximum's signed zeros. A float sum over the trailing dims is
``_lane_sum``'s order (codegen_lanes.py), which ``lane_sum`` repeats over all rows at once. A
float product over the trailing dims has no first tier and waits for its kernel.
"""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..tables import kernel_rules, shifted_axes
from .codegen_lanes import LANES
from .fusion_groups import REDUCERS

_FLOATS = ("f32", "f64")


def reproducible(group) -> bool:
    """Whether every reduction of ``group`` (a Group with a split) has a first tier."""
    if group.leading:
        return True
    return not any(op.name == "reduce_prod" and op.result.type.dtype in _FLOATS
                   for op in group.ops if op.name in REDUCERS)


def lane_sum(rows: np.ndarray, dtype: str) -> np.ndarray:
    """The sums over the last axis of ``rows`` in ``_lane_sum``'s order (codegen_lanes.py)."""
    lanes, columns = LANES[dtype], rows.shape[-1]
    rows = np.ascontiguousarray(rows)  # the lanes axis innermost in memory (the reduce's order)
    position = columns - columns % lanes
    acc = np.zeros(rows.shape[:-1] + (lanes,), rows.dtype)
    blocks = rows[..., :position].reshape(rows.shape[:-1] + (position // lanes, lanes))
    with np.errstate(all="ignore"):
        if position:
            # a reduce over the blocks axis with the lanes axis innermost adds whole blocks one
            # after another from ``initial``, lane by lane: the kernel's order, +0 start included
            # (numpy sums pairwise only along an innermost reduced axis; the written-out order test
            # in test_tier_row_sums.py checks this numpy's iteration)
            acc = np.add.reduce(blocks, axis=-2, initial=rows.dtype.type(0))
        width = lanes
        while width > 1:
            width //= 2
            acc = acc[..., :width] + acc[..., width:]
            if columns - position >= width:
                acc = acc + rows[..., position:position + width]
                position += width
    return acc[..., 0]


def _signed_zero_fixed(op: Op, operand, result, axes):
    """``result`` (numpy's max or min) with a zero result made -0 or +0 as llvm.maximum and
    llvm.minimum order them: max is +0 when any +0 is reduced, min is -0 when any -0 is."""
    if not np.any(result == 0):
        return np.asarray(result)  # NOTE: the common case, without three passes over the operand
    zeros = operand == 0
    wanted = zeros & (np.signbit(operand) == (op.name == "reduce_min"))
    present = np.any(wanted, axis=axes)
    zero = result.dtype.type(0.0)
    flipped = -zero if op.name == "reduce_max" else zero
    return np.where(result == 0, np.where(present, -flipped, flipped), result)


def reduction_kernel(op: Op, lead: int, leading: bool):
    """``run(operand buffer) -> (result buffer,)`` for reduction ``op`` of a fused group
    (``leading``: of a columns kernel), in its kernel's order."""
    dtype = op.result.type.dtype
    axes = shifted_axes(op.attrs["axes"], lead)
    floating = dtype in _FLOATS
    if floating and op.name in ("reduce_max", "reduce_min"):
        reducer = np.max if op.name == "reduce_max" else np.min

        def extreme(operand):
            with np.errstate(all="ignore"):
                return (_signed_zero_fixed(op, operand, reducer(operand, axis=axes), axes),)

        return extreme
    if not (floating and op.name in ("reduce_sum", "reduce_prod")):
        return kernel_rules[op.name](op, lead)
    if not leading:
        if op.name == "reduce_prod":
            raise ValueError("reduce_prod over the trailing dims has no first tier (tier_reductions.reproducible)")
        return _trailing_sum(op, axes, dtype)
    ufunc = np.add if op.name == "reduce_sum" else np.multiply
    numpy_dtype = to_numpy(dtype)

    def in_order(operand):
        rows = math.prod(operand.shape[lead:lead + len(axes)])
        flat = np.ascontiguousarray(operand.reshape(operand.shape[:lead] + (rows,) + operand.shape[lead + len(axes):]))
        with np.errstate(all="ignore"):
            if math.prod(flat.shape[lead + 1:]) > 1:
                # with two or more columns innermost in memory numpy's reduce adds the rows one after
                # another from ``initial`` (the identity) column by column: the kernel's order
                total = ufunc.reduce(flat, axis=lead, initial=numpy_dtype.type(1 if ufunc is np.multiply else 0))
            else:
                # one column: its reduce would be pairwise (along the innermost axis), so the
                # partial results in order, the last one kept
                total = np.take(ufunc.accumulate(flat, axis=lead), -1, axis=lead)
                if ufunc is np.add:
                    total = total + numpy_dtype.type(0)
        return (np.asarray(total, numpy_dtype),)

    return in_order


def _trailing_sum(op: Op, axes, dtype: str):
    """``run(operand) -> (result,)`` for a float sum over the trailing ``axes`` (a rows kernel)."""
    count = len(axes)

    def in_lanes(operand):
        if tuple(axes) != tuple(range(operand.ndim - count, operand.ndim)):
            raise ValueError(f"{op.name} over axes {tuple(axes)} is not over the trailing dims of a rows kernel")
        rows = operand.reshape(operand.shape[:operand.ndim - count] + (-1,))
        return (np.asarray(lane_sum(rows, dtype), to_numpy(dtype)),)

    return in_lanes
