"""Autodiff through shard_map (manual_computation and its collectives) and with_sharding_constraint:
gradients of sharded programs equal those of the same computation written globally, the
collectives transpose as JAX's check_vma semantics say, and layouts carry over to the backward
pass."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.frontend.lax_collectives import (
    all_gather,
    all_to_all,
    pcast,
    pmax,
    pmean,
    ppermute,
    psum,
    psum_scatter,
)

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.ad_api import custom_jvp, custom_vjp, grad, jvp, stop_gradient, value_and_grad
from meshjit.constraint_api import with_sharding_constraint
from meshjit.shard_map_api import shard_map
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture
def mesh():
    return Mesh(np.array(jax.devices()[:8]), ("x",))


def _random(*shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def _check(sharded, reference, *args):
    """Values and gradients (of a random projection of the output) of ``sharded`` equal those of
    ``reference``, eagerly and under jit."""
    weights = np.random.default_rng(7).standard_normal(np.shape(reference(*args)))
    argnums = tuple(range(len(args)))

    def loss_of(function):
        return lambda *values: jnp.sum(function(*values) * weights)

    expected_value, expected = value_and_grad(loss_of(reference), argnums)(*args)
    for transform in (lambda f: f, jax.jit):
        value, gradients = transform(value_and_grad(loss_of(sharded), argnums))(*args)
        np.testing.assert_allclose(np.asarray(value), np.asarray(expected_value), rtol=1e-10)
        for got, want in zip(gradients, expected):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_psum_of_varying_values_with_an_invariant_weight(mesh):
    body = shard_map(
        lambda a, w: psum(jnp.sum(jnp.sin(a) * w), "x"),
        mesh=mesh,
        in_specs=(P("x"), P()),
        out_specs=P(),
    )
    _check(body, lambda a, w: jnp.sum(jnp.sin(a) * w), _random(16), np.float64(2.0))


def test_psum_of_an_invariant_value_counts_every_device(mesh):
    body = shard_map(lambda w: psum(w * 2.0, "x"), mesh=mesh, in_specs=P(), out_specs=P())
    _check(body, lambda w: 16.0 * w, _random(3))


def test_all_gather_transposes_to_reduce_scatter(mesh):
    def local(a):
        gathered = all_gather(a, "x", tiled=True)
        return a * jnp.sum(gathered**2) + all_gather(a, "x")[3]

    body = shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    reference = lambda a: a * jnp.sum(a**2) + jnp.tile(a[6:8], 8)
    _check(body, reference, _random(16))
    text = jax.jit(grad(lambda a: jnp.sum(body(a)))).lower(_random(16)).as_text()
    assert "reduce_scatter" in text


def test_all_gather_of_an_invariant_value(mesh):
    body = shard_map(
        lambda w: all_gather(w, "x", tiled=True) * 3.0, mesh=mesh, in_specs=P(), out_specs=P("x")
    )
    _check(body, lambda w: jnp.tile(w * 3.0, 64), _random(2))


def test_invariant_value_returned_split(mesh):
    body = shard_map(lambda w: jnp.sin(w), mesh=mesh, in_specs=P(), out_specs=P("x"))
    _check(body, lambda w: jnp.tile(jnp.sin(w), 8), _random(3))


def test_pcast_to_varying_transposes_to_a_sum(mesh):
    # JAX's transpose of pvary is psum: each device's cotangent of the cast weight is summed.
    body = shard_map(
        lambda w, a: psum(jnp.sum(jnp.cos(pcast(w, "x", to="varying")) * a), "x"),
        mesh=mesh,
        in_specs=(P(), P("x")),
        out_specs=P(),
    )
    reference = lambda w, a: jnp.sum(jnp.tile(jnp.cos(w), 8) * a)
    _check(body, reference, _random(2), _random(16, seed=1))


def test_pcast_value_returned_split(mesh):
    body = shard_map(
        lambda w: pcast(jnp.sin(w), "x", to="varying") * 2.0, mesh=mesh, in_specs=P(), out_specs=P("x")
    )
    _check(body, lambda w: jnp.tile(jnp.sin(w) * 2.0, 8), _random(3))
    a, direction = _random(3), _random(3, seed=1)
    _, tangent = jvp(body, (a,), (direction,))
    np.testing.assert_allclose(np.asarray(tangent), np.tile(np.cos(a) * 2.0 * direction, 8), rtol=1e-10)


def test_pcast_cotangent_is_summed_once_after_local_reductions(mesh):
    body = shard_map(
        lambda w, x: psum(jnp.sum(jnp.tanh(x @ pcast(w, "x", to="varying"))), "x"),
        mesh=mesh,
        in_specs=(P(), P("x", None)),
        out_specs=P(),
    )
    w, x = _random(4, 16), _random(64, 4, seed=2)
    compiled = jax.jit(grad(body)).lower(w, x).compile()
    assert [(record.kind, record.shape) for record in compiled.collectives()] == [("all_reduce", (4, 16))]
    np.testing.assert_allclose(
        np.asarray(jax.jit(grad(body))(w, x)),
        np.asarray(grad(lambda w, x: jnp.sum(jnp.tanh(x @ w)))(w, x)),
        rtol=1e-10,
    )


def test_psum_scatter_transposes_to_all_gather(mesh):
    body = shard_map(
        lambda a: psum_scatter(a**2, "x", tiled=True), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )
    _check(body, lambda a: jnp.sum(jnp.reshape(a**2, (8, 16)), 0), _random(128))


def test_ppermute_transposes_to_the_inverse_permutation(mesh):
    shift = [(index, (index + 1) % 8) for index in range(7)]
    body = shard_map(
        lambda a: ppermute(a**3, "x", shift), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )

    _check(body, lambda a: jnp.concatenate([jnp.zeros(2), (a**3)[:-2]]), _random(16))


def test_all_to_all_transposes_to_the_swapped_all_to_all(mesh):
    body = shard_map(
        lambda a: all_to_all(a * a, "x", 1, 0, tiled=True) * 2.0,
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(None, "x"),
    )
    _check(body, lambda a: 2.0 * a * a, _random(8, 16))


def test_pmax_and_pmean(mesh):
    body = shard_map(
        lambda a: pmax(a, "x") + pmean(a * a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
    )
    reference = lambda a: (
        jnp.max(jnp.reshape(a, (8, 2)), 0) + jnp.mean(jnp.reshape(a * a, (8, 2)), 0)
    )
    _check(body, reference, _random(16))


def test_forward_mode_and_second_order_through_shard_map(mesh):
    body = shard_map(
        lambda a, w: psum(jnp.sum(jnp.sin(a * w)), "x"),
        mesh=mesh,
        in_specs=(P("x"), P()),
        out_specs=P(),
    )
    a, w, direction = _random(16), np.float64(1.3), _random(16, seed=1)
    _, tangent = jvp(lambda a: body(a, w), (a,), (direction,))
    np.testing.assert_allclose(
        np.asarray(tangent), np.sum(np.cos(a * w) * w * direction), rtol=1e-10
    )
    second = grad(lambda w: grad(body, 1)(a, w))(w)
    np.testing.assert_allclose(np.asarray(second), -np.sum(np.sin(a * w) * a * a), rtol=1e-10)


def test_psum_backward_needs_no_communication_for_varying_inputs(mesh):
    body = shard_map(
        lambda a: psum(jnp.sum(jnp.tanh(a)), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
    )
    compiled = jax.jit(value_and_grad(body)).lower(_random(16)).compile()
    assert [record.kind for record in compiled.collectives()] == ["all_reduce"]


def test_replicated_parameters_are_summed_after_local_reductions(mesh):
    # The bias's cotangent is summed over devices once reduced over the batch: a vector, not
    # the activations.
    body = shard_map(
        lambda w, b, x: psum(jnp.sum(jnp.tanh(x @ w + b)), "x"),
        mesh=mesh,
        in_specs=(P(), P(), P("x", None)),
        out_specs=P(),
    )
    w, b, x = _random(4, 16), _random(16, seed=1), _random(64, 4, seed=2)
    compiled = jax.jit(grad(body, argnums=(0, 1))).lower(w, b, x).compile()
    assert [(record.kind, record.shape) for record in compiled.collectives()] == [
        ("all_reduce", (4, 16)),
        ("all_reduce", (16,)),
    ]
    assert all(
        "autodiff: cotangent of a shard_map value replicated over ['x']" in record.reason
        for record in compiled.collectives()
    )
    reference = lambda w, b, x: jnp.sum(jnp.tanh(x @ w + b))
    for got, want in zip(
        jax.jit(grad(body, argnums=(0, 1)))(w, b, x), grad(reference, argnums=(0, 1))(w, b, x)
    ):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


def test_custom_rules_and_stop_gradient_inside_shard_map(mesh):
    @custom_vjp
    def square(x):
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, cotangent: (cotangent * x * 10,))

    @custom_jvp
    def cube(x):
        return x**3

    cube.defjvp(lambda primals, tangents: (cube(primals[0]), tangents[0] * 100.0))

    def local(a):
        return psum(jnp.sum(square(a) + stop_gradient(a) * a + cube(a)), "x")

    body = shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P())
    a = _random(16)
    for transform in (lambda f: f, jax.jit):
        np.testing.assert_allclose(np.asarray(transform(grad(body))(a)), 11 * a + 100, rtol=1e-12)


def test_sharding_constraint_carries_over_to_the_backward_pass(mesh):
    sharding = NamedSharding(mesh, P("x", None))

    def loss(a):
        return jnp.sum(jnp.sin(with_sharding_constraint(a * 2.0, sharding)))

    a = _random(16, 4)
    text = jax.jit(grad(loss)).lower(a).as_text()
    assert text.count("sharding_constraint") == 2
    np.testing.assert_allclose(np.asarray(jax.jit(grad(loss))(a)), 2 * np.cos(2 * a), rtol=1e-12)
