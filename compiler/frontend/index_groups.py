"""Collectives within groups of devices along one mesh axis (``axis_index_groups``), as pmap's
docstring examples use them: every device gathers the axis, then keeps its own group's part,
picked by its axis index from a constant table of the groups. ``lax_collectives`` calls the
``grouped_*`` functions when a collective is given groups."""

from __future__ import annotations

import numpy as np

from . import lax_ops as lax
from .numpy_api.arguments import normalize_axis
from .axis_environment import bind_collective, bound, tree_map
from .operands import as_operand, dtype_of, shape_of


def checked_groups(axis_index_groups, size: int, function: str) -> np.ndarray:
    """The groups as an (groups, members) int32 table: equal sizes, each index exactly once."""
    try:
        groups = [[int(index) for index in group] for group in axis_index_groups]
    except TypeError:
        raise TypeError(f"{function}: axis_index_groups must be a list of lists of axis indices, "
                        f"got {axis_index_groups!r}") from None
    if not groups or len({len(group) for group in groups}) != 1:
        raise ValueError(f"{function}: axis_index_groups must be groups of one size, got {groups}")
    if sorted(index for group in groups for index in group) != list(range(size)):
        raise ValueError(f"{function}: axis_index_groups {groups} must hold every index of the axis "
                         f"(0 to {size - 1}) exactly once")
    return np.array(groups, np.int32)


def _row(table: np.ndarray, index):
    """Row ``index`` (a traced int32 scalar) of a constant table."""
    columns = table.shape[1]
    start = [index, np.int32(0)]
    return lax.reshape(lax.dynamic_slice(table, start, (1, columns)), (columns,))


def members_of_my_group(groups: np.ndarray, index):
    """The axis indices of this device's group, in group order."""
    size = groups.size
    by_device = np.zeros((size, groups.shape[1]), np.int32)
    for group in groups:
        for member in group:
            by_device[member] = group
    return _row(by_device, index)


def position_in_my_group(groups: np.ndarray, index):
    """This device's position within its group (an int32 scalar)."""
    positions = np.zeros((groups.size, 1), np.int32)
    for group in groups:
        for position, member in enumerate(group):
            positions[member, 0] = position
    return lax.reshape(_row(positions, index), ())


def gather_my_group(gathered, groups: np.ndarray, index):
    """From every device's value stacked along dim 0, this device's group's, in group order."""
    return lax.gather_along_axis(gathered, members_of_my_group(groups, index), 0, mode="clip")


def reduce_my_group(gathered, groups: np.ndarray, index, reduction: str):
    """The sum (max, min) over this device's group of the values stacked along dim 0."""
    members = gather_my_group(gathered, groups, index)
    name = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min"}[reduction]
    return getattr(lax, name)(members, (0,))


def scatter_block(total, groups: np.ndarray, index, dim: int, tiled: bool):
    """This device's block of ``total`` along ``dim``: the one at its position in its group."""
    position = position_in_my_group(groups, index)
    shape = list(shape_of(total))
    block = shape[dim] // groups.shape[1]
    starts = [np.int32(0)] * len(shape)
    starts[dim] = lax.mul(position, np.int32(block))
    sizes = list(shape)
    sizes[dim] = block
    piece = lax.dynamic_slice(total, starts, tuple(sizes))
    return piece if tiled else lax.squeeze(piece, (dim,))


def is_bool(value) -> bool:
    return dtype_of(value).name == "bool"


# --- the grouped collectives (lax_collectives calls these when axis_index_groups is given) ------


def _collectives():
    from . import lax_collectives  # NOTE: it imports this module

    return lax_collectives


def _grouped(axis_name, axis_index_groups, function: str):
    """The environment, the one mesh axis, the groups' table and this device's index along the
    axis, for a collective within ``axis_index_groups``."""
    collectives = _collectives()
    environment, axes = bound(axis_name, function)
    if len(axes) != 1:
        raise ValueError(f"{function}: axis_index_groups needs a single mesh axis name, got {axes}")
    groups = checked_groups(axis_index_groups, environment.group_size(axes), function)
    return environment, axes, groups, collectives.axis_index(axes)


def _gathered(leaf, environment, axes):
    """Every device's ``leaf`` along ``axes``, stacked along a new dim 0."""
    attrs = {"axes": axes, "dim": 0}
    return bind_collective("all_gather", lax.expand_dims(leaf, (0,)), environment, attrs)


def grouped_reduce(x, axis_name, axis_index_groups, reduction: str, function: str):
    """psum / pmax / pmin within groups (bools: psum counts them)."""
    environment, axes, groups, index = _grouped(axis_name, axis_index_groups, function)

    def reduce_leaf(leaf):
        leaf = as_operand(leaf)
        flag = is_bool(leaf)
        if flag:
            leaf = lax.convert_element_type(leaf, "i32")
        result = reduce_my_group(_gathered(leaf, environment, axes), groups, index, reduction)
        return lax.convert_element_type(result, "bool") if flag and reduction != "sum" else result

    return tree_map(reduce_leaf, x)


def grouped_all_gather(x, axis_name, axis_index_groups, axis: int, tiled: bool):
    """all_gather within groups: the group's values in group order, stacked at ``axis`` (or
    concatenated along it when ``tiled``)."""
    environment, axes, groups, index = _grouped(axis_name, axis_index_groups, "all_gather")

    def gather(leaf):
        leaf = as_operand(leaf)
        rank = len(shape_of(leaf))
        mine = gather_my_group(_gathered(leaf, environment, axes), groups, index)
        if not tiled:
            return lax.transpose(mine, _moved(0, normalize_axis(axis, rank + 1, "all_gather"), rank + 1))
        dim = normalize_axis(axis, rank, "all_gather")
        moved = lax.transpose(mine, _moved(0, dim, rank + 1))
        shape = shape_of(moved)
        return lax.reshape(moved, shape[:dim] + (shape[dim] * shape[dim + 1],) + shape[dim + 2:])

    return tree_map(gather, x)


def _moved(source: int, target: int, rank: int) -> tuple[int, ...]:
    order = [dim for dim in range(rank) if dim != source]
    order.insert(target, source)
    return tuple(order)


def grouped_psum_scatter(x, axis_name, axis_index_groups, scatter_dimension, tiled: bool):
    """psum_scatter within groups: each device keeps the block at its position in its group."""
    collectives = _collectives()
    environment, axes, groups, index = _grouped(axis_name, axis_index_groups, "psum_scatter")
    members = groups.shape[1]

    def scatter(leaf):
        leaf = as_operand(leaf)
        shape = shape_of(leaf)
        dim = normalize_axis(scatter_dimension, len(shape), "psum_scatter")
        collectives._check_split_dim("psum_scatter", "scatter_dimension", dim, shape, members, axes, tiled)
        total = reduce_my_group(_gathered(leaf, environment, axes), groups, index, "sum")
        return scatter_block(total, groups, index, dim, tiled)

    return tree_map(scatter, x)
