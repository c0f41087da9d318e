"""Collectives within groups of devices along one mesh axis (``axis_index_groups``), as pmap's
docstring examples use them: every device gathers the axis, then keeps its own group's part,
picked by its axis index from a constant table of the groups."""

from __future__ import annotations

import numpy as np

from . import lax_ops as lax
from .operands import dtype_of, shape_of


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
