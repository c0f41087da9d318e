"""The Sharding classes: how a global array's shards are laid out over devices.

Each concrete class reduces itself to a TileAssignment over its device list; index maps, shard
shapes, replication and equivalence are derived from that one form in the base class.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .devices import CpuDevice, check_memory_kind, process_index
from .errors import DuplicateSpecError, IndivisibleError
from meshjit.ir.abstract_mesh import AbstractMesh

from .mesh import Mesh, get_mesh
from .partition_spec import UNCONSTRAINED, PartitionSpec
from .tile_assignment import TileAssignment
from .tiles import tile_numbers

Index = tuple


class Sharding:
    """Describes how a ``meshjit.Array`` is laid out across devices."""

    _memory_kind: str

    # -- what every subclass provides ---------------------------------------------------------
    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        """The devices in layout order (the order of ``devices_indices_map``)."""
        raise TypeError(f"{type(self).__name__} does not define a device assignment")

    def _tile_assignment(self, ndim: int) -> TileAssignment:
        """The GSPMD form for an array of rank ``ndim``; ids index ``_device_assignment``."""
        raise TypeError(f"{type(self).__name__} does not define a tile assignment")

    def _check_rank(self, ndim: int) -> None:
        """Raise ValueError if this sharding cannot describe an array of rank ``ndim``."""

    # -- derived ------------------------------------------------------------------------------
    # NOTE: shardings are immutable and these are asked on every dispatch and several times a
    # compilation; a mesh of 1024 devices made each a loop worth caching, and the per-device
    # questions are answered on arrays of ids and process indices read off the devices once
    @property
    def device_set(self) -> set[CpuDevice]:
        cached = self.__dict__.get("_device_set")
        if cached is None:
            cached = self.__dict__["_device_set"] = frozenset(self._device_assignment)
        return set(cached)

    @functools.cached_property
    def _device_ids(self) -> np.ndarray:
        """The ids of ``_device_assignment``, in its order (read-only)."""
        devices = self._device_assignment
        return _read_only(np.fromiter((device.id for device in devices), np.int64, len(devices)))

    @functools.cached_property
    def _device_id_tuple(self) -> tuple[int, ...]:
        """The ids of ``_device_assignment`` as a tuple (what jit compares and reports)."""
        return tuple(self._device_ids.tolist())

    @functools.cached_property
    def _device_processes(self) -> np.ndarray:
        """The process index of each device of ``_device_assignment`` (read-only)."""
        devices = self._device_assignment
        return _read_only(np.fromiter((device.process_index for device in devices), np.int64, len(devices)))

    def _addressable(self) -> tuple[tuple[CpuDevice, ...], np.ndarray | None, np.ndarray]:
        """This process's devices in layout order, their positions in ``_device_assignment``
        (None when that is every device) and their ids."""
        # NOTE: keyed by this process's index, which distributed initialisation sets
        cached = self.__dict__.get("_addressable_cache")
        if cached is None or cached[0] != process_index():
            local = self._device_processes == process_index()
            if local.all():
                cached = (process_index(), self._device_assignment, None, self._device_ids)
            else:
                positions = _read_only(np.flatnonzero(local))
                devices = np.empty(len(self._device_assignment), dtype=object)
                devices[:] = self._device_assignment
                cached = (process_index(), tuple(devices[positions].tolist()), positions,
                          _read_only(self._device_ids[positions]))
            self.__dict__["_addressable_cache"] = cached
        return cached[1:]

    @property
    def addressable_devices(self) -> set[CpuDevice]:
        return set(self._addressable_device_assignment)

    @property
    def _addressable_device_assignment(self) -> tuple[CpuDevice, ...]:
        return self._addressable()[0]

    @property
    def _addressable_device_ids(self) -> np.ndarray:
        return self._addressable()[2]

    @property
    def is_fully_addressable(self) -> bool:
        return self._addressable()[1] is None

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    @property
    def is_fully_replicated(self) -> bool:
        tiles = self._tile_assignment(self._probe_rank()).normalised()
        return tiles.kind == "replicated" or (tiles.kind == "maximal" and self.num_devices == 1)

    def _probe_rank(self) -> int:
        return 0

    def devices_indices_map(self, global_shape) -> dict[CpuDevice, Index]:
        global_shape = _check_shape(global_shape)
        cache = self.__dict__.setdefault("_indices_cache", {})
        cached = cache.get(global_shape)
        if cached is None:
            cached = cache[global_shape] = self._compute_indices_map(global_shape)
        return dict(cached)

    def _compute_indices_map(self, global_shape) -> dict[CpuDevice, Index]:
        self._check_rank(len(global_shape))
        self._check_divisible(global_shape)
        tiles = self._tile_assignment(len(global_shape))
        devices = self._device_assignment
        by_position = tiles.indices(global_shape, range(len(devices)))
        return {device: by_position[position] for position, device in enumerate(devices)
                if position in by_position}

    def addressable_devices_indices_map(self, global_shape) -> dict[CpuDevice, Index]:
        indices = self.devices_indices_map(global_shape)
        return {device: indices[device] for device in self._addressable_device_assignment}

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        global_shape = _check_shape(global_shape)
        self._check_rank(len(global_shape))
        self._check_divisible(global_shape)
        tiles = self._tile_assignment(len(global_shape))
        if tiles.kind != "tiled":
            return global_shape
        return tuple(size // count for size, count in zip(global_shape, tiles.tiles))

    def _check_divisible(self, global_shape) -> None:
        tiles = self._tile_assignment(len(global_shape))
        if tiles.kind != "tiled":
            return
        for axis, (size, count) in enumerate(zip(global_shape, tiles.tiles)):
            if size % count:
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {axis} is partitioned {count} times, "
                    f"but the dimension size is {size} (full shape: {tuple(global_shape)}, "
                    f"per-dimension tiling factors: {list(tiles.tiles)} should evenly divide the shape)"
                )

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both shardings put the same shards of a rank-``ndim`` array on the same devices."""
        if not isinstance(other, Sharding):
            return False
        if self.memory_kind != other.memory_kind or not _same_devices(self, other):
            return False
        try:
            mine, theirs = self._blocks_by_device(ndim), other._blocks_by_device(ndim)
            if mine is not None and theirs is not None:
                return mine[0] == theirs[0] and np.array_equal(mine[1], theirs[1])
            probe = (self.num_devices,) * ndim
            return self.devices_indices_map(probe) == other.devices_indices_map(probe)
        except (ValueError, IndivisibleError):
            return False

    def _blocks_by_device(self, ndim: int):
        """(tiles per dim, the tile each device holds, devices in id order), computed on arrays
        rather than per device; None where there is no tile assignment to read it from (one
        device holding everything, PmapSharding): is_equivalent_to then compares index maps."""
        numbered = tile_numbers(self, ndim)
        if numbered is None:
            return None
        tiles, tile_of_position = numbered
        return tiles, tile_of_position[np.argsort(self._device_ids)]

    def with_memory_kind(self, kind: str) -> Sharding:
        raise TypeError(f"{type(self).__name__} does not support memory kinds")


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _same_devices(one: Sharding, other: Sharding) -> bool:
    """Whether two shardings use the same set of devices (ids are global, so the ids decide)."""
    if one._device_assignment is other._device_assignment:
        return True
    mine, theirs = one._device_ids, other._device_ids
    return mine.shape == theirs.shape and np.array_equal(np.sort(mine), np.sort(theirs))


