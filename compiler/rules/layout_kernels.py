"""The layout family's kernels: transposes, reshapes, broadcasts, slices and concatenations of
plan buffers (views where numpy allows), behind their leading mesh dims."""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op

from ..tables import (
    kernel_rules,
    shifted_axes,
)


# --- kernels -------------------------------------------------------------------------------------


@kernel_rules.register("transpose")
def _transpose(op: Op, lead: int):
    order = tuple(range(lead)) + shifted_axes(op.attrs["permutation"], lead)
    return lambda operand: (np.transpose(operand, order),)


@kernel_rules.register("reshape", "squeeze", "expand_dims")
def _reshape(op: Op, lead: int):
    local = op.result.type.shape
    return lambda operand: (operand.reshape(operand.shape[:lead] + local),)


# NOTE: a broadcast result up to this many elements is written out (~0.7 µs for 1024 floats)
# rather than made a view by np.broadcast_to, whose Python wrapper costs ~3.3 µs at any size.
SMALL_BROADCAST_ELEMENTS = 16384


@kernel_rules.register("broadcast_in_dim")
def _broadcast(op: Op, lead: int):
    shape = op.attrs["shape"]
    dims = op.attrs["broadcast_dimensions"]
    local_elements = math.prod(shape)

    def run(operand):
        expanded = [1] * len(shape)
        for operand_dim, result_dim in enumerate(dims):
            expanded[result_dim] = operand.shape[lead + operand_dim]
        reshaped = operand.reshape(operand.shape[:lead] + tuple(expanded))
        target = operand.shape[:lead] + tuple(shape)
        if local_elements * math.prod(operand.shape[:lead]) <= SMALL_BROADCAST_ELEMENTS:
            written = np.empty(target, operand.dtype)
            written[...] = reshaped
            return (written,)
        return (np.broadcast_to(reshaped, target),)

    return run


@kernel_rules.register("slice")
def _slice(op: Op, lead: int):
    index = (slice(None),) * lead + tuple(
        slice(start, limit, stride) for start, limit, stride in
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"]))
    return lambda operand: (operand[index],)


@kernel_rules.register("rev")
def _rev(op: Op, lead: int):
    index = (slice(None),) * lead + tuple(
        slice(None, None, -1) if dim in op.attrs["dimensions"] else slice(None) for dim in range(op.result.type.rank))
    return lambda operand: (operand[index],)


@kernel_rules.register("concatenate")
def _concatenate(op: Op, lead: int):
    axis = lead + op.attrs["dimension"]

    def run(*operands):
        shape = np.broadcast_shapes(*(operand.shape[:lead] for operand in operands))
        full = [np.broadcast_to(operand, shape + operand.shape[lead:]) for operand in operands]
        return (np.concatenate(full, axis=axis),)

    return run


@kernel_rules.register("sharding_constraint")
def _identity(op: Op, lead: int):
    return lambda operand: (operand,)
