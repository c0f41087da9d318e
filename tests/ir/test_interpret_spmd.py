"""The interpreter on per-device (SPMD) modules: every collective, axis_index and partition_id
on meshes (2,), (2,2) and (2,4), against hand-written answers and answers computed on the grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from meshjit.ir import MeshAttr, interpret
from module_builder import Builder, mesh_of, type_text
from op_records import MESH

# --- per-device modules: hand-written answers ------------------------------------------------


def run_per_device(mesh: MeshAttr, name: str, stacked: np.ndarray, **attrs) -> np.ndarray:
    """Interpret a per-device module that applies op ``name`` to one stacked argument."""
    builder = Builder({"mesh": mesh})
    x = builder.arg(type_text(stacked.shape[1:], stacked.dtype))
    result = builder.op(name, x, mesh=MESH, **attrs)
    (output,) = interpret(builder.module(result, spmd_mesh="mesh"), stacked)
    return output


def test_elementwise_and_reductions_run_on_every_device():
    builder = Builder({"mesh": mesh_of(2, 2)})
    x = builder.arg("f64[3]")
    total = builder.op("reduce_sum", builder.op("exp", x), axes=(0,))
    stacked = np.arange(12.0).reshape(4, 3) / 4
    (result,) = interpret(builder.module(total, spmd_mesh="mesh"), stacked)
    np.testing.assert_allclose(result, np.exp(stacked).sum(axis=1))


def test_select_with_a_0d_predicate_on_every_device():
    builder = Builder({"mesh": mesh_of(2, 2)})
    predicate, on_true, on_false = (
        builder.arg("bool[]"),
        builder.arg("i32[3]"),
        builder.arg("i32[3]"),
    )
    chosen = builder.op("select", predicate, on_true, on_false)
    predicates = np.array([True, False, False, True])
    ones, zeros = np.ones((4, 3), np.int32), np.zeros((4, 3), np.int32)
    (result,) = interpret(builder.module(chosen, spmd_mesh="mesh"), predicates, ones, zeros)
    np.testing.assert_array_equal(result, np.int32([[1] * 3, [0] * 3, [0] * 3, [1] * 3]))


def test_all_reduce_on_two_devices():
    result = run_per_device(
        mesh_of(2), "all_reduce", np.int32([[1, 2], [10, 20]]), axes=("x",), reduction="sum"
    )
    np.testing.assert_array_equal(result, [[11, 22], [11, 22]])


@pytest.mark.parametrize(
    "axes, reduction, expected",
    [(("y",), "sum", [3, 3, 7, 7]), (("x",), "sum", [4, 6, 4, 6]), (("x", "y"), "sum", [10] * 4),
     ((), "sum", [1, 2, 3, 4]), (("y",), "max", [2, 2, 4, 4]), (("x",), "min", [1, 2, 1, 2])],
)  # fmt: skip
def test_all_reduce_sub_groups_on_2x2(axes, reduction, expected):
    result = run_per_device(
        mesh_of(2, 2), "all_reduce", np.float32([1, 2, 3, 4]), axes=axes, reduction=reduction
    )
    np.testing.assert_array_equal(result, np.float32(expected))


@pytest.mark.parametrize("axes, order", [(("x", "y"), [0, 1, 2, 3]), (("y", "x"), [0, 2, 1, 3])])
def test_all_gather_concatenates_in_the_listed_axes_order(axes, order):
    result = run_per_device(
        mesh_of(2, 2), "all_gather", np.int32([[0], [1], [2], [3]]), axes=axes, dim=0
    )
    np.testing.assert_array_equal(result, [order] * 4)


def test_all_gather_over_y_on_2x4():
    result = run_per_device(
        mesh_of(2, 4), "all_gather", np.arange(8, dtype=np.int64).reshape(8, 1), axes=("y",), dim=0
    )
    np.testing.assert_array_equal(result, [[0, 1, 2, 3]] * 4 + [[4, 5, 6, 7]] * 4)


def test_reduce_scatter_on_two_devices():
    stacked = np.float64([[1, 2, 3, 4], [10, 20, 30, 40]])
    result = run_per_device(
        mesh_of(2), "reduce_scatter", stacked, axes=("x",), dim=0, reduction="sum"
    )
    np.testing.assert_array_equal(result, [[11, 22], [33, 44]])


def test_all_to_all_on_two_devices():
    stacked = np.int32([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    same_dim = run_per_device(
        mesh_of(2), "all_to_all", stacked.reshape(2, 4), axes=("x",), split_dim=0, concat_dim=0
    )
    np.testing.assert_array_equal(same_dim, [[0, 1, 4, 5], [2, 3, 6, 7]])
    other_dim = run_per_device(
        mesh_of(2), "all_to_all", stacked, axes=("x",), split_dim=0, concat_dim=1
    )
    np.testing.assert_array_equal(other_dim, [[[0, 1, 4, 5]], [[2, 3, 6, 7]]])


def test_collective_permute_shifts_along_y_and_zero_fills():
    stacked = np.arange(1, 9, dtype=np.float32)
    result = run_per_device(
        mesh_of(2, 4), "collective_permute", stacked, axes=("y",), pairs=((0, 1), (1, 2), (2, 3))
    )
    np.testing.assert_array_equal(result, [0, 1, 2, 3, 0, 5, 6, 7])


def test_collective_permute_indices_follow_the_listed_axes():
    stacked = np.arange(1, 9, dtype=np.int32)
    # Over ("y", "x") group index 1 is y=0, x=1: position 4.
    result = run_per_device(
        mesh_of(2, 4), "collective_permute", stacked, axes=("y", "x"), pairs=((0, 1),)
    )
    np.testing.assert_array_equal(result, [0, 0, 0, 0, 1, 0, 0, 0])
    cycle = tuple((index, (index + 1) % 8) for index in range(8))
    rolled = run_per_device(
        mesh_of(2, 4), "collective_permute", stacked, axes=("x", "y"), pairs=cycle
    )
    np.testing.assert_array_equal(rolled, np.roll(stacked, 1))


def run_no_operand(mesh: MeshAttr, name: str, **attrs) -> np.ndarray:
    builder = Builder({"mesh": mesh})
    result = builder.op(name, mesh=MESH, **attrs)
    (output,) = interpret(builder.module(result, spmd_mesh="mesh"))
    return output


def test_pvary_is_the_identity_on_every_device():
    stacked = np.arange(8.0, dtype=np.float32).reshape(8, 1)
    result = run_per_device(mesh_of(2, 4), "pvary", stacked, axes=("y", "x"))
    np.testing.assert_array_equal(result, stacked)


def test_axis_index_on_2x4():
    np.testing.assert_array_equal(
        run_no_operand(mesh_of(2, 4), "axis_index", axis="x"), [0, 0, 0, 0, 1, 1, 1, 1]
    )
    np.testing.assert_array_equal(
        run_no_operand(mesh_of(2, 4), "axis_index", axis="y"), [0, 1, 2, 3] * 2
    )


def test_partition_id_is_the_mesh_position():
    result = run_no_operand(mesh_of(2, 2), "partition_id")
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [0, 1, 2, 3])
    reordered = MeshAttr((("x", 2), ("y", 2)), device_ids=(3, 1, 2, 0))
    np.testing.assert_array_equal(run_no_operand(reordered, "partition_id"), [0, 1, 2, 3])


# --- per-device modules: every grouping, answers computed on the mesh-shaped grid ------------

GROUPINGS = [
    ((2,), ("x",)), ((2,), ()), ((2, 2), ("x",)), ((2, 2), ("y",)), ((2, 2), ("x", "y")), ((2, 2), ("y", "x")),
    ((2, 4), ("x",)), ((2, 4), ("y",)), ((2, 4), ("x", "y")), ((2, 4), ("y", "x")),
]  # fmt: skip


def grouped(stacked: np.ndarray, mesh_shape, axes):
    """The stacked values as (group member index, the other mesh axes..., local dims...)."""
    grid = stacked.reshape(tuple(mesh_shape) + stacked.shape[1:])
    positions = ["xy".index(axis) for axis in axes]
    moved = np.moveaxis(grid, positions, list(range(len(positions))))
    count = math.prod(mesh_shape[position] for position in positions)
    return moved.reshape((count,) + moved.shape[len(positions) :]), sorted(positions)


def spread(per_group: np.ndarray, mesh_shape, group_positions) -> np.ndarray:
    """Give every member of a group its group's value, back in device order."""
    rest = len(mesh_shape) - len(group_positions)
    local_shape = per_group.shape[rest:]
    everywhere = np.broadcast_to(
        np.expand_dims(per_group, tuple(group_positions)), tuple(mesh_shape) + local_shape
    )
    return everywhere.reshape((math.prod(mesh_shape),) + local_shape)


