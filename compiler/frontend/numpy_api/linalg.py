"""jax.numpy's products: ``matmul`` (batch broadcasting, 1-d promotion), ``dot``, ``tensordot``,
``inner``, ``outer`` and ``vdot``, all lowered to one ``dot_general`` through ``einsum.contract``.
"""

from __future__ import annotations

import operator

from .. import lax_ops as lax
from .. import sharding_ops
from ..operands import shape_of
from .arguments import (
    as_array_argument,
    broadcast_shapes,
    convert_operand,
    dtype_argument,
    normalize_axis,
    result_dtype,
    with_weak_type,
)
from ..precision import check_precision
from .einsum import contract
from .elementwise import multiply
from .shape_ops import ravel

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "dot",
    "inner",
    "matmul",
    "outer",
    "tensordot",
    "vdot",
)


def _operands(function: str, a, b):
    """Both arguments in their promoted dtype (bools as i32: dot_general has no bool form)."""
    values = [as_array_argument(value, function) for value in (a, b)]
    dtype = result_dtype(*values)
    compute = "i32" if dtype.name == "bool" else dtype.name
    return [convert_operand(value, compute) for value in values], dtype


def _finish(result, dtype, preferred):
    """Back to bool for bool products; keep the weak flag of weak operands."""
    if dtype.name == "bool":
        return lax.ne(result, 0)
    return with_weak_type(result, dtype.weak and preferred is None)


def _preferred(preferred_element_type, function: str, precision=None):
    check_precision(precision)
    if preferred_element_type is None:
        return None
    return dtype_argument(preferred_element_type, function)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """The matrix product of the last two dims, broadcasting the leading (batch) dims;
    a 1-d operand is a row (``a``) or column (``b``) vector whose unit dim is then removed."""
    (lhs, rhs), dtype = _operands("matmul", a, b)
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    for index, shape in enumerate((lhs_shape, rhs_shape)):
        if not shape:
            raise ValueError(
                f"matmul: input operand {index} must have ndim at least 1, but it has ndim 0"
            )
    lhs_batch, rhs_batch = lhs_shape[:-2], rhs_shape[:-2]
    # NOTE: batch dims first, as JAX (a ValueError), then the contracting dims (a TypeError)
    batch_rank = len(broadcast_shapes("matmul", lhs_batch, rhs_batch))
    lhs_contracting = lhs_shape[-1]
    rhs_contracting = rhs_shape[-2] if len(rhs_shape) > 1 else rhs_shape[0]
    if lhs_contracting != rhs_contracting:
        raise TypeError(
            f"matmul: shapes {lhs_shape} and {rhs_shape} do not align: the contracting "
            f"dims have sizes {lhs_contracting} and {rhs_contracting}"
        )
    # Batch dims are labelled by their position in the result, aligned from the right.
    lhs_labels = list(range(batch_rank - len(lhs_batch), batch_rank))
    rhs_labels = list(range(batch_rank - len(rhs_batch), batch_rank))
    lhs_labels += ["rows", "inner"] if len(lhs_shape) > 1 else ["inner"]
    rhs_labels += ["inner", "columns"] if len(rhs_shape) > 1 else ["inner"]
    out_labels = list(range(batch_rank))
    out_labels += ["rows"] if len(lhs_shape) > 1 else []
    out_labels += ["columns"] if len(rhs_shape) > 1 else []
    preferred = _preferred(preferred_element_type, "matmul", precision)
    result = contract(lhs, lhs_labels, rhs, rhs_labels, out_labels, "matmul", preferred, out_sharding)
    return _finish(result, dtype, preferred)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """numpy's dot: a product with a scalar, the inner product of vectors, or a sum over the
    last dim of ``a`` and the second-to-last (or only) dim of ``b``."""
    (lhs, rhs), dtype = _operands("dot", a, b)
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    if not lhs_shape or not rhs_shape:
        return sharding_ops.apply_out_sharding(multiply(a, b), out_sharding, "dot_general")
    rhs_dim = len(rhs_shape) - 2 if len(rhs_shape) > 1 else 0
    if lhs_shape[-1] != rhs_shape[rhs_dim]:
        raise TypeError(
            f"dot: shapes {lhs_shape} and {rhs_shape} not aligned: dim {len(lhs_shape) - 1} "
            f"(size {lhs_shape[-1]}) != dim {rhs_dim} (size {rhs_shape[rhs_dim]})"
        )
    preferred = _preferred(preferred_element_type, "dot", precision)
    result = lax.dot_general(
        lhs, rhs, (((len(lhs_shape) - 1,), (rhs_dim,)), ((), ())), preferred_element_type=preferred,
        out_sharding=out_sharding,
    )
    return _finish(result, dtype, preferred)


