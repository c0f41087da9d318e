"""Issue 33's plans on their edges: a slice of pads read through the pads (strided, uneven
shards, a pad value other than zero), a dynamic_slice cut where its split dim lies (starts out
of range, uneven shards, windows spanning shards), a reshard that renumbers devices."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.jit_api import jit, with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P


def _mesh(shape=(8,), names=("x",)):
    return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)


def _kinds(compiled):
    return sorted(record.kind for record in compiled.collectives())


# (rows, pad low, pad high, slice start, stop, step): results of 64 or 32 rows; 62 rows split
# unevenly over 8
@pytest.mark.parametrize("rows, low, high, start, stop, step", [
    (64, 2, 2, 1, -3, 1), (64, 3, 1, 0, -4, 2), (62, 2, 2, 1, -1, 1), (64, 1, 1, 2, None, 1)])
def test_a_slice_of_pads_fetches_halo_rows_only(rows, low, high, start, stop, step):
    mesh = _mesh()
    a = np.random.default_rng(rows).standard_normal((rows, 16)).astype(np.float32)

    def shifted(a):
        a = with_sharding_constraint(a * 1.0, NamedSharding(mesh, P("x", None)))
        out = jnp.pad(a, ((low, high), (0, 0)), constant_values=7.0)[start:stop:step]
        return with_sharding_constraint(out, NamedSharding(mesh, P("x", None)))

    f = jit(shifted)
    compiled = f.lower(a).compile()
    assert set(_kinds(compiled)) <= {"collective_permute"}
    np.testing.assert_array_equal(np.asarray(f(a)), np.pad(a, ((low, high), (0, 0)), constant_values=7.0)[start:stop:step])


@pytest.mark.parametrize("rows", [128, 100])
@pytest.mark.parametrize("size", [1, 16, 40])
def test_dynamic_slice_on_a_split_dim_is_one_all_reduce_of_the_window(rows, size):
    mesh = _mesh()
    a = np.random.default_rng(size).standard_normal((rows, 6)).astype(np.float32)

    def window(a, start):
        a = with_sharding_constraint(a * 1.0, NamedSharding(mesh, P("x", None)))
        return lax.dynamic_slice_in_dim(a, start, size, axis=0)

    f = jit(window)
    compiled = f.lower(a, np.int32(0)).compile()
    assert _kinds(compiled) == ["all_reduce"]
    for start in (-3, 0, 5, 15, 16, 50, rows - size, rows + 9):
        first = min(max(start, 0), rows - size)
        np.testing.assert_array_equal(np.asarray(f(a, np.int32(start))), a[first:first + size])


def test_reshard_to_merged_axes_moves_then_renumbers_devices():
    mesh = _mesh((2, 4), ("x", "y"))
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    f = jit(lambda a: a + 1.0, in_shardings=NamedSharding(mesh, P("y", "x")),
            out_shardings=NamedSharding(mesh, P(("x", "y"), None)))
    compiled = f.lower(a).compile()
    assert [(record.kind, record.bytes) for record in compiled.collectives()] == [
        ("all_to_all", 1024.0), ("collective_permute", 2048)]
    np.testing.assert_array_equal(np.asarray(f(a)), a + 1.0)
