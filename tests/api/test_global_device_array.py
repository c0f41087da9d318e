"""GlobalDeviceArray (seed 004): constructors, properties, shards, conversions and bad input.

The seed's own example (a 4 x 8 mesh, run through pjit) lives in test_pjit.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import meshjit as jax
from meshjit.experimental.global_device_array import GlobalDeviceArray, Shard, get_shard_indices
from meshjit.sharding import IndivisibleError, Mesh, NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

SHAPE = (8, 8)
DATA = np.arange(64, dtype=np.float32).reshape(SHAPE)


def buffers_for(mesh, mesh_axes, data=DATA):
    """One single-device Array per local mesh device, in mesh order."""
    indices = get_shard_indices(data.shape, mesh, mesh_axes)
    return [jax.device_put(data[indices[device]], device) for device in mesh.local_devices]


# Every form the seed allows for mesh_axes, on the 2 x 4 mesh ('x'=2, 'y'=4), with the spec it means.
MESH_AXES_FORMS = [
    (P("x", "y"), P("x", "y")),
    (["x", "y"], P("x", "y")),
    (("y", "x"), P("y", "x")),
    (["x"], P("x")),                      # shorter than the rank: dim 1 not partitioned
    ("y", P("y")),                        # a bare axis name is one entry
    ([("x", "y")], P(("x", "y"))),        # a tuple of names splits one dim over both axes
    ([None, ("y", "x")], P(None, ("y", "x"))),
    ([None, "y"], P(None, "y")),          # partial replication over x
    ([None, None], P(None, None)),
    ([], P()),
    (None, P()),
]


@pytest.mark.parametrize("mesh_axes, spec", MESH_AXES_FORMS, ids=[repr(form) for form, _ in MESH_AXES_FORMS])
def test_every_mesh_axes_form_lays_data_out_as_its_partition_spec(mesh_2x4, mesh_axes, spec):
    gda = GlobalDeviceArray(SHAPE, mesh_2x4, mesh_axes, buffers_for(mesh_2x4, mesh_axes))
    assert gda.mesh_axes == spec
    assert gda.sharding == NamedSharding(mesh_2x4, spec)
    expected = NamedSharding(mesh_2x4, spec).devices_indices_map(SHAPE)
    assert [shard.index for shard in gda.local_shards] == [expected[d] for d in mesh_2x4.local_devices]
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    assert gda.is_fully_replicated == (not spec.used_axes())


def test_properties(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x"), lambda index: DATA[index])
    assert gda.shape == SHAPE and isinstance(gda.shape, tuple)
    assert gda.dtype == np.float32
    assert gda.ndim == 2
    assert gda.size == 64
    assert gda.mesh is mesh_2x4
    assert gda.is_fully_replicated is False
    assert gda.block_until_ready() is gda
    assert "GlobalDeviceArray(shape=(8, 8), dtype=float32" in repr(gda)


def test_keyword_arguments_as_the_seed_names_them(mesh_2x4):
    gda = GlobalDeviceArray(global_shape=SHAPE, global_mesh=mesh_2x4, mesh_axes=P("x", "y"),
                            device_buffers=buffers_for(mesh_2x4, P("x", "y")), _gda_fast_path_args=None)
    made = GlobalDeviceArray.from_callback(global_shape=SHAPE, global_mesh=mesh_2x4, mesh_axes=P("x", "y"),
                                           data_callback=lambda index: DATA[index])
    np.testing.assert_array_equal(np.asarray(gda), np.asarray(made))


def test_local_shards_with_partial_replication(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, ["x"], lambda index: DATA[index])
    shards = gda.local_shards
    assert all(isinstance(shard, Shard) for shard in shards)
    assert [shard.device for shard in shards] == mesh_2x4.local_devices
    # x splits rows in two; the four y devices of each row hold replicas 0..3 of that half.
    assert [shard.replica_id for shard in shards] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [shard.index for shard in shards] == [(slice(0, 4), slice(None))] * 4 + [(slice(4, 8), slice(None))] * 4
    for shard in shards:
        assert shard.data.shape == (4, 8)
        assert shard.data.sharding == SingleDeviceSharding(shard.device)
        np.testing.assert_array_equal(np.asarray(shard.data), DATA[shard.index])


def test_global_shards_equal_local_shards_in_one_process(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("y"), lambda index: DATA[index])
    assert [(s.device, s.index, s.replica_id) for s in gda.global_shards] == \
        [(s.device, s.index, s.replica_id) for s in gda.local_shards]


def test_local_data_is_the_shard_data(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x", "y"), lambda index: DATA[index])
    for position, shard in enumerate(gda.local_shards):
        data = gda.local_data(position)
        assert data.sharding == SingleDeviceSharding(shard.device)
        np.testing.assert_array_equal(np.asarray(data), np.asarray(shard.data))
    with pytest.raises(IndexError, match="out of range for 8"):
        gda.local_data(8)


def test_device_buffers_in_another_device_order_are_a_value_error(mesh_2x4):
    buffers = buffers_for(mesh_2x4, P("x", "y"))
    with pytest.raises(ValueError, match=r"The `global_mesh.local_devices` and `device_buffers` device order"):
        GlobalDeviceArray(SHAPE, mesh_2x4, P("x", "y"), buffers[::-1])
    # the seed's own mistake: a mesh whose device order is not jax.local_devices()
    devices = np.array(jax.devices(), dtype=object)[[0, 2, 1, 3, 4, 6, 7, 5]].reshape(4, 2)
    shuffled = Mesh(devices, ("x", "y"))
    indices = get_shard_indices(SHAPE, shuffled, P("x", "y"))
    in_process_order = [jax.device_put(DATA[indices[device]], device) for device in jax.local_devices()]
    with pytest.raises(ValueError, match="device order doesn't match"):
        GlobalDeviceArray(SHAPE, shuffled, P("x", "y"), in_process_order)
    in_mesh_order = [jax.device_put(DATA[indices[device]], device) for device in shuffled.local_devices]
    np.testing.assert_array_equal(np.asarray(GlobalDeviceArray(SHAPE, shuffled, P("x", "y"), in_mesh_order)), DATA)


def test_from_callback_is_called_once_per_local_device_in_order(mesh_2x4):
    calls = []

    def callback(index):
        calls.append(index)
        return DATA[index]

    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x"), callback)
    expected = get_shard_indices(SHAPE, mesh_2x4, P("x"))
    assert calls == [expected[device] for device in mesh_2x4.local_devices]
    np.testing.assert_array_equal(np.asarray(gda), DATA)


def test_addressable_shards_and_data_alias_the_local_ones(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x", "y"), lambda index: DATA[index])
    for shard, local in zip(gda.addressable_shards, gda.local_shards, strict=True):
        assert (shard.device, shard.index, shard.replica_id) == (local.device, local.index, local.replica_id)
        np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(local.data))
    for position, device in enumerate(mesh_2x4.local_devices):
        data = gda.addressable_data(position)
        assert data.sharding.device_set == {device}
        np.testing.assert_array_equal(np.asarray(data), np.asarray(gda.local_data(position)))
    with pytest.raises(IndexError):
        gda.addressable_data(8)


def test_equality_is_intentionally_unimplemented(mesh_2x4):
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x"), lambda index: DATA[index])
    with pytest.raises(NotImplementedError, match="intentionally unimplemented"):
        gda == gda  # noqa: B015, PLR0124
    with pytest.raises(TypeError):
        hash(gda)


def test_host_buffers_go_to_local_devices_in_order(mesh_2x4):
    indices = get_shard_indices(SHAPE, mesh_2x4, P("x", "y"))
    gda = GlobalDeviceArray(SHAPE, mesh_2x4, P("x", "y"), [DATA[indices[d]] for d in mesh_2x4.local_devices])
    np.testing.assert_array_equal(np.asarray(gda), DATA)


def test_dtypes_follow_jax_defaults(mesh_2x4):
    values = np.arange(64).reshape(SHAPE)  # int64 on the host
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x"), lambda index: values[index])
    assert gda.dtype == np.int32


def test_from_callback_on_a_mesh_that_is_not_all_devices():
    devices = np.array(jax.devices()[4:8], dtype=object).reshape(2, 2)
    mesh = Mesh(devices, ("a", "b"))
    gda = GlobalDeviceArray.from_callback((4, 6), mesh, P("b"), lambda index: np.ones((4, 6))[index])
    assert [shard.device.id for shard in gda.local_shards] == [4, 5, 6, 7]
    assert gda.local_shards[0].data.shape == (2, 6)


def test_from_batched_callback_gets_every_local_index_once(mesh_2x4):
    calls = []

    def callback(indices):
        calls.append(indices)
        return [DATA[index] for index in indices]

    gda = GlobalDeviceArray.from_batched_callback(SHAPE, mesh_2x4, [None, "y"], callback)
    expected = get_shard_indices(SHAPE, mesh_2x4, [None, "y"])
    assert calls == [[expected[device] for device in mesh_2x4.local_devices]]
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    assert [shard.replica_id for shard in gda.local_shards] == [0, 0, 0, 0, 1, 1, 1, 1]


def _put_on_each_device(pairs):
    """The seed's callback: for each (index, devices) pair, the data on every one of the devices."""
    return [jax.device_put(DATA[index], device) for index, devices in pairs for device in devices]


