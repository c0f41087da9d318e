"""GSPMD's ``mhlo.sharding`` strings (``{devices=[2,1,4]<=[8] last_tile_dim_replicate}``) as
shardings over a named mesh. The strings name no axes, so the mesh is inferred: its axes are the
finest split of the device ids that every sharding's tile assignment respects, named x, y, z, ...
(JAX's own names are gone from this form)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..sharding import AxisRef, DimSharding, MeshAttr, TensorSharding

MESH_NAME = "mesh"
_NAMES = ("x", "y", "z", "w")
_IOTA = re.compile(r"devices=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_LISTED = re.compile(r"devices=\[([\d,]+)\]([\d,]+)")


class GspmdError(ValueError):
    """A sharding string this importer cannot read or express on a named mesh."""


@dataclass(frozen=True)
class Tiled:
    """A tiled sharding: tile counts per dim (a trailing replication dim included when
    ``replicate_last``), the reshape dims and permutation of its iota form (``perm`` None for a
    listed assignment), and the device array."""

    tiles: tuple[int, ...]
    reshape: tuple[int, ...]
    perm: tuple[int, ...] | None
    devices: np.ndarray
    replicate_last: bool


def parse_sharding(text: str):
    """``"replicated"``, ``"manual"`` or a Tiled for one mhlo.sharding string."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise GspmdError(f"cannot read the sharding {text!r}")
    body = body[1:-1].strip()
    if body == "replicated":
        return "replicated"
    if body == "manual":
        return "manual"
    if "last_tile_dims" in body or body.startswith("maximal") or body.startswith("{"):
        raise GspmdError(f"the sharding {text!r} is not supported (maximal, tuple and partially manual "
                         f"shardings are not)")
    replicate_last = "last_tile_dim_replicate" in body
    iota = _IOTA.search(body)
    if iota:
        tiles = _ints(iota.group(1))
        reshape = _ints(iota.group(2))
        perm = _ints(iota.group(3)) if iota.group(3) else tuple(range(len(reshape)))
        devices = np.arange(math.prod(reshape)).reshape(reshape).transpose(perm).reshape(tiles)
        return Tiled(tiles, reshape, perm, devices, replicate_last)
    listed = _LISTED.search(body)
    if listed:
        tiles = _ints(listed.group(1))
        devices = np.array(_ints(listed.group(2))).reshape(tiles)
        return Tiled(tiles, (devices.size,), None, devices, replicate_last)
    raise GspmdError(f"cannot read the sharding {text!r}")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def infer_mesh(shardings: list[Tiled], devices: int) -> MeshAttr:
    """The coarsest mesh whose axes every tile assignment's boundaries fall between."""
    cuts = {1, devices}
    for tiled in shardings:
        cuts.update(_prefix_products(tiled.reshape))
        if tiled.perm is None or tiled.perm == tuple(sorted(tiled.perm)):
            cuts.update(_prefix_products(tiled.tiles))
    ordered = sorted(cut for cut in cuts if devices % cut == 0)
    sizes = []
    for smaller, larger in zip(ordered, ordered[1:]):
        if larger % smaller:
            raise GspmdError(f"the shardings split {devices} devices in ways no mesh holds ({ordered})")
        sizes.append(larger // smaller)
    names = _NAMES if len(sizes) <= len(_NAMES) else tuple(f"a{index}" for index in range(len(sizes)))
    return MeshAttr(tuple(zip(names, sizes)))


def _prefix_products(sizes) -> set[int]:
    products, running = set(), 1
    for size in sizes:
        running *= size
        products.add(running)
    return products


def to_tensor_sharding(tiled: Tiled, mesh: MeshAttr, rank: int) -> TensorSharding:
    """``tiled`` over ``mesh``: each tile dim takes the mesh axes its devices vary along."""
    axes = _axis_order(tiled, mesh)
    dims, position = [], 0
    data_tiles = tiled.tiles[:-1] if tiled.replicate_last else tiled.tiles
    if len(data_tiles) != rank:
        raise GspmdError(f"the sharding has {len(data_tiles)} tile dims for a rank-{rank} tensor")
    sizes = dict(mesh.axes)
    for count in data_tiles:
        taken, product = [], 1
        while product < count and position < len(axes):
            taken.append(axes[position])
            product *= sizes[axes[position]]
            position += 1
        if product != count:
            raise GspmdError(f"tile count {count} does not fall on the inferred mesh's axes {mesh.axes}")
        dims.append(DimSharding(tuple(AxisRef(name) for name in taken), True))
    sharding = TensorSharding(MESH_NAME, tuple(dims))
    if not np.array_equal(_devices_of(sharding, mesh, tiled), tiled.devices):
        raise GspmdError("the sharding's device order is not one the inferred mesh can express")
    return sharding


def _axis_order(tiled: Tiled, mesh: MeshAttr) -> list[str]:
    """The mesh axes in the order the tile assignment walks them (its transposed iota order)."""
    names = list(mesh.axis_names)
    sizes = [size for _, size in mesh.axes]
    groups, index = [], 0
    for size in tiled.reshape:
        group, product = [], 1
        while product < size:
            group.append(names[index])
            product *= sizes[index]
            index += 1
        groups.append(group)
    perm = tiled.perm if tiled.perm is not None else range(len(groups))
    return [name for position in perm for name in groups[position]]


def _devices_of(sharding: TensorSharding, mesh: MeshAttr, tiled: Tiled) -> np.ndarray:
    """The device array the named sharding gives, in the tiled form's shape, for checking."""
    grid = np.arange(mesh.size).reshape([size for _, size in mesh.axes])
    order = [axis.name for dim in sharding.dims for axis in dim.axes]
    rest = [name for name in mesh.axis_names if name not in order]
    permutation = [mesh.axis_names.index(name) for name in order + rest]
    return grid.transpose(permutation).reshape(tiled.tiles)


def replicated(rank: int) -> TensorSharding:
    return TensorSharding(MESH_NAME, tuple(DimSharding((), True) for _ in range(rank)))
