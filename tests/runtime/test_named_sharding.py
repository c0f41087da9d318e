"""NamedSharding: index maps, shard shapes and replica ids against an independent oracle, on meshes
1, 8, 2x4, 4x2 and 2x2x2 with partial replication, uneven-but-divisible, 0-d and size-0 shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import meshjit
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def expected_indices(mesh: Mesh, spec: P, shape) -> dict:
    """Written from the definition (checked against JAX 0.10): a dim split over axes (a, b) is cut
    into size(a) * size(b) blocks, and the device at mesh coordinate c holds block
    c[a] * size(b) + c[b]; dims over no axes (or axes of size 1) are whole."""
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
    result = {}
    for coordinate in np.ndindex(mesh.devices.shape):
        position = dict(zip(mesh.axis_names, coordinate))
        index = []
        for dim, size in enumerate(shape):
            entry = spec[dim] if dim < len(spec) else None
            axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
            count = math.prod(sizes[axis] for axis in axes)
            if count == 1:
                index.append(slice(None))
                continue
            block = 0
            for axis in axes:
                block = block * sizes[axis] + position[axis]
            width = size // count
            index.append(slice(block * width, (block + 1) * width))
        result[mesh.devices[coordinate]] = tuple(index)
    return result


def expected_replica_ids(mesh: Mesh, indices: dict) -> list[int]:
    """The i-th device (in mesh order) holding an index is replica i of it, as in JAX."""
    seen: dict[str, int] = {}
    replica_ids = []
    for device in mesh.devices.flat:
        key = repr(indices[device])
        replica_ids.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return replica_ids


CASES = [
    # mesh, spec, global shape, shard shape, fully replicated
    ("2x4", P("x", "y"), (8, 8), (4, 2), False),
    ("2x4", P("x"), (4, 6), (2, 6), False),  # partial replication over y
    ("2x4", P(None, "y"), (3, 8), (3, 2), False),  # partial replication over x
    ("2x4", P("y", "x"), (4, 2), (1, 1), False),
    ("2x4", P(("x", "y")), (8, 3), (1, 3), False),
    ("2x4", P(("y", "x")), (16,), (2,), False),
    ("2x4", P(None, None, "x"), (1, 1, 2), (1, 1, 1), False),
    ("2x4", P("x", "y"), (6, 12), (3, 3), False),  # uneven but divisible
    ("2x4", P(), (5,), (5,), True),
    ("2x4", P(), (), (), True),  # 0-d
    ("2x4", P("x"), (0, 4), (0, 4), False),  # size 0
    ("2x4", P("x", "y"), (0, 0), (0, 0), False),
    ("2x2x2", P("x", ("y", "z")), (2, 4), (1, 1), False),
    ("2x2x2", P("z", None, "x"), (2, 3, 4), (1, 3, 2), False),
    ("2x2x2", P(("z", "x")), (12,), (3,), False),
    ("2x2x2", P(None, "y"), (1, 6), (1, 3), False),
    ("2x2x2", P("y"), (6, 5), (3, 5), False),
    ("8", P("x"), (8,), (1,), False),
    ("8", P(None, "x"), (2, 24), (2, 3), False),
    ("8", P(), (3, 3), (3, 3), True),
    ("8", P("x"), (0,), (0,), False),
    ("4x2", P("y", "x"), (6, 4), (3, 1), False),
    ("4x2", P("x"), (4, 7), (1, 7), False),
    ("1", P("x"), (3,), (3,), True),  # an axis of size 1 splits nothing
    ("1", P(), (), (), True),
]
CASE_IDS = [f"{mesh}-{spec}-{shape}" for mesh, spec, shape, _, _ in CASES]


@pytest.mark.parametrize("mesh_name, spec, shape, shard_shape, replicated", CASES, ids=CASE_IDS)
def test_layout_matches_oracle(mesh_of, mesh_name, spec, shape, shard_shape, replicated):
    mesh = mesh_of(mesh_name)
    sharding = NamedSharding(mesh, spec)
    expected = expected_indices(mesh, spec, shape)
    assert sharding.devices_indices_map(shape) == expected
    assert list(sharding.devices_indices_map(shape)) == list(mesh.devices.flat)  # mesh order
    assert sharding.addressable_devices_indices_map(shape) == expected  # one process
    assert sharding.shard_shape(shape) == shard_shape
    assert sharding.is_fully_replicated is replicated


@pytest.mark.parametrize("mesh_name, spec, shape, shard_shape, replicated", CASES, ids=CASE_IDS)
def test_device_put_shards_match_oracle(mesh_of, mesh_name, spec, shape, shard_shape, replicated):
    mesh = mesh_of(mesh_name)
    value = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    array = meshjit.device_put(value, NamedSharding(mesh, spec))
    indices = expected_indices(mesh, spec, shape)
    shards = array.addressable_shards
    assert [shard.device for shard in shards] == list(mesh.devices.flat)
    assert [shard.replica_id for shard in shards] == expected_replica_ids(mesh, indices)
    for shard in shards:
        assert shard.index == indices[shard.device]
        assert shard.data.shape == shard_shape
        np.testing.assert_array_equal(np.asarray(shard.data), value[shard.index])
    np.testing.assert_array_equal(np.asarray(array), value)
    assert array.is_fully_replicated is replicated


def test_replica_ids_of_partial_replication_on_2x4(mesh_2x4):
    # Golden from JAX 0.10: P('x') leaves y replicated, so each row's four devices are replicas.
    array = meshjit.device_put(np.zeros((4, 6)), NamedSharding(mesh_2x4, P("x")))
    assert [shard.replica_id for shard in array.addressable_shards] == [0, 1, 2, 3, 0, 1, 2, 3]
    array = meshjit.device_put(np.zeros((3, 8)), NamedSharding(mesh_2x4, P(None, "y")))
    assert [shard.replica_id for shard in array.addressable_shards] == [0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("mesh_name", ["2x4", "2x2x2", "8"])
def test_properties(mesh_of, mesh_name):
    mesh = mesh_of(mesh_name)
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    assert sharding.mesh is mesh
    assert sharding.spec == P(mesh.axis_names[0])
    assert sharding.memory_kind == "device"
    assert sharding.num_devices == 8
    assert sharding.device_set == set(meshjit.devices())
    assert sharding.addressable_devices == set(meshjit.devices())
    assert sharding.is_fully_addressable


@pytest.mark.parametrize("kind", ["device", "pinned_host", "unpinned_host"])
def test_memory_kinds(mesh_2x4, kind):
    sharding = NamedSharding(mesh_2x4, P("x"), memory_kind=kind)
    assert sharding.memory_kind == kind
    moved = NamedSharding(mesh_2x4, P("x")).with_memory_kind(kind)
    assert moved == sharding and moved.mesh is mesh_2x4 and moved.spec == P("x")
    array = meshjit.device_put(np.ones((4, 4)), sharding)
    assert array.sharding.memory_kind == kind
    assert array.addressable_shards[0].data.sharding.memory_kind == kind


def test_equality_and_hash(mesh_2x4, mesh_8):
    sharding = NamedSharding(mesh_2x4, P("x"))
    same = NamedSharding(mesh_of_copy(mesh_2x4), P("x"))
    assert sharding == same and hash(sharding) == hash(same)
    for other in (NamedSharding(mesh_2x4, P("y")), NamedSharding(mesh_2x4, P("x", None)),
                  NamedSharding(mesh_8, P("x")), NamedSharding(mesh_2x4, P("x"), memory_kind="pinned_host")):
        assert sharding != other
    # P('x') and P('x', None) differ as values but lay every array out the same way
    assert sharding.is_equivalent_to(NamedSharding(mesh_2x4, P("x", None)), 2)


def mesh_of_copy(mesh: Mesh) -> Mesh:
    return Mesh(np.array(mesh.devices), mesh.axis_names)


def test_repr_matches_jax(mesh_2x4):
    assert repr(NamedSharding(mesh_2x4, P("x"))) == (
        "NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), spec=P('x',), memory_kind=device)")
    assert repr(NamedSharding(mesh_2x4, P(None, ("x", "y")), memory_kind="pinned_host")) == (
        "NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), spec=P(None, ('x', 'y')), "
        "memory_kind=pinned_host)")


def test_unconstrained_dims_are_allowed_in_the_sharding(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x", P.UNCONSTRAINED))
    assert sharding.has_unconstrained_dims
    assert not NamedSharding(mesh_2x4, P("x", None)).has_unconstrained_dims


def test_sharding_over_a_device_subset(mesh_of):
    mesh = Mesh(np.array(meshjit.devices()[4:]).reshape(2, 2), ("x", "y"))
    sharding = NamedSharding(mesh, P("y"))
    assert sharding.num_devices == 4
    assert sharding.device_set == set(meshjit.devices()[4:])
    array = meshjit.device_put(np.arange(4.0), sharding)
    assert array.devices() == set(meshjit.devices()[4:])
    assert [shard.index for shard in array.addressable_shards] == [
        (slice(0, 2),), (slice(2, 4),), (slice(0, 2),), (slice(2, 4),)]
