"""Laying a global numpy array out as per-device shards of an IR sharding, and back.

Shards are stacked on a leading device axis in mesh order; a dim that does not divide evenly
gets shards of ``ceil(n / k)`` whose tail is padding (zeros here).
"""

from __future__ import annotations

import numpy as np

from .sharding import MeshAttr, TensorSharding
from .dtypes import kind_of


def _shard_slices(sharding: TensorSharding, mesh: MeshAttr, position: int, shape) -> tuple[slice, ...]:
    coordinates = mesh.coordinates(position)
    index = sharding.shard_index(mesh, coordinates)
    local = sharding.local_shape(shape, mesh)
    return tuple(slice(min(i * size, dim), min((i + 1) * size, dim)) for i, size, dim in zip(index, local, shape))


def shard_array(array: np.ndarray, sharding: TensorSharding | None, mesh: MeshAttr) -> np.ndarray:
    """The stacked per-device shards ``(mesh.size, *local_shape)`` of a global array."""
    array = np.asarray(array)
    if sharding is None:
        return np.broadcast_to(array, (mesh.size,) + array.shape).copy()
    local = sharding.local_shape(array.shape, mesh)
    stacked = np.zeros((mesh.size,) + tuple(local), array.dtype)
    for position in range(mesh.size):
        piece = array[_shard_slices(sharding, mesh, position, array.shape)]
        stacked[(position,) + tuple(slice(0, size) for size in piece.shape)] = piece
    return stacked


def unshard_array(stacked: np.ndarray, sharding: TensorSharding | None, mesh: MeshAttr, shape) -> np.ndarray:
    """The global array from stacked shards; replicas must agree (checked), padding is dropped."""
    shape = tuple(shape)
    if sharding is None:
        return stacked[0]
    result = np.zeros(shape, stacked.dtype)
    written = np.zeros(shape, bool)
    for position in range(mesh.size):
        slices = _shard_slices(sharding, mesh, position, shape)
        piece = stacked[position][tuple(slice(0, s.stop - s.start) for s in slices)]
        region = result[slices]
        already = written[slices]
        if already.any() and not _same(region[already], piece[already]):
            raise ValueError(f"device {position} holds a replica that differs from another device's copy")
        result[slices] = piece
        written[slices] = True
    return result


def _same(first: np.ndarray, second: np.ndarray) -> bool:
    return bool(np.array_equal(first, second, equal_nan=kind_of(first.dtype) == "f"))
