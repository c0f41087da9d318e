"""``meshjit.typeof``: the type of any array-like, sharding included, as JAX prints it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meshjit.compiler.frontend.operands import dtype_of, shape_of
from meshjit.compiler.sharding.sharding_types import (
    ShardingType,
    context_abstract_mesh,
    format_type,
    type_of_concrete,
)
from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir.abstract_mesh import EMPTY_ABSTRACT_MESH, AbstractMesh
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import NamedSharding


def type_sharding(sharding: ShardingType) -> NamedSharding:
    """A ShardingType as JAX shows a type's sharding: a NamedSharding over the abstract mesh."""
    spec = PartitionSpec(*sharding.entries(), unreduced=sharding.unreduced, reduced=sharding.reduced)
    return NamedSharding(sharding.mesh, spec)


@dataclass(frozen=True)
class ManualAxisType:
    """How a value inside a shard_map relates to its manual mesh axes (JAX 0.10's
    ``jax.typeof(x).manual_axis_type``): the axes it varies along and those it is unreduced or
    reduced over; all empty outside shard_map."""

    varying: frozenset = frozenset()
    unreduced: frozenset = frozenset()
    reduced: frozenset = frozenset()

    def __repr__(self) -> str:
        return f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, reduced={self.reduced})"


class ShapedArray:
    """An array's type: shape, dtype, weak type, and its sharding over the Explicit axes of its
    mesh (``NamedSharding(AbstractMesh, P)``); ``vma`` are the manual axes it varies along inside
    a shard_map. Prints as JAX's: ``float32[8@X,4]``, ``~float32[]`` when weakly typed."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding_type")

    def __init__(self, shape, dtype, weak_type: bool, sharding_type: ShardingType):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.sharding_type = sharding_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def sharding(self) -> NamedSharding:
        return type_sharding(self.sharding_type)

    @property
    def vma(self) -> frozenset[str]:
        return self.sharding_type.varying

    @property
    def manual_axis_type(self) -> ManualAxisType:
        manual = frozenset(self.sharding_type.mesh.manual_axes)
        return ManualAxisType(frozenset(self.sharding_type.varying), frozenset(self.sharding_type.unreduced) & manual,
                              frozenset(self.sharding_type.reduced) & manual)

    @property
    def mat(self) -> ManualAxisType:
        return self.manual_axis_type

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return format_type(self.shape, self.dtype, self.sharding_type, short=short_dtypes,
                           mesh_axis_types=mesh_axis_types)

    def __str__(self) -> str:
        return ("~" if self.weak_type else "") + self.str_short()

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    def _key(self):
        return (self.shape, self.dtype, self.weak_type, self.sharding_type)

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapedArray) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def typeof(x) -> ShapedArray:
    """The type of ``x`` (a traced value, an Array, a numpy array or a Python scalar)."""
    if isinstance(x, Tracer):
        return ShapedArray(x.shape, x.dtype, x.weak_type, x.sharding_type)
    if getattr(type(x), "is_device_array", False):
        return ShapedArray(x.shape, x.dtype, x.weak_type, type_of_concrete(x, x.ndim))
    try:
        kind = dtype_of(x)
        shape = shape_of(x)
    except TypeError:
        raise TypeError(f"typeof: {type(x).__name__} {x!r} is not an array or a scalar") from None
    return ShapedArray(shape, to_numpy(kind.name), kind.weak, ShardingType.replicated(EMPTY_ABSTRACT_MESH, len(shape)))


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context: ``set_mesh``'s, as changed by ``use_abstract_mesh``,
    ``auto_axes``, ``explicit_axes`` and shard_map bodies; the empty mesh when none is set."""
    mesh = context_abstract_mesh()
    return EMPTY_ABSTRACT_MESH if mesh is None else mesh
