"""Mesh: an N-d array of devices with named axes; the mesh contexts that APIs read."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from meshjit.ir.abstract_mesh import AbstractMesh, AxisType, AxisTypeQueries, normalise_axis_types

from .devices import CpuDevice, devices as all_devices, is_addressable


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _normalise_axis_names(axis_names) -> tuple[str, ...]:
    try:
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    except TypeError:
        raise TypeError(f"Mesh axis_names must be a string or a sequence of strings, got "
                        f"{type(axis_names).__name__}: {axis_names!r}") from None
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"Mesh axis_names must be strings, got {name!r} in {names}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"Mesh axis_names must be unique, but {duplicates} repeat in {names}")
    return names


def _normalise_devices(devices, axis_names) -> np.ndarray:
    array = np.empty(np.shape(devices), dtype=object)
    array[...] = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
    if array.ndim != len(axis_names):
        raise ValueError(
            f"Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
            f"second argument (`axis_names`), but got devices.ndim == {array.ndim} and "
            f"len(axis_names) == {len(axis_names)}."
        )
    if array.ndim == 0:
        # NOTE: no axes is the empty mesh (what get_mesh returns when none is set): no devices.
        empty = np.empty((), dtype=object)
        empty.flags.writeable = False
        return empty
    flat = list(array.flat)
    for device in flat:
        if not isinstance(device, CpuDevice):
            raise TypeError(f"Mesh devices must be meshjit devices, got {device!r}")
    ids = [device.id for device in flat]
    if len(set(ids)) != len(ids):
        repeated = sorted({device_id for device_id in ids if ids.count(device_id) > 1})
        raise ValueError(f"Mesh devices must be distinct, but device ids {repeated} repeat")
    array.flags.writeable = False
    return array


class Mesh(AxisTypeQueries):
    """An N-d array of devices whose axes have names, e.g. ``Mesh(devices.reshape(2, 4), ('x', 'y'))``.

    Also a context manager: ``with mesh:`` makes it the mesh of pjit and of the legacy APIs.
    """

    def __init__(self, devices, axis_names, *, axis_types=None):
        self.axis_names = _normalise_axis_names(axis_names)
        self.devices = _normalise_devices(devices, self.axis_names)
        self.axis_types = normalise_axis_types(axis_types, self.axis_names)
        flat = self.flat_devices
        self._key = (tuple(device.id for device in flat), self.devices.shape, self.axis_names, self.axis_types)
        self._hash = hash(self._key)
        # NOTE: the per-device questions (which devices a sharding uses, which are this
        # process's, which block of a buffer each reads) are answered on these arrays, read off
        # the devices here, once, so a mesh of 1024 devices costs numpy calls, not Python loops
        # per device, wherever it is used.
        shape = (0,) if self.empty else self.devices.shape  # NOTE: the empty mesh's array is 0-d
        self._device_id_array = _read_only(np.array(self._key[0], dtype=np.int64).reshape(shape))
        self._process_index_array = _read_only(
            np.fromiter((device.process_index for device in flat), np.int64, len(flat)).reshape(shape))

    @property
    def shape(self) -> OrderedDict:
        return OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return math.prod(self.devices.shape) if self.devices.ndim else 0

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return self._device_id_array.copy()

    @property
    def flat_devices(self) -> tuple[CpuDevice, ...]:
        """Devices in mesh order (row-major over the axes)."""
        cached = self.__dict__.get("_flat_devices")
        if cached is None:
            cached = self.__dict__["_flat_devices"] = () if self.empty else tuple(self.devices.flat)
        return cached

    @property
    def local_devices(self) -> list[CpuDevice]:
        return [device for device in self.flat_devices if is_addressable(device)]

    @property
    def is_multi_process(self) -> bool:
        processes = self._process_index_array
        return processes.size > 0 and bool((processes != processes.flat[0]).any())

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh without its devices: what ``get_abstract_mesh()`` returns under ``set_mesh``."""
        cached = self.__dict__.get("_abstract_mesh")
        if cached is None:
            cached = AbstractMesh((), ()) if self.empty else AbstractMesh(
                self.axis_sizes, self.axis_names, self.axis_types, device_kind="cpu")
            self.__dict__["_abstract_mesh"] = cached
        return cached

    def axis_size(self, name: str) -> int:
        return self.shape[name]

    def __eq__(self, other) -> bool:
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
                f"axis_types={self._axis_types_text()})")

    def _axis_types_text(self) -> str:
        types = ", ".join(repr(kind) for kind in self.axis_types)
        return f"({types},)" if len(self.axis_types) == 1 else f"({types})"

    def __str__(self) -> str:
        """The short form JAX prints inside sharding reprs: ``Mesh('x': 2, 'y': 4, axis_types=...)``."""
        if self.empty:
            return "Mesh()"
        axes = ", ".join(f"{name!r}: {size}" for name, size in self.shape.items())
        return f"Mesh({axes}, axis_types={self._axis_types_text()})"

    def __enter__(self) -> Mesh:
        _context.stack.append(("resource", self))
        return self

    def __exit__(self, *exc_info) -> None:
        _context.stack.pop()


