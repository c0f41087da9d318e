"""Sharding in types: the sharding every traced value carries over the Explicit axes of its mesh.

A value's ``ShardingType`` names, per dim, the Explicit mesh axes it is split over (major to
minor), the axes it is unreduced over (a pending sum) and those it is reduced over. Auto axes
never appear (propagation owns them) and Manual axes are shard_map's. The type of an op's result
comes from its operands' types at trace time (``op_types.py``); an ambiguous op raises
``ShardingTypeError`` as JAX does. The abstract mesh in context (``get_abstract_mesh``) is the
innermost one ``use_abstract_mesh`` pushed (as ``auto_axes``, ``explicit_axes`` and shard_map
bodies do), else the one of the mesh ``set_mesh`` made current (read through a provider the
facade registers). This module also prints types as JAX does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from meshjit.ir.abstract_mesh import EMPTY_ABSTRACT_MESH, AbstractMesh, AxisType


class ShardingTypeError(Exception):
    """An op's result sharding cannot be decided from its operands' sharding types (JAX's
    ``ShardingTypeError``): give it with ``out_sharding=``, or ``reshard`` an operand."""


@dataclass(frozen=True)
class ShardingType:
    """The sharding part of a traced value's type over ``mesh`` (``EMPTY_ABSTRACT_MESH`` when
    the value belongs to no mesh): Explicit axes per dim, and unreduced, reduced and varying
    (shard_map's manual) axes."""

    mesh: AbstractMesh
    dims: tuple[tuple[str, ...], ...]
    unreduced: frozenset[str] = field(default_factory=frozenset)
    reduced: frozenset[str] = field(default_factory=frozenset)
    varying: frozenset[str] = field(default_factory=frozenset)
    # NOTE: how many dims a result Array's PartitionSpec lists (None: all, as JAX's types do;
    # a shard_map's results keep their out_specs' length)
    spec_length: int | None = field(default=None, compare=False)

    @staticmethod
    def replicated(mesh: AbstractMesh, rank: int) -> ShardingType:
        return ShardingType(mesh, ((),) * rank)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def used_axes(self) -> tuple[str, ...]:
        return tuple(axis for axes in self.dims for axis in axes)

    @property
    def is_trivial(self) -> bool:
        """Says nothing a plain type does not: no axis anywhere."""
        return not (self.used_axes or self.unreduced or self.reduced or self.varying)

    def with_dims(self, dims) -> ShardingType:
        return replace(self, dims=tuple(tuple(axes) for axes in dims))

    def entries(self) -> tuple:
        """The dims as PartitionSpec entries: None, a name, or a tuple of names."""
        return tuple(None if not axes else axes[0] if len(axes) == 1 else axes for axes in self.dims)

    def shards(self, dim: int) -> int:
        sizes = self.mesh.shape
        count = 1
        for axis in self.dims[dim]:
            count *= sizes[axis]
        return count


def replicated_on(mesh: AbstractMesh, rank: int) -> ShardingType:
    return ShardingType.replicated(mesh, rank)


# --- text -----------------------------------------------------------------------------------------

_SHORT_NAMES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool",
                "uint32": "u32", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int16": "i16",
                "uint8": "u8", "complex64": "c64", "complex128": "c128"}


def _ordered(mesh: AbstractMesh, axes) -> tuple[str, ...]:
    return tuple(name for name in mesh.axis_names if name in axes) or tuple(sorted(axes))


def _axes_text(prefix: str, axes: tuple[str, ...]) -> str:
    inner = ",".join(axes)
    return f"{prefix}:{inner if len(axes) == 1 else f'({inner})'}"


