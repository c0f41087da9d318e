"""Addressability as process 0 of a simulated two-process job (devices 0-3 local, 4-7 remote):
addressable devices and shards, global shards, what can be fetched, and the process-local
constructors."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state", "two_processes")


@pytest.fixture
def mesh():
    return Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y"))


@pytest.fixture
def remote_mesh():
    return Mesh(np.array(meshjit.devices()[4:]).reshape(2, 2), ("x", "y"))


def local_pieces(sharding, value):
    return [meshjit.device_put(value[index], device)
            for device, index in sharding.addressable_devices_indices_map(value.shape).items()]


def test_mesh_and_sharding_addressability(mesh):
    assert [device.id for device in mesh.local_devices] == [0, 1, 2, 3]
    assert mesh.is_multi_process
    sharding = NamedSharding(mesh, P("x", "y"))
    assert sharding.device_set == set(meshjit.devices()) and sharding.num_devices == 8
    assert sharding.addressable_devices == set(meshjit.devices()[:4])
    assert not sharding.is_fully_addressable
    assert sharding.addressable_devices_indices_map((4, 8)) == {
        device: index for device, index in sharding.devices_indices_map((4, 8)).items() if device.id < 4}
    local = NamedSharding(Mesh(np.array(meshjit.devices()[:4]), ("x",)), P("x"))
    assert local.is_fully_addressable


def test_an_array_holds_only_its_local_shards(mesh):
    sharding = NamedSharding(mesh, P("x", "y"))
    value = np.arange(32, dtype=np.float32).reshape(4, 8)
    array = meshjit.make_array_from_single_device_arrays((4, 8), sharding, local_pieces(sharding, value))
    assert not array.is_fully_addressable and not array.is_fully_replicated
    assert [shard.device.id for shard in array.addressable_shards] == [0, 1, 2, 3]
    global_shards = array.global_shards
    assert [shard.device.id for shard in global_shards] == list(range(8))
    assert [shard.data is None for shard in global_shards] == [False] * 4 + [True] * 4
    assert global_shards[6].index == (slice(2, 4), slice(4, 6))
    np.testing.assert_array_equal(np.asarray(array.addressable_data(3)), value[0:2, 6:8])
    with pytest.raises(IndexError, match="4 addressable shards"):
        array.addressable_data(4)
    with pytest.raises(RuntimeError, match="non-addressable"):
        np.asarray(array)
    assert repr(array) == "Array(shape=(4, 8), dtype=float32)"  # JAX's form without the values


def test_a_replicated_array_can_be_read_from_a_local_replica(mesh):
    sharding = NamedSharding(mesh, P())
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    array = meshjit.make_array_from_single_device_arrays((2, 3), sharding, local_pieces(sharding, value))
    assert array.is_fully_replicated and not array.is_fully_addressable
    np.testing.assert_array_equal(np.asarray(array), value)
    assert repr(array) == repr(meshjit.device_put(value))


def test_device_put_keeps_only_local_shards(mesh):
    array = meshjit.device_put(np.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x")))
    assert len(array.addressable_shards) == 4
    assert {repr(shard.index) for shard in array.addressable_shards} == {repr((slice(0, 2), slice(None)))}


def test_no_addressable_devices_needs_a_dtype(remote_mesh):
    sharding = NamedSharding(remote_mesh, P("x"))
    array = meshjit.make_array_from_single_device_arrays((4, 2), sharding, [], dtype=np.float32)
    assert array.shape == (4, 2) and array.dtype == np.float32
    assert array.addressable_shards == []
    assert [shard.data for shard in array.global_shards] == [None] * 4
    assert repr(array) == "Array(shape=(4, 2), dtype=float32)"
    with pytest.raises(ValueError, match="`dtype` must be provided"):
        meshjit.make_array_from_single_device_arrays((4, 2), sharding, [])
    put = meshjit.device_put(np.zeros((4, 2)), sharding)
    assert put.addressable_shards == [] and put.shape == (4, 2)
    made = meshjit.make_array_from_callback((4, 2), sharding, lambda index: np.zeros((2, 2)), dtype=np.float32)
    assert made.addressable_shards == []


def test_too_many_arrays_counts_only_addressable_devices(mesh):
    sharding = NamedSharding(mesh, P("x", "y"))
    pieces = local_pieces(sharding, np.zeros((4, 8), np.float32))
    with pytest.raises(ValueError, match="Expected 4 per-device arrays"):
        meshjit.make_array_from_single_device_arrays((4, 8), sharding, pieces + pieces[:1])


def test_an_array_on_a_remote_device_is_rejected(mesh):
    sharding = NamedSharding(mesh, P("x", "y"))
    pieces = local_pieces(sharding, np.zeros((4, 8), np.float32))
    pieces[0] = meshjit.device_put(np.zeros((2, 2), np.float32), meshjit.devices()[5])
    with pytest.raises(ValueError, match=r"CpuDevice\(id=5\).*not an addressable device"):
        meshjit.make_array_from_single_device_arrays((4, 8), sharding, pieces)


@pytest.mark.parametrize("spec, local_shape, global_shape", [
    (P("x"), (2, 8), (4, 8)),  # this process holds row block 0 of 2
    (P("y"), (8, 2), (8, 2)),  # this process's devices cover every y block
    (P("x", "y"), (2, 8), (4, 8)),
    (P(), (3, 3), (3, 3)),
    (P(None, "x"), (4, 3), (4, 6)),
])
def test_process_local_data_infers_the_global_shape(mesh, spec, local_shape, global_shape):
    sharding = NamedSharding(mesh, spec)
    local = np.arange(int(np.prod(local_shape)), dtype=np.float32).reshape(local_shape)
    array = meshjit.make_array_from_process_local_data(sharding, local)
    assert array.shape == global_shape
    explicit = meshjit.make_array_from_process_local_data(sharding, local, global_shape)
    assert explicit.shape == global_shape
    indices = sharding.devices_indices_map(global_shape)
    offsets = [min(index[dim].start or 0 for device, index in indices.items() if device.id < 4)
               for dim in range(len(global_shape))]
    for shard in array.addressable_shards:
        relative = tuple(slice((entry.start or 0) - offset, (entry.start or 0) - offset + size)
                         for entry, offset, size in zip(shard.index, offsets, shard.data.shape))
        np.testing.assert_array_equal(np.asarray(shard.data), local[relative])


def test_process_local_data_that_does_not_cover_the_local_part(mesh):
    with pytest.raises(ValueError, match="does not cover"):
        meshjit.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.zeros((2, 8)), (8, 8))


def test_visualize_shows_every_device(mesh, capsys):
    meshjit.debug.visualize_array_sharding(meshjit.device_put(np.zeros((8, 8)), NamedSharding(mesh, P("x", "y"))))
    output = capsys.readouterr().out
    assert all(f"CPU {device_id}" in output for device_id in range(8))
