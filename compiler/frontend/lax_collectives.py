"""The collectives a shard_map body calls by mesh axis name (jax.lax's psum, all_gather, ppermute,
...), bound to the IR's per-device ops over the axes the enclosing shard_map is manual over; and
``pcast``, which marks a value as varying along axes for the check_vma analysis.

A shard_map pushes an ``AxisEnvironment`` while it traces its body; a collective outside one, or
naming an axis the body is not manual over, raises ``NameError`` ("unbound axis name").
"""

from __future__ import annotations

import math
import operator
import warnings

from meshjit.ir import Block, SymbolRef

from . import index_groups, lax_ops
from .numpy_api.arguments import normalize_axis
from .numpy_api.elementwise import true_divide
from .operands import as_operand, dtype_of, shape_of
from .trace import Tracer, bind, current_trace
from .axis_environment import (
    AxisEnvironment,
    bind_collective,
    bound,
    named_axes,
    no_groups,
    single_vmap_axis,
    tree_map,
    vmap_axes,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pcast",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
    "pvary",
)

# --- reductions ----------------------------------------------------------------------------------


def _all_reduce(x, axis_name, reduction: str, function: str):
    if isinstance(axis_name, (tuple, list)) and not axis_name:
        return x
    batched, others = vmap_axes(axis_name)
    for axis in batched:
        x = named_axes.reduce(x, axis, reduction)
    if not others:
        return x
    environment, axes = bound(others, function)

    def reduce_leaf(leaf):
        leaf = as_operand(leaf)
        is_bool = dtype_of(leaf).name == "bool"
        if is_bool:
            # NOTE: as in JAX, psum counts True values (int32); pmax/pmin stay bool (any/all).
            leaf = lax_ops.convert_element_type(leaf, "i32")
        attrs = {"axes": axes, "reduction": reduction}
        result = bind_collective("all_reduce", leaf, environment, attrs)
        return lax_ops.convert_element_type(result, "bool") if is_bool and reduction != "sum" else result

    return tree_map(reduce_leaf, x)


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of ``x`` over the devices along ``axis_name`` (one axis or a tuple of axes)."""
    if axis_index_groups is not None:
        return index_groups.grouped_reduce(x, axis_name, axis_index_groups, "sum", "psum")
    return _all_reduce(x, axis_name, "sum", "psum")


def pmax(x, axis_name, *, axis_index_groups=None):
    """The elementwise maximum of ``x`` over the devices along ``axis_name``."""
    if axis_index_groups is not None:
        return index_groups.grouped_reduce(x, axis_name, axis_index_groups, "max", "pmax")
    return _all_reduce(x, axis_name, "max", "pmax")


def pmin(x, axis_name, *, axis_index_groups=None):
    """The elementwise minimum of ``x`` over the devices along ``axis_name``."""
    if axis_index_groups is not None:
        return index_groups.grouped_reduce(x, axis_name, axis_index_groups, "min", "pmin")
    return _all_reduce(x, axis_name, "min", "pmin")


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of ``x`` over the devices along ``axis_name`` (integers divide as floats)."""
    if axis_index_groups is not None:
        total = index_groups.grouped_reduce(x, axis_name, axis_index_groups, "sum", "pmean")
        members = len(axis_index_groups[0])
        return tree_map(lambda leaf: true_divide(leaf, members), total)
    if isinstance(axis_name, (tuple, list)) and not axis_name:
        return x
    batched, others = vmap_axes(axis_name)
    size = math.prod(axis.size for axis in batched)
    if others:
        environment, axes = bound(others, "pmean")
        size *= environment.group_size(axes)
    return tree_map(lambda total: true_divide(total, size), _all_reduce(x, axis_name, "sum", "pmean"))


