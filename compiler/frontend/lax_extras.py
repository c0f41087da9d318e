"""The jax.lax functions built from the primitives: ``select_n``, ``associative_scan``,
``cumlogsumexp``, the generic ``reduce``, ``batch_matmul``, the dim helpers (``slice_in_dim``,
``index_in_dim``, ``split``, ``collapse``, ``broadcast_to_rank``, ``full_like``) and the
elementwise functions lax names after their math (``reciprocal``, the inverse and hyperbolic
trigonometric functions).
"""

from __future__ import annotations

import builtins
import itertools
import math
import operator
from collections.abc import Callable, Sequence

from meshjit.ir.dtypes import is_complex, is_float

from . import lax_ops as lax
from .control_flow_tracing import flatten, unflatten
from . import numpy_api as jnp
from .numpy_api.arguments import normalize_axis
from .operands import as_operand, dtype_of, shape_of
from .precision import check_precision

__all__ = (
    "acos",
    "acosh",
    "asin",
    "asinh",
    "associative_scan",
    "atan",
    "atanh",
    "batch_matmul",
    "broadcast_to_rank",
    "collapse",
    "cosh",
    "cumlogsumexp",
    "full_like",
    "index_in_dim",
    "reciprocal",
    "reduce",
    "select_n",
    "sinh",
    "slice_in_dim",
    "split",
)


def _float_only(name: str, function: Callable) -> Callable:
    def apply(x):
        operand = as_operand(x)
        if not (is_float(dtype_of(operand).name) or is_complex(dtype_of(operand).name)):
            raise TypeError(f"{name} does not accept dtype {dtype_of(operand).name}; it needs a float or complex")
        return function(operand)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise ``{name}`` of a float or complex array (as ``jnp.{function.__name__}``)."
    return apply


acos = _float_only("acos", jnp.arccos)
asin = _float_only("asin", jnp.arcsin)
atan = _float_only("atan", jnp.arctan)
acosh = _float_only("acosh", jnp.arccosh)
asinh = _float_only("asinh", jnp.arcsinh)
atanh = _float_only("atanh", jnp.arctanh)
cosh = _float_only("cosh", jnp.cosh)
sinh = _float_only("sinh", jnp.sinh)


