"""Collectives between the devices of one process, as array operations on the mesh-shaped
leading dims of a plan buffer (see plan.py). A leading dim of size 1 means every device along
that axis holds the same value; group members are ordered by the listed axes, first major.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from meshjit.ir.dtypes import to_numpy

_COMBINE = {"sum": np.sum, "max": np.max, "min": np.min}
# NOTE: as XLA's CPU all-reduce, a sum of bf16 accumulates in f32 and rounds once, and a sum of
# f16 adds the group's members one after another in f16, rounding after each.
_BFLOAT16, _FLOAT16 = to_numpy("bf16"), to_numpy("f16")


def _expand(value: np.ndarray, axes, mesh_shape) -> np.ndarray:
    """Broadcast the leading dims ``axes`` to their full size (a view, no copy)."""
    shape = list(value.shape)
    for axis in axes:
        shape[axis] = mesh_shape[axis]
    return np.broadcast_to(value, tuple(shape))


def _reduce(value: np.ndarray, axes, mesh_shape, reduction: str) -> np.ndarray:
    """Combine over the group; the group's leading dims become 1."""
    varying = tuple(axis for axis in axes if value.shape[axis] > 1)
    if value.dtype == _BFLOAT16 and varying:
        return _reduce(value.astype(np.float32), axes, mesh_shape, reduction).astype(value.dtype)
    if value.dtype == _FLOAT16 and reduction == "sum" and (varying or any(mesh_shape[axis] > 1 for axis in axes)):
        return _sum_in_order(value, axes, mesh_shape)
    result = _COMBINE[reduction](value, axis=varying, keepdims=True) if varying else value
    copies = math.prod(mesh_shape[axis] for axis in axes if value.shape[axis] == 1)
    if reduction == "sum" and copies > 1:
        # every device of the group holds the same copy along these axes: the sum counts it n times
        result = result * np.asarray(copies, dtype=value.dtype)
    return np.asarray(result, dtype=value.dtype)


def _sum_in_order(value: np.ndarray, axes, mesh_shape) -> np.ndarray:
    """The group's sum as member 0 + member 1 + ... in the value's dtype (copies along axes of
    leading size 1 included), the group's leading dims become 1."""
    members = np.moveaxis(_expand(value, axes, mesh_shape), tuple(axes), tuple(range(len(axes))))
    members = members.reshape((-1,) + members.shape[len(axes):])
    total = members[0].copy()
    for member in members[1:]:
        total += member
    return np.expand_dims(total, tuple(sorted(axes)))


def all_reduce(value, axes, mesh_shape, *, reduction: str = "sum"):
    return _reduce(value, axes, mesh_shape, reduction)


def _split_dims(lead: int, axes) -> tuple[list[int], int]:
    others = [axis for axis in range(lead) if axis not in axes]
    return others, len(others)


def all_gather(value, axes, mesh_shape, *, dim: int, lead: int):
    """Concatenate the group's blocks along local ``dim``; the result is the same on the group."""
    full = _expand(value, axes, mesh_shape)
    others, count = _split_dims(lead, axes)
    rank = value.ndim - lead
    local = [lead + d for d in range(rank)]
    order = others + local[:dim] + list(axes) + local[dim:]
    moved = np.transpose(full, order)
    sizes = [mesh_shape[axis] for axis in axes]
    merged = math.prod(sizes) * value.shape[lead + dim]
    lead_shape = [1 if axis in axes else value.shape[axis] for axis in range(lead)]
    local_shape = list(value.shape[lead:])
    local_shape[dim] = merged
    return np.ascontiguousarray(moved).reshape(lead_shape + local_shape)


