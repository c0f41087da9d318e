"""Moving axis lists between tensor dims and the factors a rule splits them into.

A dim made of factors ``(f1, f2)`` (major to minor) sharded on axes ``[a, b]`` hands the axes
out major-first: a factor takes axes while their size shares a divisor with what is left of the
factor, splitting an axis into sub-axes where only part of it fits; the minor-most factor takes
whatever is left. Axes that cannot be handed out (co-prime sizes) overflow: the dim keeps them,
but none of its factors may grow. Going back, a dim's axes are its factors' axes in order, up
to the first factor that is not fully sharded; adjacent sub-axes of one axis merge again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from meshjit.ir import AxisRef, MeshAttr


def axis_size(axis: AxisRef, mesh: MeshAttr) -> int:
    return axis.resolved_size(mesh)


def device_count(axes, mesh: MeshAttr) -> int:
    """How many shards ``axes`` cut a dim into."""
    # NOTE: a plain loop: propagation calls this tens of thousands of times per program
    count = 1
    for axis in axes:
        count *= axis.size if axis.size is not None else mesh.axis_size(axis.name)
    return count


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


@dataclass
class DimProjection:
    """One dim's axes per factor; ``overflow`` holds axes that factor ``overflow_factor`` could
    not take (co-prime sizes), which freezes the dim: none of its factors may grow."""

    axes: dict[int, list[AxisRef]]
    overflow: list[AxisRef] = field(default_factory=list)
    overflow_factor: int | None = None


def project_dim(axes, factors, sizes, mesh: MeshAttr) -> dict[int, list[AxisRef]]:
    """Distribute one dim's axes (major to minor) over its factors (major to minor); overflow
    axes stay with the factor that could not take them."""
    projection = project_dim_with_overflow(axes, factors, sizes, mesh)
    if projection.overflow:
        projection.axes[projection.overflow_factor] += projection.overflow
    return projection.axes


def project_dim_with_overflow(axes, factors, sizes, mesh: MeshAttr) -> DimProjection:
    """Distribute one dim's axes (major to minor) over its factors (major to minor)."""
    projection = DimProjection({factor: [] for factor in factors})
    pending = list(axes)
    for position, factor in enumerate(factors):
        if position == len(factors) - 1:
            projection.axes[factor] = merge_sub_axes(pending, mesh)
            return projection
        pending = _fill_factor(projection.axes[factor], pending, sizes[factor], mesh)
        if pending and _left_over(projection.axes[factor], sizes[factor], mesh) > 1:
            projection.overflow, projection.overflow_factor = pending, factor
            return projection
    return projection


def _fill_factor(taken: list[AxisRef], pending: list[AxisRef], size: int, mesh: MeshAttr):
    """Move axes from ``pending`` into ``taken`` while they share a divisor with what is left
    of the factor, splitting off a major sub-axis where only part fits; returns the rest."""
    pending = list(pending)
    room = size
    while pending:
        whole = axis_size(pending[0], mesh)
        common = math.gcd(room, whole)
        if whole == 1 or common == whole:
            taken.append(pending.pop(0))
        elif common > 1:
            major, pending[0] = split_major(pending[0], common, mesh)
            taken.append(major)
        else:
            break
        room //= common
    return pending


def _left_over(taken, size: int, mesh: MeshAttr) -> int:
    """How much of a factor of ``size`` the ``taken`` axes leave unsharded."""
    return size // math.gcd(size, device_count(taken, mesh))


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


def unproject_dim(factor_axes: dict[int, list[AxisRef]], factors, sizes,
                  mesh: MeshAttr) -> list[AxisRef]:
    """A dim's axes from its factors' axes, stopping after the first partly sharded factor."""
    axes: list[AxisRef] = []
    for factor in factors:
        chosen = factor_axes.get(factor, [])
        axes.extend(chosen)
        if device_count(chosen, mesh) < sizes[factor]:
            break
    return merge_sub_axes(axes, mesh)


def overlaps_any(axis: AxisRef, others, mesh: MeshAttr) -> bool:
    return any(axis.overlaps(other, mesh) for other in others)


def axis_is_prefix(first: AxisRef, second: AxisRef, mesh: MeshAttr) -> bool:
    """``first`` is ``second`` or its major part (``"x":(1)2`` of ``"x"`` on a size-4 axis)."""
    if first == second:
        return True
    name, pre, size = full_form(first, mesh)
    other_name, other_pre, other_size = full_form(second, mesh)
    return name == other_name and pre == other_pre and size < other_size and other_size % size == 0


def is_prefix(prefix, axes, mesh: MeshAttr) -> bool:
    """``prefix`` shards like the major part of ``axes``: equal axes, the last possibly a sub-axis
    prefix of its partner (Shardy's rule, so ``["x":(1)2]`` is a prefix of ``["x", "y"]``)."""
    prefix, axes = list(prefix), list(axes)
    if not prefix:
        return True
    if len(prefix) > len(axes) or prefix[:-1] != axes[:len(prefix) - 1]:
        return False
    return axis_is_prefix(prefix[-1], axes[len(prefix) - 1], mesh)


def refines(old_axes, new_axes, mesh: MeshAttr) -> bool:
    """``new_axes`` extends ``old_axes`` (a sub-axis-aware prefix) into more shards."""
    return is_prefix(old_axes, new_axes, mesh) and (
        device_count(new_axes, mesh) > device_count(old_axes, mesh))


def prefix_without_overlap(axis: AxisRef, others, mesh: MeshAttr) -> AxisRef | None:
    """The largest major part of ``axis`` that overlaps none of ``others`` (None if empty)."""
    name, pre, size = full_form(axis, mesh)
    for other in others:
        if not axis.overlaps(other, mesh):
            continue
        _, other_pre, _ = full_form(other, mesh)
        if other_pre <= pre or other_pre % pre:
            return None
        part = other_pre // pre
        if size % part:
            return None
        size = part
        axis = make_axis(name, pre, size, mesh)
    return axis