def reciprocal(x):
    """``1 / x`` elementwise."""
    operand = as_operand(x)
    return lax.div(lax.full(shape_of(operand), 1, dtype_of(operand).name), operand)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``."""
    operand = as_operand(x)
    return lax.full(
        shape_of(operand) if shape is None else tuple(shape),
        fill_value,
        dtype_of(operand).name if dtype is None else dtype,
        sharding=sharding,
    )


def select_n(which, *cases):
    """``cases[which]`` elementwise: ``which`` is a bool (two cases: False picks the first) or
    an int32 array (or scalar) of case numbers."""
    if not cases:
        raise ValueError("select_n() must have at least one case")
    cases = [as_operand(case) for case in cases]
    shapes, dtypes = {shape_of(case) for case in cases}, {dtype_of(case).name for case in cases}
    if len(shapes) != 1 or len(dtypes) != 1:
        raise TypeError(f"select_n cases must have the same shapes and dtypes, got {shapes} and {dtypes}")
    which = as_operand(which)
    if shape_of(which) not in ((), shape_of(cases[0])):
        raise TypeError(f"select_n which must be scalar or have the shape of the cases, got {shape_of(which)}")
    if shape_of(which) == () and shape_of(cases[0]) != ():
        which = lax.broadcast_in_dim(which, shape_of(cases[0]), ())
    if dtype_of(which).name == "bool":
        if len(cases) > 2:
            raise TypeError(f"select_n with a boolean predicate takes at most 2 cases, got {len(cases)}")
        return cases[0] if len(cases) == 1 else lax.select(which, cases[1], cases[0])
    result = cases[0]
    for number, case in enumerate(cases[1:], start=1):
        result = lax.select(lax.eq(which, number), case, result)
    return result


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """``operand[start:limit:stride]`` along ``axis`` (None and negative bounds as Python's)."""
    operand = as_operand(operand)
    shape = shape_of(operand)
    dim = normalize_axis(axis, len(shape), "slice_in_dim")
    start, limit, _ = builtins.slice(start_index, limit_index).indices(shape[dim])
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], limits[dim], strides[dim] = start, max(start, limit), int(stride)
    return lax.slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The ``index``-th slice along ``axis`` (negative from the end), kept as a size-1 dim."""
    operand = as_operand(operand)
    dim = normalize_axis(axis, len(shape_of(operand)), "index_in_dim")
    size = shape_of(operand)[dim]
    position = operator.index(index)
    if not -size <= position < size:
        raise IndexError(f"index {position} is out of bounds for axis {dim} with size {size}")
    position %= size
    piece = slice_in_dim(operand, position, position + 1, 1, dim)
    return piece if keepdims else lax.squeeze(piece, (dim,))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Consecutive pieces of ``operand`` along ``axis`` with the given ``sizes`` (summing to
    the dim's size)."""
    operand = as_operand(operand)
    dim = normalize_axis(axis, len(shape_of(operand)), "split")
    sizes = [operator.index(size) for size in sizes]
    if any(size < 0 for size in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
    if builtins.sum(sizes) != shape_of(operand)[dim]:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension {dim} of the "
                         f"operand shape {list(shape_of(operand))}")
    bounds = [0, *itertools.accumulate(sizes)]
    return [slice_in_dim(operand, start, stop, 1, dim) for start, stop in zip(bounds, bounds[1:])]


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with dims ``start_dimension:stop_dimension`` merged into one."""
    operand = as_operand(operand)
    shape = shape_of(operand)
    start, stop, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    merged = math.prod(shape[start:stop])
    return lax.reshape(operand, shape[:start] + (merged,) + shape[stop:])


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 dims added up to ``rank``."""
    operand = as_operand(x)
    missing = rank - len(shape_of(operand))
    return operand if missing <= 0 else lax.reshape(operand, (1,) * missing + shape_of(operand))


def batch_matmul(lhs, rhs, precision=None):
    """The matrix product of the last two dims, with the leading dims of both as batch dims."""
    check_precision(precision)
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    rank = len(shape_of(lhs))
    if rank < 2 or rank != len(shape_of(rhs)):
        raise ValueError(f"Arguments to batch_matmul must be at least 2D and agree on their rank, got "
                         f"{len(shape_of(lhs))} and {len(shape_of(rhs))}.")
    if shape_of(lhs)[:-2] != shape_of(rhs)[:-2]:
        raise ValueError(f"Argument shapes to batch_matmul must agree on the batch dims, got "
                         f"{shape_of(lhs)} and {shape_of(rhs)}.")
    batch = tuple(range(rank - 2))
    return lax.dot_general(lhs, rhs, (((rank - 1,), (rank - 2,)), (batch, batch)))


# --- scans and reductions of a user's combining function ------------------------------------------


def _take_every(leaves, start: int, stop: int, dim: int):
    return [slice_in_dim(leaf, start, stop, 2, dim) if stop > start else None for leaf in leaves]


def _interleave(evens, odds, dim: int):
    """Leaves alternating along ``dim``: evens[0], odds[0], evens[1], ... (evens may be one longer)."""
    woven = []
    for even, odd in zip(evens, odds):
        paired = shape_of(odd)[dim]
        head = slice_in_dim(even, 0, paired, 1, dim)
        stacked = jnp.stack([head, odd], axis=dim + 1)
        shape = shape_of(head)
        merged = lax.reshape(stacked, shape[:dim] + (2 * paired,) + shape[dim + 1:])
        if shape_of(even)[dim] > paired:
            merged = lax.concatenate([merged, slice_in_dim(even, paired, paired + 1, 1, dim)], dim)
        woven.append(merged)
    return woven