# --- gathers and scatters ------------------------------------------------------------------------


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
    """Every device's ``x`` along ``axis_name``, in axis-index order: stacked on a new dim at
    ``axis``, or concatenated along dim ``axis`` when ``tiled``.

    As in JAX 0.10 the result counts as varying over the gathered axes; ``to="invarying"``
    makes it invariant there (so an out_spec may replicate it).
    """
    if to not in ("varying", "invarying"):
        raise ValueError(f"all_gather: to must be 'varying' or 'invarying', got {to!r}")
    batch_axis = single_vmap_axis(axis_name, "all_gather")
    if batch_axis is not None:
        no_groups(axis_index_groups, "all_gather over a vmap axis")
        return named_axes.all_gather(x, batch_axis, dim=axis, tiled=tiled)
    if axis_index_groups is not None:
        return index_groups.grouped_all_gather(x, axis_name, axis_index_groups, axis, tiled)
    environment, axes = bound(axis_name, "all_gather")

    def gather(leaf):
        leaf = as_operand(leaf)
        rank = len(shape_of(leaf))
        if tiled:
            dim = normalize_axis(axis, rank, "all_gather")
        else:
            dim = normalize_axis(axis, rank + 1, "all_gather")
            leaf = lax_ops.expand_dims(leaf, (dim,))
        result = bind_collective("all_gather", leaf, environment, {"axes": axes, "dim": dim})
        if to == "invarying":
            environment.invariant_results.add(result.value.id)
        return result

    return tree_map(gather, x)


def _check_split_dim(function: str, argument: str, dim: int, shape, size: int, axes, tiled: bool) -> None:
    """The dim a collective splits over the group: divisible by the group's size when tiled,
    exactly that size when not."""
    if tiled and shape[dim] % size:
        raise ValueError(f"{function}: {argument} {dim} of an operand of shape {shape} has size "
                         f"{shape[dim]}, which does not divide by {size}, the size of axes {axes}")
    if not tiled and shape[dim] != size:
        raise ValueError(f"{function}: with tiled=False, {argument} {dim} of an operand of shape {shape} "
                         f"must have size {size} (the size of axes {axes}), got {shape[dim]}")


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """The sum over ``axis_name``, of which device ``i`` keeps block ``i`` along
    ``scatter_dimension`` (a dim of the group's size that is removed, unless ``tiled``)."""
    batch_axis = single_vmap_axis(axis_name, "psum_scatter")
    if batch_axis is not None:
        no_groups(axis_index_groups, "psum_scatter over a vmap axis")
        return named_axes.psum_scatter(x, batch_axis, dimension=scatter_dimension, tiled=tiled)
    if axis_index_groups is not None:
        return index_groups.grouped_psum_scatter(x, axis_name, axis_index_groups, scatter_dimension, tiled)
    environment, axes = bound(axis_name, "psum_scatter")
    size = environment.group_size(axes)

    def scatter(leaf):
        leaf = as_operand(leaf)
        shape = shape_of(leaf)
        dim = normalize_axis(scatter_dimension, len(shape), "psum_scatter")
        _check_split_dim("psum_scatter", "scatter_dimension", dim, shape, size, axes, tiled)
        attrs = {"axes": axes, "dim": dim, "reduction": "sum"}
        result = bind_collective("reduce_scatter", leaf, environment, attrs)
        return result if tiled else lax_ops.squeeze(result, (dim,))

    return tree_map(scatter, x)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Device ``i`` sends block ``j`` of ``split_axis`` to device ``j``, which concatenates the
    blocks it receives along ``concat_axis`` (tiled), or stacks them there in place of the
    removed ``split_axis``, whose size must then be the group's (not tiled)."""
    no_groups(axis_index_groups, "all_to_all")
    if single_vmap_axis(axis_name, "all_to_all") is not None:
        raise ValueError("all_to_all over a vmap axis is not supported; reshape and transpose the "
                         "batched value outside the vmapped function instead")
    environment, axes = bound(axis_name, "all_to_all")
    size = environment.group_size(axes)

    def exchange(leaf):
        leaf = as_operand(leaf)
        shape = shape_of(leaf)
        split = normalize_axis(split_axis, len(shape), "all_to_all")
        concat = normalize_axis(concat_axis, len(shape), "all_to_all")
        _check_split_dim("all_to_all", "split_axis", split, shape, size, axes, tiled)
        if tiled:
            attrs = {"axes": axes, "split_dim": split, "concat_dim": concat}
            return bind_collective("all_to_all", leaf, environment, attrs)
        # NOTE: exchanging size-1 blocks in place leaves the senders along ``split``; moving
        # that dim to ``concat`` is JAX's untiled layout.
        attrs = {"axes": axes, "split_dim": split, "concat_dim": split}
        exchanged = bind_collective("all_to_all", leaf, environment, attrs)
        order = [dim for dim in range(len(shape)) if dim != split]
        order.insert(concat, split)
        return lax_ops.transpose(exchanged, tuple(order))

    return tree_map(exchange, x)