def format_type(shape, dtype, sharding: ShardingType | None, *, short: bool = False,
                mesh_axis_types: bool = False) -> str:
    """JAX's short form of an array type: ``float32[8@X,4]{U:Y}`` (``f32[...]`` when short)."""
    name = np.dtype(dtype).name
    name = _SHORT_NAMES.get(name, name) if short else name
    dims = sharding.dims if sharding is not None else ((),) * len(shape)
    parts = []
    for size, axes in zip(shape, dims):
        if not axes:
            parts.append(f"{size}")
        elif len(axes) == 1:
            parts.append(f"{size}@{axes[0]}")
        else:
            parts.append(f"{size}@({','.join(axes)})")
    text = f"{name}[{','.join(parts)}]"
    if sharding is not None:
        marks = [_axes_text(prefix, _ordered(sharding.mesh, axes))
                 for prefix, axes in (("V", sharding.varying), ("U", sharding.unreduced), ("R", sharding.reduced))
                 if axes]
        if marks:
            text += "{" + ", ".join(marks) + "}"
        if mesh_axis_types:
            groups: dict[AxisType, list[str]] = {}
            for axis, kind in zip(sharding.mesh.axis_names, sharding.mesh.axis_types):
                groups.setdefault(kind, []).append(axis)
            text += "({" + ", ".join(f"{kind!r}: {tuple(names)}" for kind, names in groups.items()) + "})"
    return text


def spec_repr(sharding) -> str:
    """A ShardingType's spec as JAX prints a PartitionSpec: ``P('X', None)``."""
    parts = [repr(entry) for entry in sharding.entries()]
    if len(parts) == 1 and not (sharding.unreduced or sharding.reduced):
        parts[0] += ","
    for name, axes in (("unreduced", sharding.unreduced), ("reduced", sharding.reduced)):
        if axes:
            parts.append(f"{name}={{{', '.join(repr(axis) for axis in sorted(axes))}}}")
    return f"P({', '.join(parts)})"


def named_sharding_text(sharding) -> str:
    """A ShardingType as JAX prints the NamedSharding of a type."""
    return f"NamedSharding(mesh={sharding.mesh!r}, spec={spec_repr(sharding)})"


# --- the abstract mesh in context ---------------------------------------------------------------


class _MeshStack(threading.local):
    def __init__(self):
        self.meshes: list[AbstractMesh] = []
        self.lenient = 0


_context = _MeshStack()


def _no_ambient_mesh() -> AbstractMesh | None:
    return None


_ambient_mesh = [_no_ambient_mesh]


def set_ambient_mesh_provider(provider) -> None:
    """Install where the abstract mesh in context comes from when nothing is pushed here: the
    facade registers ``set_mesh``'s mesh once, at import (meshjit/_dispatch.py), since the
    compiler cannot import the runtime's meshes."""
    _ambient_mesh[0] = provider


def context_abstract_mesh() -> AbstractMesh | None:
    """The innermost abstract mesh pushed by ``use_abstract_mesh``, else the one ``set_mesh``
    made current, else None."""
    if _context.meshes:
        return _context.meshes[-1]
    mesh = _ambient_mesh[0]()
    return None if mesh is None or mesh.empty else mesh


@contextmanager
def use_abstract_mesh(mesh: AbstractMesh) -> Iterator[AbstractMesh]:
    """Make ``mesh`` the abstract mesh in context while the block runs."""
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"use_abstract_mesh expects an AbstractMesh, got {type(mesh).__name__}: {mesh!r}")
    _context.meshes.append(mesh)
    try:
        yield mesh
    finally:
        _context.meshes.pop()


@contextmanager
def lenient_sharding_types() -> Iterator[None]:
    """Inside, an op whose result sharding would be ambiguous drops the conflicting axes instead
    of raising: autodiff uses it for the ops it emits itself, whose cotangents it then gives their
    primals' types (as JAX's transposes pass ``out_sharding``)."""
    _context.lenient += 1
    try:
        yield
    finally:
        _context.lenient -= 1


def is_lenient() -> bool:
    return _context.lenient > 0


# --- user shardings and concrete arrays ---------------------------------------------------------


def _entry_axes(entry) -> tuple[str, ...]:
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    if isinstance(entry, tuple):
        return entry
    # NOTE: P.UNCONSTRAINED means "left to propagation": nothing explicit is known
    return ()


def type_from_spec(mesh: AbstractMesh, spec, rank: int, *, explicit_only: bool = True) -> ShardingType:
    """The ShardingType of PartitionSpec ``spec`` (duck-typed: ``partitions``, ``unreduced``,
    ``reduced``) over ``mesh``; with ``explicit_only`` the axes of other types are dropped."""
    partitions = tuple(getattr(spec, "partitions", spec))
    if len(partitions) > rank:
        raise ValueError(f"PartitionSpec {spec!r} has {len(partitions)} entries, more than the rank {rank} of "
                         f"the value it is applied to")
    keep = set(mesh.explicit_axes) if explicit_only else set(mesh.axis_names)
    dims = []
    for position in range(rank):
        axes = _entry_axes(partitions[position]) if position < len(partitions) else ()
        dims.append(tuple(axis for axis in axes if axis in keep))
    unreduced = frozenset(axis for axis in getattr(spec, "unreduced", ()) if axis in keep)
    reduced = frozenset(axis for axis in getattr(spec, "reduced", ()) if axis in keep)
    return ShardingType(mesh, tuple(dims), unreduced, reduced)