def test_from_batched_callback_with_devices(mesh_2x4):
    seen = []

    def callback(pairs):
        seen.extend(pairs)
        return _put_on_each_device(pairs)

    gda = GlobalDeviceArray.from_batched_callback_with_devices(SHAPE, mesh_2x4, P("x", "y"), callback)
    indices = get_shard_indices(SHAPE, mesh_2x4, P("x", "y"))
    assert seen == [(indices[device], (device,)) for device in mesh_2x4.local_devices]
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    host = GlobalDeviceArray.from_batched_callback_with_devices(
        SHAPE, mesh_2x4, P("x", "y"), lambda pairs: [DATA[index] for index, _ in pairs])
    np.testing.assert_array_equal(np.asarray(host), DATA)


@pytest.mark.parametrize("mesh_axes", [P("x"), P("y"), P(None, "y"), P()])
def test_from_batched_callback_with_devices_groups_the_devices_of_each_index(mesh_2x4, mesh_axes):
    seen = []

    def callback(pairs):
        seen.extend(pairs)
        return _put_on_each_device(pairs)

    gda = GlobalDeviceArray.from_batched_callback_with_devices(SHAPE, mesh_2x4, mesh_axes, callback)
    indices = get_shard_indices(SHAPE, mesh_2x4, mesh_axes)
    distinct = list(dict.fromkeys(str(indices[device]) for device in mesh_2x4.local_devices))
    assert [str(index) for index, _ in seen] == distinct
    for index, devices in seen:
        assert devices == tuple(device for device in mesh_2x4.local_devices if indices[device] == index)
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    assert [shard.device for shard in gda.local_shards] == mesh_2x4.local_devices


