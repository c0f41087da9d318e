"""The positional Sharding classes: PositionalSharding, PmapSharding and GSPMDSharding.

They describe layouts by device positions rather than mesh axis names; JAX kept them for pmap,
for XLA interop, and for code written before NamedSharding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .devices import CpuDevice, check_memory_kind, local_devices
from .errors import IndivisibleError
from .sharding import Index, Sharding, _check_device, _check_shape
from .tile_assignment import TileAssignment, parse_tile_assignment


def _device_tuple(devices, argument: str) -> tuple[CpuDevice, ...]:
    flat = tuple(np.asarray(devices, dtype=object).flat)
    if not flat:
        raise ValueError(f"{argument} must not be empty")
    for device in flat:
        _check_device(device, f"every entry of {argument}")
    if len({device.id for device in flat}) != len(flat):
        raise ValueError(f"{argument} must not repeat a device, got {[device.id for device in flat]}")
    return flat


class PositionalSharding(Sharding):
    """Devices arranged in an array shaped like the array's tiling: entry ``[i, j]`` holds tile
    ``(i, j)``; ``replicate(axis)`` merges positions so that tile is held by several devices."""

    def __init__(self, devices, *, memory_kind: str | None = None):
        shape = np.shape(devices) if isinstance(devices, np.ndarray) else np.asarray(devices, dtype=object).shape
        self._devices = _device_tuple(devices, "PositionalSharding devices")
        groups = np.empty(len(self._devices), dtype=object)
        groups[:] = [(position,) for position in range(len(self._devices))]
        self._groups = groups.reshape(shape)
        self._memory_kind = check_memory_kind(memory_kind)

    @classmethod
    def _remake(cls, devices, groups, memory_kind) -> PositionalSharding:
        sharding = cls.__new__(cls)
        sharding._devices, sharding._groups, sharding._memory_kind = devices, groups, memory_kind
        return sharding

    @property
    def shape(self) -> tuple[int, ...]:
        return self._groups.shape

    @property
    def ndim(self) -> int:
        return self._groups.ndim

    def __len__(self) -> int:
        return self.shape[0]

    def reshape(self, *shape) -> PositionalSharding:
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._remake(self._devices, self._groups.reshape(shape), self._memory_kind)

    def transpose(self, *axes) -> PositionalSharding:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return self._remake(self._devices, self._groups.transpose(axes or None), self._memory_kind)

    @property
    def T(self) -> PositionalSharding:
        return self.transpose()

    def replicate(self, axis=None, keepdims: bool = True) -> PositionalSharding:
        """Merge the positions along ``axis`` (all axes when None): their devices hold one tile."""
        axes = tuple(range(self.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        merged = self._groups
        for dim in sorted((a % self.ndim for a in axes), reverse=True):
            moved = np.moveaxis(merged, dim, -1)
            out = np.empty(moved.shape[:-1], dtype=object)
            for position in np.ndindex(out.shape):
                out[position] = tuple(sorted(sum(moved[position], ())))
            merged = np.expand_dims(out, dim) if keepdims else out
        return self._remake(self._devices, merged, self._memory_kind)

    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        return tuple(self._devices[position] for group in self._groups.flat for position in group)

    @property
    def _is_one_tile(self) -> bool:
        return all(size == 1 for size in self.shape)

    def _check_rank(self, ndim: int) -> None:
        # NOTE: a single tile (after replicate()) replicates arrays of any rank, as in JAX.
        if self.ndim != ndim and not self._is_one_tile:
            raise ValueError(
                f"PositionalSharding of shape {self.shape} describes arrays of rank {self.ndim}, "
                f"got rank {ndim}; reshape the sharding first"
            )

    def _probe_rank(self) -> int:
        return self.ndim

    def _tile_assignment(self, ndim: int) -> TileAssignment:
        if self._is_one_tile:
            return TileAssignment.replicated()
        self._check_rank(ndim)
        # ids index _device_assignment, which lists each group's devices in order
        sizes = {len(group) for group in self._groups.flat}
        replication = sizes.pop()
        if sizes:
            raise ValueError("PositionalSharding positions hold different numbers of devices")
        ids = np.arange(len(self._device_assignment)).reshape(self.shape + (replication,))
        if replication == 1:
            return TileAssignment.tiled(ids.reshape(self.shape))
        return TileAssignment.tiled(ids, replicate_last=True)

    def with_memory_kind(self, kind: str) -> PositionalSharding:
        return self._remake(self._devices, self._groups, check_memory_kind(kind))

    def __eq__(self, other) -> bool:
        return (isinstance(other, PositionalSharding) and self._devices == other._devices
                and self.shape == other.shape and self._groups.tolist() == other._groups.tolist()
                and self.memory_kind == other.memory_kind)

    def __hash__(self) -> int:
        return hash((self._devices, self.shape, self.memory_kind))

    def __repr__(self) -> str:
        """JAX's form: one ``{CPU 0, 4}`` set of device ids per position, laid out like the array."""
        labels = np.empty(self.shape, dtype=object)
        for position, group in np.ndenumerate(self._groups):
            ids = sorted(self._devices[member].id for member in group)
            labels[position] = "{CPU " + ", ".join(str(device_id) for device_id in ids) + "}"
        prefix = "PositionalSharding("
        body = np.array2string(labels, prefix=prefix, suffix=")", max_line_width=100,
                               formatter={"object": str})
        return f"{prefix}{body}, memory_kind={self.memory_kind}, shape={self.shape})"


