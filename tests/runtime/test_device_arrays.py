"""The array forms of the per-device questions (issue 21) against their per-device definitions:
which blocks an Array stores and which device reads which (``shard_numpy``), which block each
leading position of a plan buffer reads (``executor._rows``), equivalence, addressability and
the process layout, on many shardings: non-iota device orders, partial replication, device
subsets, every Sharding class, and as process 0 of a two-process job."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import meshjit
from meshjit.runtime import executor
from meshjit.runtime.array import index_key
from meshjit.runtime.devices import is_addressable
from meshjit.runtime.process_layout import ProcessLayout, process_layout
from meshjit.runtime.transfer import shard_numpy
from meshjit.sharding import GSPMDSharding, Mesh, NamedSharding, PmapSharding, PositionalSharding
from meshjit.sharding import PartitionSpec as P
from meshjit.sharding import SingleDeviceSharding

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

# mesh shape, axis names, a permutation of the devices (None: iota), specs for a rank-2 value
MESHES = [
    ((8,), ("x",), None, [P(), P("x"), P(None, "x")]),
    ((2, 4), ("x", "y"), None, [P("x", "y"), P("y", "x"), P("x"), P(None, "y"), P(("x", "y")), P(("y", "x"))]),
    ((2, 4), ("x", "y"), [5, 2, 7, 0, 3, 6, 1, 4], [P("x", "y"), P("y"), P(None, ("y", "x")), P()]),
    ((4, 2), ("x", "y"), [7, 6, 5, 4, 3, 2, 1, 0], [P("x"), P("y", "x"), P(None, "y")]),
    ((2, 2, 2), ("x", "y", "z"), [1, 0, 3, 2, 5, 4, 7, 6], [P("x", "z"), P(("z", "x")), P("y"), P(None, ("x", "y"))]),
    ((2, 2), ("x", "y"), [6, 4, 7, 5], [P("x"), P("y", "x"), P()]),
    ((1, 4), ("x", "y"), [3, 1, 2, 0], [P("x", "y"), P("x")]),
]
SHAPE = (8, 8)


def named_shardings():
    devices = meshjit.devices()
    for shape, names, order, specs in MESHES:
        count = int(np.prod(shape))
        chosen = devices[:count] if order is None else [devices[index] for index in order]
        mesh = Mesh(np.array(chosen, dtype=object).reshape(shape), names)
        for spec in specs:
            yield NamedSharding(mesh, spec)


def other_shardings():
    devices = meshjit.devices()
    return [
        SingleDeviceSharding(devices[5]),
        PositionalSharding(devices).reshape(2, 4),
        PositionalSharding([devices[index] for index in (3, 0, 6, 5, 1, 2, 7, 4)]).reshape(4, 2).replicate(1),
        GSPMDSharding(devices, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
        GSPMDSharding(devices, "{devices=[4,2]<=[2,4]T(1,0)}"),
        GSPMDSharding(devices, "{devices=[2,2,2]0,5,2,7,4,1,6,3 last_tile_dim_replicate}"),
        GSPMDSharding(devices, "{maximal device=3}"),
        PmapSharding.default((8, 8), devices=devices),
    ]


def all_shardings():
    return [*named_shardings(), *other_shardings()]


def blocks_per_device(value: np.ndarray, sharding):
    """The definition: per addressable device in layout order, its slice by the index map;
    equal indices share a block, numbered in order of first use."""
    indices = sharding.devices_indices_map(value.shape)
    blocks, block_of_key, block_of_device = [], {}, []
    for device in sharding._device_assignment:
        if not is_addressable(device):
            continue
        key = index_key(indices[device])
        if key not in block_of_key:
            block_of_key[key] = len(blocks)
            blocks.append(value[indices[device]])
        block_of_device.append(block_of_key[key])
    return blocks, block_of_device


def check_blocks_match_definition(sharding):
    value = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    array = shard_numpy(value, sharding)
    blocks, block_of_device = blocks_per_device(value, sharding)
    assert array._block_of_device == tuple(block_of_device), sharding
    assert array._blocks.shape[0] == len(blocks)
    for stored, expected in zip(array._blocks, blocks):
        np.testing.assert_array_equal(stored, expected)
    assert array._blocks.flags.c_contiguous and not array._blocks.flags.writeable
    assert not np.shares_memory(array._blocks, value)


def test_an_arrays_blocks_are_the_index_maps_slices():
    for sharding in all_shardings():
        check_blocks_match_definition(sharding)


@pytest.mark.usefixtures("two_processes")
def test_as_one_of_two_processes_an_array_keeps_the_local_devices_blocks():
    for sharding in named_shardings():
        expected = [device for device in sharding._device_assignment if is_addressable(device)]
        assert sharding._addressable_device_assignment == tuple(expected)
        assert list(sharding._addressable_device_ids) == [device.id for device in expected]
        assert sharding.is_fully_addressable == (len(expected) == sharding.num_devices)
        check_blocks_match_definition(sharding)


def test_a_replicated_scalar_and_an_empty_value_are_copied_per_block():
    sharding = NamedSharding(Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y")), P())
    value = np.array(3.0, np.float32)
    array = shard_numpy(value, sharding)
    assert array._blocks.shape == (1,) and not np.shares_memory(array._blocks, value)
    # NOTE: the tiles of an empty dim share its one index, so they share a block
    empty = shard_numpy(np.zeros((0, 4), np.float32), NamedSharding(sharding.mesh, P("x", "y")))
    assert empty._blocks.shape == (4, 0, 1) and empty._block_of_device == (0, 1, 2, 3) * 2


def rows_per_device(value, sharding, lead_shape, mesh_shape):
    """The definition: each leading position's device (the first along axes the buffer does
    not vary over) looked up in the Array's own device order."""
    grid = np.empty(len(sharding._addressable_device_assignment), dtype=object)
    grid[:] = sharding._addressable_device_assignment
    grid = grid.reshape(mesh_shape)
    own = {device: position for position, device in enumerate(value.sharding._addressable_device_assignment)}
    return [value._block_of_device[own[grid[position]]] for position in np.ndindex(lead_shape)]


