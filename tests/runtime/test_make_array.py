"""make_array_from_single_device_arrays (every rule of seeds 000/001), make_array_from_callback and
make_array_from_process_local_data. Their error paths are in tests/api/test_error_messages.py."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import meshjit
from meshjit.sharding import NamedSharding, PositionalSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

# mesh, spec, global shape
LAYOUTS = [
    ("2x4", P("x", "y"), (8, 8)),
    ("2x4", P("x"), (4, 6)),  # partial replication
    ("2x4", P(None, ("y", "x")), (3, 16)),
    ("2x4", P(), (5,)),
    ("2x4", P(), ()),
    ("2x4", P("y"), (0, 3)),
    ("2x2x2", P("z", ("x", "y")), (2, 4)),
    ("2x2x2", P(None, None, "y"), (1, 2, 6)),
    ("8", P("x"), (16,)),
    ("8", P(None, "x"), (3, 8)),
    ("4x2", P("y", "x"), (6, 8)),
]
IDS = [f"{mesh}-{spec}-{shape}" for mesh, spec, shape in LAYOUTS]


def single_device_pieces(sharding, value):
    return [meshjit.device_put(value[index], device)
            for device, index in sharding.addressable_devices_indices_map(value.shape).items()]


@pytest.mark.parametrize("mesh_name, spec, shape", LAYOUTS, ids=IDS)
def test_single_device_arrays_assemble_into_the_global_array(mesh_of, mesh_name, spec, shape):
    sharding = NamedSharding(mesh_of(mesh_name), spec)
    value = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    pieces = single_device_pieces(sharding, value)
    array = meshjit.make_array_from_single_device_arrays(shape, sharding, pieces)
    assert array.shape == shape and array.dtype == np.float32 and array.sharding is sharding
    assert array.committed and not array.weak_type
    np.testing.assert_array_equal(np.asarray(array), value)
    for piece, shard in zip(pieces, array.addressable_shards):
        assert shard.device == next(iter(piece.devices()))
        np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(piece))


def test_arrays_are_matched_to_devices_not_positions(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x", "y"))
    value = np.arange(64).reshape(8, 8)
    pieces = single_device_pieces(sharding, value)
    random.Random(0).shuffle(pieces)
    array = meshjit.make_array_from_single_device_arrays((8, 8), sharding, tuple(pieces))
    np.testing.assert_array_equal(np.asarray(array), value)


def test_dtype_defaults_to_the_first_array_and_may_be_given(mesh_8):
    sharding = NamedSharding(mesh_8, P("x"))
    pieces = single_device_pieces(sharding, np.arange(8, dtype=np.int32))
    assert meshjit.make_array_from_single_device_arrays((8,), sharding, pieces).dtype == np.int32
    assert meshjit.make_array_from_single_device_arrays((8,), sharding, pieces, dtype=np.int32).dtype == np.int32
    assert meshjit.make_array_from_single_device_arrays([8], sharding, pieces).shape == (8,)


def test_weakly_typed_pieces_give_a_strongly_typed_array(mesh_8):
    # As in JAX: an array assembled from shards is never weakly typed.
    sharding = NamedSharding(mesh_8, P())
    pieces = [meshjit.device_put(2.0, device) for device in mesh_8.devices.flat]
    array = meshjit.make_array_from_single_device_arrays((), sharding, pieces)
    assert pieces[0].weak_type and not array.weak_type and array.dtype == np.float32


def test_unequal_replicas_are_kept_per_device(mesh_8):
    # A user may give replicas that differ; each device keeps its own, and the value is replica 0's.
    sharding = NamedSharding(mesh_8, P())
    pieces = [meshjit.device_put(np.full(2, index, np.float32), device)
              for index, device in enumerate(mesh_8.devices.flat)]
    array = meshjit.make_array_from_single_device_arrays((2,), sharding, pieces)
    assert [np.asarray(shard.data)[0] for shard in array.addressable_shards] == list(range(8))
    assert np.asarray(array).tolist() == [0.0, 0.0]


def test_other_sharding_classes(mesh_2x4):
    value = np.arange(32, dtype=np.float32).reshape(4, 8)
    for sharding in (PositionalSharding(meshjit.devices()).reshape(2, 4), SingleDeviceSharding(meshjit.devices()[2])):
        array = meshjit.make_array_from_single_device_arrays((4, 8), sharding, single_device_pieces(sharding, value))
        np.testing.assert_array_equal(np.asarray(array), value)


# -- make_array_from_callback -------------------------------------------------------------------
@pytest.mark.parametrize("mesh_name, spec, shape", LAYOUTS, ids=IDS)
def test_callback_builds_each_shard_from_its_index(mesh_of, mesh_name, spec, shape):
    sharding = NamedSharding(mesh_of(mesh_name), spec)
    value = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    requested = []

    def callback(index):
        requested.append(index)
        return value[index]

    array = meshjit.make_array_from_callback(shape, sharding, callback)
    np.testing.assert_array_equal(np.asarray(array), value)
    assert array.sharding is sharding and array.dtype == np.int32
    distinct = {repr(index) for index in sharding.devices_indices_map(shape).values()}
    # meshjit asks once per distinct shard; replicas share it (JAX asks once per device)
    assert len(requested) == len(distinct)
    assert {repr(index) for index in requested} == distinct


def test_callback_example_from_jax_docstring(mesh_2x4):
    input_shape = (8, 8)
    global_input_data = np.arange(math.prod(input_shape)).reshape(input_shape)
    sharding = NamedSharding(mesh_2x4, P("x", "y"))
    array = meshjit.make_array_from_callback(input_shape, sharding, lambda index: global_input_data[index])
    assert array.addressable_data(0).shape == (4, 2)
    assert array.dtype == np.int32


def test_callback_results_are_canonicalised_and_must_have_the_given_dtype(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x"))
    value = np.arange(8, dtype=np.float64)
    assert meshjit.make_array_from_callback((8,), sharding, lambda index: value[index]).dtype == np.float32
    # dtype is compared after canonicalisation (float64 is float32 without x64), as in JAX
    same = meshjit.make_array_from_callback((8,), sharding, lambda index: value[index], dtype=np.float64)
    assert same.dtype == np.float32
    ints = meshjit.make_array_from_callback((8,), sharding, lambda index: np.arange(8)[index], dtype=np.int32)
    assert ints.dtype == np.int32 and np.asarray(ints).tolist() == list(range(8))
    with pytest.raises(ValueError, match=r"dtype=int32 was given, but data_callback returned float32 data"):
        meshjit.make_array_from_callback((8,), sharding, lambda index: value[index], dtype=np.int32)
    with pytest.raises(ValueError, match=r"must match"):
        meshjit.make_array_from_callback((8,), sharding, lambda index: meshjit.device_put(value[index]),
                                         dtype=np.int32)
    scalar = meshjit.make_array_from_callback((), NamedSharding(mesh_2x4, P()), lambda index: 2.5)
    assert scalar.shape == () and float(scalar) == 2.5 and not scalar.weak_type
    from_arrays = meshjit.make_array_from_callback((8,), sharding, lambda index: meshjit.device_put(value[index]))
    np.testing.assert_array_equal(np.asarray(from_arrays), value.astype(np.float32))


# -- make_array_from_process_local_data ---------------------------------------------------------
@pytest.mark.parametrize("mesh_name, spec, shape", LAYOUTS, ids=IDS)
def test_process_local_data_in_one_process_is_the_global_array(mesh_of, mesh_name, spec, shape):
    sharding = NamedSharding(mesh_of(mesh_name), spec)
    value = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    array = meshjit.make_array_from_process_local_data(sharding, value)
    assert array.shape == shape and array.sharding is sharding
    np.testing.assert_array_equal(np.asarray(array), value)
    same = meshjit.make_array_from_process_local_data(sharding, value, shape)
    np.testing.assert_array_equal(np.asarray(same), value)


def test_process_local_data_canonicalises_dtypes(mesh_2x4):
    array = meshjit.make_array_from_process_local_data(NamedSharding(mesh_2x4, P("x")), np.arange(8))
    assert array.dtype == np.int32
