"""Collective contracts of sharded training steps (8 devices, float32): the backward passes
autodiff builds are propagated and partitioned like any program, and must communicate exactly
as a hand-written data-parallel, FSDP or Megatron step would. Each also checks the gradients
against the unsharded ones."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import nn
from meshjit.ad_api import grad, value_and_grad
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

WEIGHTS = ("w1", "b1", "w2", "b2")


@pytest.fixture
def data_mesh():
    return Mesh(np.array(jax.devices()[:8]), ("data",))


def _random(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed + sum(shape)).standard_normal(shape) * scale).astype(
        np.float32
    )


def _mlp_params(d, f, c):
    return {
        "w1": _random(d, f, scale=d**-0.5),
        "b1": _random(f, seed=1, scale=0.1),
        "w2": _random(f, c, scale=f**-0.5),
        "b2": _random(c, seed=2, scale=0.1),
    }


def _mlp_loss(params, x, y):
    hidden = nn.relu(x @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2)


def _records(compiled):
    return [(record.kind, record.axes, record.shape) for record in compiled.collectives()]


def _assert_same_gradients(sharded, reference, tolerance=2e-5):
    for name in reference:
        np.testing.assert_allclose(
            np.asarray(sharded[name]), np.asarray(reference[name]), rtol=tolerance, atol=tolerance
        )


def test_data_parallel_step_all_reduces_each_gradient_once(data_mesh):
    batch, d, f, c = 64, 32, 128, 16
    params, x, y = _mlp_params(d, f, c), _random(batch, d, seed=3), _random(batch, c, seed=4)
    replicated, rows = NamedSharding(data_mesh, P()), NamedSharding(data_mesh, P("data", None))
    step = jax.jit(
        grad(_mlp_loss),
        in_shardings=({name: replicated for name in WEIGHTS}, rows, rows),
        out_shardings={name: replicated for name in WEIGHTS},
    )
    compiled = step.lower(params, x, y).compile()
    assert sorted(_records(compiled)) == sorted(
        ("all_reduce", ("data",), params[name].shape) for name in WEIGHTS
    )
    for record in compiled.collectives():
        assert record.bytes == 2 * 7 * int(np.prod(record.shape)) * 4 // 8
    _assert_same_gradients(step(params, x, y), grad(_mlp_loss)(params, x, y))


def test_fsdp_step_gathers_weights_and_reduce_scatters_gradients(data_mesh):
    # Tokens per device outnumber the weights' rows, the regime FSDP is for: reduce-scattering a
    # weight gradient is then cheaper than resharding the activations it is computed from.
    batch, d, f, c = 512, 32, 64, 32
    params, x, y = _mlp_params(d, f, c), _random(batch, d, seed=3), _random(batch, c, seed=4)
    rows = NamedSharding(data_mesh, P("data", None))
    sharded = {
        name: NamedSharding(data_mesh, P("data", *([None] * (params[name].ndim - 1))))
        for name in WEIGHTS
    }
    step = jax.jit(grad(_mlp_loss), in_shardings=(sharded, rows, rows), out_shardings=sharded)
    compiled = step.lower(params, x, y).compile()
    local = {name: (params[name].shape[0] // 8,) + params[name].shape[1:] for name in WEIGHTS}
    expected = [("all_gather", ("data",), local[name]) for name in WEIGHTS]
    expected += [("reduce_scatter", ("data",), params[name].shape) for name in WEIGHTS]
    assert sorted(_records(compiled)) == sorted(expected)
    gradients = step(params, x, y)
    for name in WEIGHTS:
        assert gradients[name].sharding.is_equivalent_to(sharded[name], params[name].ndim)
    _assert_same_gradients(gradients, grad(_mlp_loss)(params, x, y))


def test_megatron_mlp_forward_and_backward_all_reduce_once_each():
    mesh = Mesh(np.array(jax.devices()[:8]), ("model",))
    tokens, d, f = 16, 32, 256
    x, w1, w2 = (
        _random(tokens, d),
        _random(d, f, seed=1, scale=d**-0.5),
        _random(f, d, seed=2, scale=f**-0.5),
    )

    def loss(x, w1, w2):
        y = nn.gelu(x @ w1) @ w2
        return 0.5 * jnp.sum(y * y)

    replicated = NamedSharding(mesh, P())
    columns, rows = NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model", None))
    step = jax.jit(
        value_and_grad(loss, argnums=(0, 1, 2)),
        in_shardings=(replicated, columns, rows),
        out_shardings=(replicated, (replicated, columns, rows)),
    )
    compiled = step.lower(x, w1, w2).compile()
    records = compiled.collectives()
    assert _records(compiled) == [("all_reduce", ("model",), (tokens, d))] * 2
    # one finishes the forward matmul (the loss squares it), the other is dx's partial sums
    assert "output 1" not in records[0].reason and records[1].reason == "output 1"
    value, gradients = step(x, w1, w2)
    expected_value, expected = value_and_grad(loss, argnums=(0, 1, 2))(x, w1, w2)
    np.testing.assert_allclose(np.asarray(value), np.asarray(expected_value), rtol=2e-5)
    _assert_same_gradients(dict(enumerate(gradients)), dict(enumerate(expected)), 5e-5)
    assert compiled.output_shardings[1][1].is_equivalent_to(columns, 2)
    assert compiled.output_shardings[1][2].is_equivalent_to(rows, 2)
