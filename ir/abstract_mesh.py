"""Mesh axis types and the abstract mesh: axis names, sizes and types without devices.

Every layer needs them: the runtime's Mesh has an ``abstract_mesh``, the compiler types traced
values over one (sharding in types), and the facade exposes both as ``jax.sharding`` does.
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict


class AxisType(enum.Enum):
    """How a mesh axis is treated by sharding-in-types: left to propagation, explicit, or manual."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


def normalise_axis_types(axis_types, axis_names, default: AxisType = AxisType.Auto) -> tuple[AxisType, ...]:
    """``axis_types`` as one AxisType per axis (a single AxisType applies to every axis)."""
    if axis_types is None:
        return (default,) * len(axis_names)
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * len(axis_names)
    axis_types = tuple(axis_types)
    if len(axis_types) != len(axis_names):
        raise ValueError(
            f"Number of axis names should match the number of axis_types. Got "
            f"axis_names={tuple(axis_names)} and axis_types={axis_types}"
        )
    for axis_type in axis_types:
        if not isinstance(axis_type, AxisType):
            raise TypeError(f"axis_types entries must be AxisType, got {axis_type!r}")
    return axis_types


class AxisTypeQueries:
    """Which axes are of which type, for any mesh with ``axis_names`` and ``axis_types``
    (AbstractMesh here, the device Mesh in the runtime)."""

    __slots__ = ()

    def _axes_of_type(self, axis_type: AxisType) -> tuple[str, ...]:
        return tuple(name for name, kind in zip(self.axis_names, self.axis_types) if kind is axis_type)

    @property
    def explicit_axes(self) -> tuple[str, ...]:
        return self._axes_of_type(AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple[str, ...]:
        return self._axes_of_type(AxisType.Auto)

    @property
    def manual_axes(self) -> tuple[str, ...]:
        return self._axes_of_type(AxisType.Manual)

    @property
    def are_all_axes_explicit(self) -> bool:
        return all(kind is AxisType.Explicit for kind in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return all(kind is AxisType.Auto for kind in self.axis_types)


class AbstractMesh(AxisTypeQueries):
    """A mesh's shape, axis names and axis types, without devices (``jax.sharding.AbstractMesh``).

    Inside ``jit`` only the abstract mesh is known: ``get_abstract_mesh()`` returns it, and every
    traced value's type names its sharding over one. ``device_kind`` is printed as JAX prints the
    abstract mesh of a concrete one; it takes no part in equality.
    """

    __slots__ = ("axis_sizes", "axis_names", "axis_types", "device_kind", "_key")

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, device_kind: str | None = None):
        axis_sizes = tuple(axis_sizes)
        axis_names = tuple(axis_names)
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: axis_sizes {axis_sizes} and axis_names {axis_names} differ in length")
        for name in axis_names:
            if not isinstance(name, str):
                raise TypeError(f"AbstractMesh axis_names must be strings, got {name!r}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"AbstractMesh axis_names must be unique, got {axis_names}")
        for size in axis_sizes:
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"AbstractMesh axis_sizes must be positive ints, got {axis_sizes}")
        object.__setattr__(self, "axis_sizes", axis_sizes)
        object.__setattr__(self, "axis_names", axis_names)
        object.__setattr__(self, "axis_types", normalise_axis_types(axis_types, axis_names))
        object.__setattr__(self, "device_kind", device_kind)
        object.__setattr__(self, "_key", (self.axis_sizes, self.axis_names, self.axis_types))

    def __setattr__(self, name, value):
        raise AttributeError("AbstractMesh is immutable")

    @property
    def shape(self) -> OrderedDict:
        return OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes) if self.axis_names else 0

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    @property
    def are_all_axes_manual(self) -> bool:
        return all(kind is AxisType.Manual for kind in self.axis_types)

    def axis_type(self, name: str) -> AxisType:
        return self.axis_types[self.axis_names.index(name)]

    def update_axis_types(self, changes: dict) -> AbstractMesh:
        """The same mesh with the axes named in ``changes`` (an axis name or a tuple of names as
        key) given new types."""
        types = dict(zip(self.axis_names, self.axis_types))
        for names, axis_type in changes.items():
            for name in (names,) if isinstance(names, str) else names:
                if name not in types:
                    raise ValueError(f"AbstractMesh.update_axis_types: mesh has no axis {name!r}; its axes "
                                     f"are {self.axis_names}")
                types[name] = axis_type
        return AbstractMesh(self.axis_sizes, self.axis_names, tuple(types[name] for name in self.axis_names),
                            device_kind=self.device_kind)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None) -> AbstractMesh:
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, device_kind=self.device_kind)

    def __eq__(self, other) -> bool:
        return isinstance(other, AbstractMesh) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        axes = ", ".join(f"{name!r}: {size}" for name, size in self.shape_tuple)
        types = ", ".join(repr(kind) for kind in self.axis_types)
        types = f"({types},)" if len(self.axis_types) == 1 else f"({types})"
        device = (f", device_kind={self.device_kind}, num_cores=None, platform={self.device_kind}"
                  if self.device_kind else "")
        return f"AbstractMesh({axes}, axis_types={types}{device})"

    __str__ = __repr__


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())
