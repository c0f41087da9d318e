"""Projecting dim shardings onto factors and back, with sub-axes (Shardy's ``"x":(pre)size``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from meshjit.compiler.sharding.factor_projection import (
    device_count,
    is_prefix,
    make_axis,
    merge_sub_axes,
    prefix_without_overlap,
    project_dim,
    project_dim_with_overflow,
    split_major,
    unproject_dim,
)
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.ir import (
    AxisRef,
    Block,
    DimSharding,
    Func,
    MeshAttr,
    Module,
    Op,
    TensorSharding,
    TensorType,
    Value,
    parse_module,
)

X2 = MeshAttr((("x", 2),))
X4 = MeshAttr((("x", 4),))
X8 = MeshAttr((("x", 8),))
X2Y4 = MeshAttr((("x", 2), ("y", 4)))
X = AxisRef("x")
Y = AxisRef("y")


def sub(name: str, pre_size: int, size: int) -> AxisRef:
    return AxisRef(name, pre_size, size)


def test_whole_axis_is_spelt_plainly_and_splits_major_first():
    assert make_axis("x", 1, 4, X4) == X
    assert make_axis("x", 2, 2, X4) == sub("x", 2, 2)
    assert split_major(X, 2, X8) == (sub("x", 1, 2), sub("x", 2, 4))
    assert split_major(sub("x", 2, 4), 2, X8) == (sub("x", 2, 2), sub("x", 4, 2))
    assert device_count([X, Y], X2Y4) == 8
    assert device_count([], X2Y4) == 1


@pytest.mark.parametrize("mesh, axes, sizes, expected", [
    # a size-4 axis over factors (2)(4): its major half takes the 2, its minor half the 4
    (X4, [X], (2, 4), {0: [sub("x", 1, 2)], 1: [sub("x", 2, 2)]}),
    (X8, [X], (2, 4), {0: [sub("x", 1, 2)], 1: [sub("x", 2, 4)]}),
    (X8, [X], (4, 2), {0: [sub("x", 1, 4)], 1: [sub("x", 4, 2)]}),
    (X2, [X], (2, 4), {0: [X], 1: []}),
    (X2Y4, [X, Y], (2, 4), {0: [X], 1: [Y]}),
    (X2Y4, [Y, X], (2, 4), {0: [sub("y", 1, 2)], 1: [sub("y", 2, 2), X]}),
    (X2Y4, [Y], (8, 2), {0: [Y], 1: []}),
    # the minor-most factor takes whatever is left, even when it does not divide
    (X8, [X], (2, 2), {0: [sub("x", 1, 2)], 1: [sub("x", 2, 4)]}),
    (X2Y4, [X, Y], (16,), {0: [X, Y]}),
])
def test_project_dim_hands_axes_out_major_first(mesh, axes, sizes, expected):
    factors = tuple(range(len(sizes)))
    assert project_dim(axes, factors, sizes, mesh) == expected


def test_co_prime_sizes_overflow_and_freeze_the_dim():
    # 12 = (3)(4): a size-4 axis shares no divisor with the major factor 3
    projection = project_dim_with_overflow([X], (0, 1), (3, 4), X4)
    assert projection.axes == {0: [], 1: []}
    assert (projection.overflow, projection.overflow_factor) == ([X], 0)
    # 12 = (6)(2): "x":(1)2 fits the 6, the rest of "x" has nowhere to go
    projection = project_dim_with_overflow([X], (0, 1), (6, 2), X4)
    assert projection.axes == {0: [sub("x", 1, 2)], 1: []}
    assert projection.overflow == [sub("x", 2, 2)]
    # the dict form keeps overflow axes with the factor that could not take them
    assert project_dim([X], (0, 1), (6, 2), X4) == {0: [sub("x", 1, 2), sub("x", 2, 2)], 1: []}


@pytest.mark.parametrize("mesh, factor_axes, sizes, expected", [
    (X4, {0: [sub("x", 1, 2)], 1: [sub("x", 2, 2)]}, (2, 4), [X]),
    (X8, {0: [sub("x", 1, 2)], 1: [sub("x", 2, 2)], 2: [sub("x", 4, 2)]}, (2, 2, 2), [X]),
    (X2Y4, {0: [X], 1: [Y]}, (2, 4), [X, Y]),
    # a minor factor cannot be sharded under a major factor that is not fully sharded
    (X2Y4, {0: [], 1: [Y]}, (2, 4), []),
    (X2Y4, {0: [X], 1: [Y]}, (4, 4), [X]),
    (X4, {0: [sub("x", 1, 2)], 1: []}, (2, 4), [sub("x", 1, 2)]),
])
def test_unproject_dim_stops_at_the_first_partly_sharded_factor(mesh, factor_axes, sizes, expected):
    assert unproject_dim(factor_axes, tuple(range(len(sizes))), sizes, mesh) == expected


def test_merge_sub_axes_fuses_only_adjacent_consecutive_parts():
    assert merge_sub_axes([sub("x", 1, 2), sub("x", 2, 2)], X4) == [X]
    assert merge_sub_axes([sub("x", 1, 2), sub("x", 2, 2), sub("x", 4, 2)], X8) == [X]
    assert merge_sub_axes([sub("x", 2, 2), sub("x", 4, 2)], X8) == [sub("x", 2, 4)]
    assert merge_sub_axes([sub("x", 2, 2), sub("x", 1, 2)], X4) == [sub("x", 2, 2), sub("x", 1, 2)]
    apart = [sub("y", 1, 2), X, sub("y", 2, 2)]
    assert merge_sub_axes(apart, X2Y4) == apart


MESHES = {"2": X2, "4": X4, "8": X8, "2x4": X2Y4}


def _axis_lists(mesh: MeshAttr):
    """Every ordered list of distinct whole axes and major/minor halves of them."""
    parts = []
    for name, size in mesh.axes:
        halves = [sub(name, 1, 2), sub(name, 2, size // 2)] if size > 2 else []
        parts.append([AxisRef(name)] + halves)
    for count in range(len(parts) + 1):
        for chosen in itertools.permutations(range(len(parts)), count):
            for picks in itertools.product(*(parts[index] for index in chosen)):
                yield list(picks)


def _factorizations(size: int):
    """All ordered ways to write ``size`` as a product of factors > 1 (at most three)."""
    yield (size,)
    for first in range(2, size):
        if size % first == 0:
            for rest in _factorizations(size // first):
                if len(rest) < 3:
                    yield (first,) + rest


@pytest.mark.parametrize("mesh_name", sorted(MESHES))
def test_round_trip_of_dividing_shardings(mesh_name):
    """unproject(project(axes)) == axes whenever the axes' device count divides the dim and
    every factor boundary falls on an axis boundary or splits an axis evenly."""
    mesh = MESHES[mesh_name]
    checked = 0
    for dim_size in (8, 16, 32):
        for sizes in _factorizations(dim_size):
            factors = tuple(range(len(sizes)))
            for axes in _axis_lists(mesh):
                if dim_size % device_count(axes, mesh):
                    continue
                projection = project_dim_with_overflow(axes, factors, sizes, mesh)
                if projection.overflow:
                    continue
                back = unproject_dim(projection.axes, factors, sizes, mesh)
                assert back == merge_sub_axes(axes, mesh)
                product = math.prod(device_count(projection.axes[f], mesh) for f in factors)
                assert product == device_count(axes, mesh)
                checked += 1
    assert checked > 20


def test_is_prefix_knows_sub_axes():
    assert is_prefix([], [X], X4)
    assert is_prefix([sub("x", 1, 2)], [X], X4)
    assert is_prefix([sub("x", 1, 2)], [X, Y], MeshAttr((("x", 4), ("y", 4))))
    assert not is_prefix([sub("x", 2, 2)], [X], X4)
    assert not is_prefix([X, Y], [X], X2Y4)
    assert not is_prefix([Y], [X, Y], X2Y4)
    assert is_prefix([X, Y], [X, Y], X2Y4)


def test_prefix_without_overlap_keeps_the_free_major_part():
    assert prefix_without_overlap(X, [sub("x", 4, 2)], X8) == sub("x", 1, 4)
    assert prefix_without_overlap(X, [sub("x", 2, 4)], X8) == sub("x", 1, 2)
    assert prefix_without_overlap(X, [sub("x", 1, 2)], X8) is None
    assert prefix_without_overlap(X, [Y], X2Y4) == X
    assert prefix_without_overlap(sub("x", 2, 4), [sub("x", 4, 2)], X8) == sub("x", 2, 2)


# -- what sub-axes mean on devices ---------------------------------------------------------------

def _device_block(array: np.ndarray, sharding, mesh: MeshAttr, position: int) -> np.ndarray:
    """The part of ``array`` the device at mesh ``position`` holds (even shardings only)."""
    index = sharding.shard_index(mesh, mesh.coordinates(position))
    shards = sharding.dim_shards(mesh)
    slices = tuple(slice(i * (n // s), (i + 1) * (n // s))
                   for i, n, s in zip(index, array.shape, shards))
    return array[slices]


RESHAPES = [
    ("x=4", "[8,16]", '[{"x"}, {}]', "[2,4,16]"),
    ("x=8", "[8,4]", '[{"x"}, {}]', "[2,16]"),
    ("x=8", "[16]", '[{"x"}]', "[2,2,4]"),
    ("x=2, y=4", "[8,16]", '[{"y", "x"}, {}]', "[2,4,16]"),
    ("x=2, y=4", "[2,4,16]", '[{"x"}, {"y"}, {}]', "[8,16]"),
    ("x=4", "[2,4]", '[{"x":(1)2}, {"x":(2)2}]', "[8]"),
    ("x=2, y=4", "[4,2,6]", '[{"y"}, {"x"}, {}]', "[8,6]"),
]


@pytest.mark.parametrize("mesh_text, source, sharding, target", RESHAPES)
def test_propagated_reshape_keeps_every_devices_elements(mesh_text, source, sharding, target):
    """Through a reshape the propagated (sub-axis) sharding gives each device exactly the
    elements it already holds: the reshape needs no communication."""
    axes = ", ".join(f'"{name}"={size}' for name, size in
                     (part.split("=") for part in mesh_text.split(", ")))
    source_shape = [int(size) for size in source.strip("[]").split(",")]
    target_shape = [int(size) for size in target.strip("[]").split(",")]
    text = (f"mesh @mesh = <[{axes}]>\n"
            f"func @main(%a: f32{source} {{sharding = <@mesh, {sharding}>}}) -> (f32{target}) {{\n"
            f"  %0 = reshape(%a) {{new_sizes = {target_shape}}} : f32{target}\n  return %0\n}}\n")
    module = propagate_shardings(parse_module(text))
    mesh = module.mesh("mesh")
    operand_sharding = module.main.arg_shardings[0]
    result_sharding = module.main.body.ops[0].shardings[0]
    shard_count = math.prod(operand_sharding.dim_shards(mesh))
    assert math.prod(result_sharding.dim_shards(mesh)) == shard_count
    array = np.arange(math.prod(source_shape)).reshape(source_shape)
    for position in range(mesh.size):
        before = _device_block(array, operand_sharding, mesh, position)
        after = _device_block(array.reshape(target_shape), result_sharding, mesh, position)
        assert sorted(before.ravel()) == sorted(after.ravel())


@st.composite
def sharded_reshapes(draw):
    """A mesh, a shape with an evenly dividing sharding of whole axes, and a new shape."""
    mesh = draw(st.sampled_from((X2, X4, X8, X2Y4, MeshAttr((("x", 2), ("y", 2), ("z", 2))))))
    shape = draw(st.lists(st.sampled_from((2, 4, 6, 8, 16)), min_size=1, max_size=3))
    free, dims = [AxisRef(name) for name in mesh.axis_names], []
    for size in shape:
        axes = [axis for axis in draw(st.permutations(free)) if draw(st.booleans())]
        while axes and size % device_count(axes, mesh):
            axes.pop()
        free = [axis for axis in free if axis not in axes]
        dims.append(DimSharding(tuple(axes)))
    flat = [factor for size in shape for factor in _prime_factors(size)]
    cuts = sorted(draw(st.sets(st.integers(1, len(flat) - 1), max_size=3))) if len(flat) > 1 else []
    bounds = [0] + cuts + [len(flat)]
    target = [math.prod(flat[start:end]) for start, end in zip(bounds, bounds[1:])]
    return mesh, shape, TensorSharding("mesh", tuple(dims)), target


def _prime_factors(size: int) -> list[int]:
    factors, divisor = [], 2
    while size > 1:
        while size % divisor == 0:
            factors.append(divisor)
            size //= divisor
        divisor += 1
    return factors


@settings(max_examples=150, deadline=None)
@given(sharded_reshapes())
def test_reshape_propagation_never_moves_data(case):
    """Each device's block of the reshaped value is its own operand block (same shard count),
    or a superset of it when fewer axes could pass: propagation never asks a reshape to send
    data to another device."""
    mesh, shape, sharding, target = case
    operand = Value.fresh(TensorType(tuple(shape), "f32"))
    result = Value.fresh(TensorType(tuple(target), "f32"))
    op = Op("reshape", (operand,), (result,), {"new_sizes": tuple(target)})
    func = Func("main", Block((operand,), (op,), (result,)), (sharding,), (None,))
    propagated = propagate_shardings(Module((("mesh", mesh),), (func,)))
    result_sharding = propagated.main.body.ops[0].shardings[0]
    array = np.arange(math.prod(shape)).reshape(shape)
    for position in range(mesh.size):
        before = set(_device_block(array, sharding, mesh, position).ravel())
        after = set(_device_block(array.reshape(target), result_sharding, mesh, position).ravel())
        assert before <= after
        if math.prod(result_sharding.dim_shards(mesh)) == math.prod(sharding.dim_shards(mesh)):
            assert before == after