def _check_shape(global_shape) -> tuple[int, ...]:
    try:
        shape = tuple(int(size) for size in global_shape)
    except TypeError:
        raise TypeError(f"global_shape must be a tuple of ints, got {global_shape!r}") from None
    if any(size < 0 for size in shape):
        raise ValueError(f"global_shape must have non-negative sizes, got {shape}")
    return shape


def _check_device(device, argument: str) -> CpuDevice:
    if not isinstance(device, CpuDevice):
        raise TypeError(f"{argument} must be a meshjit device, got {type(device).__name__}: {device!r}")
    return device


class NamedSharding(Sharding):
    """A Mesh and a PartitionSpec saying how each array dim splits over the mesh's named axes.

    Over an AbstractMesh (as in the sharding of a traced value's type) it names the layout but
    has no devices, so the methods about devices and indices raise ValueError.
    """

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec, *, memory_kind: str | None = None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding mesh must be a Mesh, got {type(mesh).__name__}: {mesh!r}")
        if not isinstance(spec, PartitionSpec):
            raise TypeError(
                f"NamedSharding spec must be a PartitionSpec, got {type(spec).__name__}: {spec!r}"
            )
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = check_memory_kind(memory_kind)
        self._check_spec()

    def _check_spec(self) -> None:
        used = self.spec.used_axes()
        for name in [*used, *sorted(self.spec.unreduced), *sorted(self.spec.reduced)]:
            if name not in self.mesh.axis_names:
                raise ValueError(
                    f"Resource axis: {name} of {self.spec} is not found in mesh: {self.mesh.axis_names}."
                )
        repeated = sorted({name for name in used if used.count(name) > 1})
        if repeated:
            raise DuplicateSpecError(
                f"A single NamedSharding spec specification can map every mesh axis to at most one "
                f"positional dimension, but {self.spec} has duplicate entries for "
                f"{', '.join(f'`{name}`' for name in repeated)}"
            )
        # NOTE: an UNCONSTRAINED dim is left to propagation, which moves only Auto axes.
        if PartitionSpec.UNCONSTRAINED in self.spec.partitions and not self.mesh.auto_axes:
            raise ValueError(f"{self.spec} cannot contain `P.UNCONSTRAINED` when no mesh axis_types are `Auto`. "
                             f"Got mesh axis_types: ({', '.join(repr(kind) for kind in self.mesh.axis_types)})")

    def _concrete_mesh(self) -> Mesh:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{self!r} is over an AbstractMesh, which has no devices; use a NamedSharding over a "
                             f"concrete Mesh")
        return self.mesh

    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        return self._concrete_mesh().flat_devices

    @property
    def _device_ids(self) -> np.ndarray:
        return self._concrete_mesh()._device_id_array.reshape(-1)

    @property
    def _device_id_tuple(self) -> tuple[int, ...]:
        return self._concrete_mesh()._key[0]

    @property
    def _device_processes(self) -> np.ndarray:
        return self._concrete_mesh()._process_index_array.reshape(-1)

    def _check_rank(self, ndim: int) -> None:
        if len(self.spec) > ndim:
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, but "
                f"was applied to a value of rank {ndim}."
            )

    def _probe_rank(self) -> int:
        return len(self.spec)

    @functools.lru_cache(maxsize=64)
    def _tile_assignment(self, ndim: int) -> TileAssignment:
        self._check_rank(ndim)
        # NOTE: the tiles of the dims; an unreduced axis holds different partials of one tile
        # (runtime/unreduced.py), so it counts as replication here
        names = self.mesh.axis_names
        per_dim = [self.spec.axis_names_of(dim) for dim in range(ndim)]
        used = [name for axes in per_dim for name in axes]
        if not used:
            return TileAssignment.replicated()
        unused = [name for name in names if name not in used]
        positions = np.arange(self.mesh.size).reshape(self.mesh.axis_sizes)
        order = [names.index(name) for name in used + unused]
        tiles = [math.prod(self.mesh.shape[name] for name in axes) for axes in per_dim]
        replication = math.prod(self.mesh.shape[name] for name in unused)
        ids = positions.transpose(order).reshape(tiles + [replication])
        return TileAssignment.tiled(ids, replicate_last=True) if replication > 1 else (
            TileAssignment.tiled(ids.reshape(tiles)))

    @property
    def is_fully_replicated(self) -> bool:
        # NOTE: axes of size 1 split nothing, so P('x') over a size-1 axis x is replication.
        return math.prod(self.mesh.shape[name] for name in [*self.spec.used_axes(), *self.spec.unreduced]) == 1

    @property
    def has_unconstrained_dims(self) -> bool:
        return any(entry is UNCONSTRAINED for entry in self.spec.partitions)

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def __eq__(self, other) -> bool:
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and self.spec == other.spec and self.memory_kind == other.memory_kind)

    def __hash__(self) -> int:
        # NOTE: shardings are immutable and hashed on every jit dispatch: hash once
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = self.__dict__["_hash"] = hash((self.mesh, self.spec, self.memory_kind))
        return cached

    def __repr__(self) -> str:
        if isinstance(self.mesh, AbstractMesh):
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind={self.memory_kind})"


