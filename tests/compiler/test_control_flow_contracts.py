"""Collective contracts of loops: a scanned stack of Megatron MLP layers (weights stacked on a
leading layer dim) communicates exactly what the unrolled program does, layer for layer, in
the forward pass and in its gradient; the loop's collectives run once per step, inside it."""

from __future__ import annotations

from collections import Counter

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
LAYERS, B, D, F = 4, 8, 16, 32
SHARDINGS = (NamedSharding(MESH, P("data")), NamedSharding(MESH, P(None, None, "model")),
             NamedSharding(MESH, P(None, "model", None)))


def _random(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


ARGS = (_random(B, D), _random(LAYERS, D, F, seed=1, scale=0.25), _random(LAYERS, F, D, seed=2, scale=0.25))


def layer(h, w1, w2):
    """One Megatron MLP block: column-parallel w1, row-parallel w2, a residual."""
    return jnp.tanh(jnp.maximum(h @ w1, 0.0) @ w2) + h


def scanned(x, w1s, w2s):
    return lax.scan(lambda h, weights: (layer(h, *weights), None), x, (w1s, w2s))[0]


def unrolled(x, w1s, w2s):
    for index in range(LAYERS):
        x = layer(x, w1s[index], w2s[index])
    return x


def _per_layer(records) -> Counter:
    """Each collective's (kind, axes, shape, bytes), counted once per execution."""
    counts = Counter()
    for record in records:
        counts[(record.kind, record.axes, record.shape, record.bytes)] += record.trips
    return counts


def _compile(function):
    return jax.jit(function, in_shardings=SHARDINGS).lower(*ARGS).compile()


def test_scanned_megatron_stack_sends_what_the_unrolled_one_does():
    loop, straight = _compile(scanned), _compile(unrolled)
    assert [(record.kind, record.axes, record.trips) for record in loop.collectives()] == [
        ("all_reduce", ("model",), LAYERS)]
    per_layer = _per_layer(loop.collectives())
    assert per_layer == _per_layer(straight.collectives())
    assert per_layer == Counter({("all_reduce", ("model",), (B // 2, D), 2 * 3 * (B // 2) * D * 4 // 4): LAYERS})
    assert sum(record.total_bytes for record in loop.collectives()) == \
        sum(record.total_bytes for record in straight.collectives())
    body = next(op for op in loop.program.partitioned.main.body.ops if op.name == "scan").regions[0]
    assert [op.name for op in body.walk() if op.name == "all_reduce"] == ["all_reduce"]
    np.testing.assert_allclose(np.asarray(loop(*ARGS)), np.asarray(straight(*ARGS)), rtol=1e-5, atol=1e-5)


def test_gradient_of_the_scanned_stack_sends_what_the_unrolled_one_does():
    def gradient(function):
        return jax.grad(lambda *args: jnp.sum(function(*args) ** 2), argnums=(0, 1, 2))

    loop, straight = _compile(gradient(scanned)), _compile(gradient(unrolled))
    assert all(record.trips == LAYERS for record in loop.collectives())
    assert _per_layer(loop.collectives()) == _per_layer(straight.collectives())
    for got, want in zip(loop(*ARGS), straight(*ARGS)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