def test_conversions_to_and_from_array(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("y", "x"))
    array = jax.device_put(DATA, sharding)
    gda = GlobalDeviceArray.from_array(array)
    assert gda.to_array() is array
    assert gda.mesh_axes == P("y", "x") and gda.mesh is mesh_2x4
    back = GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P("x"), lambda index: DATA[index]).to_array()
    assert isinstance(back, jax.Array) and back.sharding == NamedSharding(mesh_2x4, P("x"))
    np.testing.assert_array_equal(np.asarray(back), DATA)


def test_from_array_needs_a_named_sharding():
    with pytest.raises(TypeError, match="NamedSharding"):
        GlobalDeviceArray.from_array(jax.device_put(DATA, jax.devices()[0]))
    with pytest.raises(TypeError, match="meshjit.Array"):
        GlobalDeviceArray.from_array(DATA)


def test_is_fully_replicated(mesh_2x4):
    assert GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, P(), lambda index: DATA[index]).is_fully_replicated
    assert not GlobalDeviceArray.from_callback(SHAPE, mesh_2x4, [None, "x"], lambda i: DATA[i]).is_fully_replicated
    one = Mesh(np.array(jax.devices()[:1], dtype=object).reshape(1, 1), ("x", "y"))
    assert GlobalDeviceArray.from_callback(SHAPE, one, P("x", "y"), lambda index: DATA[index]).is_fully_replicated


def test_other_process_shards_have_no_data(two_processes):
    mesh = Mesh(np.array(two_processes, dtype=object).reshape(2, 4), ("x", "y"))
    gda = GlobalDeviceArray.from_callback(SHAPE, mesh, P("x", "y"), lambda index: DATA[index])
    assert [shard.device.id for shard in gda.local_shards] == [0, 1, 2, 3]
    assert [shard.data is None for shard in gda.global_shards] == [False] * 4 + [True] * 4
    assert gda.global_shards[5].index == (slice(4, 8), slice(2, 4))
    buffers = [jax.device_put(DATA[shard.index], shard.device) for shard in gda.local_shards]
    rebuilt = GlobalDeviceArray(SHAPE, mesh, P("x", "y"), buffers)
    assert len(rebuilt.local_shards) == 4 and len(rebuilt.global_shards) == 8
    with pytest.raises(ValueError, match="device_buffers has 8 buffers, but global_mesh has 4 local devices"):
        GlobalDeviceArray(SHAPE, mesh, P("x", "y"), buffers + buffers)


# -- bad input: (name, call on the fixture's namespace, exception type, text the message must contain)
def from_callback(env, mesh_axes, shape=SHAPE):
    values = np.ones(shape, np.float32)
    return GlobalDeviceArray.from_callback(shape, env.mesh, mesh_axes, lambda index: values[index])


def batched(env, callback):
    return GlobalDeviceArray.from_batched_callback(SHAPE, env.mesh, P("x"), callback)


def on_device_zero(pairs):
    return [jax.device_put(DATA[index], jax.devices()[0]) for index, devices in pairs for _ in devices]