def group_index(mesh_shape, axes) -> np.ndarray:
    """Every device's index in its group: mixed radix over ``axes``, the first listed major."""
    coordinates = np.indices(mesh_shape).reshape(len(mesh_shape), -1)
    index = np.zeros(math.prod(mesh_shape), dtype=int)
    for axis in axes:
        index = index * mesh_shape["xy".index(axis)] + coordinates["xy".index(axis)]
    return index


def stacked_values(mesh_shape, local_shape, dtype=np.float64) -> np.ndarray:
    count = math.prod(mesh_shape) * math.prod(local_shape)
    return (
        np.random.default_rng(count)
        .integers(-50, 50, count)
        .astype(dtype)
        .reshape((math.prod(mesh_shape), *local_shape))
    )


@pytest.mark.parametrize("mesh_shape, axes", GROUPINGS)
@pytest.mark.parametrize("reduction", ["sum", "max", "min"])
def test_all_reduce_every_grouping(mesh_shape, axes, reduction):
    stacked = stacked_values(mesh_shape, (2, 3), np.int32)
    members, positions = grouped(stacked, mesh_shape, axes)
    expected = spread(
        {"sum": np.sum, "max": np.max, "min": np.min}[reduction](members, axis=0),
        mesh_shape,
        positions,
    )
    result = run_per_device(
        mesh_of(*mesh_shape), "all_reduce", stacked, axes=axes, reduction=reduction
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("mesh_shape, axes", GROUPINGS)
@pytest.mark.parametrize("dim", [0, 1])
def test_all_gather_every_grouping(mesh_shape, axes, dim):
    stacked = stacked_values(mesh_shape, (2, 3))
    members, positions = grouped(stacked, mesh_shape, axes)
    rest = len(mesh_shape) - len(positions)
    expected = spread(np.concatenate(list(members), axis=rest + dim), mesh_shape, positions)
    result = run_per_device(mesh_of(*mesh_shape), "all_gather", stacked, axes=axes, dim=dim)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("mesh_shape, axes", GROUPINGS)
def test_reduce_scatter_every_grouping(mesh_shape, axes):
    stacked = stacked_values(mesh_shape, (3, 8))
    members, positions = grouped(stacked, mesh_shape, axes)
    reduced = spread(members.sum(axis=0), mesh_shape, positions)
    count = len(members)
    expected = [
        np.split(reduced[device], count, axis=1)[index]
        for device, index in enumerate(group_index(mesh_shape, axes))
    ]
    result = run_per_device(
        mesh_of(*mesh_shape), "reduce_scatter", stacked, axes=axes, dim=1, reduction="sum"
    )
    np.testing.assert_array_equal(result, np.stack(expected))


@pytest.mark.parametrize("mesh_shape, axes", GROUPINGS)
def test_all_to_all_every_grouping(mesh_shape, axes):
    stacked = stacked_values(mesh_shape, (8, 2))
    devices, positions = grouped(np.arange(len(stacked)), mesh_shape, axes)
    senders_of = spread(
        np.moveaxis(devices, 0, -1), mesh_shape, positions
    )  # each device's group, in order
    expected = [
        np.concatenate(
            [np.split(stacked[sender], len(senders), axis=0)[index] for sender in senders], axis=1
        )
        for senders, index in zip(senders_of, group_index(mesh_shape, axes))
    ]
    result = run_per_device(
        mesh_of(*mesh_shape), "all_to_all", stacked, axes=axes, split_dim=0, concat_dim=1
    )
    np.testing.assert_array_equal(result, np.stack(expected))
