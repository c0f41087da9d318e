"""Array: metadata, shards and replica ids, values, repr, storage, and deletion."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
from meshjit.sharding import NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def put(value, mesh, spec):
    return meshjit.device_put(value, NamedSharding(mesh, spec))


# mesh, spec, shape, dtype
METADATA_CASES = [
    ("2x4", P("x", "y"), (8, 8), np.float32),
    ("2x4", P("x"), (6, 4), np.int32),  # partial replication, uneven but divisible
    ("2x2x2", P(("x", "y"), "z"), (4, 2, 3), np.bool_),
    ("8", P(None, "x"), (3, 16), np.uint8),
    ("8", P(), (), np.float32),
    ("2x4", P("y"), (0, 5), np.float32),
]


@pytest.mark.parametrize("mesh_name, spec, shape, dtype", METADATA_CASES)
def test_metadata(mesh_of, mesh_name, spec, shape, dtype):
    mesh = mesh_of(mesh_name)
    array = put(np.zeros(shape, dtype), mesh, spec)
    assert isinstance(array, meshjit.Array)
    assert array.shape == shape and array.ndim == len(shape)
    assert array.dtype == np.dtype(dtype)
    assert array.size == int(np.prod(shape))
    assert array.itemsize == np.dtype(dtype).itemsize and array.nbytes == array.size * array.itemsize
    assert array.sharding == NamedSharding(mesh, spec)
    assert array.devices() == set(mesh.devices.flat)
    assert array.is_fully_addressable
    assert array.is_fully_replicated is array.sharding.is_fully_replicated
    assert array.committed and not array.weak_type


@pytest.mark.parametrize("mesh_name, spec, shape, dtype", METADATA_CASES)
def test_shards(mesh_of, mesh_name, spec, shape, dtype):
    mesh = mesh_of(mesh_name)
    value = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    array = put(value, mesh, spec)
    sharding = array.sharding
    shards = array.addressable_shards
    assert len(shards) == 8
    # one process: the global shards are the addressable ones
    assert [(shard.device, shard.index, shard.replica_id) for shard in array.global_shards] == [
        (shard.device, shard.index, shard.replica_id) for shard in shards]
    for position, shard in enumerate(shards):
        assert shard.device == mesh.devices.flat[position]
        assert shard.index == sharding.devices_indices_map(shape)[shard.device]
        assert isinstance(shard.data, meshjit.Array)
        assert shard.data.shape == sharding.shard_shape(shape)
        assert shard.data.sharding == SingleDeviceSharding(shard.device)
        np.testing.assert_array_equal(np.asarray(shard.data), value[shard.index])
        data = array.addressable_data(position)
        assert data.devices() == {shard.device}
        np.testing.assert_array_equal(np.asarray(data), np.asarray(shard.data))
    np.testing.assert_array_equal(np.asarray(array.addressable_data(-1)), np.asarray(shards[-1].data))


def test_shard_repr(mesh_2x4):
    array = put(np.arange(8.0).reshape(2, 4), mesh_2x4, P("x"))
    assert repr(array.addressable_shards[5]) == (
        "Shard(device=CpuDevice(id=5), index=(slice(1, 2, None), slice(None, None, None)), "
        "replica_id=1, data=[[4. 5. 6. 7.]])")


def test_values(mesh_2x4):
    value = np.arange(32, dtype=np.float32).reshape(4, 8)
    array = put(value, mesh_2x4, P("x", "y"))
    np.testing.assert_array_equal(np.asarray(array), value)
    np.testing.assert_array_equal(np.array(array), value)
    assert np.asarray(array, dtype=np.int32).dtype == np.int32
    assert array.tolist() == value.tolist()
    assert str(array) == str(value)
    copied = np.array(array, copy=True)
    copied[0, 0] = 100  # a copy is the caller's to change
    assert np.asarray(array)[0, 0] == 0


def test_host_values_are_read_only(mesh_2x4):
    # Arrays are immutable: the host view may not be written, as in JAX.
    for array in (put(np.zeros((4, 8)), mesh_2x4, P("x", "y")), put(np.zeros((4, 8)), mesh_2x4, P())):
        with pytest.raises(ValueError, match="read-only"):
            np.asarray(array)[0, 0] = 1.0


def test_scalar_conversions():
    array = meshjit.device_put(np.int32(7))
    assert int(array) == 7 and float(array) == 7.0 and bool(array) and array.item() == 7
    assert [10, 20, 30, 40, 50, 60, 70, 80][array] == 80  # __index__
    assert f"{meshjit.device_put(np.float32(2.5)):.2f}" == "2.50"
    with pytest.raises(TypeError, match="len"):
        len(array)
    assert len(meshjit.device_put(np.zeros((3, 2)))) == 3
    with pytest.raises(ValueError, match="size 1"):
        meshjit.device_put(np.zeros(3)).item()
    with pytest.raises(TypeError, match="integer"):
        [1, 2][meshjit.device_put(np.float32(1))]


def test_block_until_ready(mesh_2x4):
    array = put(np.zeros((4, 8)), mesh_2x4, P("x"))
    assert array.block_until_ready() is array
    tree = {"a": array, "b": [array, 3]}
    assert meshjit.block_until_ready(tree) is tree


def test_single_device_array_device_attribute(mesh_2x4):
    assert meshjit.device_put(np.zeros(3), meshjit.devices()[3]).device == meshjit.devices()[3]
    sharded = put(np.zeros((4, 8)), mesh_2x4, P("x"))
    assert sharded.device == sharded.sharding  # as JAX 0.10: a multi-device array answers its sharding


# -- storage (DESIGN section 8) --------------------------------------------------------------
@pytest.mark.parametrize("spec, distinct", [(P("x", "y"), 8), (P("x"), 2), (P(None, "y"), 4), (P(), 1)])
def test_replicas_share_one_stacked_block(mesh_2x4, spec, distinct):
    array = put(np.arange(32.0).reshape(4, 8), mesh_2x4, spec)
    blocks = array._blocks
    assert blocks.shape == (distinct,) + array.sharding.shard_shape(array.shape)  # stacked on a device axis
    assert len(array._block_of_device) == 8 and len(set(array._block_of_device)) == distinct
    by_index = {}
    for shard in array.addressable_shards:
        by_index.setdefault(repr(shard.index), []).append(np.asarray(shard.data))
    for replicas in by_index.values():
        assert all(np.shares_memory(replicas[0], replica) for replica in replicas)


# -- repr ---------------------------------------------------------------------------------------
# Goldens printed by JAX 0.10 for jax.device_put(value).
REPR_GOLDENS = [
    ('3.0', 'Array(3., dtype=float32, weak_type=True)'),
    ('3', 'Array(3, dtype=int32, weak_type=True)'),
    ('True', 'Array(True, dtype=bool)'),
    ('1+2j', 'Array(1.+2.j, dtype=complex64, weak_type=True)'),
    ('np.float32(2.5)', 'Array(2.5, dtype=float32)'),
    ('np.int32(-4)', 'Array(-4, dtype=int32)'),
    ('np.array(np.nan)', 'Array(nan, dtype=float32)'),
    ('np.arange(5)', 'Array([0, 1, 2, 3, 4], dtype=int32)'),
    ('np.array([True, False])', 'Array([ True, False], dtype=bool)'),
    ('np.arange(12, dtype=np.int32).reshape(3, 4)', 'Array([[ 0,  1,  2,  3],\n       [ 4,  5,  6,  7],\n       [ 8,  9, 10, 11]], dtype=int32)'),
    ('np.arange(24.0).reshape(2, 3, 4)', 'Array([[[ 0.,  1.,  2.,  3.],\n        [ 4.,  5.,  6.,  7.],\n        [ 8.,  9., 10., 11.]],\n\n       [[12., 13., 14., 15.],\n        [16., 17., 18., 19.],\n        [20., 21., 22., 23.]]], dtype=float32)'),
    ('np.linspace(0, 1, 17)', 'Array([0.    , 0.0625, 0.125 , 0.1875, 0.25  , 0.3125, 0.375 , 0.4375,\n       0.5   , 0.5625, 0.625 , 0.6875, 0.75  , 0.8125, 0.875 , 0.9375,\n       1.    ], dtype=float32)'),
    ('np.arange(7, dtype=np.float32) * 1e6 + 0.125', 'Array([1.2500000e-01, 1.0000001e+06, 2.0000001e+06, 3.0000000e+06,\n       4.0000000e+06, 5.0000000e+06, 6.0000000e+06], dtype=float32)'),
    ('np.arange(11, dtype=np.int32) * 10000000', 'Array([        0,  10000000,  20000000,  30000000,  40000000,  50000000,\n        60000000,  70000000,  80000000,  90000000, 100000000],      dtype=int32)'),
    ('np.zeros((0,))', 'Array([], shape=(0,), dtype=float32)'),
    ('np.zeros((3, 0), np.int32)', 'Array([], shape=(3, 0), dtype=int32)'),
    ('np.zeros((0, 2, 0), bool)', 'Array([], shape=(0, 2, 0), dtype=bool)'),
    ('np.arange(2000.0)', 'Array([0.000e+00, 1.000e+00, 2.000e+00, ..., 1.997e+03, 1.998e+03,\n       1.999e+03], dtype=float32)'),
    ('np.array([1e-8, 1.0])', 'Array([1.e-08, 1.e+00], dtype=float32)'),
    ('np.arange(6, dtype=np.uint8)', 'Array([0, 1, 2, 3, 4, 5], dtype=uint8)'),
    ('np.float16(1.5)', 'Array(1.5, dtype=float16)'),
    ('np.array([[1.5, -2.0]], np.float32)', 'Array([[ 1.5, -2. ]], dtype=float32)'),
]


@pytest.mark.parametrize("expression, text", REPR_GOLDENS)
def test_repr_matches_jax(expression, text):
    assert repr(meshjit.device_put(eval(expression))) == text


def test_repr_of_a_sharded_array_shows_the_global_value(mesh_2x4):
    array = put(np.arange(32.0).reshape(8, 4), mesh_2x4, P("x", "y"))
    assert repr(array) == repr(meshjit.device_put(np.arange(32.0).reshape(8, 4)))


# -- delete -------------------------------------------------------------------------------------
def deleted_array(mesh):
    array = put(np.arange(8.0).reshape(2, 4), mesh, P("x"))
    array.delete()
    return array


@pytest.mark.parametrize("use", [
    np.asarray,
    str,
    lambda array: array.addressable_shards,
    lambda array: array.global_shards,
    lambda array: array.addressable_data(0),
    lambda array: array.block_until_ready(),
    lambda array: array.tolist(),
    lambda array: meshjit.device_put(array, meshjit.devices()[1]),
])
def test_using_a_deleted_array_raises(mesh_2x4, use):
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[2, 4\]"):
        use(deleted_array(mesh_2x4))


def test_delete_keeps_metadata_and_is_idempotent(mesh_2x4):
    array = deleted_array(mesh_2x4)
    assert array.is_deleted()
    assert array.shape == (2, 4) and array.dtype == np.float32
    assert array.sharding == NamedSharding(mesh_2x4, P("x"))
    array.delete()
    assert array.is_deleted()
    assert "deleted" in repr(array)  # meshjit keeps repr usable for debugging (JAX raises)


def test_delete_leaves_other_arrays_alone(mesh_2x4):
    array = put(np.arange(8.0), mesh_2x4, P(("x", "y")))
    resharded = meshjit.device_put(array, NamedSharding(mesh_2x4, P()))
    shard = array.addressable_shards[0].data
    array.delete()
    assert not resharded.is_deleted() and not shard.is_deleted()
    np.testing.assert_array_equal(np.asarray(resharded), np.arange(8.0))
    assert np.asarray(shard).tolist() == [0.0]


def test_an_unpickled_array_keys_jit_on_this_process_s_sharding_token(mesh_2x4):
    import pickle

    from meshjit.runtime.array import sharding_token

    array = meshjit.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh_2x4, P("x")))
    state = pickle.dumps(array)
    # another process numbers its shardings its own way: a stale token must not survive
    tampered = pickle.loads(state)
    tampered.__setstate__({**vars(tampered), "_jit_signature": ((8, 8), array.dtype, -1, False)})
    assert tampered._jit_signature == array._jit_signature
    assert tampered._jit_signature[2] == sharding_token(NamedSharding(mesh_2x4, P("x")))
    np.testing.assert_array_equal(np.asarray(meshjit.jit(lambda a: a + 1)(pickle.loads(state))), 2)
