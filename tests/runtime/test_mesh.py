"""Mesh, AxisType, make_mesh, and the mesh contexts (``with mesh:``, set_mesh, get_mesh)."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import meshjit
from meshjit.sharding import AxisType, Mesh, NamedSharding, get_mesh, set_mesh
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.mark.parametrize("name, shape, axis_names", [
    ("1", (1,), ("x",)),
    ("8", (8,), ("x",)),
    ("2x4", (2, 4), ("x", "y")),
    ("4x2", (4, 2), ("x", "y")),
    ("2x2x2", (2, 2, 2), ("x", "y", "z")),
])
def test_mesh_properties(mesh_of, name, shape, axis_names):
    mesh = mesh_of(name)
    assert mesh.axis_names == axis_names
    assert mesh.shape == OrderedDict(zip(axis_names, shape))
    assert list(mesh.shape) == list(axis_names)  # ordered like the axes
    assert mesh.size == math.prod(shape)
    assert mesh.axis_sizes == shape
    assert mesh.devices.shape == shape and mesh.devices.dtype == object
    assert list(mesh.devices.flat) == meshjit.devices()[:mesh.size]
    assert mesh.local_devices == meshjit.devices()[:mesh.size]
    assert mesh.axis_types == (AxisType.Auto,) * len(shape)
    assert not mesh.empty


# Goldens printed by JAX 0.10 for the same meshes.
@pytest.mark.parametrize("name, text, short", [
    ("2x4", "Mesh(axis_sizes=(2, 4), axis_names=('x', 'y'), axis_types=(Auto, Auto))",
     "Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto))"),
    ("8", "Mesh(axis_sizes=(8,), axis_names=('x',), axis_types=(Auto,))",
     "Mesh('x': 8, axis_types=(Auto,))"),
    ("2x2x2", "Mesh(axis_sizes=(2, 2, 2), axis_names=('x', 'y', 'z'), axis_types=(Auto, Auto, Auto))",
     "Mesh('x': 2, 'y': 2, 'z': 2, axis_types=(Auto, Auto, Auto))"),
])
def test_mesh_repr_and_str_match_jax(mesh_of, name, text, short):
    assert repr(mesh_of(name)) == text
    assert str(mesh_of(name)) == short


def test_mesh_accepts_lists_and_a_single_axis_name():
    devices = meshjit.devices()
    assert Mesh(devices, ("x",)) == Mesh(np.array(devices), ("x",))
    assert Mesh(devices, "x").axis_names == ("x",)
    nested = Mesh([devices[:4], devices[4:]], ("x", "y"))
    assert nested == Mesh(np.array(devices).reshape(2, 4), ("x", "y"))


def test_mesh_devices_are_read_only(mesh_2x4):
    with pytest.raises(ValueError):
        mesh_2x4.devices[0, 0] = meshjit.devices()[7]


def test_mesh_copies_the_callers_array():
    devices = np.array(meshjit.devices()).reshape(2, 4)
    mesh = Mesh(devices, ("x", "y"))
    devices[0, 0] = meshjit.devices()[7]
    assert mesh.devices[0, 0] == meshjit.devices()[0]


def test_mesh_equality_and_hash():
    devices = np.array(meshjit.devices())
    same = [Mesh(devices.reshape(2, 4), ("x", "y")), Mesh(devices.reshape(2, 4), ("x", "y"))]
    assert same[0] == same[1] and hash(same[0]) == hash(same[1])
    different = [
        Mesh(devices.reshape(4, 2), ("x", "y")),
        Mesh(devices.reshape(2, 4), ("a", "b")),
        Mesh(devices[::-1].reshape(2, 4), ("x", "y")),
        Mesh(devices.reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)),
        Mesh(devices[:4].reshape(2, 2), ("x", "y")),
    ]
    for other in different:
        assert other != same[0]
    assert len({same[0], same[1], *different}) == 1 + len(different)
    assert same[0] != "mesh"


@pytest.mark.parametrize("axis_types, expected", [
    (None, (AxisType.Auto, AxisType.Auto)),
    ((AxisType.Explicit, AxisType.Auto), (AxisType.Explicit, AxisType.Auto)),
    ((AxisType.Manual, AxisType.Explicit), (AxisType.Manual, AxisType.Explicit)),
])
def test_mesh_axis_types(axis_types, expected):
    mesh = Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y"), axis_types=axis_types)
    assert mesh.axis_types == expected
    assert mesh.explicit_axes == tuple(n for n, t in zip("xy", expected) if t is AxisType.Explicit)
    assert mesh.auto_axes == tuple(n for n, t in zip("xy", expected) if t is AxisType.Auto)
    assert mesh.manual_axes == tuple(n for n, t in zip("xy", expected) if t is AxisType.Manual)


def test_axis_type_members():
    assert [kind.name for kind in AxisType] == ["Auto", "Explicit", "Manual"]
    assert repr(AxisType.Explicit) == "Explicit"


# -- contexts ----------------------------------------------------------------------------------
def test_mesh_is_a_context_manager(mesh_2x4, mesh_8):
    from meshjit.runtime.mesh import resource_mesh

    assert resource_mesh() is None
    with mesh_2x4 as entered:
        assert entered is mesh_2x4
        assert resource_mesh() is mesh_2x4
        with mesh_8:
            assert resource_mesh() is mesh_8
        assert resource_mesh() is mesh_2x4
    assert resource_mesh() is None


def test_with_mesh_does_not_set_the_mesh_of_get_mesh(mesh_2x4):
    # JAX 0.10: only set_mesh changes get_mesh(); `with mesh:` is the legacy resource context.
    with mesh_2x4:
        assert get_mesh().empty


def test_get_mesh_without_a_mesh_is_the_empty_mesh():
    mesh = get_mesh()
    assert mesh.empty and mesh.size == 0
    assert mesh.axis_names == () and mesh.shape == OrderedDict()
    assert mesh.devices.shape == () and mesh.local_devices == []
    assert repr(mesh) == "Mesh(axis_sizes=(), axis_names=())"
    assert str(mesh) == "Mesh()"
    assert mesh == get_mesh()


def test_set_mesh_as_a_context(mesh_2x4, mesh_8):
    with set_mesh(mesh_2x4) as entered:
        assert entered is mesh_2x4 and get_mesh() is mesh_2x4
        with meshjit.sharding.set_mesh(mesh_8):
            assert get_mesh() is mesh_8
        assert get_mesh() is mesh_2x4
    assert get_mesh().empty


def test_set_mesh_as_a_plain_call(mesh_2x4):
    meshjit.set_mesh(mesh_2x4)  # restore_runtime_state puts the previous mesh back
    assert get_mesh() is mesh_2x4
    assert meshjit.set_mesh is meshjit.sharding.set_mesh


def test_set_mesh_makes_bare_partition_specs_usable(mesh_2x4):
    with set_mesh(mesh_2x4):
        array = meshjit.device_put(np.arange(16.0).reshape(8, 2), P("x"))
    assert array.sharding == NamedSharding(mesh_2x4, P("x"))


# -- make_mesh ---------------------------------------------------------------------------------
@pytest.mark.parametrize("axis_shapes, axis_names", [
    ((2, 4), ("x", "y")), ((2, 2, 2), ("x", "y", "z")), ((8,), ("x",)), ((4,), ("x",)), ((1, 8), ("a", "b")),
])
def test_make_mesh(axis_shapes, axis_names):
    mesh = meshjit.make_mesh(axis_shapes, axis_names)
    assert mesh.axis_sizes == axis_shapes and mesh.axis_names == axis_names
    assert list(mesh.devices.flat) == meshjit.devices()[:math.prod(axis_shapes)]
    assert mesh.axis_types == (AxisType.Explicit,) * len(axis_shapes)  # JAX 0.10's default


def test_make_mesh_repr_matches_jax():
    text = "Mesh(axis_sizes=(2, 4), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
    assert repr(meshjit.make_mesh((2, 4), ("x", "y"))) == text


def test_make_mesh_with_axis_types_and_devices():
    devices = meshjit.devices()[::-1]
    mesh = meshjit.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto), devices=devices)
    assert [device.id for device in mesh.devices.flat] == [7, 6, 5, 4]
    assert mesh.axis_types == (AxisType.Auto, AxisType.Auto)


def test_make_mesh_takes_axis_types_positionally_as_jax_0_10():
    mesh = meshjit.make_mesh((2, 4), ("x", "y"), (AxisType.Auto,) * 2)
    assert mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert meshjit.make_mesh((8,), ("x",), [AxisType.Manual]).axis_types == (AxisType.Manual,)
    explicit = meshjit.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    assert explicit == meshjit.make_mesh((2, 4), ("x", "y"))  # Explicit is the default


def test_make_mesh_uses_the_first_of_the_given_devices_in_order():
    # JAX 0.10.2 on CPU: make_mesh((2, 2), ..., devices=8 devices) takes devices 0-3.
    assert [device.id for device in meshjit.make_mesh((2, 2), ("x", "y"), devices=meshjit.devices()).devices.flat] == [0, 1, 2, 3]
    assert meshjit.make_mesh((3,), "x").axis_names == ("x",)
    assert meshjit.make_mesh((2.0, 4), ("x", "y")).axis_sizes == (2, 4)  # integral floats pass, as in JAX


@pytest.mark.parametrize("arguments, keywords, error, text", [
    # JAX 0.10.2: ValueError "Number of devices 8 must be >= the product of mesh_shape (2, 8)".
    (((2, 8), ("x", "y")), {}, ValueError, "Number of devices 8 must be >= the product of mesh_shape (2, 8)"),
    (((2, 4), ("x", "y")), {"devices": "first four"}, ValueError, "Number of devices 4 must be >="),
    # JAX 0.10.2: ValueError from Mesh (ndim of devices differs from len(axis_names)).
    (((2, 4), ("x",)), {}, ValueError, "differ in length"),
    (((2, 4), ("x", "y"), (AxisType.Auto,)), {}, ValueError,
     "Got axis_names=('x', 'y') and axis_types=(Auto,)"),
    (((2, "a"), ("x", "y")), {}, ValueError, "should be a sequence of ints. Got (2, 'a')"),
    (((2.5,), ("x",)), {}, ValueError, "should be a sequence of ints"),
    (((float("inf"),), ("x",)), {}, ValueError, "should be a sequence of ints"),
    ((8, ("x",)), {}, TypeError, "axis_shapes must be a sequence of ints, got int: 8"),
    # meshjit only: JAX fails with IndexError or an unrelated message on these.
    (((0,), ("x",)), {}, ValueError, "must be positive, got (0,)"),
    (((-2,), ("x",)), {}, ValueError, "must be positive, got (-2,)"),
    (((), ()), {}, ValueError, "needs at least one axis"),
])
def test_make_mesh_errors(arguments, keywords, error, text):
    if keywords.get("devices") == "first four":
        keywords = {"devices": meshjit.devices()[:4]}
    with pytest.raises(error) as raised:
        meshjit.make_mesh(*arguments, **keywords)
    assert text in str(raised.value)


def test_a_default_make_mesh_works_with_device_put_jit_and_shard_map():
    mesh = meshjit.make_mesh((2, 4), ("x", "y"))  # every axis Explicit
    value = np.arange(32.0).reshape(8, 4)
    array = meshjit.device_put(value, meshjit.NamedSharding(mesh, meshjit.P("x", "y")))
    assert array.sharding.mesh.axis_types == (AxisType.Explicit,) * 2
    doubled = meshjit.jit(lambda a: a * 2)(array)
    np.testing.assert_array_equal(np.asarray(doubled), value * 2)
    assert doubled.sharding == NamedSharding(mesh, P("x", "y"))  # as JAX 0.10.2 gives
    summed = meshjit.shard_map(lambda block: meshjit.lax.psum(block.sum(0, keepdims=True), "x"), mesh=mesh,
                               in_specs=meshjit.P("x", "y"), out_specs=meshjit.P(None, "y"))(array)
    np.testing.assert_array_equal(np.asarray(summed), [[112.0, 120.0, 128.0, 136.0]])
    assert summed.sharding == NamedSharding(mesh, P(None, "y"))
    with set_mesh(mesh):
        placed = meshjit.device_put(value, meshjit.P("x"))
        inferred = meshjit.shard_map(lambda block: block + 1, out_specs=meshjit.P("x"))(placed)
    assert placed.sharding == inferred.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(inferred), value + 1)


def test_top_level_short_names_are_the_sharding_classes():
    assert meshjit.P is P and meshjit.NamedSharding is NamedSharding