BAD_INPUTS = [
    ("too few buffers", lambda env: GlobalDeviceArray(SHAPE, env.mesh, P("x", "y"), env.buffers[:7]),
     ValueError, "device_buffers has 7 buffers, but global_mesh has 8 local devices"),
    ("buffer shape", lambda env: GlobalDeviceArray(SHAPE, env.mesh, P("x"), env.buffers),
     ValueError, ("device_buffers[0] has shape (4, 2), but global_shape (8, 8) with mesh_axes "
                  "P('x',) has per-device shape (4, 8)")),
    ("device outside mesh", lambda env: GlobalDeviceArray(SHAPE, env.small, P("x", "y"), env.outside),
     ValueError, "device_buffers[3] is on CpuDevice(id=6), which is not a local device of global_mesh"),
    ("repeated device", lambda env: GlobalDeviceArray(SHAPE, env.mesh, P("x", "y"), env.buffers[:7] + env.buffers[:1]),
     ValueError, "device_buffers[7] is on CpuDevice(id=0), but local device 7 of global_mesh is CpuDevice(id=7)"),
    ("multi-device buffer", lambda env: GlobalDeviceArray(SHAPE, env.mesh, P(), [env.replicated] * 8),
     ValueError, "device_buffers[0] lives on 8 devices"),
    ("buffers not a sequence", lambda env: GlobalDeviceArray(SHAPE, env.mesh, P(), DATA),
     TypeError, "device_buffers must be a sequence"),
    ("unknown axis", lambda env: from_callback(env, P("x", "z")),
     ValueError, ("mesh_axes P('x', 'z') names axis 'z', which is not an axis of global_mesh; "
                  "its axes are ('x', 'y')")),
    ("longer than rank", lambda env: from_callback(env, ["x", None, "y"]),
     ValueError, "mesh_axes P('x', None, 'y') has 3 entries, but global_shape (8, 8) has rank 2"),
    ("repeated axis", lambda env: from_callback(env, ["x", "x"]),
     ValueError, "uses mesh axes ['x'] more than once"),
    ("indivisible", lambda env: from_callback(env, [None, ("x", "y")], shape=(8, 6)),
     IndivisibleError, "dim 1 has size 6, which mesh_axes entry ('x', 'y') splits 8 ways"),
    ("bad entry", lambda env: from_callback(env, ["x", 3]), TypeError, "mesh_axes ['x', 3]"),
    ("bad mesh_axes type", lambda env: from_callback(env, 3),
     TypeError, "mesh_axes must be a PartitionSpec or a sequence"),
    ("unconstrained", lambda env: from_callback(env, P(P.UNCONSTRAINED)),
     ValueError, "may not use P.UNCONSTRAINED"),
    ("bad mesh", lambda env: GlobalDeviceArray.from_callback(SHAPE, "mesh", P(), lambda index: DATA),
     TypeError, "global_mesh must be a Mesh, got str"),
    ("bad shape", lambda env: GlobalDeviceArray.from_callback([8, -1], env.mesh, P(), lambda index: DATA),
     TypeError, "global_shape must be a tuple of non-negative ints, got [8, -1]"),
    ("callback shape", lambda env: GlobalDeviceArray.from_callback(SHAPE, env.mesh, P("x"), lambda index: DATA),
     ValueError, "data_callback returned shape (8, 8)"),
    ("batch count", lambda env: batched(env, lambda indices: [DATA[index] for index in indices[:2]]),
     ValueError, "data_callback returned 2 arrays for 8 local devices"),
    ("batch shape", lambda env: batched(env, lambda indices: [DATA] * 8),
     ValueError, "data_callback result[0] has shape (8, 8), but global_shape (8, 8) with mesh_axes"),
    ("batch not a list", lambda env: batched(env, lambda indices: DATA),
     TypeError, "data_callback must return a list"),
    ("batch wrong device", lambda env: GlobalDeviceArray.from_batched_callback_with_devices(
        SHAPE, env.mesh, P("x"), on_device_zero),
     ValueError, "data_callback result 1 is on devices [0], but it was asked for device CpuDevice(id=1)"),
]


@pytest.fixture
def env(mesh_2x4):
    small = Mesh(np.array(jax.devices()[:4], dtype=object).reshape(2, 2), ("x", "y"))
    outside = jax.device_put(np.zeros((4, 4), np.float32), jax.devices()[6])
    return SimpleNamespace(
        mesh=mesh_2x4,
        buffers=buffers_for(mesh_2x4, P("x", "y")),
        small=small,
        outside=buffers_for(small, P("x", "y"))[:3] + [outside],
        replicated=jax.device_put(DATA, NamedSharding(mesh_2x4, P())),
    )


@pytest.mark.parametrize("call, error_type, text", [case[1:] for case in BAD_INPUTS],
                         ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_names_the_argument(env, call, error_type, text):
    with pytest.raises(error_type) as raised:
        call(env)
    assert text in str(raised.value)