def _prefix_scan(combine, leaves, dim: int):
    """Inclusive scan of ``combine`` along ``dim``: combine neighbouring pairs, scan those
    recursively (the odd positions' results), then fill in the even positions."""
    size = shape_of(leaves[0])[dim]
    if size < 2:
        return leaves
    pairs = combine(_take_every(leaves, 0, size - 1, dim), _take_every(leaves, 1, size, dim))
    odds = _prefix_scan(combine, pairs, dim)
    if size > 2:
        later = combine(
            [slice_in_dim(odd, 0, (size - 1) // 2, 1, dim) for odd in odds],
            _take_every(leaves, 2, size, dim),
        )
        evens = [lax.concatenate([slice_in_dim(leaf, 0, 1, 1, dim), rest], dim) for leaf, rest in zip(leaves, later)]
    else:
        evens = [slice_in_dim(leaf, 0, 1, 1, dim) for leaf in leaves]
    return _interleave(evens, odds, dim)


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """The inclusive scan of the associative ``fn`` over ``elems`` (a pytree of arrays sharing
    the size of ``axis``) in O(log n) depth: ``result[i] = fn(...fn(elems[0], elems[1])...,
    elems[i])``; ``reverse`` scans from the end."""
    leaves, treedef = flatten(elems)
    leaves = [as_operand(leaf) for leaf in leaves]
    if not leaves:
        return elems
    dim = normalize_axis(axis, len(shape_of(leaves[0])), "associative_scan")
    sizes = {shape_of(leaf)[dim] for leaf in leaves}
    if len(sizes) != 1:
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. (saw: {sorted(sizes)})")

    def combine(first, second):
        result = fn(unflatten(treedef, first), unflatten(treedef, second))
        combined, result_tree = flatten(result)
        if result_tree != treedef:
            raise ValueError(f"associative_scan: fn must return a pytree like elems ({treedef}), got {result_tree}")
        return [as_operand(leaf) for leaf in combined]

    if reverse:
        leaves = [lax.rev(leaf, (dim,)) for leaf in leaves]
    scanned = _prefix_scan(combine, leaves, dim)
    if reverse:
        scanned = [lax.rev(leaf, (dim,)) for leaf in scanned]
    return unflatten(treedef, scanned)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """The running ``log(sum(exp(x)))`` along ``axis``, computed stably."""
    return associative_scan(jnp.logaddexp, as_operand(operand), reverse=reverse, axis=axis)


def _fold_dim(combine, leaves, dim: int):
    """``leaves`` combined along ``dim`` by halving (the order XLA's reduce may use: ``combine``
    must be associative and commutative), kept as a size-1 dim."""
    while shape_of(leaves[0])[dim] > 1:
        size = shape_of(leaves[0])[dim]
        half = size // 2
        folded = combine([slice_in_dim(leaf, 0, half, 1, dim) for leaf in leaves],
                         [slice_in_dim(leaf, half, 2 * half, 1, dim) for leaf in leaves])
        if size % 2:
            folded = [lax.concatenate([part, slice_in_dim(leaf, size - 1, size, 1, dim)], dim)
                      for part, leaf in zip(folded, leaves)]
        leaves = folded
    return leaves


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """``operands`` (an array or a pytree of same-shaped arrays) reduced over ``dimensions`` with
    the associative, commutative ``computation`` whose identity is ``init_values``."""
    leaves, treedef = flatten(operands)
    inits, init_tree = flatten(init_values)
    if treedef != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same tree structure, got "
                         f"{treedef} and {init_tree}")
    leaves = [as_operand(leaf) for leaf in leaves]
    shape = shape_of(leaves[0])
    dims = sorted({normalize_axis(dim, len(shape), "reduce") for dim in dimensions})

    def combine(first, second):
        result = computation(unflatten(treedef, first), unflatten(treedef, second))
        return [as_operand(leaf) for leaf in flatten(result)[0]]

    kept = tuple(size for dim, size in enumerate(shape) if dim not in dims)
    starts = [lax.broadcast_in_dim(lax.convert_element_type(as_operand(init), dtype_of(leaf).name), kept, ())
              for init, leaf in zip(inits, leaves)]
    if any(shape[dim] == 0 for dim in dims):
        return unflatten(treedef, starts)
    for dim in dims:
        leaves = _fold_dim(combine, leaves, dim)
    folded = [lax.reshape(leaf, kept) for leaf in leaves]
    return unflatten(treedef, combine(starts, folded))
