"""Random shard_map collective programs against a numpy model of every device (shard_map_model):
any subset of mesh axes, listed in any order, repeated collectives, collectives of values that are
already invariant, size-0 and size-1 blocks, meshes with a size-1 axis, eager and under jit.

The model itself was checked against JAX 0.10.2 on 400 such programs (with check_vma=False,
since JAX's check rejects a psum over axes some of which the value is already invariant along,
which meshjit computes; see docs/shard_map.md)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shard_map_model import body_for, random_program, run_model

import meshjit as jax
from meshjit import lax
from meshjit.sharding import Mesh
from meshjit.sharding import PartitionSpec as P

MESH_SHAPES = [((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y")), ((2, 2, 2), ("x", "y", "z")),
               ((1, 8), ("x", "y"))]
MESHES = {shape: Mesh(np.array(jax.devices()[:math.prod(shape)]).reshape(shape), names)
          for shape, names in MESH_SHAPES}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mesh_index=st.integers(0, len(MESH_SHAPES) - 1), seed=st.integers(0, 2**20),
       rows=st.sampled_from((1, 2, 4, 8)), cols=st.sampled_from((0, 1, 3)), jitted=st.booleans(),
       check_vma=st.booleans())
def test_random_collective_programs_match_the_model(mesh_index, seed, rows, cols, jitted, check_vma):
    shape, names = MESH_SHAPES[mesh_index]
    rng = np.random.default_rng(seed)
    in_axes = tuple(rng.permutation(names)[:rng.integers(0, len(names) + 1)].tolist())
    blocks = math.prod(dict(zip(names, shape))[axis] for axis in in_axes)
    steps = random_program(rng, shape, names, rows)
    value = rng.integers(0, 4, (rows * blocks, cols)).astype(np.float32)
    expected = run_model(steps, shape, names, in_axes, value)
    mapped = jax.shard_map(body_for(lax, steps), mesh=MESHES[shape], in_specs=P(in_axes), out_specs=P(names),
                           check_vma=check_vma)
    result = (jax.jit(mapped) if jitted else mapped)(value)
    assert result.shape == expected.shape, steps
    np.testing.assert_array_equal(np.asarray(result), expected, err_msg=str(steps))