def _tensordot_axes(axes, lhs_rank: int, rhs_rank: int):
    if isinstance(axes, bool):
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
    try:
        count = operator.index(axes)
    except TypeError:
        count = None
    if count is not None:
        if not 0 <= count <= min(lhs_rank, rhs_rank):
            raise ValueError(
                f"tensordot: axes={count} needs operands of rank at least {count}, "
                f"got ranks {lhs_rank} and {rhs_rank}"
            )
        return tuple(range(lhs_rank - count, lhs_rank)), tuple(range(count))
    try:
        lhs_axes, rhs_axes = axes
    except (TypeError, ValueError):
        raise TypeError(
            f"tensordot: axes must be an int or a pair of sequences, got {axes!r}"
        ) from None
    lhs_axes = (lhs_axes,) if isinstance(lhs_axes, int) else tuple(lhs_axes)
    rhs_axes = (rhs_axes,) if isinstance(rhs_axes, int) else tuple(rhs_axes)
    if len(lhs_axes) != len(rhs_axes):
        raise ValueError(
            f"tensordot: axes {axes} pair {len(lhs_axes)} dims of a with {len(rhs_axes)} of b"
        )
    lhs_dims = tuple(normalize_axis(axis, lhs_rank, "tensordot") for axis in lhs_axes)
    rhs_dims = tuple(normalize_axis(axis, rhs_rank, "tensordot") for axis in rhs_axes)
    return lhs_dims, rhs_dims


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Sum of products over ``axes`` (the last N of ``a`` with the first N of ``b``, or explicit
    pairs); the result has ``a``'s free dims then ``b``'s."""
    (lhs, rhs), dtype = _operands("tensordot", a, b)
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    lhs_dims, rhs_dims = _tensordot_axes(axes, len(lhs_shape), len(rhs_shape))
    for lhs_dim, rhs_dim in zip(lhs_dims, rhs_dims):
        if lhs_shape[lhs_dim] != rhs_shape[rhs_dim]:
            raise TypeError(
                f"tensordot: shape mismatch: dim {lhs_dim} of a {lhs_shape} and dim {rhs_dim} "
                f"of b {rhs_shape} have sizes {lhs_shape[lhs_dim]} and {rhs_shape[rhs_dim]}"
            )
    if len(set(lhs_dims)) != len(lhs_dims) or len(set(rhs_dims)) != len(rhs_dims):
        raise ValueError(f"tensordot: repeated axis in {axes}")
    preferred = _preferred(preferred_element_type, "tensordot", precision)
    result = lax.dot_general(
        lhs, rhs, ((lhs_dims, rhs_dims), ((), ())), preferred_element_type=preferred, out_sharding=out_sharding
    )
    return _finish(result, dtype, preferred)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum of products over the last dims of ``a`` and ``b`` (a product if either is 0-d)."""
    lhs, rhs = (as_array_argument(value, "inner") for value in (a, b))
    check_precision(precision)
    if not shape_of(lhs) or not shape_of(rhs):
        return multiply(lhs, rhs)
    return tensordot(lhs, rhs, ((-1,), (-1,)), preferred_element_type=preferred_element_type)


def outer(a, b):
    """Every product ``a[i] * b[j]`` of the flattened arguments."""
    lhs, rhs = ravel(a), ravel(b)
    return multiply(lax.expand_dims(lhs, (1,)), lax.expand_dims(rhs, (0,)))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of the flattened arguments, the first conjugated (as numpy and JAX)."""
    from .complex_functions import conj

    a = ravel(a)
    if str(getattr(a, "dtype", "")).startswith("complex"):
        a = conj(a)
    return dot(a, ravel(b), precision=precision, preferred_element_type=preferred_element_type)
