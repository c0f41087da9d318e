"""Meshes and Shardy-style sharding attributes.

A sharding names, per tensor dim, an ordered tuple of mesh axes (major to minor); dims are open
(propagation may extend them) or closed. Axes may be explicitly replicated, or unreduced (the
tensor holds partial results still to be combined with ``reduction``). Sub-axes split one mesh
axis so that a reshape can divide a sharded dim without communication.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REDUCTIONS = ("sum", "max", "min")


@dataclass(frozen=True, slots=True)
class MeshAttr:
    """Named mesh axes with sizes, and the device id at each mesh position in row-major order
    (``None`` means ``0..size-1``)."""

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None

    def __post_init__(self):
        names = [name for name, _ in self.axes]
        if len(set(names)) != len(names):
            raise ValueError(f"mesh axis names must be unique, got {names}")
        for name, size in self.axes:
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"mesh axis {name!r} must have a positive int size, got {size!r}")
        if self.device_ids is not None:
            # NOTE: any distinct device ids: a mesh may use a subset of the devices (4..7)
            # NOTE: checked with builtins over the whole tuple, not a Python loop per device
            ids = tuple(self.device_ids)
            if len(ids) != self.size or len(set(ids)) != len(ids) or not set(map(type, ids)) <= {int} or (
                    ids and min(ids) < 0):
                raise ValueError(
                    f"device_ids must be {self.size} distinct non-negative ints (one per mesh position), got {list(ids)}"
                )
            object.__setattr__(self, "device_ids", ids)
            if ids == tuple(range(self.size)):
                # NOTE: the iota order is stored as None so that equal meshes compare equal.
                object.__setattr__(self, "device_ids", None)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def shape(self) -> dict[str, int]:
        return dict(self.axes)

    @property
    def size(self) -> int:
        return math.prod(size for _, size in self.axes)

    @property
    def devices(self) -> tuple[int, ...]:
        """Device ids in mesh order (row-major over the axes)."""
        return self.device_ids if self.device_ids is not None else tuple(range(self.size))

    def axis_size(self, name: str) -> int:
        for axis_name, size in self.axes:
            if axis_name == name:
                return size
        raise KeyError(f"mesh has no axis {name!r}; its axes are {list(self.axis_names)}")

    def coordinates(self, position: int) -> dict[str, int]:
        """The coordinate along every axis of the device at flat ``position`` in mesh order."""
        coordinates = {}
        for name, size in reversed(self.axes):
            coordinates[name] = position % size
            position //= size
        return {name: coordinates[name] for name in self.axis_names}


@dataclass(frozen=True, slots=True)
class AxisRef:
    """A mesh axis, or the sub-axis ``"x":(pre_size)size`` of it (Shardy's notation).

    Split axis ``x`` of size n into major-to-minor parts; a sub-axis is the part of ``size``
    devices that has ``pre_size`` devices' worth of more-major parts before it. Its index for a
    device is ``(coordinate // (n // (pre_size * size))) % size``, so ``"x":(1)2`` is the major
    half of a size-4 axis and ``"x":(2)2`` the minor half. ``size=None`` is the whole axis.
    """

    name: str
    pre_size: int = 1
    size: int | None = None

    @property
    def is_sub_axis(self) -> bool:
        return self.size is not None

    def resolved_size(self, mesh: MeshAttr) -> int:
        return mesh.axis_size(self.name) if self.size is None else self.size

    def index(self, mesh: MeshAttr, coordinates: dict[str, int]) -> int:
        """This axis's index for a device with the given mesh coordinates."""
        if self.size is None:
            return coordinates[self.name]
        post_size = mesh.axis_size(self.name) // (self.pre_size * self.size)
        return (coordinates[self.name] // post_size) % self.size

    def overlaps(self, other: AxisRef, mesh: MeshAttr) -> bool:
        if self.name != other.name:
            return False
        if self == other:
            # NOTE: a size-1 axis spans an empty range, yet naming it twice is still a duplicate
            return True
        low, high = self.pre_size, self.pre_size * self.resolved_size(mesh)
        other_low, other_high = other.pre_size, other.pre_size * other.resolved_size(mesh)
        return low < other_high and other_low < high


@dataclass(frozen=True, slots=True)
class DimSharding:
    """One tensor dim's axes, major to minor; an open dim may still be extended."""

    axes: tuple[AxisRef, ...] = ()
    is_closed: bool = True
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class TensorSharding:
    """The sharding of one tensor over mesh ``mesh_name``."""

    mesh_name: str
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()
    reduction: str = "sum"

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {self.reduction!r}")

    @staticmethod
    def replicated_over(mesh_name: str, rank: int, *, closed: bool = True) -> TensorSharding:
        return TensorSharding(mesh_name, tuple(DimSharding((), closed) for _ in range(rank)))

    @staticmethod
    def from_axis_names(mesh_name: str, dims, *, closed: bool = True) -> TensorSharding:
        """Build from per-dim axis names, e.g. ``(("x",), (), ("y", "z"))``."""
        return TensorSharding(
            mesh_name,
            tuple(DimSharding(tuple(AxisRef(name) for name in axes), closed) for axes in dims),
        )

    @property
    def rank(self) -> int:
        return len(self.dims)

    def used_axes(self) -> tuple[AxisRef, ...]:
        """Every axis the sharding mentions: dim axes, then replicated, then unreduced."""
        dim_axes = tuple(axis for dim in self.dims for axis in dim.axes)
        return dim_axes + self.replicated + self.unreduced

    def dim_shards(self, mesh: MeshAttr) -> tuple[int, ...]:
        """How many shards each dim is split into."""
        return tuple(math.prod(axis.resolved_size(mesh) for axis in dim.axes) for dim in self.dims)

    def local_shape(self, shape, mesh: MeshAttr) -> tuple[int, ...]:
        """The per-device shape; a dim that does not divide gets ``ceil(size / shards)``."""
        return tuple(-(-size // shards) for size, shards in zip(shape, self.dim_shards(mesh)))

    def is_fully_replicated(self) -> bool:
        return not any(dim.axes for dim in self.dims) and not self.unreduced

    def shard_index(self, mesh: MeshAttr, coordinates: dict[str, int]) -> tuple[int, ...]:
        """Which shard of each dim the device at ``coordinates`` holds."""
        index = []
        for dim in self.dims:
            position = 0
            for axis in dim.axes:
                position = position * axis.resolved_size(mesh) + axis.index(mesh, coordinates)
            index.append(position)
        return tuple(index)

    def with_dims(self, dims) -> TensorSharding:
        return TensorSharding(self.mesh_name, tuple(dims), self.replicated, self.unreduced, self.reduction)

    def __str__(self) -> str:
        from .printer import format_sharding

        return format_sharding(self)