def equivalent_by_index_maps(one, other, ndim=2):
    if one.device_set != other.device_set:
        return False
    probe = (8,) * ndim
    try:
        return one.devices_indices_map(probe) == other.devices_indices_map(probe)
    except ValueError:
        return False


def test_buffer_rows_match_the_per_device_lookup():
    value = np.arange(64, dtype=np.float32).reshape(SHAPE)
    shardings = list(named_shardings())
    for want in shardings:
        mesh_shape = tuple(want.mesh.axis_sizes)
        for have in shardings:
            if not equivalent_by_index_maps(want, have):
                continue
            array = shard_numpy(value, have)
            for varying in itertools.product((False, True), repeat=len(mesh_shape)):
                lead_shape = tuple(size if varies else 1 for size, varies in zip(mesh_shape, varying))
                rows, in_order = executor._rows(array, want, lead_shape, mesh_shape)
                expected = rows_per_device(array, want, lead_shape, mesh_shape)
                assert list(rows) == expected, (want, have, lead_shape)
                assert in_order == (expected == list(range(len(array._blocks))))


@pytest.mark.usefixtures("two_processes")
def test_buffer_rows_on_this_process_block_match_the_per_device_lookup():
    value = np.arange(64, dtype=np.float32).reshape(SHAPE)
    checked = 0
    for want in named_shardings():
        try:
            layout = process_layout(want.mesh)
        except ValueError:
            continue  # this process's devices are not a block of the mesh: jit refuses it
        block_shape = tuple(want.mesh.axis_sizes) if layout is None else layout.local_shape
        array = shard_numpy(value, want)
        for varying in itertools.product((False, True), repeat=len(block_shape)):
            lead_shape = tuple(size if varies else 1 for size, varies in zip(block_shape, varying))
            rows, _ = executor._rows(array, want, lead_shape, block_shape)
            assert list(rows) == rows_per_device(array, want, lead_shape, block_shape), (want, lead_shape)
        checked += layout is not None
    assert checked >= 3


