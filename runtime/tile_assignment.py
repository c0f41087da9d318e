"""GSPMD's tile-assignment form of a sharding (XLA's HloSharding), with its text syntax.

Every array sharding reduces to this form: a device-id array with one dim per tensor dim
(tiles per dim) plus an optional trailing replication dim. Index maps, equivalence and the
``{devices=[2,1,4]<=[8] last_tile_dim_replicate}`` strings all come from it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TileAssignment:
    """``kind`` is "replicated", "maximal" (one device holds everything) or "tiled".

    For tiled shardings ``tiles`` gives the shard count per tensor dim and ``device_ids`` the
    flattened id array of shape ``tiles + (replication,)``.
    """

    kind: str
    tiles: tuple[int, ...] = ()
    replication: int = 1
    device_ids: tuple[int, ...] = ()

    @staticmethod
    def replicated() -> TileAssignment:
        return TileAssignment("replicated")

    @staticmethod
    def maximal(device_id: int) -> TileAssignment:
        return TileAssignment("maximal", device_ids=(device_id,))

    @staticmethod
    def tiled(id_array: np.ndarray, *, replicate_last: bool = False) -> TileAssignment:
        """From an id array shaped like the tiles (plus a replication dim when ``replicate_last``)."""
        id_array = np.asarray(id_array)
        tiles = id_array.shape[:-1] if replicate_last else id_array.shape
        replication = id_array.shape[-1] if replicate_last else 1
        return TileAssignment("tiled", tuple(int(t) for t in tiles), int(replication),
                              tuple(id_array.reshape(-1).tolist()))

    def normalised(self) -> TileAssignment:
        """Tiled with one tile per dim is replication; replication of one is no replication."""
        if self.kind == "tiled" and all(tile == 1 for tile in self.tiles):
            return TileAssignment.replicated()
        return self

    @functools.cached_property
    def id_array(self) -> np.ndarray:
        """``device_ids`` shaped ``tiles + (replication,)`` (read-only: computed once, shared)."""
        ids = np.array(self.device_ids, dtype=int).reshape(self.tiles + (self.replication,))
        ids.flags.writeable = False
        return ids

    def indices(self, global_shape, device_ids) -> dict[int, tuple]:
        """Map each device id (of ``device_ids`` for replicated shardings) to its index tuple."""
        full = tuple(slice(None) for _ in global_shape)
        if self.kind == "replicated":
            return {device_id: full for device_id in device_ids}
        if self.kind == "maximal":
            return {self.device_ids[0]: full}
        if len(self.tiles) != len(global_shape):
            raise ValueError(
                f"tile assignment {self} has {len(self.tiles)} tiled dims but the array has rank "
                f"{len(global_shape)}"
            )
        # NOTE: one slice per (dim, coordinate), shared by every device with that coordinate
        per_dim = [[_dim_slice(coordinate, tiles, size) for coordinate in range(tiles)]
                   for tiles, size in zip(self.tiles, global_shape)]
        ids = self.id_array
        result = {}
        for position, device_id in zip(np.ndindex(ids.shape), ids.flat):
            result[int(device_id)] = tuple(slices[coordinate] for slices, coordinate in zip(per_dim, position))
        return result

    def __str__(self) -> str:
        if self.kind == "replicated":
            return "{replicated}"
        if self.kind == "maximal":
            return f"{{maximal device={self.device_ids[0]}}}"
        dims = list(self.tiles) + ([self.replication] if self.replication > 1 else [])
        ids = ",".join(str(device_id) for device_id in self.device_ids)
        if self.device_ids == tuple(range(len(self.device_ids))):
            ids = f"<=[{len(self.device_ids)}]"
        suffix = " last_tile_dim_replicate" if self.replication > 1 else ""
        return f"{{devices=[{','.join(str(d) for d in dims)}]{ids}{suffix}}}"


def tile_index(tiles, global_shape, tile_number: int) -> tuple:
    """The index (as ``indices`` gives it) of the tile numbered ``tile_number``, row-major over
    ``tiles`` per dim, of an array of ``global_shape``; no tiles: the whole array."""
    if not tiles:
        return tuple(slice(None) for _ in global_shape)
    coordinates = np.unravel_index(tile_number, tiles)
    return tuple(_dim_slice(int(coordinate), count, size)
                 for coordinate, count, size in zip(coordinates, tiles, global_shape))


def _dim_slice(coordinate: int, tiles: int, size: int) -> slice:
    if tiles == 1:
        return slice(None)
    step = size // tiles
    return slice(coordinate * step, (coordinate + 1) * step)


_TILED = re.compile(
    r"^\{devices=\[(?P<dims>[0-9,]+)\]\s*(?P<ids>[0-9,]+|<=\[(?P<iota>[0-9,]+)\](?:T\((?P<perm>[0-9,]+)\))?)"
    r"(?P<replicate>\s+last_tile_dim_replicate)?\}$"
)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def parse_tile_assignment(text: str) -> TileAssignment:
    """Parse XLA's sharding text: ``{replicated}``, ``{maximal device=3}``, or a tiled form with
    explicit ids or an iota ``<=[4,2]T(1,0)``, optionally ``last_tile_dim_replicate``."""
    stripped = text.strip()
    if stripped == "{replicated}":
        return TileAssignment.replicated()
    maximal = re.fullmatch(r"\{maximal device=(\d+)\}", stripped)
    if maximal:
        return TileAssignment.maximal(int(maximal.group(1)))
    match = _TILED.match(stripped)
    if not match:
        raise ValueError(f"cannot parse GSPMD sharding {text!r}; expected e.g. '{{devices=[2,4]<=[8]}}'")
    dims = _ints(match.group("dims"))
    count = int(np.prod(dims))
    if match.group("iota") is not None:
        iota_shape = _ints(match.group("iota"))
        ids = np.arange(int(np.prod(iota_shape))).reshape(iota_shape)
        if match.group("perm"):
            ids = ids.transpose(_ints(match.group("perm")))
        ids = ids.reshape(-1)
    else:
        ids = np.array(_ints(match.group("ids")))
    if ids.size != count or sorted(ids.tolist()) != list(range(count)):
        raise ValueError(f"GSPMD sharding {text!r}: expected a permutation of {count} device ids")
    return TileAssignment.tiled(ids.reshape(dims), replicate_last=bool(match.group("replicate")))
