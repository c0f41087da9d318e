"""The reductions of a fused group on the first tier (tiers.py), in the order its kernel
(codegen_reductions.py) reduces them, so both tiers give the same bits.

A ``columns`` kernel (a reduction over the leading dims) adds each column's rows one after
another into the identity, with no reassociation: ``np.add.accumulate`` over the rows repeats
that order exactly (its first partial sum is the first row itself, which differs from
``0 + row`` only in a -0, so adding the identity at the end makes them agree). A ``rows`` kernel's
max, min, and, or and integer sums give one result in any order, so numpy's reductions do,
float max/min with llvm.maximum's signed zeros. A float sum or product over the trailing dims
has no first tier: its kernel lets the vectoriser keep one partial sum per vector lane, and how
many lanes depends on the CPU (docs/execution.md has the lane layouts measured against it).
"""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..tables import kernel_rules, shifted_axes
from .fusion_groups import REDUCERS

_FLOATS = ("f32", "f64")


def reproducible(group) -> bool:
    """Whether every reduction of ``group`` (a Group with a split) has a first tier."""
    if group.leading:
        return True
    return not any(op.name in ("reduce_sum", "reduce_prod") and op.result.type.dtype in _FLOATS
                   for op in group.ops if op.name in REDUCERS)


def _signed_zero_fixed(op: Op, operand, result, axes):
    """``result`` (numpy's max or min) with a zero result made -0 or +0 as llvm.maximum and
    llvm.minimum order them: max is +0 when any +0 is reduced, min is -0 when any -0 is."""
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
        raise ValueError(f"{op.name} over the trailing dims has no first tier (tier_reductions.reproducible)")
    ufunc = np.add if op.name == "reduce_sum" else np.multiply
    numpy_dtype = to_numpy(dtype)

    def in_order(operand):
        rows = math.prod(operand.shape[lead:lead + len(axes)])
        flat = operand.reshape(operand.shape[:lead] + (rows,) + operand.shape[lead + len(axes):])
        with np.errstate(all="ignore"):
            total = np.take(ufunc.accumulate(flat, axis=lead), -1, axis=lead)
            if ufunc is np.add:
                total = total + numpy_dtype.type(0)
        return (np.asarray(total, numpy_dtype),)

    return in_order