# -- pmap's ShardingSpec ------------------------------------------------------------------------
@dataclass(frozen=True)
class NoSharding:
    """The array dim is not split."""


@dataclass(frozen=True)
class Unstacked:
    """The array dim of ``size`` is split into single slices and removed from the shard shape."""

    size: int


@dataclass(frozen=True)
class Chunked:
    """The array dim is split into ``chunks`` equal blocks (the product of the tuple)."""

    chunks: tuple[int, ...]


@dataclass(frozen=True)
class ShardedAxis:
    """A device-mesh dim carries the ``axis``-th sharded array dim."""

    axis: int


@dataclass(frozen=True)
class Replicated:
    """A device-mesh dim of ``replicas`` devices holding copies."""

    replicas: int


@dataclass(frozen=True)
class ShardingSpec:
    """pmap's layout: per array dim a NoSharding/Unstacked/Chunked, per device-mesh dim a
    ShardedAxis or Replicated."""

    sharding: tuple
    mesh_mapping: tuple

    def mesh_shape(self) -> tuple[int, ...]:
        sharded_sizes = [
            entry.size if isinstance(entry, Unstacked) else math.prod(entry.chunks)
            for entry in self.sharding if not isinstance(entry, NoSharding)
        ]
        return tuple(sharded_sizes[entry.axis] if isinstance(entry, ShardedAxis) else entry.replicas
                     for entry in self.mesh_mapping)


