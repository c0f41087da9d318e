"""Collectives over sub-axes, which the IR's collectives cannot name (their ``axes`` hold whole
mesh axes): gather each whole axis into a new leading dim, keep the blocks of the wanted parts,
and take this device's own block of every other part of the axis.

An axis of size n splits into *atoms*: the finest parts that every sub-axis in play is a union
of. A device's coordinate along the axis is the row-major index over its atoms (major first), so
the n blocks an all_gather over the axis returns reshape into one dim per atom.
"""

from __future__ import annotations

import itertools
import math

from meshjit.ir import AxisRef, MeshAttr, SymbolRef, Value

from .spmd_builder import SpmdBuilder


def whole_or_part(name: str, pre_size: int, size: int, mesh: MeshAttr) -> AxisRef:
    """The AxisRef of part ``(pre_size)size`` of axis ``name``; the whole axis is spelt plainly."""
    if pre_size == 1 and size == mesh.axis_size(name):
        return AxisRef(name)
    return AxisRef(name, pre_size, size)


def atoms(name: str, axes_in_play, mesh: MeshAttr) -> list[AxisRef]:
    """The finest parts of axis ``name`` that every part of it in ``axes_in_play`` is made of,
    major first."""
    full = mesh.axis_size(name)
    bounds = {1, full}
    for axis in axes_in_play:
        if axis.name == name:
            bounds |= {axis.pre_size, axis.pre_size * axis.resolved_size(mesh)}
    ordered = sorted(bounds)
    return [whole_or_part(name, low, high // low, mesh) for low, high in itertools.pairwise(ordered)]


def _covers(part: AxisRef, atom: AxisRef, mesh: MeshAttr) -> bool:
    return part.overlaps(atom, mesh)


def _reshape(builder: SpmdBuilder, value: Value, shape) -> Value:
    if tuple(shape) == value.type.shape:
        return value
    return builder.emit1("reshape", [value], {"new_sizes": tuple(shape)})


def _transpose(builder: SpmdBuilder, value: Value, permutation) -> Value:
    if list(permutation) == sorted(permutation):
        return value
    return builder.emit1("transpose", [value], {"permutation": tuple(permutation)})


def _gather_axis(builder: SpmdBuilder, value: Value, name: str, reason: str) -> Value:
    """Every device's ``value`` along axis ``name``, stacked on a new leading dim."""
    value = _reshape(builder, value, (1,) + value.type.shape)
    attrs = {"mesh": SymbolRef(builder.mesh_name), "axes": (name,), "dim": 0}
    return builder.emit1("all_gather", [value], attrs, reason=reason)


def _select_own(builder: SpmdBuilder, value: Value, leading: list[AxisRef], keep) -> Value:
    """Keep the leading dims whose atom is in ``keep``; index the others at this device's own
    coordinate along their atom, and drop them."""
    if all(atom in keep for atom in leading):
        return value
    zero = builder.scalar(0, "i32")
    starts, sizes, kept_shape = [], [], []
    for dim, size in enumerate(value.type.shape):
        selected = dim < len(leading) and leading[dim] not in keep
        starts.append(builder.axis_index(leading[dim]) if selected else zero)
        sizes.append(1 if selected else size)
        kept_shape += [] if selected else [size]
    value = builder.emit1("dynamic_slice", [value, *starts], {"slice_sizes": tuple(sizes)})
    return _reshape(builder, value, kept_shape)


def gather_parts(builder: SpmdBuilder, value: Value, parts, axes_in_play, reason: str) -> Value:
    """``value`` with one leading dim per atom of ``parts`` (in the order of ``parts``, each
    part's atoms major first) holding every device's block along that atom."""
    mesh = builder.mesh
    in_play = list(parts) + list(axes_in_play)
    leading: list[AxisRef] = []
    for name in dict.fromkeys(part.name for part in parts):
        value = _gather_axis(builder, value, name, reason)
        name_atoms = atoms(name, in_play, mesh)
        sizes = [atom.resolved_size(mesh) for atom in name_atoms]
        value = _reshape(builder, value, sizes + list(value.type.shape[1:]))
        leading = name_atoms + leading
    wanted = [atom for part in parts for atom in leading if _covers(part, atom, mesh)]
    value = _select_own(builder, value, leading, set(wanted))
    kept = [atom for atom in leading if atom in set(wanted)]
    order = [kept.index(atom) for atom in wanted] + list(range(len(kept), value.type.rank))
    return _transpose(builder, value, order)


def gather_dim_over_parts(builder: SpmdBuilder, value: Value, dim: int, parts, axes_in_play,
                          reason: str) -> Value:
    """All-gather dim ``dim`` over ``parts`` (major first), any of which may be a sub-axis."""
    rank = value.type.rank
    value = gather_parts(builder, value, parts, axes_in_play, reason)
    count = value.type.rank - rank
    # bring the gathered dims just before ``dim`` and merge them into it, major first
    order = [count + d for d in range(dim)] + list(range(count)) + [count + d for d in range(dim, rank)]
    value = _transpose(builder, value, order)
    shape = list(value.type.shape)
    merged = shape[:dim] + [math.prod(shape[dim:dim + count + 1])] + shape[dim + count + 1:]
    return _reshape(builder, value, merged)


REDUCE_OPS = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min"}


def all_reduce_over_parts(builder: SpmdBuilder, value: Value, parts, axes_in_play, reduction: str,
                          reason: str) -> Value:
    """All-reduce over ``parts``, any of which may be a sub-axis."""
    rank = value.type.rank
    value = gather_parts(builder, value, parts, axes_in_play, reason)
    count = value.type.rank - rank
    return builder.emit1(REDUCE_OPS[reduction], [value], {"axes": tuple(range(count))})
