"""GlobalDeviceArray: JAX's pre-Array global array, as a view of an Array laid out by mesh axes.

A GDA is a global shape, a mesh and per-dim mesh axes; its data is an ``Array`` with
``NamedSharding(global_mesh, P(*mesh_axes))``, so layout, shards and replicas come from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .array import Array, Shard, index_key
from .devices import CpuDevice
from .errors import IndivisibleError
from .mesh import Mesh
from .partition_spec import UNCONSTRAINED, PartitionSpec
from .sharding import Index, NamedSharding
from .transfer import device_put, make_array_from_single_device_arrays

__all__ = ["GlobalDeviceArray", "Shard", "get_shard_indices"]


# -- argument checks -------------------------------------------------------------------------------
def _check_global_shape(global_shape) -> tuple[int, ...]:
    if not isinstance(global_shape, (tuple, list)) or not all(
            isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size >= 0
            for size in global_shape):
        raise TypeError(f"global_shape must be a tuple of non-negative ints, got {global_shape!r}")
    return tuple(int(size) for size in global_shape)


def _check_mesh(global_mesh) -> Mesh:
    if not isinstance(global_mesh, Mesh):
        raise TypeError(f"global_mesh must be a Mesh, got {type(global_mesh).__name__}: {global_mesh!r}")
    if global_mesh.empty:
        raise ValueError("global_mesh must have at least one device, got an empty Mesh")
    return global_mesh


def _spec_of(mesh_axes) -> PartitionSpec:
    """``mesh_axes`` as a PartitionSpec: a PartitionSpec, a sequence of entries, a single axis
    name (one entry), or None (no dim partitioned)."""
    if isinstance(mesh_axes, PartitionSpec):
        spec = mesh_axes
    elif mesh_axes is None:
        spec = PartitionSpec()
    elif isinstance(mesh_axes, str):
        spec = PartitionSpec(mesh_axes)
    elif isinstance(mesh_axes, (tuple, list)):
        try:
            spec = PartitionSpec(*mesh_axes)
        except TypeError as error:
            raise TypeError(f"mesh_axes {mesh_axes!r}: {error}") from None
    else:
        raise TypeError(
            f"mesh_axes must be a PartitionSpec or a sequence whose entries are a mesh axis name, "
            f"a tuple of names or None; got {type(mesh_axes).__name__}: {mesh_axes!r}"
        )
    if UNCONSTRAINED in tuple(spec.partitions):
        raise ValueError(f"mesh_axes {spec} may not use P.UNCONSTRAINED; a GlobalDeviceArray has a "
                         f"fixed layout")
    return spec


def _check_layout(global_shape, global_mesh: Mesh, spec: PartitionSpec) -> NamedSharding:
    """The NamedSharding of a GDA, after checking ``mesh_axes`` against the shape and the mesh."""
    if len(spec) > len(global_shape):
        raise ValueError(
            f"mesh_axes {spec} has {len(spec)} entries, but global_shape {global_shape} has rank "
            f"{len(global_shape)}; mesh_axes may have at most one entry per dim"
        )
    used = spec.used_axes()
    for name in used:
        if name not in global_mesh.axis_names:
            raise ValueError(
                f"mesh_axes {spec} names axis {name!r}, which is not an axis of global_mesh; its axes "
                f"are {global_mesh.axis_names}"
            )
    repeated = sorted({name for name in used if used.count(name) > 1})
    if repeated:
        raise ValueError(f"mesh_axes {spec} uses mesh axes {repeated} more than once; each axis may "
                         f"split one dim")
    for dim, size in enumerate(global_shape):
        count = int(np.prod([global_mesh.shape[name] for name in spec.axis_names_of(dim)]))
        if size % count:
            raise IndivisibleError(
                f"global_shape {global_shape} dim {dim} has size {size}, which mesh_axes entry "
                f"{spec[dim]!r} splits {count} ways (global_mesh {dict(global_mesh.shape)}); the "
                f"split must divide the size"
            )
    return NamedSharding(global_mesh, spec)


def _place_buffer(buffer, position: int, device: CpuDevice, local_devices: list[CpuDevice]) -> Array:
    """A single-device Array for ``device_buffers[position]``, which belongs on ``device`` (the
    ``position``-th local device of the mesh): host arrays are put there; an Array elsewhere is
    a ValueError, as in JAX."""
    argument = f"device_buffers[{position}]"
    if not isinstance(buffer, Array):
        if not hasattr(buffer, "__array__") and not isinstance(buffer, (np.generic, list, tuple)):
            raise TypeError(f"{argument} must be a single-device meshjit.Array or a numpy array, "
                            f"got {type(buffer).__name__}: {buffer!r}")
        return device_put(np.asarray(buffer), device)
    devices = buffer.sharding.device_set
    if len(devices) != 1:
        raise ValueError(f"{argument} lives on {len(devices)} devices; expected a single-device Array")
    (where,) = devices
    if where not in local_devices:
        raise ValueError(
            f"{argument} is on {where!r}, which is not a local device of global_mesh; expected one "
            f"of device ids {[local.id for local in local_devices]}"
        )
    if where != device:
        raise ValueError(
            f"The `global_mesh.local_devices` and `device_buffers` device order doesn't match: {argument} "
            f"is on {where!r}, but local device {position} of global_mesh is {device!r}. Use "
            f"`global_mesh.local_devices` to put arrays on devices instead of `meshjit.local_devices()`"
        )
    return buffer


def _buffers_array(global_shape, sharding: NamedSharding, device_buffers) -> Array:
    if isinstance(device_buffers, (Array, np.ndarray, str)) or not isinstance(device_buffers, Sequence):
        raise TypeError(
            f"device_buffers must be a sequence with one array per local device of global_mesh, got "
            f"{type(device_buffers).__name__}"
        )
    local_devices = sharding.mesh.local_devices
    if len(device_buffers) != len(local_devices):
        raise ValueError(
            f"device_buffers has {len(device_buffers)} buffers, but global_mesh has "
            f"{len(local_devices)} local devices (ids {[device.id for device in local_devices]}); "
            f"expected one buffer per local device"
        )
    placed = [_place_buffer(buffer, position, device, local_devices)
              for position, (buffer, device) in enumerate(zip(device_buffers, local_devices))]
    return _assemble(global_shape, sharding, placed, "device_buffers")


def _assemble(global_shape, sharding: NamedSharding, buffers: list[Array], argument: str) -> Array:
    """The Array of per-device ``buffers``, after checking their devices differ and their shapes."""
    shard_shape = sharding.shard_shape(global_shape)
    seen: dict[CpuDevice, int] = {}
    for position, buffer in enumerate(buffers):
        (device,) = buffer.sharding.device_set
        if device in seen:
            raise ValueError(f"{argument}[{seen[device]}] and {argument}[{position}] are both on "
                             f"{device!r}; expected one buffer per local device")
        seen[device] = position
        if buffer.shape != shard_shape:
            raise ValueError(
                f"{argument}[{position}] has shape {buffer.shape}, but global_shape {global_shape} "
                f"with mesh_axes {sharding.spec} has per-device shape {shard_shape}"
            )
    return make_array_from_single_device_arrays(global_shape, sharding, buffers)


# -- the class -------------------------------------------------------------------------------------
class GlobalDeviceArray:
    """A logical array sharded over the devices of ``global_mesh`` as ``mesh_axes`` says.

    ``device_buffers`` holds one array per local device of the mesh, in
    ``global_mesh.local_devices`` order: single-device Arrays on those devices, or host arrays
    (placed there).
    """

    def __init__(self, global_shape, global_mesh, mesh_axes, device_buffers,
                 _gda_fast_path_args=None):
        # NOTE: _gda_fast_path_args (JAX's precomputed shard indices) is accepted and not needed.
        global_shape = _check_global_shape(global_shape)
        sharding = _check_layout(global_shape, _check_mesh(global_mesh), _spec_of(mesh_axes))
        self._init_from_array(_buffers_array(global_shape, sharding, device_buffers))

    def _init_from_array(self, array: Array) -> None:
        self._array = array
        self._global_mesh = array.sharding.mesh
        self._mesh_axes = array.sharding.spec

    @classmethod
    def _wrap(cls, array: Array) -> GlobalDeviceArray:
        gda = cls.__new__(cls)
        gda._init_from_array(array)
        return gda

    # -- constructors -----------------------------------------------------------------------------
    @classmethod
    def from_array(cls, array: Array) -> GlobalDeviceArray:
        """A GDA viewing ``array``, which must be laid out by a NamedSharding (no data is copied)."""
        if not isinstance(array, Array):
            raise TypeError(f"from_array expects a meshjit.Array, got {type(array).__name__}: {array!r}")
        sharding = array.sharding
        if not isinstance(sharding, NamedSharding):
            raise TypeError(
                f"from_array needs an Array with a NamedSharding (a mesh and mesh axes), got "
                f"{sharding}; reshard it first with meshjit.device_put(array, NamedSharding(mesh, spec))"
            )
        _spec_of(sharding.spec)
        return cls._wrap(array)

    @classmethod
    def from_callback(cls, global_shape, global_mesh, mesh_axes,
                      data_callback: Callable[[Index], object]):
        """Build a GDA from ``data_callback(index)`` (a host array), called once per local device
        in ``global_mesh.local_devices`` order with the global index that device holds."""
        global_shape = _check_global_shape(global_shape)
        sharding = _check_layout(global_shape, _check_mesh(global_mesh), _spec_of(mesh_axes))
        devices = sharding.mesh.local_devices
        indices = sharding.addressable_devices_indices_map(global_shape)
        buffers = []
        for device in devices:
            data = np.asarray(data_callback(indices[device]))
            if data.shape != sharding.shard_shape(global_shape):
                raise ValueError(f"data_callback returned shape {data.shape} for index {indices[device]}, but "
                                 f"the shard shape is {sharding.shard_shape(global_shape)}")
            buffers.append(device_put(data, device))
        return cls._wrap(_assemble(global_shape, sharding, buffers, "data_callback result"))

    @classmethod
    def from_batched_callback(cls, global_shape, global_mesh, mesh_axes,
                              data_callback: Callable[[list[Index]], Sequence]):
        """Build a GDA from one call ``data_callback(indices)``: ``indices`` has the global index of
        each local device (in ``global_mesh.local_devices`` order); it returns one array per index."""
        global_shape = _check_global_shape(global_shape)
        sharding = _check_layout(global_shape, _check_mesh(global_mesh), _spec_of(mesh_axes))
        devices = sharding.mesh.local_devices
        indices = sharding.addressable_devices_indices_map(global_shape)
        results = _check_batch(data_callback([indices[device] for device in devices]), len(devices))
        buffers = [device_put(np.asarray(result), device) for result, device in zip(results, devices)]
        return cls._wrap(_assemble(global_shape, sharding, buffers, "data_callback result"))

    @classmethod
    def from_batched_callback_with_devices(
            cls, global_shape, global_mesh, mesh_axes,
            data_callback: Callable[[list[tuple[Index, tuple[CpuDevice, ...]]]], Sequence]):
        """Build a GDA from one call ``data_callback(pairs)``: ``pairs`` holds ``(index, devices)``
        once per distinct index of the local devices (in order of first appearance in
        ``global_mesh.local_devices``), ``devices`` being the local devices holding it; it returns
        one array per device, pair after pair, each on its device (host arrays are placed there)."""
        global_shape = _check_global_shape(global_shape)
        sharding = _check_layout(global_shape, _check_mesh(global_mesh), _spec_of(mesh_axes))
        devices = sharding.mesh.local_devices
        indices = sharding.addressable_devices_indices_map(global_shape)
        holders: dict[tuple, tuple[Index, list[CpuDevice]]] = {}
        for device in devices:
            holders.setdefault(index_key(indices[device]), (indices[device], []))[1].append(device)
        pairs = [(index, tuple(held_by)) for index, held_by in holders.values()]
        requested = [device for _, held_by in pairs for device in held_by]
        results = _check_batch(data_callback(pairs), len(requested))
        by_device = {device: _on_device(result, device, position)
                     for position, (result, device) in enumerate(zip(results, requested))}
        buffers = [by_device[device] for device in devices]
        return cls._wrap(_assemble(global_shape, sharding, buffers, "data_callback result"))

    # -- conversions ------------------------------------------------------------------------------
    def to_array(self) -> Array:
        """The meshjit.Array holding this GDA's data (sharded as ``self.sharding``; no copy)."""
        return self._array

    def __array__(self, dtype=None, copy=None):
        return self._array.__array__(dtype, copy)

    # -- metadata ---------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def dtype(self) -> np.dtype:
        return self._array.dtype

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return self._array.size

    @property
    def mesh(self) -> Mesh:
        return self._global_mesh

    @property
    def mesh_axes(self) -> PartitionSpec:
        return self._mesh_axes

    @property
    def sharding(self) -> NamedSharding:
        return self._array.sharding

    @property
    def is_fully_replicated(self) -> bool:
        return self._array.is_fully_replicated

    # -- shards -----------------------------------------------------------------------------------
    @property
    def local_shards(self) -> list[Shard]:
        """The shards of this process's devices, in ``global_mesh.local_devices`` order."""
        return self._array.addressable_shards

    @property
    def global_shards(self) -> list[Shard]:
        """The shards of every mesh device; ``data`` is None on other processes' devices."""
        return self._array.global_shards

    def local_data(self, index: int) -> Array:
        """The single-device Array of the ``index``-th local shard."""
        return self._array.addressable_data(index)

    @property
    def addressable_shards(self) -> list[Shard]:
        """The same as ``local_shards`` (the name jax.Array uses)."""
        return self.local_shards

    def addressable_data(self, index: int) -> Array:
        """The same as ``local_data(index)`` (the name jax.Array uses)."""
        return self.local_data(index)

    def __eq__(self, other):
        raise NotImplementedError(
            "GlobalDeviceArray equality is intentionally unimplemented (as in JAX). Compare the values "
            "explicitly, e.g. pjit(lambda x, y: x == y)(gda, other) or np.array_equal(gda, other)")

    __hash__ = None

    def block_until_ready(self) -> GlobalDeviceArray:
        self._array.block_until_ready()
        return self

    def __repr__(self) -> str:
        return (f"GlobalDeviceArray(shape={self.shape}, dtype={self.dtype.name}, "
                f"mesh={self._global_mesh}, mesh_axes={self._mesh_axes!r})")


def _check_batch(results, expected: int) -> list:
    if not isinstance(results, Sequence) or isinstance(results, (str, np.ndarray, Array)):
        raise TypeError(f"data_callback must return a list with one array per local device, got "
                        f"{type(results).__name__}")
    if len(results) != expected:
        raise ValueError(f"data_callback returned {len(results)} arrays for {expected} local devices; "
                         f"expected one array per requested index")
    return list(results)


def _on_device(result, device: CpuDevice, position: int) -> Array:
    if not isinstance(result, Array):
        return device_put(np.asarray(result), device)
    if result.sharding.device_set != {device}:
        raise ValueError(
            f"data_callback result {position} is on devices "
            f"{sorted(where.id for where in result.sharding.device_set)}, but it was asked for device "
            f"{device!r}"
        )
    return result


def get_shard_indices(global_shape, global_mesh, mesh_axes) -> dict[CpuDevice, Index]:
    """The global index each device of ``global_mesh`` holds under ``mesh_axes``."""
    global_shape = _check_global_shape(global_shape)
    sharding = _check_layout(global_shape, _check_mesh(global_mesh), _spec_of(mesh_axes))
    return sharding.devices_indices_map(global_shape)