class PmapSharding(Sharding):
    """The layout ``pmap`` uses: usually one array dim unstacked over the devices."""

    def __init__(self, devices, sharding_spec: ShardingSpec):
        if not isinstance(sharding_spec, ShardingSpec):
            raise TypeError(f"PmapSharding sharding_spec must be a ShardingSpec, got {sharding_spec!r}")
        self.devices = np.asarray(devices, dtype=object)
        _device_tuple(self.devices, "PmapSharding devices")
        if self.devices.shape != sharding_spec.mesh_shape():
            raise ValueError(
                f"PmapSharding devices of shape {self.devices.shape} do not match the sharding "
                f"spec's device mesh {sharding_spec.mesh_shape()}"
            )
        self.sharding_spec = sharding_spec
        self._memory_kind = check_memory_kind(None)

    @classmethod
    def default(cls, shape, sharded_dim: int | None = 0, devices=None) -> PmapSharding:
        """The placement pmap uses for an input of ``shape`` mapped over ``sharded_dim``."""
        shape = _check_shape(shape)
        if sharded_dim is None:
            pool = list(devices) if devices is not None else local_devices()
            spec = ShardingSpec(tuple(NoSharding() for _ in shape), (Replicated(len(pool)),))
            return cls(np.array(pool, dtype=object), spec)
        if not -len(shape) <= sharded_dim < len(shape):
            raise ValueError(f"sharded_dim {sharded_dim} is out of range for shape {shape}")
        sharded_dim %= len(shape)
        count = shape[sharded_dim]
        pool = list(devices) if devices is not None else local_devices()[:count]
        if len(pool) != count:
            raise ValueError(
                f"PmapSharding.default: dim {sharded_dim} of shape {shape} has size {count} but "
                f"{len(pool)} devices are available"
            )
        sharding = tuple(Unstacked(count) if dim == sharded_dim else NoSharding() for dim in range(len(shape)))
        return cls(np.array(pool, dtype=object), ShardingSpec(sharding, (ShardedAxis(0),)))

    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        return tuple(self.devices.flat)

    def _check_rank(self, ndim: int) -> None:
        if len(self.sharding_spec.sharding) != ndim:
            raise ValueError(
                f"PmapSharding with spec {self.sharding_spec} describes arrays of rank "
                f"{len(self.sharding_spec.sharding)}, got rank {ndim}"
            )

    def _sharded_dims(self) -> list[int]:
        return [dim for dim, entry in enumerate(self.sharding_spec.sharding) if not isinstance(entry, NoSharding)]

    def devices_indices_map(self, global_shape) -> dict[CpuDevice, Index]:
        global_shape = _check_shape(global_shape)
        self._check_divisible(global_shape)
        sharded_dims = self._sharded_dims()
        result = {}
        for position in np.ndindex(self.devices.shape):
            coordinate_of = {entry.axis: coordinate for entry, coordinate
                             in zip(self.sharding_spec.mesh_mapping, position) if isinstance(entry, ShardedAxis)}
            index = [slice(None)] * len(global_shape)
            for number, dim in enumerate(sharded_dims):
                entry, coordinate = self.sharding_spec.sharding[dim], coordinate_of.get(number, 0)
                if isinstance(entry, Unstacked):
                    index[dim] = coordinate
                else:
                    block = global_shape[dim] // math.prod(entry.chunks)
                    index[dim] = slice(coordinate * block, (coordinate + 1) * block)
            result[self.devices[position]] = tuple(index)
        return result

    def _check_divisible(self, global_shape) -> None:
        self._check_rank(len(global_shape))
        for dim in self._sharded_dims():
            entry = self.sharding_spec.sharding[dim]
            count = entry.size if isinstance(entry, Unstacked) else math.prod(entry.chunks)
            fits = global_shape[dim] == count if isinstance(entry, Unstacked) else global_shape[dim] % count == 0
            if not fits:
                raise IndivisibleError(
                    f"PmapSharding with spec {self.sharding_spec} needs dim {dim} of {tuple(global_shape)} "
                    f"to be {'exactly' if isinstance(entry, Unstacked) else 'divisible by'} {count}"
                )

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        """Each device's shard; as in JAX, the sharded dim must equal the number of devices
        along it (a ValueError otherwise)."""
        global_shape = _check_shape(global_shape)
        self._check_rank(len(global_shape))
        for dim in self._sharded_dims()[:1]:
            entry = self.sharding_spec.sharding[dim]
            count = entry.size if isinstance(entry, Unstacked) else math.prod(entry.chunks)
            if global_shape[dim] != count:
                raise ValueError(
                    f"The sharded dimension must be equal to the number of devices passed to PmapSharding. "
                    f"Got sharded dimension {dim} with value {global_shape[dim]} in shape {tuple(global_shape)} "
                    f"and the number of devices={count}")
        self._check_divisible(global_shape)
        shape = []
        for size, entry in zip(global_shape, self.sharding_spec.sharding):
            if isinstance(entry, Chunked):
                shape.append(size // math.prod(entry.chunks))
            elif not isinstance(entry, Unstacked):
                shape.append(size)
        return tuple(shape)

    @property
    def is_fully_replicated(self) -> bool:
        return not self._sharded_dims()

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        if not isinstance(other, PmapSharding):
            return False
        return self == other

    def with_memory_kind(self, kind: str) -> PmapSharding:
        # NOTE: JAX's own answer, whatever the kind
        raise NotImplementedError("pmap does not support memories: PmapSharding.with_memory_kind is not "
                                  "available (as in JAX)")

    def __eq__(self, other) -> bool:
        return (isinstance(other, PmapSharding) and self.sharding_spec == other.sharding_spec
                and self._device_assignment == other._device_assignment)

    def __hash__(self) -> int:
        return hash((self.sharding_spec, self._device_assignment))

    def __repr__(self) -> str:
        return f"PmapSharding(sharding_spec={self.sharding_spec}, device_ids={[d.id for d in self.devices.flat]})"


class GSPMDSharding(Sharding):
    """A device list and an XLA-style tile assignment whose ids index that list, e.g.
    ``GSPMDSharding(devices, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}")``."""

    def __init__(self, devices, op_sharding, *, memory_kind: str | None = None):
        self._devices = _device_tuple(devices, "GSPMDSharding devices")
        if isinstance(op_sharding, str):
            op_sharding = parse_tile_assignment(op_sharding)
        if not isinstance(op_sharding, TileAssignment):
            raise TypeError(f"GSPMDSharding op_sharding must be a TileAssignment or its text, got {op_sharding!r}")
        used = op_sharding.device_ids
        if op_sharding.kind != "replicated" and any(not 0 <= i < len(self._devices) for i in used):
            raise ValueError(f"GSPMDSharding {op_sharding} names device positions outside 0..{len(self._devices) - 1}")
        if op_sharding.kind == "tiled" and len(used) != len(self._devices):
            raise ValueError(f"GSPMDSharding {op_sharding} tiles {len(used)} devices but {len(self._devices)} were given")
        self._hlo_sharding = op_sharding
        self._memory_kind = check_memory_kind(memory_kind)

    @classmethod
    def get_replicated(cls, devices, *, memory_kind: str | None = None) -> GSPMDSharding:
        return cls(devices, TileAssignment.replicated(), memory_kind=memory_kind)

    @property
    def _device_assignment(self) -> tuple[CpuDevice, ...]:
        if self._hlo_sharding.kind == "maximal":
            return (self._devices[self._hlo_sharding.device_ids[0]],)
        return self._devices

    def _tile_assignment(self, ndim: int) -> TileAssignment:
        if self._hlo_sharding.kind == "maximal":
            return TileAssignment.replicated()
        return self._hlo_sharding

    def _check_rank(self, ndim: int) -> None:
        if self._hlo_sharding.kind == "tiled" and len(self._hlo_sharding.tiles) != ndim:
            raise ValueError(f"GSPMDSharding {self._hlo_sharding} describes rank {len(self._hlo_sharding.tiles)}, got rank {ndim}")

    def _probe_rank(self) -> int:
        return len(self._hlo_sharding.tiles)

    def with_memory_kind(self, kind: str) -> GSPMDSharding:
        return GSPMDSharding(self._devices, self._hlo_sharding, memory_kind=kind)

    def __eq__(self, other) -> bool:
        return (isinstance(other, GSPMDSharding) and self._devices == other._devices
                and self._hlo_sharding.normalised() == other._hlo_sharding.normalised()
                and self.memory_kind == other.memory_kind)

    def __hash__(self) -> int:
        return hash((self._devices, self._hlo_sharding.normalised(), self.memory_kind))

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hlo_sharding}, device_ids={[d.id for d in self._devices]}, memory_kind={self.memory_kind})"