def test_buffers_and_stacks_hold_each_devices_shard():
    value = np.arange(64, dtype=np.float32).reshape(SHAPE)
    for want in named_shardings():
        indices = want.devices_indices_map(SHAPE)
        stacked = executor.stack_shards(meshjit.device_put(value, NamedSharding(want.mesh, P())), want)
        for position, device in enumerate(want._device_assignment):
            np.testing.assert_array_equal(stacked[position], value[indices[device]])
        rebuilt = executor.array_from_stack(stacked, want, SHAPE)
        np.testing.assert_array_equal(np.asarray(rebuilt), value)
        assert rebuilt._block_of_device == tuple(blocks_per_device(value, want)[1])
        mesh_shape = tuple(want.mesh.axis_sizes)
        buffer = executor.to_buffer(rebuilt, want, mesh_shape, frozenset(range(len(mesh_shape))))
        np.testing.assert_array_equal(buffer.reshape(stacked.shape), stacked)


def test_equivalence_matches_the_index_maps():
    shardings = all_shardings()
    for one, other in itertools.product(shardings, repeat=2):
        assert one.is_equivalent_to(other, 2) == equivalent_by_index_maps(one, other), (one, other)


def test_the_process_layout_follows_the_devices_processes():
    from meshjit.runtime.devices import CpuDevice

    local = Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y"))
    assert process_layout(local) is None
    # NOTE: equal ids, other processes: Mesh equality alone must not reuse the local answer
    spread = Mesh(np.array([CpuDevice(index, index // 4) for index in range(8)], dtype=object).reshape(2, 4),
                  ("x", "y"))
    assert spread == local
    layout = process_layout(spread)
    assert isinstance(layout, ProcessLayout)
    assert layout.block == ((0,), (0, 1, 2, 3)) and layout.local_shape == (1, 4)


def check_constructors_match_definition(sharding):
    value = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    blocks, block_of_device = blocks_per_device(value, sharding)
    requested = []

    def callback(index):
        requested.append(index_key(index))
        return value[index]

    from_callback = meshjit.make_array_from_callback(SHAPE, sharding, callback, dtype=np.int32)
    indices = sharding.addressable_devices_indices_map(SHAPE)
    assert sorted(requested) == sorted({index_key(index) for index in indices.values()}), sharding
    pieces = [meshjit.device_put(value[indices[device]], device) for device in sharding._addressable_device_assignment]
    from_pieces = meshjit.make_array_from_single_device_arrays(SHAPE, sharding, pieces, dtype=np.int32)
    for array in (from_callback, from_pieces):
        assert array._block_of_device == tuple(block_of_device), sharding
        for stored, expected in zip(array._blocks, blocks, strict=True):
            np.testing.assert_array_equal(stored, expected)
        if sharding.is_fully_addressable:
            np.testing.assert_array_equal(np.asarray(array), value)


def test_constructors_and_the_global_value_match_the_index_maps():
    for sharding in all_shardings():
        check_constructors_match_definition(sharding)


@pytest.mark.usefixtures("two_processes")
def test_constructors_keep_the_local_devices_blocks_of_two_processes():
    for sharding in named_shardings():
        check_constructors_match_definition(sharding)


def test_differing_replicas_keep_their_own_blocks_and_the_first_is_the_value():
    mesh = Mesh(np.array(meshjit.devices())[[4, 0, 6, 2, 5, 1, 7, 3]].reshape(2, 4), ("x", "y"))
    sharding = NamedSharding(mesh, P(None, "y"))  # each column block on the two devices of a y
    value = np.arange(16, dtype=np.float32).reshape(2, 8)
    indices = sharding.devices_indices_map(value.shape)
    pieces = [meshjit.device_put(value[indices[device]] + (10 * position if position in (5, 6) else 0), device)
              for position, device in enumerate(sharding._addressable_device_assignment)]
    array = meshjit.make_array_from_single_device_arrays(value.shape, sharding, pieces)
    # devices 4 0 6 2 hold column blocks 0-3 first; 5 and 3 repeat blocks 0 and 3, while 1 and
    # 7 (positions 5 and 6) hold replicas of blocks 1 and 2 that differ
    assert array._block_of_device == (0, 1, 2, 3, 0, 4, 5, 3)
    np.testing.assert_array_equal(np.asarray(array), value)
    shards = {shard.device.id: np.asarray(shard.data) for shard in array.addressable_shards}
    np.testing.assert_array_equal(shards[1], value[:, 2:4] + 50)
    np.testing.assert_array_equal(shards[7], value[:, 4:6] + 60)


def global_value_per_device(array):
    """The definition: every device's shard written at its index, replica 0 last so it wins."""
    value = np.zeros(array.shape, array.dtype)
    for shard in sorted(array.addressable_shards, key=lambda shard: -shard.replica_id):
        value[shard.index] = np.asarray(shard.data)
    return value


@pytest.mark.parametrize("one_by_one", [64, 0], ids=["tile by tile", "one scatter"])
def test_the_global_value_reads_blocks_that_devices_share_across_tiles(one_by_one, monkeypatch):
    from meshjit.runtime import tiles
    from meshjit.runtime.array import Array

    monkeypatch.setattr(tiles, "TILES_ONE_BY_ONE", one_by_one)

    # NOTE: a program result equal on the devices of a tiled layout is stored once (pmap's psum)
    mesh = Mesh(np.array(meshjit.devices())[[3, 1, 2, 0]].reshape(2, 2), ("x", "y"))
    sharding = NamedSharding(mesh, P("y"))
    blocks = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    array = Array((6, 2), np.float32, sharding, blocks, (0, 0, 0, 0))
    np.testing.assert_array_equal(np.asarray(array), global_value_per_device(array))
    np.testing.assert_array_equal(np.asarray(array), np.concatenate([blocks[0], blocks[0]]))
    value = np.arange(64, dtype=np.float32).reshape(SHAPE)
    for sharding in named_shardings():
        result = meshjit.jit(lambda x: x * 2, out_shardings=sharding)(value)
        np.testing.assert_array_equal(np.asarray(result), global_value_per_device(result))
        np.testing.assert_array_equal(np.asarray(result), value * 2)


def check_process_part_matches_index_maps(sharding):
    from meshjit.runtime.transfer import _local_offsets, _local_spans, _local_tile_coordinates

    probe = tuple(8 * sharding.num_devices for _ in SHAPE)
    coordinates = _local_tile_coordinates(sharding, probe)
    if coordinates is None:
        return
    spans = [(max(len(np.unique(held)), 1), count) for count, held in zip(*coordinates)]
    assert spans == _local_spans(sharding, probe), sharding
    offsets = [int(held.min()) * (size // count) if held.size else 0
               for size, count, held in zip(SHAPE, *coordinates)]
    assert offsets == _local_offsets(sharding, SHAPE), sharding


@pytest.mark.usefixtures("two_processes")
def test_a_process_part_is_told_by_tiles_as_by_index_maps():
    for sharding in all_shardings():
        check_process_part_matches_index_maps(sharding)
    mesh = Mesh(np.array(meshjit.devices())[[0, 4, 5, 1, 2, 6, 7, 3]].reshape(4, 2), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))  # process 0: a diagonal, not one block
    check_process_part_matches_index_maps(sharding)
    value = np.arange(32, dtype=np.float32).reshape(4, 8)
    mesh = Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y"))
    array = meshjit.make_array_from_process_local_data(NamedSharding(mesh, P("x", "y")), value[:2])
    assert array.shape == (4, 8)
    for shard in array.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), value[shard.index])


def test_a_single_process_part_is_the_whole_array():
    for sharding in all_shardings():
        check_process_part_matches_index_maps(sharding)
    value = np.arange(64, dtype=np.float32).reshape(SHAPE)
    for sharding in named_shardings():
        np.testing.assert_array_equal(np.asarray(meshjit.make_array_from_process_local_data(sharding, value)), value)
