"""Random numpy indices (ints, integer arrays, boolean masks, slices with any step and bounds
out of range, None, Ellipsis) through ``x[index]`` and ``x.at[index].set/add/multiply/min/max/
get``, eagerly and under jit on sharded inputs over meshes of several shapes, against numpy.

numpy's placement rule is the subject: the broadcast index dims stay in place only when the
advanced entries (ints count once an array is present) stand next to each other in the index
as written; a slice, a None or an Ellipsis (even one standing for no dims) between them puts
the dims first.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

pytestmark = [
    pytest.mark.usefixtures("restore_runtime_state"),
    pytest.mark.filterwarnings("ignore:involuntary full rematerialization"),
]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MESHES = {"1": ((1,), ("x",)), "8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")),
          "2x2x2": ((2, 2, 2), ("x", "y", "z"))}
UPDATES = ("set", "add", "multiply", "min", "max")
NUMPY_UPDATES = {"set": lambda old, new: new, "add": np.add, "multiply": np.multiply,
                 "min": np.minimum, "max": np.maximum}


def _mesh(name: str) -> Mesh:
    shape, axis_names = MESHES[name]
    return Mesh(np.array(jax.devices()[: math.prod(shape)]).reshape(shape), axis_names)


@st.composite
def _entry(draw, size: int):
    """One index entry for a dim of ``size`` and the dims it consumes."""
    kind = draw(st.sampled_from(["int", "array", "slice", "slice", "mask"] if size else ["slice", "mask"]))
    if kind == "int":
        return draw(st.integers(-size, size - 1))
    if kind == "array":
        shape = draw(st.sampled_from([(), (1,), (3,), (2, 1), (4,)]))
        return draw(hnp.arrays(np.int32, shape, elements=st.integers(-size, size - 1)))
    if kind == "mask":
        return draw(hnp.arrays(np.bool_, (size,)))
    bound = st.none() | st.integers(-size - 3, size + 3)
    return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2])))


@st.composite
def index_case(draw):
    """(shape, index): an entry per dim of a prefix of the dims, or a run of them (perhaps
    empty) replaced by an Ellipsis, and Nones spliced in."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    ellipsis = draw(st.booleans())
    # NOTE: with an Ellipsis every dim has an entry, so the Ellipsis stands for exactly its run
    covered = len(shape) if ellipsis else draw(st.integers(0, len(shape)))
    entries = [draw(_entry(size)) for size in shape[:covered]]
    if ellipsis:
        start = draw(st.integers(0, covered))
        # an Ellipsis for no dims half the time: it still separates advanced entries
        stop = start if draw(st.booleans()) else draw(st.integers(start, covered))
        entries[start:stop] = [Ellipsis]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    index = tuple(entries)
    try:
        np.zeros(shape)[index]
    except IndexError:
        # index arrays that do not broadcast together: numpy refuses them too
        assume(False)
    return shape, index


def _spec(draw, shape, mesh: Mesh) -> P:
    """A PartitionSpec sharding some dims over mesh axes whose size divides them."""
    free, spec = list(mesh.axis_names), []
    for size in shape:
        usable = [axis for axis in free if size % mesh.shape[axis] == 0]
        axis = draw(st.sampled_from([None, *usable]))
        if axis is not None:
            free.remove(axis)
        spec.append(axis)
    return P(*spec)


def _assert_shards_agree(result, expected):
    """The result equals numpy's, and every shard holds its sharding's slice of it."""
    np.testing.assert_array_equal(np.asarray(result), expected)
    for shard in result.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), expected[shard.index])


def _numpy_update(array, index, values, kind: str):
    """``array.at[index].<kind>(values)`` in numpy, element by element in index order (repeated
    indices combine; for set the last wins)."""
    positions = np.arange(array.size).reshape(array.shape)[index]
    values = np.broadcast_to(values, positions.shape)
    result = array.copy().reshape(-1)
    for position, value in zip(positions.reshape(-1), values.reshape(-1)):
        result[position] = NUMPY_UPDATES[kind](result[position], value)
    return result.reshape(array.shape)


