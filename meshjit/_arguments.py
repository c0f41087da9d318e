"""What jit knows of one argument, and which pytree leaves are shardings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meshjit.compiler.frontend.operands import dtype_of, shape_of
from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir import TensorType
from meshjit.ir.config import config
from meshjit.ir.dtypes import canonicalize, from_numpy, to_numpy
from meshjit.runtime.array import Array
from meshjit.runtime.mesh import get_mesh
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import AUTO, NamedSharding, Sharding


def is_sharding_leaf(node) -> bool:
    return node is None or isinstance(node, (Sharding, PartitionSpec, AUTO))



@dataclass(frozen=True)
class ArgSpec:
    """What the cache knows of one flat dynamic argument."""

    type: TensorType
    weak_type: bool
    sharding: Sharding | None


class ShapeDtypeStruct:
    """An array's shape, dtype, sharding and weak type without its data (``jax.ShapeDtypeStruct``):
    what ``jit(f).lower``, ``trace`` and ``eval_shape`` accept for an argument, and what
    ``eval_shape`` returns. A PartitionSpec ``sharding`` is over the mesh from ``set_mesh``."""

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False):
        try:
            self.shape = tuple(int(size) for size in shape)
        except TypeError:
            raise TypeError(f"ShapeDtypeStruct shape must be a sequence of ints, got {shape!r}") from None
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.dtype = np.dtype(dtype)
        if isinstance(sharding, PartitionSpec) and not get_mesh().empty:
            sharding = NamedSharding(get_mesh(), sharding)
        if sharding is not None and not isinstance(sharding, (Sharding, PartitionSpec)):
            raise TypeError(f"ShapeDtypeStruct sharding must be a Sharding or a PartitionSpec, got "
                            f"{type(sharding).__name__}: {sharding!r}")
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    @classmethod
    def like(cls, value) -> ShapeDtypeStruct:
        """The shape, (canonical) dtype and weak type of ``value``, with its sharding when it is a
        committed Array (as ``jax.ShapeDtypeStruct.like``)."""
        dtype = dtype_of(value)
        sharding = value.sharding if isinstance(value, Array) and value.committed else None
        return cls(shape_of(value), to_numpy(dtype.name), sharding=sharding, weak_type=bool(dtype.weak))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        sharding = "" if self.sharding is None else f", sharding={self.sharding!r}"
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

    def _key(self):
        return (self.shape, self.dtype, self.sharding, self.weak_type)

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _struct_argument(leaf: ShapeDtypeStruct, path: str) -> ArgSpec:
    dtype = from_numpy(canonicalize(leaf.dtype, x64=config.read("jax_enable_x64")))
    sharding = leaf.sharding
    if isinstance(sharding, PartitionSpec):
        if get_mesh().empty:
            raise ValueError(f"jit argument {path}: the ShapeDtypeStruct's PartitionSpec {sharding} needs a mesh; "
                             f"use `meshjit.set_mesh(mesh)` or give a NamedSharding")
        sharding = NamedSharding(get_mesh(), sharding)
    if sharding is not None:
        sharding.shard_shape(leaf.shape)  # raises IndivisibleError naming the shapes
    return ArgSpec(TensorType(leaf.shape, dtype), leaf.weak_type, sharding)


_SCALAR_TYPES = (bool, int, float)


def leaf_signature(leaf):
    """What a call's cache key holds of one leaf (an Array's shape, dtype, committed sharding and
    weak type; a numpy array's shape and dtype; a Python or numpy scalar's type), None for
    anything else. With the config's version it decides the leaf's ArgSpec."""
    kind = type(leaf)
    if kind is Array:
        return leaf._jit_signature
    if kind is np.ndarray:
        return (leaf.shape, leaf.dtype)
    if kind in _SCALAR_TYPES or isinstance(leaf, np.generic):
        return kind
    return None


def abstract_argument(leaf, path: str) -> ArgSpec:
    if isinstance(leaf, ShapeDtypeStruct):
        return _struct_argument(leaf, path)
    if isinstance(leaf, Array):
        sharding = leaf.sharding if leaf.committed else None
        return ArgSpec(TensorType(leaf.shape, dtype_of(leaf).name), leaf.weak_type, sharding)
    if isinstance(leaf, Tracer):
        return ArgSpec(leaf.value.type, leaf.weak_type, None)
    try:
        kind = dtype_of(leaf)
        shape = np.shape(leaf)
    except TypeError as error:
        raise TypeError(
            f"jit argument {path} of type {type(leaf).__name__} is not a valid array: {error}. "
            f"Pass arrays or scalars, or mark the argument static with static_argnums/static_argnames"
        ) from None
    return ArgSpec(TensorType(tuple(shape), kind.name), kind.weak, None)
