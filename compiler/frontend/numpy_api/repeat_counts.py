"""``repeat`` with an array of counts: element ``k`` along the axis appears ``repeats[k]`` times.

Output position ``i`` takes the element whose cumulative count first exceeds ``i`` (a
``searchsorted`` over the running total), so traced counts work too once
``total_repeat_length`` fixes the result's length; positions past the total repeat the last
element, as in JAX.
"""

from __future__ import annotations

import numpy as np

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import default_int
from ..trace import ConcretizationTypeError, Tracer
from .arguments import array_operand, as_array_argument, convert_operand, normalize_axis
from .reductions import cumsum
from .search import searchsorted
from .take import take


def repeat_by_counts(a, repeats, axis, total_repeat_length, out_sharding):
    """``a`` with each element along ``axis`` (None: of the flattened array) repeated its own
    number of times."""
    operand = array_operand(a, "repeat")
    if axis is None:
        operand, axis = lax.reshape(operand, (int(np.prod(shape_of(operand))),)), 0
    dim = normalize_axis(axis, len(shape_of(operand)), "repeat")
    size = shape_of(operand)[dim]
    counts = _counts(as_array_argument(repeats, "repeat"), size)
    if total_repeat_length is None:
        if isinstance(counts, Tracer):
            raise ConcretizationTypeError(
                "repeat: traced repeats need total_repeat_length, since the result's length depends on them")
        total_repeat_length = int(np.sum(np.asarray(counts)))
    index = default_int(x64())
    running = cumsum(convert_operand(counts, index))
    positions = searchsorted(running, lax.iota(index, int(total_repeat_length)), side="right")
    source = lax.min(positions, max(size - 1, 0))
    result = take(operand, source, axis=dim)
    if out_sharding is not None:
        from .. import sharding_ops

        result = sharding_ops.apply_out_sharding(result, out_sharding, "jnp.repeat")
    return result


def _counts(counts, size: int):
    """The counts as a 1-d array of ``size`` (a scalar or one count stands for all)."""
    if dtype_of(counts).name not in ("i32", "i64", "u32", "u64"):
        raise TypeError(f"repeat: repeats must be integers, got dtype {dtype_of(counts).name}")
    shape = shape_of(counts)
    if shape not in ((), (1,), (size,)):
        raise ValueError(f"repeat: repeats of shape {shape} do not match the {size} elements along the axis")
    if not isinstance(counts, Tracer) and np.any(np.asarray(counts) < 0):
        raise ValueError(f"repeat: repeats must be non-negative, got {np.asarray(counts)}")
    counts = convert_operand(counts, dtype_of(counts).name)
    if shape == (size,):
        return counts
    return lax.broadcast_in_dim(lax.reshape(counts, ()), (size,), ())
