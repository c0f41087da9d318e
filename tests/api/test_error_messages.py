"""Every misuse of the public API raises JAX's exception type (where JAX has one) with a message
naming the argument, what was expected and what was given (DESIGN section 9).

One row per error path: the call, the exception type, and text the message must contain.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import meshjit as jax
from meshjit.sharding import (
    AxisType,
    DuplicateSpecError,
    GSPMDSharding,
    IndivisibleError,
    Mesh,
    NamedSharding,
    PmapSharding,
    PositionalSharding,
    ShardedAxis,
    ShardingSpec,
    SingleDeviceSharding,
    Unstacked,
    set_mesh,
)
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.fixture
def env(mesh_2x4):
    devices = jax.devices()
    return SimpleNamespace(
        devices=devices,
        mesh=mesh_2x4,
        mesh_2x2=Mesh(np.array(devices[:4]).reshape(2, 2), ("x", "y")),
        by_rows=NamedSharding(mesh_2x4, P("x")),  # 2 x 4 mesh, rows split over x, replicated over y
    )


def pieces(sharding, shape, dtype=np.float32):
    value = np.zeros(shape, dtype)
    return [jax.device_put(value[index], device)
            for device, index in sharding.addressable_devices_indices_map(shape).items()]


def make_from_pieces(env, replace=None, shape=(8, 2), **keywords):
    arrays = pieces(env.by_rows, (8, 2))
    if replace is not None:
        arrays = replace(arrays, env)
    return jax.make_array_from_single_device_arrays(shape, env.by_rows, arrays, **keywords)


def use_deleted(env):
    array = jax.device_put(np.zeros(4))
    array.delete()
    return np.asarray(array)


def with_mesh_only(env):
    with env.mesh:
        return jax.device_put(np.zeros((8, 8)), P("x"))


# id, call, exception type, text the message contains
ERRORS = [
    # -- Mesh, make_mesh, set_mesh
    ("mesh repeated axis names", lambda env: Mesh(np.array(env.devices).reshape(2, 4), ("x", "x")),
     ValueError, ["axis_names must be unique", "['x']", "('x', 'x')"]),
    ("mesh repeated devices", lambda env: Mesh(np.array(env.devices[:4] * 2).reshape(2, 4), ("x", "y")),
     ValueError, ["devices must be distinct", "[0, 1, 2, 3]"]),
    ("mesh rank differs from axis names", lambda env: Mesh(np.array(env.devices).reshape(2, 4), ("x",)),
     ValueError, ["`devices`", "`axis_names`", "devices.ndim == 2", "len(axis_names) == 1"]),
    ("mesh of non-devices", lambda env: Mesh(np.arange(8).reshape(2, 4), ("x", "y")),
     TypeError, ["Mesh devices must be meshjit devices", "got 0"]),
    ("mesh axis name not a string", lambda env: Mesh(np.array(env.devices), (1,)),
     TypeError, ["axis_names must be strings", "got 1"]),
    ("mesh axis_types of wrong length", lambda env: Mesh(np.array(env.devices).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Auto,)),
     ValueError, ["axis_types", "('x', 'y')", "(Auto,)"]),
    ("mesh axis_types not AxisType", lambda env: Mesh(np.array(env.devices).reshape(2, 4), ("x", "y"), axis_types=("auto", "auto")),
     TypeError, ["axis_types entries must be AxisType", "'auto'"]),
    ("make_mesh needs more devices", lambda env: jax.make_mesh((3, 4), ("x", "y")),
     ValueError, ["Number of devices 8", "axis_shapes (3, 4)", "12 devices", "8 are available"]),
    ("make_mesh names and shapes differ", lambda env: jax.make_mesh((2, 4), ("x",)),
     ValueError, ["axis_shapes (2, 4)", "axis_names ('x',)"]),
    ("set_mesh of a non-mesh", lambda env: set_mesh("x"),
     ValueError, ["set_mesh expects a Mesh", "str", "'x'"]),
    ("local_devices of an unknown process", lambda env: jax.local_devices(process_index=3),
     ValueError, ["process_index 3", "1 process"]),
    ("config option unknown", lambda env: jax.config.update("jax_enable_x32", True),
     AttributeError, ["jax_enable_x32", "jax_enable_x64"]),
    ("config value of wrong type", lambda env: jax.config.update("jax_enable_x64", "yes"),
     ValueError, ["jax_enable_x64", "bool", "'yes'"]),
    # -- PartitionSpec
    ("spec entry not a name", lambda env: P("x", 1),
     TypeError, ["PartitionSpec entry 1", "None, a mesh axis name or a tuple of names", "got 1", "int"]),
    ("spec tuple entry not a name", lambda env: P(("x", 2)),
     TypeError, ["PartitionSpec entry 0", "('x', 2)"]),
    # -- NamedSharding
    ("unknown axis", lambda env: NamedSharding(env.mesh, P("x", "z")),
     ValueError, ["Resource axis: z", "P('x', 'z')", "not found in mesh: ('x', 'y')"]),
    ("repeated axis", lambda env: NamedSharding(env.mesh, P("x", "x")),
     DuplicateSpecError, ["at most one positional dimension", "P('x', 'x')", "duplicate entries for `x`"]),
    ("repeated axis inside a tuple", lambda env: NamedSharding(env.mesh, P(("x", "y"), "y")),
     DuplicateSpecError, ["P(('x', 'y'), 'y')", "duplicate entries for `y`"]),
    ("spec longer than the rank", lambda env: jax.device_put(np.zeros(8), NamedSharding(env.mesh, P("x", "y"))),
     ValueError, ["P('x', 'y')", "rank at least 2", "value of rank 1"]),
    ("spec longer than a 0-d array", lambda env: NamedSharding(env.mesh, P("x")).shard_shape(()),
     ValueError, ["rank at least 1", "rank 0"]),
    ("indivisible dim on device_put", lambda env: jax.device_put(np.zeros(6), NamedSharding(env.mesh, P("y"))),
     IndivisibleError, ["array axis 0 is partitioned 4 times", "dimension size is 6", "full shape: (6,)"]),
    ("indivisible second dim", lambda env: NamedSharding(env.mesh, P(None, ("x", "y"))).shard_shape((3, 12)),
     IndivisibleError, ["array axis 1 is partitioned 8 times", "dimension size is 12", "(3, 12)"]),
    ("indivisible index map", lambda env: NamedSharding(env.mesh, P("x")).devices_indices_map((3,)),
     IndivisibleError, ["partitioned 2 times", "dimension size is 3"]),
    ("unknown memory kind", lambda env: NamedSharding(env.mesh, P("x"), memory_kind="hbm"),
     ValueError, ["device, pinned_host, unpinned_host", "Got memory kind: hbm"]),
    ("unknown memory kind by with_memory_kind", lambda env: env.by_rows.with_memory_kind("gpu"),
     ValueError, ["can address the following memory kinds", "Got memory kind: gpu"]),
    ("unknown memory kind of a single device", lambda env: SingleDeviceSharding(env.devices[0], memory_kind="disk"),
     ValueError, ["Got memory kind: disk"]),
    ("NamedSharding mesh not a Mesh", lambda env: NamedSharding("mesh", P()),
     TypeError, ["NamedSharding mesh must be a Mesh", "str", "'mesh'"]),
    ("NamedSharding spec not a PartitionSpec", lambda env: NamedSharding(env.mesh, ("x",)),
     TypeError, ["NamedSharding spec must be a PartitionSpec", "tuple", "('x',)"]),
    ("SingleDeviceSharding of a non-device", lambda env: SingleDeviceSharding("cpu:0"),
     TypeError, ["SingleDeviceSharding device must be a meshjit device", "'cpu:0'"]),
    ("global shape not a tuple", lambda env: env.by_rows.shard_shape(8),
     TypeError, ["global_shape must be a tuple of ints", "got 8"]),
    ("global shape negative", lambda env: env.by_rows.devices_indices_map((-2, 4)),
     ValueError, ["global_shape must have non-negative sizes", "(-2, 4)"]),
    # -- positional shardings
    ("positional of no devices", lambda env: PositionalSharding([]),
     ValueError, ["PositionalSharding devices must not be empty"]),
    ("positional with a repeated device", lambda env: PositionalSharding([env.devices[1], env.devices[1]]),
     ValueError, ["must not repeat a device", "[1, 1]"]),
    ("positional of non-devices", lambda env: PositionalSharding([0, 1]),
     TypeError, ["PositionalSharding devices must be a meshjit device", "int: 0"]),
    ("positional rank differs", lambda env: PositionalSharding(env.devices).reshape(2, 4).shard_shape((8,)),
     ValueError, ["shape (2, 4)", "rank 2", "got rank 1", "reshape"]),
    ("positional indivisible", lambda env: jax.device_put(np.zeros((4, 6)), PositionalSharding(env.devices).reshape(2, 4)),
     IndivisibleError, ["array axis 1 is partitioned 4 times", "dimension size is 6"]),
    ("pmap sharded_dim out of range", lambda env: PmapSharding.default((8,), sharded_dim=2),
     ValueError, ["sharded_dim 2", "shape (8,)"]),
    ("pmap dim larger than the device count", lambda env: PmapSharding.default((16, 2)),
     ValueError, ["size 16", "8 devices"]),
    ("pmap array of another size", lambda env: PmapSharding.default((8, 3)).shard_shape((4, 3)),
     ValueError, ["sharded dimension 0 with value 4 in shape (4, 3)", "number of devices=8"]),
    ("pmap spec not a ShardingSpec", lambda env: PmapSharding(np.array(env.devices), "spec"),
     TypeError, ["sharding_spec must be a ShardingSpec", "'spec'"]),
    ("pmap devices and spec disagree", lambda env: PmapSharding(np.array(env.devices[:4]), ShardingSpec((Unstacked(8),), (ShardedAxis(0),))),
     ValueError, ["devices of shape (4,)", "device mesh (8,)"]),
    ("gspmd text unreadable", lambda env: GSPMDSharding(env.devices, "devices=[2,4]"),
     ValueError, ["cannot parse GSPMD sharding 'devices=[2,4]'", "{devices=[2,4]<=[8]}"]),
    ("gspmd ids not a permutation", lambda env: GSPMDSharding(env.devices, "{devices=[2,4]0,0,1,2,3,4,5,6}"),
     ValueError, ["permutation of 8 device ids"]),
    ("gspmd tiles more devices than given", lambda env: GSPMDSharding(env.devices[:4], "{devices=[2,4]<=[8]}"),
     ValueError, ["{devices=[2,4]<=[8]}", "outside 0..3"]),
    ("gspmd maximal device not given", lambda env: GSPMDSharding(env.devices[:2], "{maximal device=5}"),
     ValueError, ["{maximal device=5}", "outside 0..1"]),
    ("gspmd sharding of wrong type", lambda env: GSPMDSharding(env.devices, 5),
     TypeError, ["op_sharding must be a TileAssignment or its text", "got 5"]),
    ("gspmd rank differs", lambda env: GSPMDSharding(env.devices, "{devices=[2,4]<=[8]}").shard_shape((8,)),
     ValueError, ["describes rank 2", "got rank 1"]),
    # -- device_put
    ("P without a mesh", lambda env: jax.device_put(np.zeros(8), P("x")),
     ValueError, ["device_put argument 0", "PartitionSpec P('x',) was given without a mesh", "set_mesh"]),
    ("P under `with mesh:` only", with_mesh_only,
     ValueError, ["without a mesh"]),
    ("P.UNCONSTRAINED outside jit", lambda env: jax.device_put(np.zeros(8), NamedSharding(env.mesh, P(P.UNCONSTRAINED))),
     ValueError, ["UNCONSTRAINED", "inside jit"]),
    ("device_put to a string", lambda env: jax.device_put(np.zeros(8), "cpu:0"),
     ValueError, ["device_put argument 0 must be a device, a Sharding, a PartitionSpec or None", "str: 'cpu:0'"]),
    ("device_put targets not a prefix", lambda env: jax.device_put({"a": 1, "b": 2}, [env.devices[0]]),
     ValueError, ["device_put device specification must be a tree prefix of the corresponding value"]),
    ("device_put of strings", lambda env: jax.device_put(np.array(["a", "b"])),
     TypeError, ["device_put argument 0", "dtype <U1 is not a valid array type"]),
    ("device_put of an object", lambda env: jax.device_put(object()),
     TypeError, ["device_put argument 0", "cannot interpret value of type object as an array"]),
    ("device_put of an int beyond int32", lambda env: jax.device_put(2 ** 31),
     OverflowError, ["Python int 2147483648 too large to convert to int32"]),
    ("device_put of a deleted array", lambda env: jax.device_put(use_deleted(env)),
     RuntimeError, ["Array has been deleted with shape=float32[4]"]),
    # -- make_array_from_single_device_arrays
    ("too few arrays", lambda env: make_from_pieces(env, lambda arrays, env: arrays[:-1]),
     ValueError, ["Expected 8 per-device arrays", "addressable by the sharding", "got 7"]),
    ("too many arrays", lambda env: make_from_pieces(env, lambda arrays, env: arrays + arrays[:1]),
     ValueError, ["Expected 8 per-device arrays", "got 9"]),
    ("no arrays", lambda env: make_from_pieces(env, lambda arrays, env: []),
     ValueError, ["Expected 8 per-device arrays", "got 0"]),
    ("mismatched shard shapes", lambda env: make_from_pieces(
        env, lambda arrays, env: arrays[:-1] + [jax.device_put(np.zeros((3, 2), np.float32), env.devices[7])]),
     ValueError, ["Expected shard shape (4, 2)", "single device array shape (3, 2)", "float32[8, 2]", "P('x',)"]),
    ("shape disagrees with the arrays", lambda env: make_from_pieces(env, shape=(8, 4)),
     ValueError, ["Expected shard shape (4, 4)", "single device array shape (4, 2)", "float32[8, 4]"]),
    ("shape of another rank", lambda env: make_from_pieces(env, shape=(8,)),
     ValueError, ["Expected shard shape (4,)", "(4, 2)"]),
    ("array on a device outside the sharding", lambda env: jax.make_array_from_single_device_arrays(
        (4, 2), NamedSharding(env.mesh_2x2, P("x", "y")),
        [jax.device_put(np.zeros((2, 1)), device) for device in env.devices[4:]]),
     ValueError, ["arrays[0] is on CpuDevice(id=4)", "not an addressable device of the sharding", "[0, 1, 2, 3]"]),
    ("repeated devices", lambda env: make_from_pieces(env, lambda arrays, env: arrays[:-1] + arrays[:1]),
     ValueError, ["must be from distinct devices", "device IDs [0, 1, 2, 3, 4, 5, 6, 0]"]),
    ("an array on several devices", lambda env: make_from_pieces(
        env, lambda arrays, env: [jax.device_put(np.zeros((4, 2)), NamedSharding(env.mesh, P()))] + arrays[1:]),
     ValueError, ["arrays[0] lives on 8 devices", "expected one"]),
    ("numpy arrays instead of Arrays", lambda env: make_from_pieces(env, lambda arrays, env: [np.asarray(a) for a in arrays]),
     TypeError, ["Unsupported type for elements in `arrays`", "ndarray at position 0", "meshjit.device_put"]),
    ("arrays of different dtypes", lambda env: make_from_pieces(
        env, lambda arrays, env: arrays[:-1] + [jax.device_put(np.zeros((4, 2), np.int32), env.devices[7])]),
     ValueError, ["matching dtypes", "Got int32, expected float32", "CpuDevice(id=7)"]),
    ("dtype argument disagrees", lambda env: make_from_pieces(env, dtype=np.int32),
     ValueError, ["If `dtype` is provided", "dtype=int32", "shard dtype=float32"]),
    ("shape not a tuple", lambda env: make_from_pieces(env, shape=8),
     TypeError, ["shape must be a tuple of non-negative ints", "got 8"]),
    ("shape with a negative size", lambda env: make_from_pieces(env, shape=(8, -2)),
     TypeError, ["shape must be a tuple of non-negative ints", "(8, -2)"]),
    ("sharding not a Sharding", lambda env: jax.make_array_from_single_device_arrays((8, 2), P("x"), []),
     TypeError, ["sharding must be a Sharding", "PartitionSpec: P('x',)"]),
    # -- make_array_from_callback and make_array_from_process_local_data
    ("callback returns the wrong shape", lambda env: jax.make_array_from_callback((8, 2), env.by_rows, lambda index: np.zeros((8, 2))),
     ValueError, ["data_callback returned shape (8, 2)", "for index (slice(0, 4, None), slice(None, None, None))", "shard shape", "is (4, 2)"]),
    ("callback on an indivisible shape", lambda env: jax.make_array_from_callback((6, 2), NamedSharding(env.mesh, P("y")), np.zeros),
     IndivisibleError, ["partitioned 4 times", "dimension size is 6"]),
    ("callback returns text", lambda env: jax.make_array_from_callback((8, 2), env.by_rows, lambda index: "data"),
     TypeError, ["data_callback result", "cannot interpret value of type str"]),
    ("callback sharding not a Sharding", lambda env: jax.make_array_from_callback((8,), "x", np.zeros),
     TypeError, ["sharding must be a Sharding", "str: 'x'"]),
    ("local data not covering the global shape", lambda env: jax.make_array_from_process_local_data(env.by_rows, np.zeros((8, 2)), (16, 2)),
     ValueError, ["local_data of shape (8, 2) does not cover", "global shape (16, 2)"]),
    ("local data of another rank", lambda env: jax.make_array_from_process_local_data(env.by_rows, np.zeros((8, 2)), (16,)),
     ValueError, ["global_shape (16,)", "local_data of shape (8, 2)", "rank"]),
    ("local data sharding not a Sharding", lambda env: jax.make_array_from_process_local_data(None, np.zeros(8)),
     TypeError, ["sharding must be a Sharding", "NoneType"]),
    # -- Array and debug
    ("addressable_data out of range", lambda env: jax.device_put(np.zeros((8, 2)), env.by_rows).addressable_data(8),
     IndexError, ["addressable_data index 8", "8 addressable shards"]),
    ("a deleted array", use_deleted,
     RuntimeError, ["Array has been deleted with shape=float32[4]"]),
    ("visualize a 3-d array", lambda env: jax.debug.visualize_array_sharding(jax.device_put(np.zeros((2, 2, 2)))),
     ValueError, ["1-d or 2-d arrays", "(2, 2, 2)"]),
    ("visualize an empty array", lambda env: jax.debug.visualize_array_sharding(jax.device_put(np.zeros((0, 2)))),
     ValueError, ["no elements", "(0, 2)"]),
    ("visualize a numpy array", lambda env: jax.debug.visualize_array_sharding(np.zeros(4)),
     TypeError, ["expects a meshjit.Array", "ndarray"]),
]


@pytest.mark.parametrize("name, call, error, fragments", ERRORS, ids=[row[0] for row in ERRORS])
def test_error(env, name, call, error, fragments):
    with pytest.raises(error) as caught:
        call(env)
    message = str(caught.value)
    missing = [fragment for fragment in fragments if fragment not in message]
    assert not missing, f"message {message!r} lacks {missing}"


def test_exception_types_are_those_of_jax():
    # JAX's IndivisibleError is a ValueError, its DuplicateSpecError is not.
    assert issubclass(IndivisibleError, ValueError)
    assert not issubclass(DuplicateSpecError, ValueError)
    assert jax.sharding.IndivisibleError is IndivisibleError
