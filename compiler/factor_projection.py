"""Moving axis lists between tensor dims and the factors a rule splits them into.

A dim made of factors ``(f1, f2)`` (major to minor) sharded on axes ``[a, b]`` hands the axes
out major-first: each factor takes axes until its size is used up, splitting an axis into
sub-axes when only part of it fits. Going back, a dim's axes are its factors' axes in order,
up to the first factor that is not fully sharded (minor factors cannot be sharded "through" a
partly sharded major one); adjacent sub-axes of one axis are merged again.
"""

from __future__ import annotations

from meshjit.ir import AxisRef, MeshAttr


def axis_size(axis: AxisRef, mesh: MeshAttr) -> int:
    return axis.resolved_size(mesh)


def full_form(axis: AxisRef, mesh: MeshAttr) -> tuple[str, int, int]:
    """(name, pre_size, size) with the whole axis spelt out."""
    return axis.name, axis.pre_size, axis.resolved_size(mesh)


def make_axis(name: str, pre_size: int, size: int, mesh: MeshAttr) -> AxisRef:
    """The AxisRef for a part of axis ``name``; the whole axis is spelt plainly."""
    if pre_size == 1 and size == mesh.axis_size(name):
        return AxisRef(name)
    return AxisRef(name, pre_size, size)


def split_major(axis: AxisRef, part: int, mesh: MeshAttr) -> tuple[AxisRef, AxisRef]:
    """Split ``axis`` into its major sub-axis of ``part`` devices and the minor rest."""
    name, pre, size = full_form(axis, mesh)
    return make_axis(name, pre, part, mesh), make_axis(name, pre * part, size // part, mesh)


def project_dim(axes, factors, sizes, mesh: MeshAttr, *, allow_sub_axes: bool = True) -> dict[int, list[AxisRef]]:
    """Distribute one dim's axes (major to minor) over its factors (major to minor)."""
    result = {factor: [] for factor in factors}
    if not factors:
        return result
    capacity = {factor: sizes[factor] for factor in factors}
    position = 0
    pending = list(axes)
    while pending:
        axis = pending.pop(0)
        while position < len(factors) - 1 and capacity[factors[position]] == 1:
            position += 1
        factor = factors[position]
        size, room = axis_size(axis, mesh), capacity[factor]
        if room % size == 0 or position == len(factors) - 1:
            # fits, or the minor-most factor takes whatever is left (possibly non-divisible)
            result[factor].append(axis)
            capacity[factor] = max(1, room // size) if room % size == 0 else 1
        elif allow_sub_axes and room > 1 and size % room == 0:
            major, minor = split_major(axis, room, mesh)
            result[factor].append(major)
            capacity[factor] = 1
            pending.insert(0, minor)
        else:
            result[factor].append(axis)
            capacity[factor] = 1
    return result


def merge_sub_axes(axes, mesh: MeshAttr) -> list[AxisRef]:
    """Fuse adjacent, consecutive sub-axes of one axis (``"x":(1)2, "x":(2)2`` -> ``"x"``)."""
    merged: list[AxisRef] = []
    for axis in axes:
        if merged and merged[-1].name == axis.name:
            name, pre, size = full_form(merged[-1], mesh)
            _, next_pre, next_size = full_form(axis, mesh)
            if pre * size == next_pre:
                merged[-1] = make_axis(name, pre, size * next_size, mesh)
                continue
        merged.append(axis)
    return merged


def unproject_dim(factor_axes: dict[int, list[AxisRef]], factors, sizes, mesh: MeshAttr) -> list[AxisRef]:
    """A dim's axes from its factors' axes, stopping after the first partly sharded factor."""
    axes: list[AxisRef] = []
    for factor in factors:
        chosen = factor_axes.get(factor, [])
        axes.extend(chosen)
        product = 1
        for axis in chosen:
            product *= axis_size(axis, mesh)
        if product < sizes[factor]:
            break
    return merge_sub_axes(axes, mesh)


def overlaps(first: AxisRef, second: AxisRef, mesh: MeshAttr) -> bool:
    return first.overlaps(second, mesh)


def overlaps_any(axis: AxisRef, others, mesh: MeshAttr) -> bool:
    return any(axis.overlaps(other, mesh) for other in others)


def is_prefix(prefix, axes) -> bool:
    return len(prefix) <= len(axes) and list(axes[:len(prefix)]) == list(prefix)
