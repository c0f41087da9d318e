"""A reshard whose target only cuts finer what each device holds is one collective_permute of
target-sized tiles (compiler/partitioning/tile_permute.py): each device slices the tile another
needs from its own shard; results equal the unsharded program, padding poisoned."""

from __future__ import annotations

import numpy as np
import pytest

from meshjit.ir import TensorType
from partition_cases import MESHES
from test_partition_differential import ProgramBuilder, collective_kinds, partition_and_compare

# (mesh, source, target, shape): every target tile lies in one source shard, and a tile is
# smaller than what moving the axes sends (on 2x2, x,- to y,x ties with an all_to_all, which stays)
TILED = [
    ("2x4", "x,-", "y,x", (64, 128)),
    ("2x4", "x,-", "y,-", (8, 8)),
    ("2x4", "-,x", "-,y", (8, 16)),
    ("2x4", "x,-", "yx,-", (16, 8)),
    ("2x4", "-,x", "x,y", (8, 16)),
]


def _reshard(mesh: str, source: str, target: str, shape):
    builder = ProgramBuilder(MESHES[mesh])
    value = builder.argument(TensorType(shape, "f32"), source)
    module = builder.module([builder.constrain(builder.emit("neg", [value], {})[0], target)])
    array = np.random.default_rng(len(source) * 7 + shape[0]).standard_normal(shape).astype(np.float32)
    return partition_and_compare(module, [array])


@pytest.mark.parametrize("mesh, source, target, shape", TILED)
def test_a_finer_target_is_one_permute_of_tiles(mesh, source, target, shape):
    partitioned = _reshard(mesh, source, target, shape)
    assert collective_kinds(partitioned) == {"collective_permute": 1}
    permute = next(op for op in partitioned.main.body.ops if op.name == "collective_permute")
    cuts = [int(np.prod([MESHES[mesh].axis_size(name) for name in part.strip("-")])) for part in target.split(",")]
    assert permute.result.type.shape == tuple(size // cut for size, cut in zip(shape, cuts))


@pytest.mark.parametrize("mesh, source, target, shape", [
    ("2x4", "y,-", "x,-", (8, 8)),  # the target's 2 blocks are coarser than the source's 4
    ("2x4", "x,-", "y,-", (6, 8)),  # 6 rows do not split into 4 tiles
])
def test_no_tile_permute_where_tiles_do_not_lie_in_one_shard(mesh, source, target, shape):
    partitioned = _reshard(mesh, source, target, shape)
    assert "collective_permute" not in collective_kinds(partitioned)