class SingleDeviceSharding(Sharding):
    """All of the array on one device."""

    def __init__(self, device: CpuDevice, *, memory_kind: str | None = None):
        self._device = _check_device(device, "SingleDeviceSharding device")
        self._memory_kind = check_memory_kind(memory_kind)
        # NOTE: hashed on every jit dispatch of a committed argument (meshjit/jit_api.py): once
        self._hash = hash((self._device, self.memory_kind))

    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        return (self._device,)

    def _tile_assignment(self, ndim: int) -> TileAssignment:
        return TileAssignment.replicated()

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)

    def __eq__(self, other) -> bool:
        return (isinstance(other, SingleDeviceSharding) and self._device == other._device
                and self.memory_kind == other.memory_kind)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class AUTO:
    """Asks ``jit`` to choose this argument's or result's layout over ``mesh`` (the automatic
    sharding search, docs/auto-sharding.md); ``Compiled.input_shardings`` and
    ``output_shardings`` tell the choice. Not a Sharding: no array is laid out as AUTO."""

    def __init__(self, mesh: Mesh):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"AUTO mesh must be a Mesh, got {type(mesh).__name__}: {mesh!r}")
        self.mesh = mesh

    def __eq__(self, other) -> bool:
        return isinstance(other, AUTO) and self.mesh == other.mesh

    def __hash__(self) -> int:
        return hash(("AUTO", self.mesh))

    def __repr__(self) -> str:
        return f"AUTO(mesh={self.mesh!r})"


def spec_on_context_mesh(spec: PartitionSpec, argument: str) -> NamedSharding:
    """A bare PartitionSpec as a NamedSharding over the mesh from ``set_mesh``; without one, a
    ValueError naming ``argument``."""
    mesh = get_mesh()
    if mesh.empty:
        raise ValueError(
            f"{argument}: a PartitionSpec {spec} was given without a mesh; set one with "
            f"`meshjit.sharding.set_mesh(mesh)` or pass NamedSharding(mesh, spec)"
        )
    return NamedSharding(mesh, spec)
