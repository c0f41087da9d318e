"""A reshard that needs one collective_permute of target-sized tiles, when the target only cuts
finer what each device holds: every target tile lies inside a source shard.

Each device slices, from its own shard, the tile one other device needs and sends it there
(``P('x', None)`` to ``P('y', 'x')`` on a 2x4 mesh: 16x64 tiles instead of all-to-alling whole
32x128 shards). Who sends to whom is a matching of devices to the holders of the tiles they
need, keeping a device's own tile where it holds it; a device sends at most one tile, so the
plan is offered only when every device can be served in one round. Tiles start at offsets that
depend on the device, read from a constant table at the device's index.
"""

from __future__ import annotations

import math

import numpy as np

from meshjit.ir import AxisRef, SymbolRef, TensorSharding

from .spmd_builder import Local, SpmdBuilder


def tile_permute(builder: SpmdBuilder, local: Local, target: TensorSharding, reason: str) -> Local | None:
    """``local`` laid out as ``target`` by local slices and one collective_permute, or None
    when the target's tiles do not each lie in one source shard, or no one-round plan serves
    every device."""
    source_axes = [list(dim.axes) for dim in local.sharding.dims]
    target_axes = [list(dim.axes) for dim in target.dims]
    every = [axis for axes in source_axes + target_axes for axis in axes]
    if local.unreduced or target.unreduced or not every or any(axis.is_sub_axis for axis in every):
        return None
    mesh = builder.mesh
    held = [math.prod(mesh.axis_size(axis.name) for axis in axes) for axes in source_axes]
    cut = [math.prod(mesh.axis_size(axis.name) for axis in axes) for axes in target_axes]
    if any(want % have or size % want for have, want, size in zip(held, cut, local.global_shape)):
        return None
    names = [name for name in mesh.axis_names if name in {axis.name for axis in every}]
    holds = _block_indices(mesh, names, source_axes)
    needs = _block_indices(mesh, names, target_axes)
    ratios = np.array([want // have for have, want in zip(held, cut)])
    sources = _match(holds, needs // ratios)
    if sources is None or all(source == device for device, source in enumerate(sources)):
        return None
    tile = [size // want for size, want in zip(local.global_shape, cut)]
    offsets = np.zeros((len(sources), len(tile)), np.int64)
    for device, source in enumerate(sources):
        offsets[source] = (needs[device] % ratios) * tile
    starts = _device_row(builder, names, offsets)
    value = builder.emit1("dynamic_slice", [local.value, *starts], {"slice_sizes": tuple(tile)})
    pairs = tuple((int(source), device) for device, source in enumerate(sources))
    value = builder.emit1("collective_permute", [value], {"mesh": SymbolRef(builder.mesh_name),
                                                          "axes": tuple(names), "pairs": pairs}, reason=reason)
    sharding = TensorSharding(target.mesh_name, target.dims, target.replicated)
    return Local(value, sharding, local.global_shape)


def _block_indices(mesh, names, dims_axes) -> np.ndarray:
    """[devices, rank]: each device's (over ``names``, mesh order) block number along every dim."""
    sizes = [mesh.axis_size(name) for name in names]
    coordinates = dict(zip(names, np.indices(sizes).reshape(len(names), -1)))
    blocks = np.zeros((math.prod(sizes), len(dims_axes)), np.int64)
    for dim, axes in enumerate(dims_axes):
        for axis in axes:
            blocks[:, dim] = blocks[:, dim] * mesh.axis_size(axis.name) + coordinates[axis.name]
    return blocks


def _match(holds: np.ndarray, wanted: np.ndarray) -> list[int] | None:
    """For every device, a distinct device whose source blocks are ``wanted[device]``: itself
    where it holds them, the others matched among the remaining devices by augmenting paths (if
    that fails, all of them afresh); None when some device cannot be served."""
    count = len(holds)
    holders = [[other for other in range(count) if (holds[other] == wanted[device]).all()] for device in range(count)]
    keeping = [device for device in range(count) if device in holders[device]]
    return _matching(holders, keeping) or _matching(holders, [])


def _matching(holders, fixed) -> list[int] | None:
    """A matching of every device to one of its ``holders``, each ``fixed`` device to itself."""
    count = len(holders)
    sender_of: list[int | None] = [None] * count
    receiver_of: list[int | None] = [None] * count
    for device in fixed:
        sender_of[device] = receiver_of[device] = device

    def serve(device: int, seen: set[int]) -> bool:
        for source in holders[device]:
            if source in seen or source in fixed:
                continue
            seen.add(source)
            if receiver_of[source] is None or serve(receiver_of[source], seen):
                receiver_of[source], sender_of[device] = device, source
                return True
        return False

    for device in sorted(set(range(count)) - set(fixed), key=lambda device: len(holders[device])):
        if not serve(device, set()):
            return None
    return sender_of


def _device_row(builder: SpmdBuilder, names, table: np.ndarray) -> list:
    """The scalars of ``table``'s row at this device's index over ``names`` (i32)."""
    position = builder.shard_position([AxisRef(name) for name in names])
    rows = builder.constant(table, "i32")
    zero = builder.scalar(0, "i32")
    row = builder.emit1("dynamic_slice", [rows, position, zero], {"slice_sizes": (1, table.shape[1])})
    scalars = []
    for dim in range(table.shape[1]):
        cell = builder.emit1("slice", [row], {"start_indices": (0, dim), "limit_indices": (1, dim + 1),
                                              "strides": (1, 1)})
        scalars.append(builder.emit1("reshape", [cell], {"new_sizes": ()}))
    return scalars

