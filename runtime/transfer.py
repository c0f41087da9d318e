"""Moving data onto devices: device_put and the make_array_from_* constructors."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import optree

from meshjit.ir.dtypes import canonicalize, kind_of

from .array import Array, index_key
from meshjit.ir.config import config
from .devices import CpuDevice, devices as all_devices
from .partition_spec import PartitionSpec
from .sharding import NamedSharding, Sharding, SingleDeviceSharding, spec_on_context_mesh
from .tile_assignment import tile_index
from .tiles import cut_tiles, local_blocks, local_tiles
from .unreduced import is_unreduced, put_unreduced

_SCALAR_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def to_numpy(value, argument: str = "value") -> tuple[np.ndarray, bool]:
    """``value`` as a numpy array with JAX's canonical dtype, and whether it is weakly typed."""
    if isinstance(value, Array):
        return np.asarray(value), value.weak_type
    scalar_type = type(value) if type(value) in _SCALAR_DTYPES else None
    x64 = config.read("jax_enable_x64")
    if scalar_type is int:
        _check_python_int(value, x64)
    if scalar_type is not None:
        array = np.asarray(value, dtype=_SCALAR_DTYPES[scalar_type])
        weak = scalar_type is not bool
    else:
        if not hasattr(value, "__array__") and not isinstance(value, (np.generic, list, tuple)):
            raise TypeError(
                f"{argument}: cannot interpret value of type {type(value).__name__} as an array; "
                f"expected a numpy array, a Python scalar or a meshjit.Array"
            )
        array = np.asarray(value)
        weak = False
    if kind_of(array.dtype) not in "biufc":
        raise TypeError(
            f"{argument}: dtype {array.dtype} is not a valid array type; only numeric and bool "
            f"arrays are supported"
        )
    return array.astype(canonicalize(array.dtype, x64=x64), copy=False), weak


def _check_python_int(value: int, x64: bool) -> None:
    """A weakly typed Python int must fit the default int type rather than wrap around."""
    dtype = np.dtype(np.int64 if x64 else np.int32)
    limits = np.iinfo(dtype)
    if not limits.min <= value <= limits.max:
        raise OverflowError(f"Python int {value} too large to convert to {dtype.name}")


def shard_numpy(value: np.ndarray, sharding: Sharding, *, committed: bool = True,
                weak_type: bool = False) -> Array:
    """Lay a host array out over ``sharding``: one block per distinct shard of this process."""
    layout = local_blocks(sharding, value.shape)  # checks the rank
    if layout is None:
        return _shard_numpy_by_index(value, sharding, committed=committed, weak_type=weak_type)
    tiles, block_tiles, block_of_device = layout
    sharding.shard_shape(value.shape)  # raises IndivisibleError unless the tiles divide the shape
    stacked = cut_tiles(value, tiles, block_tiles)
    stacked.flags.writeable = False
    return Array(value.shape, value.dtype, sharding, stacked, block_of_device,
                 committed=committed, weak_type=weak_type)


def _shard_numpy_by_index(value: np.ndarray, sharding: Sharding, *, committed: bool, weak_type: bool) -> Array:
    """shard_numpy for a sharding without a tile assignment (PmapSharding, one device holding
    everything): the index map says which slice each device holds."""
    indices = sharding.addressable_devices_indices_map(value.shape)
    blocks, block_of_key, block_of_device = [], {}, []
    for device in sharding._addressable_device_assignment:
        key = index_key(indices[device])
        if key not in block_of_key:
            block_of_key[key] = len(blocks)
            blocks.append(value[indices[device]])
        block_of_device.append(block_of_key[key])
    shard_shape = blocks[0].shape if blocks else sharding.shard_shape(value.shape)
    stacked = np.empty((len(blocks),) + shard_shape, value.dtype)
    for position, block in enumerate(blocks):
        stacked[position] = block
    stacked.flags.writeable = False
    return Array(value.shape, value.dtype, sharding, stacked, block_of_device,
                 committed=committed, weak_type=weak_type)


