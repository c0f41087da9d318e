"""The Python Array API standard's (2024.12) shape, reduction and product names beside numpy's:
``astype concat permute_dims unstack meshgrid count_nonzero cumulative_sum cumulative_prod
vecdot``, with the standard's signatures (positional-only arrays, keyword-only options)."""

from __future__ import annotations

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import default_int
from .arguments import (
    array_operand,
    as_array_argument,
    convert_operand,
    dtype_argument,
    normalize_axis,
    promote_and_broadcast,
    with_weak_type,
)
from .complex_functions import conjugate
from .creation import _placing
from .elementwise import multiply, not_equal
from .reductions import _summation_dtype, cumprod, cumsum
from .reductions import sum as _sum
from .shape_ops import concatenate, reshape, transpose

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "astype",
    "concat",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "meshgrid",
    "permute_dims",
    "unstack",
    "vecdot",
)


@_placing
def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (strongly typed); values are immutable, so ``copy`` changes
    nothing."""
    value = as_array_argument(x, "astype")
    return lax._convert_element_type(convert_operand(value, dtype_of(value).name),
                                     dtype_argument(dtype, "astype"), weak_type=False)


def concat(arrays, /, *, axis: int | None = 0):
    """The arrays joined along ``axis`` (None: flattened first): the standard's ``concatenate``."""
    return concatenate(arrays, axis=axis)


def permute_dims(a, /, axes):
    """``a`` with its dims in the order ``axes``: the standard's ``transpose``."""
    return transpose(a, axes)


def unstack(x, /, *, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    operand = array_operand(x, "unstack")
    shape = shape_of(operand)
    if not shape:
        raise ValueError("unstack: x must have at least one dimension, got a 0-d array")
    dim = normalize_axis(axis, len(shape), "unstack")
    kept = shape[:dim] + shape[dim + 1:]
    slices = []
    for index in range(shape[dim]):
        start = tuple(index if d == dim else 0 for d in range(len(shape)))
        limit = tuple(index + 1 if d == dim else size for d, size in enumerate(shape))
        slices.append(lax.reshape(lax.slice(operand, start, limit), kept))
    return tuple(slices)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate arrays from 1-d ``xi``: matrix (``"ij"``) or Cartesian (``"xy"``, first two
    dims swapped) indexing; ``sparse`` keeps size-1 dims instead of broadcasting."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    operands = [array_operand(value, "meshgrid") for value in xi]
    for position, operand in enumerate(operands):
        if len(shape_of(operand)) != 1:
            raise ValueError(f"meshgrid: argument {position} must be 1-dimensional, got shape {shape_of(operand)}")
    sizes = [shape_of(operand)[0] for operand in operands]
    if indexing == "xy" and len(operands) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for position, operand in enumerate(operands):
        dim = {0: 1, 1: 0}.get(position, position) if indexing == "xy" and len(operands) >= 2 else position
        if sparse:
            grids.append(reshape(operand, tuple(sizes[d] if d == dim else 1 for d in range(len(sizes)))))
        else:
            grids.append(lax.broadcast_in_dim(operand, tuple(sizes), (dim,)))
    return grids


def count_nonzero(a, axis=None, keepdims: bool = False):
    """How many elements of ``a`` are not zero (False) over ``axis``, in the default int."""
    value = as_array_argument(a, "count_nonzero")
    return _sum(not_equal(value, 0), axis=axis, dtype=default_int(x64()), keepdims=keepdims)


def _cumulative(name: str, scan, identity: int, widen_integers: bool = False):
    def apply(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
        operand = array_operand(x, name)
        if dtype is None and widen_integers:
            # as JAX's cumulative_sum (not its cumsum): narrow ints accumulate as sum's do
            dtype = _summation_dtype(dtype_of(operand))
        rank = len(shape_of(operand))
        if axis is None:
            if rank > 1:
                raise ValueError(f"{name}: axis must be given for an array of rank {rank} > 1")
            axis = 0
        if rank == 0:
            raise ValueError(f"{name}: x must have at least one dimension, got a 0-d array")
        dim = normalize_axis(axis, rank, name)
        result = scan(operand, axis=dim, dtype=dtype)
        if not include_initial:
            return result
        initial_shape = tuple(1 if d == dim else size for d, size in enumerate(shape_of(result)))
        initial = lax.full(initial_shape, identity, dtype_of(result).name)
        return lax.concatenate([initial, result], dim)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = (f"Inclusive ``{scan.__name__}`` along ``axis`` (None only for 1-d ``x``); "
                     f"``include_initial`` puts the identity {identity} first.")
    return apply


cumulative_sum = _cumulative("cumulative_sum", cumsum, 0, widen_integers=True)
cumulative_prod = _cumulative("cumulative_prod", cumprod, 1)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """The dot product of vectors along ``axis`` of the broadcast operands (conjugating
    ``x1``: real arrays are their own conjugate)."""
    (first, second), dtype = promote_and_broadcast("vecdot", x1, x2)
    rank = len(shape_of(first))
    if rank == 0:
        raise ValueError("vecdot: the arguments must have at least one dimension")
    dim = normalize_axis(axis, rank, "vecdot")
    name = dtype.name if preferred_element_type is None else dtype_argument(preferred_element_type, "vecdot")
    product = multiply(conjugate(convert_operand(first, name)), convert_operand(second, name))
    return with_weak_type(_sum(product, axis=dim, dtype=name), dtype.weak and preferred_element_type is None)
