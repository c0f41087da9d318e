"""Arrays unreduced over mesh axes (``NamedSharding(mesh, P('X', None, unreduced={'Y'}))``): every
device holds a partial value of its tile, and the array's value is the sum of the partials over
the unreduced axes (JAX's delayed reduction, made by ``device_put``).

Such an Array stores one block per device. ``device_put`` lays a value out as JAX 0.10.2 does:
an unreduced axis that already splits a dim of the source (after the target's own axes of that
dim) keeps splitting it, each device holding its piece of the tile with zeros around it; along
the other unreduced axes the devices at coordinate 0 hold the tile and the rest hold zeros.
"""

from __future__ import annotations

import numpy as np

from .array import Array
from .partition_spec import PartitionSpec
from .sharding import NamedSharding


def is_unreduced(sharding) -> bool:
    return isinstance(sharding, NamedSharding) and bool(sharding.spec.unreduced)


def _coordinates(mesh) -> dict:
    """Each device's coordinate along each mesh axis."""
    grid = np.asarray(mesh.devices)
    return {grid[position]: dict(zip(mesh.axis_names, position)) for position in np.ndindex(grid.shape)}


def _kept_axes(target: PartitionSpec, source: PartitionSpec | None, ndim: int) -> list[tuple[str, ...]]:
    """Per dim, the target's axes followed by the unreduced axes that split it in the source."""
    dims = []
    for dim in range(ndim):
        axes = target.axis_names_of(dim)
        split = source.axis_names_of(dim) if source is not None else ()
        kept = list(axes)
        if split[:len(axes)] == axes:
            for axis in split[len(axes):]:
                if axis not in target.unreduced:
                    break
                kept.append(axis)
        dims.append(tuple(kept))
    return dims


def put_unreduced(value: np.ndarray, source: PartitionSpec | None, target: NamedSharding, *,
                  weak_type: bool = False) -> Array:
    """``value`` laid out unreduced as ``target`` says, from a source laid out as ``source`` over
    the same mesh (None: replicated, or another mesh, or host data)."""
    target._check_rank(value.ndim)
    spec = target.spec
    kept = _kept_axes(spec, source, value.ndim)
    absorbed = {axis for axes in kept for axis in axes} - set(spec.used_axes())
    pieces = NamedSharding(target.mesh, PartitionSpec(*[axes or None for axes in kept])).devices_indices_map(value.shape)
    tiles = target.devices_indices_map(value.shape)
    coordinates = _coordinates(target.mesh)
    devices = target._addressable_device_assignment
    blocks = []
    for device in devices:
        tile = tiles[device]
        block = np.zeros(value[tile].shape, value.dtype)
        if not any(coordinates[device][axis] for axis in spec.unreduced - absorbed):
            piece = pieces[device]
            inside = tuple(slice(part.start - whole.start, part.stop - whole.start)
                           for part, whole in zip(_bounded(piece, value.shape), _bounded(tile, value.shape)))
            block[inside] = value[piece]
        blocks.append(block)
    return Array(value.shape, value.dtype, target, np.stack(blocks) if blocks else np.zeros((0,) + value.shape),
                 range(len(devices)), committed=True, weak_type=weak_type)


def _bounded(index, shape) -> tuple[slice, ...]:
    return tuple(slice(*part.indices(size)[:2]) for part, size in zip(index, shape))


def unreduced_value(array: Array) -> np.ndarray:
    """The sum of an unreduced Array's partials: each tile's blocks added over the devices at
    coordinate 0 of the axes that only replicate it."""
    sharding = array.sharding
    used = set(sharding.spec.used_axes()) | set(sharding.spec.unreduced)
    coordinates = _coordinates(sharding.mesh)
    value = np.zeros(array.shape, array.dtype)
    for device, index, _, block in array._shard_records():
        if block is None or any(coordinates[device][axis] for axis in sharding.mesh.axis_names if axis not in used):
            continue
        value[index] += array._blocks[block]
    value.flags.writeable = False
    return value