def _resolve_target(target, argument: str) -> Sharding | None:
    if target is None or isinstance(target, Sharding):
        return target
    if isinstance(target, CpuDevice):
        return SingleDeviceSharding(target)
    if isinstance(target, PartitionSpec):
        return spec_on_context_mesh(target, argument)
    # NOTE: JAX raises ValueError here, so ported code that catches it keeps working.
    raise ValueError(
        f"{argument} must be a device, a Sharding, a PartitionSpec or None, got "
        f"{type(target).__name__}: {target!r}"
    )


def _put_one(value, target, argument: str):
    if value is None:
        return None
    sharding = _resolve_target(target, argument)
    if sharding is None and isinstance(value, Array):
        return value
    if isinstance(sharding, NamedSharding) and sharding.has_unconstrained_dims:
        raise ValueError(f"{argument}: P.UNCONSTRAINED in {sharding.spec} only means something inside jit")
    if isinstance(value, Array) and value.committed and value.sharding == sharding:
        return value
    if isinstance(value, Array) and not value.is_fully_addressable:
        raise ValueError(
            f"{argument}: device_put cannot reshard an Array that spans several processes outside jit "
            f"(from {value.sharding} to {sharding}); reshard it inside jit, e.g. "
            f"jit(lambda x: x, out_shardings=sharding)(x)"
        )
    if is_unreduced(sharding):
        source = value.sharding.spec if isinstance(value, Array) and isinstance(value.sharding, NamedSharding) and (
            value.sharding.mesh == sharding.mesh and not value.sharding.spec.unreduced) else None
        array, weak = to_numpy(value, argument)
        return put_unreduced(array, source, sharding, weak_type=weak)
    array, weak = to_numpy(value, argument)
    if sharding is None:
        return shard_numpy(array, SingleDeviceSharding(all_devices()[0]), committed=False, weak_type=weak)
    return shard_numpy(array, sharding, weak_type=weak)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Put ``x`` (a pytree of arrays) on ``device``: a device, a Sharding, a PartitionSpec under
    ``set_mesh``, None (the default device, uncommitted), or a pytree prefix of these."""
    leaves, treedef = optree.tree_flatten(x, none_is_leaf=True)
    try:
        targets = optree.tree_broadcast_prefix(device, x, none_is_leaf=True,
                                               is_leaf=lambda node: isinstance(node, (CpuDevice, Sharding, PartitionSpec)))
    except ValueError as error:
        raise ValueError(
            f"device_put device specification must be a tree prefix of the corresponding value; "
            f"{error}"
        ) from None
    target_leaves = optree.tree_leaves(targets, none_is_leaf=True,
                                       is_leaf=lambda node: isinstance(node, (CpuDevice, Sharding, PartitionSpec)))
    results = [_put_one(leaf, target, f"device_put argument {position}")
               for position, (leaf, target) in enumerate(zip(leaves, target_leaves))]
    return optree.tree_unflatten(treedef, results)


def device_get(x):
    """``x`` (a pytree) with every Array (and anything else with ``__array__``) as a numpy array;
    other leaves, and traced values inside jit, come back unchanged (as ``jax.device_get``)."""
    return optree.tree_map(_get_one, x, namespace=_TREE_NAMESPACE)


# NOTE: the facade's pytree namespace (meshjit.tree_util.NAMESPACE), so user-registered nodes map.
_TREE_NAMESPACE = "meshjit"


def _get_one(leaf):
    if isinstance(leaf, Array):
        return np.asarray(leaf)  # the read-only global value; raises if deleted or not addressable
    if getattr(type(leaf), "is_traced_value", False):
        return leaf
    to_array = getattr(leaf, "__array__", None)
    return leaf if to_array is None else to_array()


def _check_global_shape(shape, argument: str = "shape") -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size >= 0 for size in shape):
        raise TypeError(f"{argument} must be a tuple of non-negative ints, got {shape!r}")
    return tuple(int(size) for size in shape)


def _check_sharding(sharding, argument: str = "sharding") -> Sharding:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{argument} must be a Sharding, got {type(sharding).__name__}: {sharding!r}")
    return sharding


def make_array_from_single_device_arrays(shape, sharding: Sharding, arrays: Sequence[Array], *, dtype=None) -> Array:
    """A global Array from one single-device Array per addressable device of ``sharding``."""
    shape = _check_global_shape(shape)
    sharding = _check_sharding(sharding)
    try:
        arrays = list(arrays)
    except TypeError:
        raise TypeError(f"make_array_from_single_device_arrays `arrays` must be a sequence of single-device "
                        f"Arrays, got {type(arrays).__name__}") from None
    expected_devices = sharding._addressable_device_assignment
    if len(arrays) != len(expected_devices):
        raise ValueError(
            f"Expected {len(expected_devices)} per-device arrays (this is how many devices are "
            f"addressable by the sharding), but got {len(arrays)}"
        )
    for position, array in enumerate(arrays):
        if not isinstance(array, Array):
            raise TypeError(
                f"Unsupported type for elements in `arrays`: {type(array).__name__} at position "
                f"{position}; expected single-device meshjit.Arrays, e.g. from meshjit.device_put"
            )
        if len(array.sharding.device_set) != 1:
            raise ValueError(f"arrays[{position}] lives on {len(array.sharding.device_set)} devices; expected one")
    by_device = _arrays_by_device(arrays, expected_devices)
    if not arrays:
        if dtype is None:
            raise ValueError(
                "If the Array has no addressable shards, `dtype` must be provided via the `dtype` "
                "argument to `meshjit.make_array_from_single_device_arrays`."
            )
        return Array(shape, dtype, sharding, np.empty((0,) + sharding.shard_shape(shape), dtype), ())
    return _assemble(shape, sharding, by_device, dtype)


def _arrays_by_device(arrays: list[Array], expected_devices) -> dict[CpuDevice, Array]:
    by_device = {}
    expected = frozenset(expected_devices)  # NOTE: a tuple's `in` would make this quadratic
    for position, array in enumerate(arrays):
        device = next(iter(array.sharding.device_set))
        if device in by_device:
            ids = [next(iter(a.sharding.device_set)).id for a in arrays]
            raise ValueError(
                f"When making an array from single-device arrays, the input arrays must be from "
                f"distinct devices, but got device IDs {ids}"
            )
        if device not in expected:
            raise ValueError(
                f"arrays[{position}] is on {device!r}, which is not an addressable device of the "
                f"sharding; expected one of {sorted(d.id for d in expected_devices)}"
            )
        by_device[device] = array
    return by_device


def _assemble(shape, sharding: Sharding, by_device: dict[CpuDevice, Array], dtype) -> Array:
    shard_shape = sharding.shard_shape(shape)
    first = next(iter(by_device.values()))
    for array in by_device.values():
        if array.shape != shard_shape:
            raise ValueError(
                f"Expected shard shape {shard_shape} doesn't match the single device array shape "
                f"{array.shape}. Shape of Array is {first.dtype.name}{list(shape)} with sharding {sharding}"
            )
        if array.dtype != first.dtype:
            raise ValueError(
                f"Input buffers to `Array` must have matching dtypes. Got {array.dtype}, expected "
                f"{first.dtype} for buffer on {next(iter(array.sharding.device_set))!r}"
            )
    if dtype is not None and np.dtype(dtype) != first.dtype:
        raise ValueError(
            f"If `dtype` is provided to `meshjit.make_array_from_single_device_arrays`, it must "
            f"match the dtype of the addressable shards. Got dtype={np.dtype(dtype)} and shard "
            f"dtype={first.dtype}`."
        )
    blocks, block_of_device, blocks_of_shard = [], [], {}
    for device, shard in zip(sharding._addressable_device_assignment, _shard_numbers(sharding, shape)):
        data = np.asarray(by_device[device])
        # NOTE: equal replicas of one shard share a block; a user may legally give differing
        # replicas. Only the shard's own blocks are compared, so this is linear in the devices.
        candidates = blocks_of_shard.setdefault(shard, [])
        match = next((number for number in candidates
                      if blocks[number] is data or np.array_equal(blocks[number], data)), None)
        if match is None:
            match = len(blocks)
            blocks.append(data)
            candidates.append(match)
        block_of_device.append(match)
    stacked = np.stack(blocks) if blocks else np.empty((0,) + shard_shape, first.dtype)
    stacked.flags.writeable = False
    # NOTE: as in JAX, an array assembled from shards is never weakly typed.
    return Array(shape, first.dtype, sharding, stacked, block_of_device)


def _shard_numbers(sharding: Sharding, shape) -> tuple:
    """Per addressable device of ``sharding``, a key equal for devices holding the same index."""
    layout = local_blocks(sharding, shape)
    if layout is not None:
        return layout[2]
    indices = sharding.addressable_devices_indices_map(shape)
    return tuple(index_key(indices[device]) for device in sharding._addressable_device_assignment)


def make_array_from_callback(shape, sharding: Sharding, data_callback: Callable, dtype=None) -> Array:
    """A global Array whose shard for each index comes from ``data_callback(index)``, called
    once per distinct index this process holds."""
    shape = _check_global_shape(shape)
    sharding = _check_sharding(sharding)
    layout = local_blocks(sharding, shape)
    if layout is None:
        return _make_array_from_callback_by_index(shape, sharding, data_callback, dtype)
    tiles, block_tiles, block_of_device = layout
    shard_shape = sharding.shard_shape(shape)
    # NOTE: blocks are numbered in order of first use, so a block's first device is found so
    _, first_use = np.unique(np.asarray(block_of_device, np.intp), return_index=True)
    devices = sharding._addressable_device_assignment
    blocks = [_callback_block(data_callback, tile_index(tiles, shape, int(tile)), dtype, shape, shard_shape, sharding)
              for tile in block_tiles]
    if not blocks:
        if dtype is None:
            raise ValueError("make_array_from_callback: no addressable devices, so `dtype` must be given")
        return Array(shape, dtype, sharding, np.empty((0,) + shard_shape, dtype), ())
    for block, position in zip(blocks, first_use):
        if block.dtype != blocks[0].dtype:
            raise ValueError(
                f"Input buffers to `Array` must have matching dtypes. Got {block.dtype}, expected "
                f"{blocks[0].dtype} for buffer on {devices[position]!r}"
            )
    stacked = np.stack(blocks)
    stacked.flags.writeable = False
    # NOTE: as in JAX, an array assembled from shards is never weakly typed.
    return Array(shape, blocks[0].dtype, sharding, stacked, block_of_device)


def _callback_block(data_callback: Callable, index, dtype, shape, shard_shape, sharding: Sharding) -> np.ndarray:
    data, _ = to_numpy(data_callback(index), "data_callback result")
    if dtype is not None and data.dtype != canonicalize(dtype, x64=config.read("jax_enable_x64")):
        raise ValueError(
            f"make_array_from_callback: dtype={np.dtype(dtype).name} was given, but data_callback "
            f"returned {data.dtype.name} data for index {index}; they must match (as in JAX)"
        )
    if data.shape != shard_shape:
        raise ValueError(
            f"data_callback returned shape {data.shape} for index {index}, but the "
            f"shard shape of {shape} under {sharding} is {shard_shape}"
        )
    return data


def _make_array_from_callback_by_index(shape, sharding: Sharding, data_callback: Callable, dtype) -> Array:
    """make_array_from_callback for a sharding without a tile assignment (PmapSharding, one
    device holding everything): the index map says which index each device holds."""
    indices = sharding.addressable_devices_indices_map(shape)
    shard_shape = sharding.shard_shape(shape)
    by_key: dict[tuple, Array] = {}
    by_device = {}
    for device in sharding._addressable_device_assignment:
        key = index_key(indices[device])
        if key not in by_key:
            data = _callback_block(data_callback, indices[device], dtype, shape, shard_shape, sharding)
            by_key[key] = shard_numpy(data, SingleDeviceSharding(device))
        by_device[device] = by_key[key]
    if not by_device:
        if dtype is None:
            raise ValueError("make_array_from_callback: no addressable devices, so `dtype` must be given")
        return Array(shape, dtype, sharding, np.empty((0,) + shard_shape, dtype), ())
    return _assemble(shape, sharding, by_device, None)


def make_array_from_process_local_data(sharding: Sharding, local_data, global_shape=None) -> Array:
    """A global Array from the part of the data this process holds.

    ``local_data`` covers the index range of this process's devices in every dim; the global
    shape is inferred from how many distinct shards of each dim the process holds, unless given.
    """
    sharding = _check_sharding(sharding)
    local, _ = to_numpy(local_data, "local_data")
    probe_shape = tuple(size * sharding.num_devices for size in local.shape)
    coordinates = _local_tile_coordinates(sharding, probe_shape)
    spans = _local_spans(sharding, probe_shape) if coordinates is None else [
        (max(len(np.unique(held)), 1), count) for count, held in zip(*coordinates)]
    if global_shape is None:
        global_shape = tuple(size * total // held for size, (held, total) in zip(local.shape, spans))
    global_shape = _check_global_shape(global_shape, "global_shape")
    if len(global_shape) != local.ndim:
        raise ValueError(f"global_shape {global_shape} and local_data of shape {local.shape} differ in rank")
    if coordinates is None:
        offsets = _local_offsets(sharding, global_shape)
    else:
        sharding.shard_shape(global_shape)  # raises IndivisibleError unless the tiles divide the shape
        offsets = [int(held.min()) * (size // count) if held.size else 0
                   for size, count, held in zip(global_shape, *coordinates)]

    def callback(index):
        relative = tuple(slice((entry.start or 0) - offset, (entry.stop if entry.stop is not None else size) - offset)
                         for entry, offset, size in zip(index, offsets, global_shape))
        piece = local[relative]
        if piece.shape != tuple(s.stop - s.start for s in relative):
            raise ValueError(
                f"local_data of shape {local.shape} does not cover this process's part {index} of "
                f"the global shape {global_shape}"
            )
        return piece
    return make_array_from_callback(global_shape, sharding, callback, dtype=local.dtype)


def _local_tile_coordinates(sharding: Sharding, probe_shape):
    """(tiles per dim, per dim the tile coordinate of each of this process's devices), or None
    where the tile assignment cannot tell (the index map then does)."""
    local = local_tiles(sharding, probe_shape)
    if local is None:
        return None
    tiles, tile_of_device = local
    if not tiles:
        return (1,) * len(probe_shape), [np.zeros(len(tile_of_device), np.intp)] * len(probe_shape)
    return tiles, list(np.unravel_index(tile_of_device, tiles))


def _local_offsets(sharding: Sharding, global_shape) -> list[int]:
    """Per dim, where this process's part starts (by the per-device index map)."""
    indices = sharding.devices_indices_map(global_shape)
    local_indices = [indices[device] for device in sharding._addressable_device_assignment]
    return [min((index[dim].start or 0) for index in local_indices) if local_indices else 0
            for dim in range(len(global_shape))]


def _local_spans(sharding: Sharding, probe_shape) -> list[tuple[int, int]]:
    """Per dim: how many distinct shard positions this process holds, and how many exist."""
    indices = sharding.devices_indices_map(probe_shape)
    spans = []
    for dim in range(len(probe_shape)):
        every = {index_key(index)[dim] for index in indices.values()}
        local = {index_key(indices[device])[dim] for device in sharding._addressable_device_assignment}
        spans.append((max(len(local), 1), len(every)))
    return spans


def block_until_ready(x):
    """Wait for every Array in the pytree ``x`` (meshjit executes eagerly, so this returns at once)."""
    for leaf in optree.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
