"""JAX's reshape rule for sharding types (explicit mode).

Besides adding or removing unit dims, a reshape infers its result's sharding only when it splits
one dim into several (the dim's axes spread over the new dims, major first, each taking axes
while it still divides by them) or merges adjacent dims into one (their axes concatenated, only
when every split dim comes before the unsplit ones); anything else needs ``out_sharding``.
"""

from __future__ import annotations

import math

from .factor_types import Dims
from .sharding_types import ShardingTypeError


def reshape_error(operand_text: str, new_sizes) -> ShardingTypeError:
    return ShardingTypeError(f"This reshape is not supported. Please specify the sharding of the output via the "
                             f"`out_sharding` argument of jax.lax.reshape. Got operand type: {operand_text}, new "
                             f"sizes: {tuple(new_sizes)}")


def _groups(short, long) -> list[list[int]] | None:
    """``long`` as consecutive groups, one per dim of ``short`` (whose size the group's product
    is), where exactly one group may hold several dims, unit dims after it joining it; unit dims
    common to both ends are set aside. None when ``long`` is not such a split of ``short``."""
    short, long = list(short), list(long)
    trailing = 0
    while short and long and short[-1] == 1 and long[-1] == 1:
        short.pop()
        long.pop()
        trailing += 1
    groups, position, split = [], 0, False
    for index, size in enumerate(short):
        if position >= len(long):
            return None
        if long[position] == size:
            groups.append([size])
            position += 1
            continue
        if split:
            return None
        split, group = True, [long[position]]
        position += 1
        while math.prod(group) != size or (position < len(long) and long[position] == 1):
            if math.prod(group) > size or position >= len(long):
                return None
            if math.prod(group) == size and index + 1 < len(short) and long[position] == short[index + 1]:
                break
            group.append(long[position])
            position += 1
        groups.append(group)
    if position != len(long):
        return None
    return groups + [[1]] * trailing


def _spread(mesh, axes, sizes, fail) -> list[tuple[str, ...]]:
    """Axes (major first) shared out over dims of ``sizes``: each dim takes axes while it still
    divides by them; every axis must find a dim."""
    remaining, result = list(axes), []
    for size in sizes:
        taken = []
        while size > 1 and remaining:
            axis_size = mesh.shape[remaining[0]]
            if size % axis_size:
                raise fail()
            size //= axis_size
            taken.append(remaining.pop(0))
        result.append(tuple(taken))
    if remaining:
        raise fail()
    return result


def reshape_dims(mesh, dims: Dims, shape, new_sizes, fail) -> Dims:
    """JAX's reshape rule over sharding dims (see the section comment); ``fail()`` is the error."""
    if not any(dims):
        return ((),) * len(new_sizes)
    kept = [axes for size, axes in zip(shape, dims) if size != 1]
    if [size for size in shape if size != 1] == [size for size in new_sizes if size != 1]:
        kept_iter = iter(kept)
        return tuple(() if size == 1 else next(kept_iter) for size in new_sizes)
    if len(new_sizes) > len(shape):
        groups = _groups(shape, new_sizes)
        if groups is None:
            raise fail()
        result = []
        for axes, group in zip(dims, groups):
            result.extend(_spread(mesh, axes, group, fail) if len(group) > 1 else [axes])
        return tuple(result)
    groups = _groups(new_sizes, shape)
    if groups is None or len(new_sizes) == len(shape):
        raise fail()
    result, position = [], 0
    for size, group in zip(new_sizes, groups):
        merged = dims[position:position + len(group)]
        position += len(group)
        if len(group) == 1:
            result.append(merged[0])
            continue
        flat = [axes for axes in merged]
        while flat and not flat[-1]:
            flat.pop()
        if any(not axes for axes in flat):
            raise fail()
        result.extend(_spread(mesh, [axis for axes in flat for axis in axes], [size], fail))
    return tuple(result)