def _split(index):
    """The index's integer arrays as jit arguments, and a function that puts them back."""
    arrays = [entry for entry in index if isinstance(entry, np.ndarray) and entry.dtype != np.bool_]
    positions = [position for position, entry in enumerate(index) if any(entry is a for a in arrays)]

    def rebuild(traced):
        entries = list(index)
        for position, value in zip(positions, traced):
            entries[position] = value
        return tuple(entries)

    return arrays, rebuild


@SETTINGS
@given(case=index_case())
def test_getitem_matches_numpy_eager(case):
    shape, index = case
    array = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(array)[index]), array[index])


@SETTINGS
@given(case=index_case(), mesh_name=st.sampled_from(sorted(MESHES)), data=st.data())
def test_getitem_under_jit_on_sharded_inputs(case, mesh_name, data):
    shape, index = case
    mesh = _mesh(mesh_name)
    array = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    sharded = jax.device_put(array, NamedSharding(mesh, _spec(data.draw, shape, mesh)))
    arrays, rebuild = _split(index)
    result = jax.jit(lambda x, *traced: x[rebuild(traced)])(sharded, *arrays)
    _assert_shards_agree(result, array[index])


@SETTINGS
@given(case=index_case(), kind=st.sampled_from(UPDATES), mesh_name=st.sampled_from(sorted(MESHES)),
       data=st.data())
def test_at_updates_under_jit_on_sharded_inputs(case, kind, mesh_name, data):
    shape, index = case
    mesh = _mesh(mesh_name)
    array = data.draw(hnp.arrays(np.float32, shape, elements=st.integers(-4, 4).map(float)))
    target_shape = np.zeros(shape)[index].shape
    values = data.draw(hnp.arrays(np.float32, target_shape, elements=st.integers(-2, 2).map(float)))
    sharded = jax.device_put(array, NamedSharding(mesh, _spec(data.draw, shape, mesh)))
    arrays, rebuild = _split(index)

    def update(x, new, *traced):
        return getattr(x.at[rebuild(traced)], kind)(new)

    expected = _numpy_update(array, index, values, kind)
    _assert_shards_agree(jax.jit(update)(sharded, values, *arrays), expected)
    np.testing.assert_array_equal(np.asarray(update(jnp.asarray(array), values, *arrays)), expected)


@SETTINGS
@given(case=index_case())
def test_at_get_matches_numpy(case):
    shape, index = case
    array = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    arrays, rebuild = _split(index)
    result = jax.jit(lambda x, *traced: x.at[rebuild(traced)].get())(array, *arrays)
    np.testing.assert_array_equal(np.asarray(result), array[index])


@pytest.mark.parametrize("index, shape", [
    # the fuzz campaign's case: an Ellipsis standing for no dims separates the array from the int
    ((slice(-7, -1, -1), slice(3, None, -2), np.array([-1, -1, 1, 0]), Ellipsis, 7), (4, 0, 2)),
    ((slice(None), slice(None), np.array([0, 1, 0]), Ellipsis, 0), (3, 8, 3)),
    ((slice(None), slice(None), np.array([0, 1, 0]), 0), (8, 3, 3)),
    ((slice(None), slice(None), np.array([0, 1, 0]), None, 0), (3, 8, 3, 1)),
    ((0, Ellipsis, np.array([1, 2])), (2, 3, 2)),
])
def test_advanced_dims_placement(index, shape, mesh_2x4):
    array = np.arange(8 * 3 * 2 * 8, dtype=np.float32).reshape(8, 3, 2, 8)
    assert array[index].shape == shape
    sharded = jax.device_put(array, NamedSharding(mesh_2x4, P("x", None, None, "y")))
    arrays, rebuild = _split(index)
    result = jax.jit(lambda x, *traced: x[rebuild(traced)])(sharded, *arrays)
    _assert_shards_agree(result, array[index])
    values = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    updated = jax.jit(lambda x, *traced: x.at[rebuild(traced)].add(values))(sharded, *arrays)
    _assert_shards_agree(updated, _numpy_update(array, index, values, "add"))