def _int_pair(pair, perm) -> tuple[int, int]:
    """One (source, target) pair of ``perm``; JAX's exception types: ValueError for a pair of
    the wrong length, TypeError for what is not a pair of ints."""
    expected = f"ppermute: perm must be a sequence of (source, target) int pairs, got {perm!r}"
    try:
        source, target = pair
    except TypeError:
        raise TypeError(expected) from None
    except ValueError:
        raise ValueError(f"{expected}: {pair!r} is not a pair") from None
    try:
        return operator.index(source), operator.index(target)
    except TypeError:
        raise TypeError(expected) from None


def _permutation_pairs(perm, size: int, axes: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """``perm`` as (source, target) pairs checked to be a partial permutation of ``range(size)``."""
    try:
        items = list(perm)
    except TypeError:
        raise TypeError(f"ppermute: perm must be a sequence of (source, target) int pairs, got {perm!r}") from None
    pairs = tuple(_int_pair(pair, perm) for pair in items)
    for pair in pairs:
        if not all(-size <= index < size for index in pair):
            raise IndexError(f"ppermute: pair {pair} of perm {pairs} is out of range for axes {axes} of "
                             f"size {size}; indices run from 0 to {size - 1} (or from -{size} to -1)")
    pairs = tuple((source % size, target % size) for source, target in pairs)
    for position, what in ((0, "sources"), (1, "targets")):
        indices = [pair[position] for pair in pairs]
        if len(set(indices)) != len(indices):
            raise ValueError(f"ppermute: perm {pairs} is not a partial permutation: its {what} repeat")
    return pairs


def ppermute(x, axis_name, perm):
    """Device ``source`` sends ``x`` to device ``target`` for each pair of ``perm`` (indices along
    ``axis_name``); a device no pair targets receives zeros."""
    batch_axis = single_vmap_axis(axis_name, "ppermute")
    if batch_axis is not None:
        (name,) = (batch_axis.name,)
        return named_axes.ppermute(x, batch_axis, _permutation_pairs(perm, batch_axis.size, (name,)))
    environment, axes = bound(axis_name, "ppermute")
    # NOTE: as in JAX, the devices of a multi-axis ppermute are numbered in mesh order, whatever
    # order axis_name lists the axes in (all_gather, psum_scatter and axis_index use the listed order)
    axes = tuple(sorted(axes, key=environment.mesh.axis_names.index))
    pairs = _permutation_pairs(perm, environment.group_size(axes), axes)

    def permute(leaf):
        attrs = {"axes": axes, "pairs": pairs}
        return bind_collective("collective_permute", as_operand(leaf), environment, attrs)

    return tree_map(permute, x)


# --- device position -----------------------------------------------------------------------------


def axis_index(axis_name):
    """This device's index along ``axis_name`` (int32); a tuple of axes gives the mixed-radix
    index with the first axis major."""
    batch_axis = single_vmap_axis(axis_name, "axis_index")
    if batch_axis is not None:
        return named_axes.axis_index(batch_axis)
    environment, axes = bound(axis_name, "axis_index")
    index = None
    for name in axes:
        attrs = {"mesh": SymbolRef(environment.mesh_name), "axis": name}
        term = bind("axis_index", [], attrs)[0]
        index = term if index is None else lax_ops.add(lax_ops.mul(index, environment.mesh.axis_size(name)), term)
    return index


def axis_size(axis_name) -> int:
    """The number of devices along ``axis_name`` (a Python int); for a vmap axis, its size."""
    batched, others = vmap_axes(axis_name)
    size = math.prod(axis.size for axis in batched)
    if not others:
        return size
    environment, axes = bound(others, "axis_size")
    return size * environment.group_size(axes)


# --- varying casts -------------------------------------------------------------------------------

_PCAST_TO = ("varying", "reduced", "unreduced")
_PVARY_REMOVED = ("jax.lax.pvary was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; use "
                 "`jax.lax.pcast(..., to='varying')`")


def pcast(x, axis_name, *, to):
    """``x`` (a pytree) marked as varying along ``axis_name`` (``to="varying"``): each device
    keeps its value, but shard_map's check_vma now treats the value as one that may differ
    along those axes, so an out_spec must mention them; the derivative sums over them.

    The value must be invariant along every named axis; without check_vma this is the identity.
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast: axis_name={axis_name!r} must be a tuple or a str, got a {type(axis_name).__name__}")
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise ValueError(f"pcast: got unexpected `to` value {to!r}. Allowed `to` values are: {set(_PCAST_TO)}")
    if to != "varying":
        raise ValueError(f"pcast: to={to!r} casts to JAX's {to} types, which meshjit does not model; "
                         f"it tracks only whether a value varies along a mesh axis (to='varying')")
    if current_trace() is None:
        raise ValueError("pcast should be called under meshjit.shard_map: it marks a value of a shard_map body")
    environment, axes = bound(axis_name, "pcast")
    if not environment.check_vma:
        return x
    ordered = tuple(name for name in environment.mesh.axis_names if name in axes)

    def cast(leaf):
        leaf = as_operand(leaf)
        _check_invariant(environment, leaf, ordered)
        return bind_collective("pvary", leaf, environment, {"axes": ordered})

    return tree_map(cast, x)


def pvary(x, axis_name):
    """``pcast(x, axis_name, to="varying")``: JAX 0.8's name, removed in JAX 0.10 (kept here with
    a DeprecationWarning so that older shard_map code runs)."""
    warnings.warn(_PVARY_REMOVED, DeprecationWarning, stacklevel=2)
    return pcast(x, axis_name, to="varying")


def _check_invariant(environment: AxisEnvironment, leaf, axes: tuple[str, ...]) -> None:
    """A ValueError unless ``leaf`` is invariant along every one of ``axes`` (JAX's check)."""
    varying = _varying_now(environment, leaf)
    if varying is None:
        return
    already = [name for name in axes if name in varying]
    if not already:
        return
    kind = shape_of(leaf), dtype_of(leaf).name
    if len(already) == len(axes):
        raise ValueError(f"pcast: the value ({kind[1]}{list(kind[0])}) already varies along {already}, so it cannot "
                         f"be cast to varying there (JAX: Unsupported pcast from=varying, to='varying')")
    raise ValueError(f"pcast: axis_name {axes} mixes axes the value ({kind[1]}{list(kind[0])}) varies along "
                     f"({already}) with axes it is invariant along; cast along the invariant ones only")


def _varying_now(environment: AxisEnvironment, leaf) -> frozenset[str] | None:
    """The manual axes ``leaf`` varies along given the body traced so far; None when it is a value
    of a region nested in the body (a derivative's, say), whose analysis is not at hand."""
    from .shard_map import varying_axes  # NOTE: shard_map imports this module

    if not isinstance(leaf, Tracer):
        return frozenset()
    trace = environment.trace
    if leaf.trace is not trace:
        return None
    captured = tuple(value for value, _ in trace.captured.values())
    block = Block(tuple(trace.args) + captured, tuple(trace.ops), ())
    return varying_axes(block, environment.argument_axes, environment.invariant_results)[leaf.value.id]
