"""Halo exchange: slice, pad, rev, concatenate (and roll, a concatenate of two slices) along a
sharded dim move only the rows each output shard needs, by collective_permute between the
devices that hold them, never an all_gather of the dim; even and uneven shards, strides,
interior padding, one and two mesh axes, sub-axes. Values are checked against the unsharded
program with the padding of uneven shards poisoned."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from meshjit.compiler.optimize.dce import eliminate_dead_code
from meshjit.compiler.partitioning.partition import partition_with_report
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.compiler.propagation.normalize_boundaries import normalize_boundaries
from meshjit.ir import TensorType
from partition_cases import MESHES, layout, normal
from test_partition_differential import ProgramBuilder, partition_and_compare

# NOTE: outputs that do not divide are gathered for the function's result, on purpose
pytestmark = pytest.mark.filterwarnings("ignore::meshjit.compiler.partitioning.partition.FullRematerializationWarning")

F = TensorType((16, 6), "f32")
UNEVEN = TensorType((13, 6), "f32")


def _slice(builder, value, start, limit, stride=1):
    shape = value.type.shape
    return builder.emit("slice", [value], {"start_indices": (start,) + (0,) * (len(shape) - 1),
                                           "limit_indices": (limit,) + shape[1:],
                                           "strides": (stride,) + (1,) * (len(shape) - 1)})[0]


def _pad(builder, value, low, high, interior=0):
    padding = builder.argument(TensorType((), value.type.dtype), None)
    config = ((low, high, interior),) + ((0, 0, 0),) * (value.type.rank - 1)
    return builder.emit("pad", [value, padding], {"padding_config": config})[0]


def _roll(builder, value, shift):
    size = value.type.shape[0]
    first = _slice(builder, value, size - shift, size)
    second = _slice(builder, value, 0, size - shift)
    return builder.emit("concatenate", [first, second], {"dimension": 0})[0]


PROGRAMS = {
    "slice_shift": lambda b, x: _slice(b, x, 3, x.type.shape[0]),
    "slice_strided": lambda b, x: _slice(b, x, 1, x.type.shape[0], 2),
    "pad_edges": lambda b, x: _pad(b, x, 2, 1),
    "pad_crop": lambda b, x: _pad(b, x, -1, 3),
    "pad_interior": lambda b, x: _pad(b, x, 1, 0, 1),
    "rev": lambda b, x: b.emit("rev", [x], {"dimensions": (0,)})[0],
    "roll_1": lambda b, x: _roll(b, x, 1),
    "roll_5": lambda b, x: _roll(b, x, 5),
    "concatenate": lambda b, x: b.emit("concatenate", [x, _slice(b, x, 2, 7)], {"dimension": 0})[0],
}
LAYOUTS = [("2", "x,-"), ("8", "x,-"), ("2x4", "y,x"), ("2x4", "xy,-"), ("8", "x(1)4,-")]


@pytest.mark.parametrize("value_type", [F, UNEVEN], ids=["even", "uneven"])
@pytest.mark.parametrize("mesh_name, text", LAYOUTS, ids=[f"{mesh}-{text}" for mesh, text in LAYOUTS])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_windowed_op_moves_halo_rows_only(name, mesh_name, text, value_type):
    builder = ProgramBuilder(MESHES[mesh_name])
    x = builder.argument(value_type, text)
    result = PROGRAMS[name](builder, x)
    # the op's result pinned to the operand's layout, even where it does not divide
    builder.ops[-1] = replace(builder.ops[-1], shardings=(layout(text),))
    module = builder.module([result])
    rng = np.random.default_rng(len(name))
    arrays = [normal(rng, arg.type.shape, arg.type.dtype) for arg in module.main.args]
    partition_and_compare(module, arrays)
    report = partition_with_report(normalize_boundaries(propagate_shardings(module)))
    # slices a concatenate reads through are left dead
    kinds = Counter(op.name for op in eliminate_dead_code(report.module).main.body.ops
                    if op.result.id in report.collective_reasons
                    and not report.collective_reasons[op.result.id].startswith("output"))
    assert set(kinds) <= {"collective_permute"}, kinds


def test_roll_by_one_moves_one_row_per_device():
    builder = ProgramBuilder(MESHES["8"])
    x = builder.argument(F, "x,-")
    module = builder.module([builder.constrain(_roll(builder, x, 1), "x,-")])
    partitioned = partition_and_compare(module, [normal(np.random.default_rng(0), F.shape, "f32")])
    permutes = [op for op in eliminate_dead_code(partitioned).main.body.ops if op.name == "collective_permute"]
    assert [op.operands[0].type.shape for op in permutes] == [(1, 6)]
    assert sorted(permutes[0].attrs["pairs"]) == sorted(((j - 1) % 8, j) for j in range(8))


def _device_pairs_per_member(mesh, axes, shard_pairs):
    """The definition device_pairs computes on arrays: every member's (position, rest) key,
    then each shard pair within each group of members agreeing on the rest."""
    import itertools

    from meshjit.compiler.partitioning.halo import _without

    names = tuple(name for name in mesh.axis_names if any(axis.name == name for axis in axes))
    members = {}
    for index, point in enumerate(itertools.product(*(range(mesh.axis_size(name)) for name in names))):
        coordinates = dict(zip(names, point))
        position = 0
        for axis in axes:
            position = position * axis.resolved_size(mesh) + axis.index(mesh, coordinates)
        rest = tuple(_without(axes, name, coordinates[name], mesh) for name in names)
        members[(position, rest)] = index
    groups = {}
    for (position, rest), index in members.items():
        groups.setdefault(rest, {})[position] = index
    pairs = [(group[sender], group[receiver]) for group in groups.values() for sender, receiver in shard_pairs]
    return names, tuple(sorted(pairs, key=lambda pair: pair[1]))


def test_device_pairs_match_the_per_member_definition():
    from types import SimpleNamespace

    from meshjit.compiler.partitioning.halo import device_pairs
    from meshjit.ir import MeshAttr
    from meshjit.ir.sharding import AxisRef

    mesh = MeshAttr((("x", 4), ("y", 2), ("z", 8)), device_ids=tuple(np.random.default_rng(0).permutation(64).tolist()))
    cases = [
        ((AxisRef("x"),), {(0, 1), (1, 2), (2, 3), (3, 0)}),
        ((AxisRef("z"), AxisRef("x")), {(position, (position + 5) % 32) for position in range(32)}),
        ((AxisRef("z", 1, 2),), {(0, 1), (1, 0)}),
        ((AxisRef("z", 2, 4), AxisRef("y")), {(position, position ^ 1) for position in range(8)}),
        ((AxisRef("x", 1, 2), AxisRef("z", 4, 2)), {(0, 3), (3, 0), (1, 2)}),
        ((AxisRef("y"),), set()),
    ]
    builder = SimpleNamespace(mesh=mesh)
    for axes, shard_pairs in cases:
        assert device_pairs(builder, axes, shard_pairs) == _device_pairs_per_member(mesh, axes, shard_pairs), axes