class _Context(threading.local):
    def __init__(self):
        self.stack: list[tuple[str, Mesh]] = []
        self.global_mesh: Mesh | None = None


_context = _Context()


def _empty_mesh() -> Mesh:
    return Mesh(np.empty((), dtype=object), ())


class set_mesh:
    """Make ``mesh`` the current mesh: used at once, or as ``with set_mesh(mesh):`` to scope it.

    The current mesh is what ``device_put(x, P(...))``, ``shard_map`` without ``mesh=`` and
    sharding constraints given as bare PartitionSpecs use.
    """

    def __init__(self, mesh: Mesh):
        if not isinstance(mesh, Mesh):
            # NOTE: JAX raises ValueError here, so ported code that catches it keeps working.
            raise ValueError(  # noqa: TRY004
                f"set_mesh expects a Mesh, got {type(mesh).__name__}: {mesh!r}")
        self._previous = _context.global_mesh
        self.mesh = mesh
        _context.global_mesh = mesh

    def __enter__(self) -> Mesh:
        return self.mesh

    def __exit__(self, *exc_info) -> None:
        _context.global_mesh = self._previous


def get_mesh() -> Mesh:
    """The mesh set with ``set_mesh``, or an empty mesh when none is set."""
    return _context.global_mesh if _context.global_mesh is not None else _empty_mesh()


def global_mesh() -> Mesh | None:
    """The mesh ``set_mesh`` made current, or None (cheap: read on every jit dispatch)."""
    return _context.global_mesh


def current_mesh() -> Mesh | None:
    """The innermost mesh from ``set_mesh`` or ``with mesh:``, or None (for pjit and shard_map)."""
    if _context.global_mesh is not None:
        return _context.global_mesh
    return _context.stack[-1][1] if _context.stack else None


def resource_mesh() -> Mesh | None:
    """The innermost ``with mesh:`` mesh, then the ``set_mesh`` one (pjit's lookup order)."""
    if _context.stack:
        return _context.stack[-1][1]
    return _context.global_mesh


def _axis_shapes(axis_shapes) -> tuple[int, ...]:
    """make_mesh's ``axis_shapes`` as positive ints (integral floats such as 2.0 pass, as in JAX)."""
    if isinstance(axis_shapes, str) or not hasattr(axis_shapes, "__iter__"):
        raise TypeError(f"make_mesh axis_shapes must be a sequence of ints, got {type(axis_shapes).__name__}: "
                        f"{axis_shapes!r}")
    shapes = tuple(axis_shapes)
    for size in shapes:
        try:
            whole = int(size)
        except (TypeError, ValueError, OverflowError):
            whole = None
        if isinstance(size, bool) or whole is None or whole != size:
            raise ValueError(f"`axis_shapes` passed to `make_mesh` should be a sequence of ints. Got {shapes}")
        if whole < 1:
            raise ValueError(f"make_mesh axis_shapes must be positive, got {shapes}")
    if not shapes:
        # NOTE: JAX builds a one-device mesh without axes here; meshjit's Mesh without axes is the
        # empty mesh, so refuse rather than return a mesh of no devices.
        raise ValueError("make_mesh needs at least one axis; got axis_shapes=()")
    return tuple(int(size) for size in shapes)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices (of ``devices``, else of the job), in
    device order; ``axis_types`` (positional or keyword) defaults to Explicit, as in JAX 0.10."""
    axis_shapes = _axis_shapes(axis_shapes)
    pool = list(devices) if devices is not None else all_devices()
    needed = math.prod(axis_shapes)
    if needed > len(pool):
        raise ValueError(f"Number of devices {len(pool)} must be >= the product of mesh_shape {axis_shapes}: "
                         f"make_mesh axis_shapes {axis_shapes} need {needed} devices, but {len(pool)} are available")
    names = _normalise_axis_names(axis_names)
    if len(axis_shapes) != len(names):
        raise ValueError(f"make_mesh: axis_shapes {axis_shapes} and axis_names {names} differ in length")
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(names)
    grid = np.empty(needed, dtype=object)
    grid[:] = pool[:needed]
    return Mesh(grid.reshape(axis_shapes), names, axis_types=axis_types)
