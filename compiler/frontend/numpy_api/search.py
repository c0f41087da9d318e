"""jax.numpy's ``searchsorted``: where values would be inserted into a sorted 1-d array.

Every method JAX offers (scan, scan_unrolled, sort, compare_all) gives the same result; this one
compares every value with every element (``compare_all``) and counts, which partitions as a sum
over the sorted array. The order is the one ``sort`` uses: NaNs last, -0.0 equal to 0.0.
"""

from __future__ import annotations

from .. import lax_complex
from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import default_int
from .arguments import as_array_argument, convert_operand, result_dtype
from .elementwise_math import isnan
from meshjit.ir.dtypes import is_complex, is_float

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "searchsorted",
)

_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def _before(left, right):
    """``left`` sorts strictly before ``right`` (NaN after every number; complex numbers by
    their real parts, then their imaginary parts, as JAX's sort)."""
    if is_complex(dtype_of(left).name):
        (left_real, left_imaginary), (right_real, right_imaginary) = lax_complex.parts(left), lax_complex.parts(right)
        tied = lax.bitwise_or(lax.eq(left_real, right_real), lax.bitwise_and(isnan(left_real), isnan(right_real)))
        return lax.bitwise_or(_before(left_real, right_real), lax.bitwise_and(tied, _before(left_imaginary, right_imaginary)))
    if not is_float(dtype_of(left).name):
        return lax.lt(left, right)
    return lax.bitwise_or(lax.lt(left, right), lax.bitwise_and(isnan(right), lax.bitwise_not(isnan(left))))


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """The indices where ``v``'s elements would go in the sorted 1-d ``a`` to keep it sorted:
    before equal elements (``side="left"``) or after them (``"right"``)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in _METHODS:
        raise ValueError(f"searchsorted: method must be one of {', '.join(_METHODS)}, got {method!r}")
    a, v = as_array_argument(a, "searchsorted"), as_array_argument(v, "searchsorted")
    if len(shape_of(a)) != 1:
        raise ValueError(f"searchsorted: a must be 1-dimensional, got shape {shape_of(a)}")
    kind = result_dtype(a, v).name
    a, v = convert_operand(a, kind), convert_operand(v, kind)
    if sorter is not None:
        from .take import take

        a = take(a, sorter, mode="clip")
    values_shape = shape_of(v)
    size = shape_of(a)[0]
    rank = len(values_shape)
    table = lax.broadcast_in_dim(a, values_shape + (size,), (rank,))
    queries = lax.broadcast_in_dim(v, values_shape + (size,), tuple(range(rank)))
    # left: how many elements sort before the value; right: how many the value does not precede
    counted = _before(table, queries) if side == "left" else lax.bitwise_not(_before(queries, table))
    index = default_int(x64())
    return lax.reduce_sum(lax.convert_element_type(counted, index), (rank,))
