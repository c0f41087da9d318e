"""PositionalSharding, PmapSharding and GSPMDSharding (with XLA's sharding text), following the
seeds and JAX <= 0.4.30, where these classes last lived."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.runtime.tile_assignment import parse_tile_assignment

import meshjit
from meshjit.sharding import (
    Chunked,
    GSPMDSharding,
    Mesh,
    NamedSharding,
    NoSharding,
    PmapSharding,
    PositionalSharding,
    ShardedAxis,
    ShardingSpec,
    TileAssignment,
    Unstacked,
)
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def devices():
    return meshjit.devices()


def block(row, column, height, width):
    return (slice(row * height, (row + 1) * height), slice(column * width, (column + 1) * width))


# -- PositionalSharding ------------------------------------------------------------------------
def test_positional_shape_reshape_transpose():
    sharding = PositionalSharding(devices())
    assert sharding.shape == (8,) and sharding.ndim == 1 and len(sharding) == 8
    assert sharding.reshape(2, 4).shape == (2, 4)
    assert sharding.reshape((2, 4)) == sharding.reshape(2, 4)
    assert sharding.reshape(2, 2, 2).ndim == 3
    assert sharding.reshape(2, 4).T.shape == (4, 2)
    assert sharding.reshape(2, 4).transpose(1, 0) == sharding.reshape(2, 4).T
    assert sharding.reshape(2, 4).transpose((1, 0)) == sharding.reshape(2, 4).T
    assert PositionalSharding(np.array(devices()).reshape(4, 2)).shape == (4, 2)


def test_positional_index_map_follows_positions():
    # Entry [i, j] of the device array holds tile (i, j).
    indices = PositionalSharding(devices()).reshape(2, 4).devices_indices_map((4, 8))
    assert indices == {devices()[4 * i + j]: block(i, j, 2, 2) for i in range(2) for j in range(4)}
    transposed = PositionalSharding(devices()).reshape(2, 4).T.devices_indices_map((8, 4))
    assert transposed == {devices()[4 * j + i]: block(i, j, 2, 2) for i in range(4) for j in range(2)}


def test_positional_replicate_one_axis():
    sharding = PositionalSharding(devices()).reshape(4, 2).replicate(0)
    assert sharding.shape == (1, 2)
    assert sharding.shard_shape((8, 8)) == (8, 4)
    indices = sharding.devices_indices_map((8, 8))
    assert indices == {device: (slice(None), block(0, device.id % 2, 8, 4)[1]) for device in devices()}
    assert not sharding.is_fully_replicated
    assert sharding.is_equivalent_to(NamedSharding(Mesh(np.array(devices()).reshape(4, 2), ("x", "y")), P(None, "y")), 2)


def test_positional_replicate_without_keepdims():
    sharding = PositionalSharding(devices()).reshape(2, 4).replicate(1, keepdims=False)
    assert sharding.shape == (2,)
    assert sharding.devices_indices_map((4,)) == {device: (slice(2 * (device.id // 4), 2 * (device.id // 4) + 2),)
                                                  for device in devices()}


@pytest.mark.parametrize("shape", [(), (5,), (4, 8), (2, 3, 4)])
def test_positional_single_tile_replicates_any_rank(shape):
    # As in JAX: once every position holds all devices, the rank no longer needs to match.
    sharding = PositionalSharding(devices()).reshape(2, 4).replicate()
    assert sharding.shape == (1, 1) and sharding.is_fully_replicated
    assert sharding.shard_shape(shape) == shape
    array = meshjit.device_put(np.ones(shape, np.float32), sharding)
    assert all(shard.index == (slice(None),) * len(shape) for shard in array.addressable_shards)
    assert [shard.replica_id for shard in array.addressable_shards] == list(range(8))


# Goldens in the format of JAX 0.4.30's PositionalSharding.__repr__.
@pytest.mark.parametrize("build, text", [
    (lambda s: s, ("PositionalSharding([{CPU 0} {CPU 1} {CPU 2} {CPU 3} {CPU 4} {CPU 5} {CPU 6} {CPU 7}], "
                   "memory_kind=device, shape=(8,))")),
    (lambda s: s.reshape(4, 2), ("PositionalSharding([[{CPU 0} {CPU 1}]\n"
                                 "                    [{CPU 2} {CPU 3}]\n"
                                 "                    [{CPU 4} {CPU 5}]\n"
                                 "                    [{CPU 6} {CPU 7}]], memory_kind=device, shape=(4, 2))")),
    (lambda s: s.reshape(4, 2).replicate(0),
     "PositionalSharding([[{CPU 0, 2, 4, 6} {CPU 1, 3, 5, 7}]], memory_kind=device, shape=(1, 2))"),
    (lambda s: s.replicate(), "PositionalSharding([{CPU 0, 1, 2, 3, 4, 5, 6, 7}], memory_kind=device, shape=(1,))"),
])
def test_positional_repr(build, text):
    assert repr(build(PositionalSharding(devices()))) == text


def test_positional_equality_hash_and_memory_kind():
    sharding = PositionalSharding(devices()).reshape(2, 4)
    assert sharding == PositionalSharding(np.array(devices()).reshape(2, 4))
    assert hash(sharding) == hash(PositionalSharding(np.array(devices()).reshape(2, 4)))
    assert sharding != sharding.T and sharding != sharding.replicate(0)
    moved = sharding.with_memory_kind("pinned_host")
    assert moved.memory_kind == "pinned_host" and moved.shape == (2, 4)  # keeps the layout
    assert moved != sharding


# -- PmapSharding ------------------------------------------------------------------------------
def test_pmap_default_unstacks_dim_0_over_local_devices():
    sharding = PmapSharding.default((8, 3))
    assert list(sharding.devices) == devices()
    assert sharding.sharding_spec == ShardingSpec((Unstacked(8), NoSharding()), (ShardedAxis(0),))
    assert sharding.shard_shape((8, 3)) == (3,)  # the unstacked dim disappears
    assert sharding.devices_indices_map((8, 3)) == {device: (device.id, slice(None)) for device in devices()}
    assert not sharding.is_fully_replicated


def test_pmap_array_round_trip():
    value = np.arange(24, dtype=np.float32).reshape(8, 3)
    array = meshjit.device_put(value, PmapSharding.default((8, 3)))
    np.testing.assert_array_equal(np.asarray(array), value)
    shard = array.addressable_shards[5]
    assert shard.index == (5, slice(None)) and shard.data.shape == (3,)
    np.testing.assert_array_equal(np.asarray(shard.data), value[5])


@pytest.mark.parametrize("shape, sharded_dim, expected", [
    ((3, 4), 1, {index: (slice(None), index) for index in range(4)}),
    ((2, 4), -1, {index: (slice(None), index) for index in range(4)}),
    ((2,), 0, {0: (0,), 1: (1,)}),
])
def test_pmap_default_sharded_dim(shape, sharded_dim, expected):
    sharding = PmapSharding.default(shape, sharded_dim=sharded_dim)
    assert {device.id: index for device, index in sharding.devices_indices_map(shape).items()} == expected


def test_pmap_default_with_devices_and_replication():
    sharding = PmapSharding.default((4, 4), devices=devices()[4:])
    assert [device.id for device in sharding.devices] == [4, 5, 6, 7]
    replicated = PmapSharding.default((3, 4), sharded_dim=None, devices=devices()[:2])
    assert replicated.is_fully_replicated and replicated.shard_shape((3, 4)) == (3, 4)
    assert replicated.devices_indices_map((3, 4)) == {device: (slice(None), slice(None)) for device in devices()[:2]}


def test_pmap_chunked_spec():
    spec = ShardingSpec((Chunked((4,)), NoSharding()), (ShardedAxis(0),))
    sharding = PmapSharding(np.array(devices()[:4]), spec)
    assert sharding.shard_shape((4, 2)) == (1, 2)
    assert sharding.devices_indices_map((8, 2))[devices()[3]] == (slice(6, 8), slice(None))


@pytest.mark.parametrize("shape", [(4, 3), (16, 3), (2, 3)])
def test_pmap_shard_shape_needs_the_sharded_dim_to_equal_the_device_count(shape):
    with pytest.raises(ValueError, match="The sharded dimension must be equal to the number of devices"):
        PmapSharding.default((8, 3)).shard_shape(shape)
    chunked = PmapSharding(np.array(devices()[:4]), ShardingSpec((Chunked((4,)), NoSharding()), (ShardedAxis(0),)))
    with pytest.raises(ValueError, match="number of devices=4"):
        chunked.shard_shape((8, 3))


def test_pmap_equality_and_equivalence():
    assert PmapSharding.default((8,)) == PmapSharding.default((8,))
    assert hash(PmapSharding.default((8,))) == hash(PmapSharding.default((8,)))
    assert PmapSharding.default((4,)) != PmapSharding.default((4,), devices=devices()[4:])
    assert PmapSharding.default((8,)).is_equivalent_to(PmapSharding.default((8,)), 1)
    assert not PmapSharding.default((8,)).is_equivalent_to(PositionalSharding(devices()), 1)


# -- GSPMDSharding and XLA's sharding text -----------------------------------------------------
# text, kind, tiles, replication, device ids, printed form
TEXT_FORMS = [
    ("{replicated}", "replicated", (), 1, (), "{replicated}"),
    ("{maximal device=3}", "maximal", (), 1, (3,), "{maximal device=3}"),
    ("{devices=[2,4]<=[8]}", "tiled", (2, 4), 1, tuple(range(8)), "{devices=[2,4]<=[8]}"),
    ("{devices=[2,4]0,1,2,3,4,5,6,7}", "tiled", (2, 4), 1, tuple(range(8)), "{devices=[2,4]<=[8]}"),
    ("{devices=[2,4]7,6,5,4,3,2,1,0}", "tiled", (2, 4), 1, tuple(range(7, -1, -1)), "{devices=[2,4]7,6,5,4,3,2,1,0}"),
    ("{devices=[4,2]<=[2,4]T(1,0)}", "tiled", (4, 2), 1, (0, 4, 1, 5, 2, 6, 3, 7), "{devices=[4,2]0,4,1,5,2,6,3,7}"),
    ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "tiled", (2, 1), 4, tuple(range(8)),
     "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
    ("  {devices=[8]<=[8]}  ", "tiled", (8,), 1, tuple(range(8)), "{devices=[8]<=[8]}"),
]


@pytest.mark.parametrize("text, kind, tiles, replication, ids, printed", TEXT_FORMS)
def test_sharding_text_forms(text, kind, tiles, replication, ids, printed):
    parsed = parse_tile_assignment(text)
    assert (parsed.kind, parsed.tiles, parsed.replication, parsed.device_ids) == (kind, tiles, replication, ids)
    assert str(parsed) == printed
    assert parse_tile_assignment(printed) == parsed  # the printed form parses back


def test_gspmd_tiled_index_map():
    sharding = GSPMDSharding(devices(), "{devices=[2,4]<=[8]}")
    assert sharding.devices_indices_map((4, 8)) == {devices()[4 * i + j]: block(i, j, 2, 2)
                                                    for i in range(2) for j in range(4)}


def test_gspmd_ids_index_the_device_list():
    # Tile ids are positions in the given device list, not device ids.
    sharding = GSPMDSharding(devices()[::-1], "{devices=[8]<=[8]}")
    assert sharding.devices_indices_map((8,))[devices()[7]] == (slice(0, 1),)


def test_gspmd_partial_replication_equals_named_sharding():
    sharding = GSPMDSharding(devices(), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}")
    named = NamedSharding(Mesh(np.array(devices()).reshape(2, 4), ("x", "y")), P("x"))
    assert sharding.devices_indices_map((4, 6)) == named.devices_indices_map((4, 6))
    assert sharding.shard_shape((4, 6)) == (2, 6)


def test_gspmd_maximal_puts_everything_on_one_device():
    sharding = GSPMDSharding(devices(), "{maximal device=3}")
    assert sharding.device_set == {devices()[3]}
    assert sharding.devices_indices_map((2, 2)) == {devices()[3]: (slice(None), slice(None))}
    array = meshjit.device_put(np.arange(4.0), sharding)
    assert [shard.device for shard in array.addressable_shards] == [devices()[3]]


def test_gspmd_replicated_any_rank_and_equality():
    replicated = GSPMDSharding.get_replicated(devices())
    assert replicated.is_fully_replicated and replicated.shard_shape((3, 5)) == (3, 5)
    all_ones = GSPMDSharding(devices(), "{devices=[1,1,8]<=[8] last_tile_dim_replicate}")
    assert replicated == all_ones and hash(replicated) == hash(all_ones)  # both mean replicated
    assert GSPMDSharding(devices(), "{devices=[2,4]<=[8]}") == GSPMDSharding(devices(), "{devices=[2,4]0,1,2,3,4,5,6,7}")
    assert GSPMDSharding(devices(), "{devices=[2,4]<=[8]}") != GSPMDSharding(devices(), "{devices=[4,2]<=[8]}")


def test_gspmd_accepts_a_tile_assignment():
    tiles = TileAssignment.tiled(np.arange(8).reshape(4, 2))
    assert GSPMDSharding(devices(), tiles) == GSPMDSharding(devices(), "{devices=[4,2]<=[8]}")


def test_gspmd_repr_and_memory_kind():
    sharding = GSPMDSharding(devices()[:2], "{devices=[2]<=[2]}")
    assert repr(sharding) == "GSPMDSharding({devices=[2]<=[2]}, device_ids=[0, 1], memory_kind=device)"
    assert sharding.with_memory_kind("pinned_host").memory_kind == "pinned_host"
