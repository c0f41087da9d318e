"""A partial-manual shard_map body is partitioned over its free (automatic) axes."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.jit_api import jit
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P


def _mesh():
    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_body_runs_on_its_shards_along_the_free_axis():
    mesh = _mesh()

    @partial(jax.shard_map, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"), axis_names={"x"})
    def body(block, w):
        return lax.psum(jnp.tanh(block) @ w, "x") + lax.axis_index("x")

    x, w = _random(8, 16), _random(16, 16, seed=1)
    f = jit(body, in_shardings=(NamedSharding(mesh, P("x", "y")), NamedSharding(mesh, P())),
            out_shardings=NamedSharding(mesh, P("x", "y")))
    compiled = f.lower(x, w).compile()
    text = compiled.as_text()
    # tanh, the matmul's result and the psum all hold a quarter of the columns on each device
    assert "tanh(%block) : f32[4,4]" in text
    assert [(record.kind, record.axes, record.shape) for record in compiled.collectives()] == [
        ("all_gather", ("y",), (4, 4)), ("all_reduce", ("x",), (4, 4))]
    t = np.tanh(x) @ w
    total = t[:4] + t[4:]
    np.testing.assert_allclose(np.asarray(f(x, w)), np.concatenate([total, total + 1]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gathered", ["all_gather", "psum_scatter"])
def test_collectives_over_the_manual_axis_keep_the_free_axis_split(gathered):
    mesh = _mesh()

    def inner(block):
        if gathered == "all_gather":
            return lax.all_gather(block * 2, "x", axis=0, tiled=True)
        return lax.psum_scatter(block * 2, "x", scatter_dimension=0, tiled=True)

    out_spec = P() if gathered == "all_gather" else P("x")
    body = jax.shard_map(inner, mesh=mesh, in_specs=P("x"), out_specs=out_spec, axis_names={"x"}, check_vma=False)
    x = _random(8, 16)
    layout = NamedSharding(mesh, P("x", "y"))
    f = jit(body, in_shardings=layout, out_shardings=NamedSharding(mesh, P(*out_spec, "y") if out_spec else P(None, "y")))
    compiled = f.lower(x).compile()
    assert all(record.axes == ("x",) for record in compiled.collectives())
    expected = x * 2 if gathered == "all_gather" else (x[:4] + x[4:]) * 2
    np.testing.assert_allclose(np.asarray(f(x)), expected, rtol=1e-6)


def test_gradient_through_a_partial_manual_body_with_a_free_axis():
    mesh = _mesh()

    @partial(jax.shard_map, mesh=mesh, in_specs=P("x"), out_specs=P(), axis_names={"x"})
    def loss(block):
        return lax.psum(jnp.sum(jnp.sin(block)), "x")

    x = _random(8, 16)
    grad = jit(jax.grad(loss), in_shardings=NamedSharding(mesh, P("x", "y")))
    np.testing.assert_allclose(np.asarray(grad(x)), np.cos(x), rtol=1e-5, atol=1e-6)
