"""Cumulative scans along a sharded dim (the reductions family's partition rule): each device
scans its shard and combines the totals of the shards before it, so the plan moves one element
per row per shard, never the operand. Checked against the unsharded program on even and uneven
dims, forward and reverse, over one and two mesh axes."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

SCANS = ("cumsum", "cumprod", "cummax", "cummin")


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def _scan(name: str, mesh, spec, reverse: bool):
    def scan(a):
        a = jax.lax.with_sharding_constraint(a, NamedSharding(mesh, spec))
        return getattr(jax.lax, name)(a, axis=1, reverse=reverse)
    return scan


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("columns,spec", [
    (64, P(None, "y")), (61, P(None, "y")), (5, P(None, ("x", "y"))), (24, P("x", "y")),
    (0, P(None, "y")),
])
def test_scan_along_a_sharded_dim_equals_the_unsharded_scan(mesh, name, reverse, columns, spec):
    rng = np.random.default_rng(columns)
    operand = rng.uniform(0.5, 1.5, (4, columns)).astype(np.float32)
    if name in ("cummax", "cummin"):
        operand = rng.integers(-50, 50, (4, columns)).astype(np.int32)
    got = np.asarray(jax.jit(_scan(name, mesh, spec, reverse))(operand))
    unsharded = np.asarray(jax.jit(lambda a: getattr(jax.lax, name)(a, axis=1, reverse=reverse))(operand))
    np.testing.assert_allclose(got, unsharded, rtol=2e-6)


def test_cumsum_moves_the_shards_totals_not_the_operand(mesh):
    operand = np.ones((64, 1024), np.float32)
    sharding = NamedSharding(mesh, P(None, "y"))
    scan = jax.jit(lambda a: jax.lax.cumsum(a, axis=1), in_shardings=sharding, out_shardings=sharding)
    records = scan.lower(operand).compile().collectives()
    assert [record.kind for record in records] == ["all_gather"]
    operand_bytes_per_device = operand.nbytes // 4
    assert records[0].bytes < operand_bytes_per_device / 4
    assert "totals" in records[0].reason
    np.testing.assert_array_equal(np.asarray(scan(operand)), np.cumsum(operand, axis=1))
