"""device_put: every kind of target, pytrees and prefixes, list-to-list, resharding, committed and
weak types, and JAX's dtype canonicalisation with x64 off and on."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
from meshjit.sharding import (
    GSPMDSharding,
    Mesh,
    NamedSharding,
    PmapSharding,
    PositionalSharding,
    SingleDeviceSharding,
    set_mesh,
)
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


# -- targets ------------------------------------------------------------------------------------
def test_no_target_puts_an_uncommitted_array_on_the_first_device():
    array = meshjit.device_put(np.arange(4.0))
    assert array.sharding == SingleDeviceSharding(meshjit.devices()[0])
    assert not array.committed


def test_a_device_target_commits():
    array = meshjit.device_put(np.arange(4.0), meshjit.devices()[6])
    assert array.sharding == SingleDeviceSharding(meshjit.devices()[6])
    assert array.committed
    assert meshjit.device_put(meshjit.device_put(1.0), meshjit.devices()[0]).committed


@pytest.mark.parametrize("build", [
    lambda devices: SingleDeviceSharding(devices[2]),
    lambda devices: NamedSharding(Mesh(np.array(devices).reshape(2, 4), ("x", "y")), P("y", "x")),
    lambda devices: PositionalSharding(devices).reshape(4, 2),
    lambda devices: PmapSharding.default((8, 4)),
    lambda devices: GSPMDSharding(devices, "{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
], ids=["single", "named", "positional", "pmap", "gspmd"])
def test_a_sharding_target(build):
    sharding = build(meshjit.devices())
    value = np.arange(32, dtype=np.float32).reshape(8, 4)
    array = meshjit.device_put(value, sharding)
    assert array.sharding is sharding and array.committed
    np.testing.assert_array_equal(np.asarray(array), value)


def test_a_partition_spec_under_set_mesh(mesh_2x2x2):
    with set_mesh(mesh_2x2x2):
        array = meshjit.device_put(np.zeros((4, 4)), P(("x", "y"), "z"))
        tree = meshjit.device_put({"a": np.zeros(8), "b": np.zeros((2, 2))}, {"a": P("x"), "b": P()})
    assert array.sharding == NamedSharding(mesh_2x2x2, P(("x", "y"), "z"))
    assert array.sharding.shard_shape((4, 4)) == (1, 2)
    assert tree["a"].sharding == NamedSharding(mesh_2x2x2, P("x"))
    assert tree["b"].sharding == NamedSharding(mesh_2x2x2, P())


# -- pytrees ------------------------------------------------------------------------------------
def test_pytree_with_one_target_for_everything(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P())
    tree = {"a": np.ones(3), "b": (np.zeros((2, 2)), 5.0), "c": [None]}
    result = meshjit.device_put(tree, sharding)
    assert set(result) == {"a", "b", "c"} and isinstance(result["b"], tuple)
    assert result["c"] == [None]
    for leaf in (result["a"], *result["b"]):
        assert isinstance(leaf, meshjit.Array) and leaf.sharding == sharding
    assert result["b"][1].weak_type


def test_pytree_with_a_prefix_of_targets(mesh_2x4):
    by_row, replicated = NamedSharding(mesh_2x4, P("x")), NamedSharding(mesh_2x4, P())
    tree = {"params": {"w": np.ones((4, 4)), "b": np.ones(4)}, "step": 3}
    result = meshjit.device_put(tree, {"params": by_row, "step": replicated})
    assert result["params"]["w"].sharding == by_row and result["params"]["b"].sharding == by_row
    assert result["step"].sharding == replicated


def test_pytree_with_a_full_tree_of_targets(mesh_2x4):
    devices = meshjit.devices()
    tree = (np.ones(8), [np.ones(2), np.ones(3)])
    result = meshjit.device_put(tree, (NamedSharding(mesh_2x4, P(("x", "y"))), [devices[1], None]))
    assert result[0].sharding.shard_shape((8,)) == (1,)
    assert result[1][0].sharding == SingleDeviceSharding(devices[1]) and result[1][0].committed
    assert not result[1][1].committed  # None: default device, uncommitted


def test_list_to_list_as_in_seed_001(mesh_2x4):
    pieces = np.split(np.arange(32.0).reshape(8, 4), 8)
    result = meshjit.device_put(pieces, mesh_2x4.local_devices)
    assert isinstance(result, list) and len(result) == 8
    for piece, array, device in zip(pieces, result, mesh_2x4.local_devices):
        assert array.sharding == SingleDeviceSharding(device)
        np.testing.assert_array_equal(np.asarray(array), piece)


def test_none_leaves_and_empty_trees_pass_through(mesh_2x4):
    result = meshjit.device_put([np.ones(2), None, np.ones(2)], meshjit.devices()[:3])
    assert result[1] is None and result[2].devices() == {meshjit.devices()[2]}
    assert meshjit.device_put((), NamedSharding(mesh_2x4, P())) == ()
    assert meshjit.device_put(None) is None


# -- resharding ---------------------------------------------------------------------------------
RESHARDS = [
    ("x to y", lambda m: NamedSharding(m, P("x")), lambda m: NamedSharding(m, P("y"))),
    ("xy to replicated", lambda m: NamedSharding(m, P("x", "y")), lambda m: NamedSharding(m, P())),
    ("replicated to flat", lambda m: NamedSharding(m, P()), lambda m: NamedSharding(m, P(("x", "y")))),
    ("dim 0 to dim 1", lambda m: NamedSharding(m, P("x")), lambda m: NamedSharding(m, P(None, "x"))),
    ("single to named", lambda m: SingleDeviceSharding(m.devices.flat[5]), lambda m: NamedSharding(m, P("y", "x"))),
    ("named to single", lambda m: NamedSharding(m, P("y", "x")), lambda m: SingleDeviceSharding(m.devices.flat[5])),
    ("named to positional", lambda m: NamedSharding(m, P("x")), lambda m: PositionalSharding(list(m.devices.flat)).reshape(1, 8)),
    ("mesh to other mesh", lambda m: NamedSharding(m, P("x", "y")),
     lambda m: NamedSharding(Mesh(np.array(list(m.devices.flat)[::-1]).reshape(2, 2, 2), ("a", "b", "c")), P("c", ("a", "b")))),
]


@pytest.mark.parametrize("name, source, target", RESHARDS, ids=[row[0] for row in RESHARDS])
def test_resharding_a_committed_array(mesh_2x4, name, source, target):
    value = np.arange(64, dtype=np.float32).reshape(8, 8)
    original = meshjit.device_put(value, source(mesh_2x4))
    moved = meshjit.device_put(original, target(mesh_2x4))
    assert moved.sharding == target(mesh_2x4) and moved.committed
    np.testing.assert_array_equal(np.asarray(moved), value)
    indices = moved.sharding.devices_indices_map(value.shape)
    for shard in moved.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), value[indices[shard.device]])
    assert original.sharding == source(mesh_2x4)  # the source array is unchanged
    np.testing.assert_array_equal(np.asarray(original), value)


def test_putting_an_array_without_a_target_keeps_it(mesh_2x4):
    array = meshjit.device_put(np.ones((4, 4)), NamedSharding(mesh_2x4, P("x")))
    assert meshjit.device_put(array) is array
    assert meshjit.device_put(array, NamedSharding(mesh_2x4, P("x"))).sharding == array.sharding


def test_resharding_keeps_dtype_and_weak_type(mesh_2x4):
    weak = meshjit.device_put(3.0)
    moved = meshjit.device_put(weak, NamedSharding(mesh_2x4, P()))
    assert moved.weak_type and moved.dtype == np.float32
    ints = meshjit.device_put(np.arange(8, dtype=np.int32), NamedSharding(mesh_2x4, P("x")))
    assert meshjit.device_put(ints, meshjit.devices()[0]).dtype == np.int32


def test_extra_keyword_arguments_are_accepted():
    array = meshjit.device_put(np.ones(2), meshjit.devices()[1], donate=False, may_alias=None, src=None)
    assert array.devices() == {meshjit.devices()[1]}


# -- weak types and dtypes -----------------------------------------------------------------------
@pytest.mark.parametrize("value, dtype, weak", [
    (3, np.int32, True),
    (3.0, np.float32, True),
    (3j, np.complex64, True),
    (True, np.bool_, False),
    (np.float32(3), np.float32, False),
    (np.float64(3), np.float32, False),
    (np.int64(3), np.int32, False),
    (np.bool_(True), np.bool_, False),
    (-(2 ** 31), np.int32, True),
    (2 ** 31 - 1, np.int32, True),
])
def test_python_scalars_are_weakly_typed(value, dtype, weak):
    array = meshjit.device_put(value)
    assert array.dtype == np.dtype(dtype)
    assert array.weak_type is weak
    assert array.shape == ()


@pytest.mark.parametrize("source, narrowed, kept", [
    (np.float64, np.float32, np.float64),
    (np.int64, np.int32, np.int64),
    (np.uint64, np.uint32, np.uint64),
    (np.complex128, np.complex64, np.complex128),
    (np.float32, np.float32, np.float32),
    (np.float16, np.float16, np.float16),
    (np.int32, np.int32, np.int32),
    (np.int16, np.int16, np.int16),
    (np.uint8, np.uint8, np.uint8),
    (np.bool_, np.bool_, np.bool_),
])
class TestCanonicalDtypes:
    def test_without_x64(self, source, narrowed, kept):
        assert not meshjit.config.jax_enable_x64
        assert meshjit.device_put(np.zeros(3, source)).dtype == np.dtype(narrowed)

    def test_with_x64(self, x64, source, narrowed, kept):
        assert meshjit.config.jax_enable_x64
        assert meshjit.device_put(np.zeros(3, source)).dtype == np.dtype(kept)


def test_x64_fixture_restores_the_setting():
    assert not meshjit.config.jax_enable_x64


def test_python_scalars_with_x64(x64):
    assert meshjit.device_put(1).dtype == np.int64
    assert meshjit.device_put(1.0).dtype == np.float64
    assert meshjit.device_put(1j).dtype == np.complex128
    assert repr(meshjit.device_put(2 ** 40)) == "Array(1099511627776, dtype=int64, weak_type=True)"
    assert meshjit.device_put(-(2 ** 63)).dtype == np.int64


def test_python_ints_beyond_int32_overflow_without_x64():
    with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert to int32"):
        meshjit.device_put(2 ** 40)
    with pytest.raises(OverflowError, match="int32"):
        meshjit.device_put([1, -(2 ** 31) - 1])


def test_python_ints_beyond_int64_overflow_with_x64(x64):
    with pytest.raises(OverflowError, match="too large to convert to int64"):
        meshjit.device_put(2 ** 63)


def test_x64_applies_to_sharded_puts_and_shards(x64, mesh_2x4):
    array = meshjit.device_put(np.arange(8, dtype=np.int64), NamedSharding(mesh_2x4, P("y")))
    assert array.dtype == np.int64
    assert all(shard.data.dtype == np.int64 for shard in array.addressable_shards)


def test_array_likes_and_lists():
    assert meshjit.device_put(np.arange(3).tolist())[2].dtype == np.int32  # a list is a pytree of scalars
    nested = meshjit.device_put(np.array([[1, 2], [3, 4]], dtype=np.int8))
    assert nested.dtype == np.int8 and nested.shape == (2, 2)
    from_array = meshjit.device_put(meshjit.device_put(np.arange(4.0)), meshjit.devices()[2])
    np.testing.assert_array_equal(np.asarray(from_array), np.arange(4.0))
