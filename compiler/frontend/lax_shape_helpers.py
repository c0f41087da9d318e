"""jax.lax's shape helpers built from the primitives: ``stack``, ``unstack``, ``tile``,
``broadcast_like``, and the ``RoundingMethod`` enum ``lax.round`` takes."""

from __future__ import annotations

import enum
from collections.abc import Sequence

from . import lax_ops as lax
from .lax_extras import index_in_dim
from .numpy_api.arguments import normalize_axis
from .operands import as_operand, shape_of

# NOTE: the public names, re-exported by the facade (``meshjit.lax``).
__all__ = ("RoundingMethod", "broadcast_like", "stack", "tile", "unstack")


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` rounds halfway values (its ints and names are accepted too)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def stack(operands: Sequence, axis: int = 0):
    """The operands (one shape and dtype) stacked along a new dim ``axis``."""
    operands = [as_operand(operand) for operand in operands]
    if not operands:
        raise ValueError("lax.stack requires at least one operand")
    axis = normalize_axis(axis, len(shape_of(operands[0])) + 1, "lax.stack")
    return lax.concatenate([lax.expand_dims(operand, (axis,)) for operand in operands], axis)


def unstack(operand, axis: int = 0):
    """The slices of ``operand`` along ``axis``, as a tuple."""
    operand = as_operand(operand)
    axis = normalize_axis(axis, len(shape_of(operand)), "lax.unstack")
    return tuple(index_in_dim(operand, index, axis, keepdims=False) for index in range(shape_of(operand)[axis]))


def tile(operand, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along dim ``i`` (``len(reps)`` is its rank)."""
    operand = as_operand(operand)
    shape = shape_of(operand)
    reps = tuple(int(rep) for rep in reps)
    if len(reps) != len(shape):
        raise ValueError(f"len(reps) must equal operand.ndim, got reps={reps} for operand shape {shape}")
    interleaved = tuple(size for pair in zip(reps, shape) for size in pair)
    broadcast = lax.broadcast_in_dim(operand, interleaved, tuple(range(1, 2 * len(shape), 2)))
    return lax.reshape(broadcast, tuple(rep * size for rep, size in zip(reps, shape)))


def broadcast_like(x, like):
    """``x`` with leading dims added to reach ``like``'s shape."""
    x = as_operand(x)
    target = shape_of(as_operand(like))
    return lax.broadcast(x, target[: len(target) - len(shape_of(x))])