def type_of_concrete(value, rank: int) -> ShardingType:
    """The type of a concrete array: a NamedSharding's spec restricted to the Explicit axes of
    its mesh; any other layout (one device, numpy) belongs to no mesh."""
    sharding = getattr(value, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    abstract = getattr(mesh, "abstract_mesh", None)
    spec = getattr(sharding, "spec", None)
    if not isinstance(abstract, AbstractMesh) or abstract.empty or spec is None:
        return ShardingType.replicated(EMPTY_ABSTRACT_MESH, rank)
    return type_from_spec(abstract, spec, rank)


def _check_explicit(mesh: AbstractMesh, spec, function: str) -> None:
    names = [axis for entry in getattr(spec, "partitions", spec) for axis in _entry_axes(entry)]
    names += sorted(getattr(spec, "unreduced", ())) + sorted(getattr(spec, "reduced", ()))
    for name in names:
        if name not in mesh.axis_names:
            raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: {mesh.axis_names}.")
        kind = mesh.axis_type(name)
        if kind is not AxisType.Explicit:
            raise ValueError(f"PartitionSpec passed to {function} cannot contain axis names that are of type Auto "
                             f"or Manual. Got PartitionSpec: {spec!r} with axis name: {name} of type: {kind}.")


def resolve_sharding(value, rank: int, function: str) -> ShardingType | None:
    """A user's ``out_sharding`` for ``function`` (a NamedSharding, or a PartitionSpec over the
    mesh in context; duck-typed, as the runtime's classes are the facade's) as the ShardingType
    of a rank-``rank`` result; None stays None. Only Explicit axes may be named (JAX's
    ValueError otherwise)."""
    if value is None or isinstance(value, ShardingType):
        return value
    mesh = getattr(value, "mesh", None)
    if mesh is not None and hasattr(value, "spec"):
        abstract = getattr(mesh, "abstract_mesh", None)
        if not isinstance(abstract, AbstractMesh):
            raise TypeError(f"out_sharding of {function} must be a NamedSharding or a PartitionSpec, got {value!r}")
        spec = value.spec
    elif hasattr(value, "partitions") and hasattr(value, "unreduced"):
        abstract, spec = context_abstract_mesh(), value
        if abstract is None:
            raise ValueError(f"out_sharding of {function}: the PartitionSpec {value!r} needs a mesh; use "
                             f"`meshjit.set_mesh(mesh)` or pass NamedSharding(mesh, spec)")
    else:
        raise TypeError(f"out_sharding of {function} must be a NamedSharding, a PartitionSpec or None, got "
                        f"{type(value).__name__}: {value!r}")
    _check_explicit(abstract, spec, function)
    return type_from_spec(abstract, spec, rank)


def cast_type(sharding: ShardingType, mesh: AbstractMesh) -> ShardingType:
    """``sharding`` seen on abstract mesh ``mesh`` (the same axes, other types): only the axes
    Explicit there stay in the type."""
    keep = set(mesh.explicit_axes)
    return ShardingType(mesh, tuple(tuple(axis for axis in axes if axis in keep) for axes in sharding.dims),
                        frozenset(sharding.unreduced & keep), frozenset(sharding.reduced & keep), sharding.varying)


def check_divisible(sharding: ShardingType, shape) -> None:
    """A type's sharding splits every dim evenly (JAX's ValueError otherwise)."""
    for dim, (size, axes) in enumerate(zip(shape, sharding.dims)):
        count = sharding.shards(dim)
        if axes and size % count:
            raise ValueError(
                f"Sharding spec {axes!r} implies that array axis {dim} is partitioned {count} times, but does not "
                f"evenly divide the dimension size {size}. Got shape: {tuple(shape)} and sharding "
                f"{named_sharding_text(sharding)}")