def reduce_scatter(value, axes, mesh_shape, *, dim: int, lead: int, reduction: str = "sum"):
    """Combine over the group, then member ``g`` keeps chunk ``g`` of local ``dim``."""
    reduced = _reduce(value, axes, mesh_shape, reduction)
    sizes = [mesh_shape[axis] for axis in axes]
    others, count = _split_dims(lead, axes)
    local_shape = list(reduced.shape[lead:])
    chunk = local_shape[dim] // math.prod(sizes)
    squeezed = reduced.reshape([reduced.shape[axis] for axis in others] + local_shape)
    split = squeezed.reshape([reduced.shape[axis] for axis in others] + local_shape[:dim] + sizes + [chunk] + local_shape[dim + 1:])
    # labels: others (count), local[:dim], group axes, chunk, local[dim+1:]
    group_positions = {axis: count + dim + index for index, axis in enumerate(axes)}
    lead_order = [others.index(axis) if axis in others else group_positions[axis] for axis in range(lead)]
    local_order = list(range(count, count + dim)) + [count + dim + len(axes)] + \
        list(range(count + dim + len(axes) + 1, split.ndim))
    return np.ascontiguousarray(np.transpose(split, lead_order + local_order))


def all_to_all(value, axes, mesh_shape, *, split_dim: int, concat_dim: int, lead: int):
    """Member ``i`` sends chunk ``j`` of ``split_dim`` to member ``j``, which concatenates what it
    receives along ``concat_dim`` in sender order."""
    full = _expand(value, axes, mesh_shape)
    sizes = [mesh_shape[axis] for axis in axes]
    count = math.prod(sizes)
    local_shape = list(value.shape[lead:])
    chunk = local_shape[split_dim] // count
    # split the local dim into (receiver group axes..., chunk)
    split_shape = list(full.shape[:lead]) + local_shape[:split_dim] + sizes + [chunk] + local_shape[split_dim + 1:]
    split = full.reshape(split_shape)
    rank = len(local_shape)
    receiver = {axis: lead + split_dim + index for index, axis in enumerate(axes)}
    # local dims of ``split``: positions of each original local dim (split_dim -> chunk)
    local_positions = [lead + d if d < split_dim else lead + d + len(axes) for d in range(rank)]
    local_positions[split_dim] = lead + split_dim + len(axes)
    # the result's leading dims take the receiver index; sender dims go in front of concat_dim
    lead_order = [receiver[axis] if axis in axes else axis for axis in range(lead)]
    senders = list(axes)
    local_order = []
    for d in range(rank):
        if d == concat_dim:
            local_order.extend(senders)
        local_order.append(local_positions[d])
    moved = np.ascontiguousarray(np.transpose(split, lead_order + local_order))
    result_local = list(local_shape)
    result_local[split_dim] = chunk
    result_local[concat_dim] = result_local[concat_dim] * count
    return moved.reshape([full.shape[axis] for axis in range(lead)] + result_local)


def collective_permute(value, axes, mesh_shape, *, pairs, lead: int):
    """Group member ``source`` sends its value to ``target``; members receiving nothing get zeros."""
    full = np.ascontiguousarray(_expand(value, axes, mesh_shape))
    others = [axis for axis in range(lead) if axis not in axes]
    grouped = np.transpose(full, others + list(axes) + list(range(lead, full.ndim)))
    group_shape = grouped.shape
    count = math.prod(mesh_shape[axis] for axis in axes)
    flat = grouped.reshape([grouped.shape[i] for i in range(len(others))] + [count] + list(value.shape[lead:]))
    result = np.zeros_like(flat)
    # NOTE: one pair per device along the axes: moved in one indexed copy, not a copy per pair
    # (sources, and targets, are distinct, as XLA requires)
    sources, targets = _pair_members(pairs if isinstance(pairs, tuple) else tuple(map(tuple, pairs)))
    result[(slice(None),) * len(others) + (targets,)] = flat[(slice(None),) * len(others) + (sources,)]
    result = result.reshape(group_shape)
    inverse = np.argsort(others + list(axes) + list(range(lead, full.ndim)))
    return np.ascontiguousarray(np.transpose(result, inverse))


@functools.lru_cache(maxsize=256)
def _pair_members(pairs) -> tuple[np.ndarray, np.ndarray]:
    """The sources and the targets of a collective_permute's ``(source, target)`` pairs."""
    members = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return members[:, 0], members[:, 1]


def axis_index(axis: int, mesh_shape) -> np.ndarray:
    shape = [1] * len(mesh_shape)
    shape[axis] = mesh_shape[axis]
    return np.arange(mesh_shape[axis], dtype=np.int32).reshape(shape)


def partition_id(mesh_shape) -> np.ndarray:
    return np.arange(math.prod(mesh_shape), dtype=np.int32).reshape(mesh_shape)
