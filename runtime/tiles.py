"""Tiles as arrays: which tile each device of a sharding holds, how an Array stores this
process's tiles, and cutting a global array into tiles or pasting them back through one
reshaped view, instead of a slice per device (issue 21: 1024 devices cost numpy calls).

Tiles are numbered row-major over the tiles per dim of the sharding's tile assignment;
replicated layouts have no tiles and every device holds tile 0. Shardings without a tile
assignment (PmapSharding, one device holding everything) and empty arrays (the tiles of a
size-0 dim share its one index) get None: their callers use the per-device index map.
"""

from __future__ import annotations

import numpy as np

from .devices import process_index


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def tile_numbers(sharding, ndim: int):
    """(tiles per dim, the tile each device of ``sharding._device_assignment`` holds), or
    None where there is no tile assignment to read it from; computed once per rank."""
    cache = sharding.__dict__.setdefault("_tile_numbers_cache", {})
    if ndim in cache:
        return cache[ndim]
    try:
        tiles = sharding._tile_assignment(ndim).normalised()
    except TypeError:
        tiles = None
    if tiles is None or tiles.kind == "maximal":
        numbered = None
    elif tiles.kind == "replicated":
        numbered = (), _read_only(np.zeros(sharding.num_devices, np.int64))
    else:
        positions = tiles.id_array.reshape(-1, tiles.replication)
        tile_of_position = np.empty(sharding.num_devices, np.int64)
        tile_of_position[positions] = np.arange(positions.shape[0])[:, None]
        numbered = tiles.tiles, _read_only(tile_of_position)
    cache[ndim] = numbered
    return numbered


def local_tiles(sharding, global_shape):
    """(tiles per dim, the tile each of this process's devices holds, in layout order) for an
    array of ``global_shape``, or None (see the module docstring)."""
    if 0 in global_shape:
        return None
    numbered = tile_numbers(sharding, len(global_shape))
    if numbered is None:
        return None
    tiles, tile_of_position = numbered
    _, positions, _ = sharding._addressable()
    return tiles, tile_of_position if positions is None else tile_of_position[positions]


def local_blocks(sharding, global_shape):
    """How an Array of ``global_shape`` laid out from host data stores this process's shards:
    (tiles per dim, the tile of each distinct block in order of first use, the block of each
    addressable device), or None as ``local_tiles``. Replicas share a block; blocks come in
    the order their first device comes."""
    key = (len(global_shape), process_index())
    cache = sharding.__dict__.setdefault("_local_blocks_cache", {})
    if 0 not in global_shape and key in cache:
        return cache[key]
    local = local_tiles(sharding, global_shape)
    if local is None:
        return None
    tiles, tile_of_device = local
    distinct, first, inverse = np.unique(tile_of_device, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    cache[key] = (tiles, _read_only(distinct[order]), tuple(rank[inverse.reshape(-1)].tolist()))
    return cache[key]


def tile_view(value: np.ndarray, tiles) -> np.ndarray:
    """``value`` with the tile coordinates first (one dim per tiled dim) and the offsets inside
    a tile after: dim d of size tiles[d] * s becomes (tile, offset). A view when ``value`` is
    contiguous."""
    rank = len(tiles)
    split = value.reshape([size for count, whole in zip(tiles, value.shape) for size in (count, whole // count)])
    return split.transpose(list(range(0, 2 * rank, 2)) + list(range(1, 2 * rank, 2)))


def cut_tiles(value: np.ndarray, tiles, numbers: np.ndarray) -> np.ndarray:
    """The tiles ``numbers`` of ``value`` stacked (no tiles: copies of the whole value): one
    reshape and one gather. The result is a new C-contiguous array."""
    if not tiles:
        stacked = np.empty((len(numbers),) + value.shape, value.dtype)
        stacked[...] = value
        return stacked
    return np.ascontiguousarray(tile_view(value, tiles)[np.unravel_index(numbers, tiles)])


# NOTE: up to this many tiles, each is written on its own: a copy of a block into its slab of
# the value. More, and one scatter through the tiled view writes them all (no Python loop over
# devices), which costs a gather of the blocks first: a 4096^2 float32 value from 8 blocks of
# rows takes 10.9 ms one by one against 22.2 ms gathered and scattered (and up to 90 ms in a
# fresh process, where both copies fault their pages in).
TILES_ONE_BY_ONE = 64


def put_tiles(value: np.ndarray, tiles, numbers: np.ndarray, blocks: np.ndarray, block_ids: np.ndarray) -> None:
    """Write block ``block_ids[i]`` of ``blocks`` into tile ``numbers[i]`` of the contiguous
    ``value``."""
    if not tiles:
        value[...] = blocks[block_ids[0]]
        return
    view = tile_view(value, tiles)
    coordinates = np.unravel_index(numbers, tiles)
    if len(numbers) <= TILES_ONE_BY_ONE:
        for index, block in enumerate(block_ids.tolist()):
            view[tuple(int(axis[index]) for axis in coordinates)] = blocks[block]
        return
    view[coordinates] = blocks[block_ids]
