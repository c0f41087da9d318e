"""jax.nn's activations, standardize, logmeanexp, dot_product_attention and initializers against
JAX 0.10.2's values (committed), and sharded against unsharded.

Initializers draw through meshjit.random, whose values are JAX's bit for bit, and scale with
correctly rounded operations: they must equal JAX's exactly. Activations go through exp, log and
tanh, whose last bits differ between libraries: a few ulps.
"""

from pathlib import Path

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, PartitionSpec as P

from nn_cases import compute

EXPECTED = np.load(Path(__file__).parent / "data" / "jax_nn_values.npz")


@pytest.fixture(scope="module")
def values():
    return compute(jax, jnp)


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_equal_to_jax(values, name):
    got, expected = values[name], EXPECTED[name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if name.startswith("init_"):
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=5e-7)


def test_activations_shard_and_differentiate():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(
        np.linspace(-3, 3, 8 * 6, dtype=np.float32).reshape(8, 6), NamedSharding(mesh, P("x", "y"))
    )
    for name in (
        "celu",
        "elu",
        "selu",
        "mish",
        "hard_silu",
        "sparse_plus",
        "squareplus",
        "soft_sign",
    ):
        function = getattr(jax.nn, name)
        np.testing.assert_allclose(
            np.asarray(jax.jit(function)(x)), np.asarray(function(np.asarray(x))), rtol=1e-6
        )
        gradient = jax.grad(lambda v: function(v).sum())(x)
        step = 1e-2
        numeric = (function(np.asarray(x) + step) - function(np.asarray(x) - step)) / (2 * step)
        np.testing.assert_allclose(
            np.asarray(gradient), np.asarray(numeric), atol=2e-3, err_msg=name
        )


def test_attention_sharded_over_batch_and_heads_equals_unsharded():
    mesh = jax.make_mesh((2, 2), ("x", "y"))
    rng = np.random.default_rng(1)
    q, k, v = (
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((4, 5, 4, 8), (4, 7, 2, 8), (4, 7, 2, 8))
    )
    spec = NamedSharding(mesh, P("x", None, "y"))
    sharded = [jax.device_put(part, spec) for part in (q, k, v)]
    attend = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True))
    got = attend(*sharded)
    np.testing.assert_allclose(
        np.asarray(got),
        np.asarray(jax.nn.dot_product_attention(q, k, v, is_causal=True)),
        rtol=1e-5,
        atol=1e-6,
    )


def test_attention_errors_name_the_argument():
    q = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        jax.nn.dot_product_attention(
            q, np.zeros((1, 2, 2, 4), np.float32), np.zeros((1, 2, 2, 4), np.float32)
        )
    with pytest.raises(ValueError, match="value shape"):
        jax.nn.dot_product_attention(q, q, np.zeros((1, 5, 3, 4), np.float32))
    with pytest.raises(ValueError, match="mask dtype"):
        jax.nn.dot_product_attention(q, q, q, mask=np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(ValueError, match="Unsupported implementation"):
        jax.nn.dot_product_attention(q, q, q, implementation="flash")


def test_initializers_place_their_result_and_check_their_shape():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    with jax.set_mesh(mesh):
        weights = jax.nn.initializers.glorot_uniform()(
            jax.random.key(0), (8, 4), out_sharding=P("x", "y")
        )
        zeros = jax.nn.initializers.zeros(jax.random.key(0), (2, 4), out_sharding=P(None, "y"))
    assert weights.sharding.spec == P("x", "y") and str(jax.typeof(weights)) == "float32[8@x,4@y]"
    assert zeros.sharding.spec == P(None, "y")
    expected = jax.nn.initializers.glorot_uniform()(jax.random.key(0), (8, 4))
    np.testing.assert_array_equal(np.asarray(weights), np.asarray(expected))
    with pytest.raises(ValueError, match="at least 2D"):
        jax.nn.initializers.lecun_normal()(jax.random.key(0), (5,))
    with pytest.raises(ValueError, match="invalid mode"):
        jax.nn.initializers.variance_scaling(1.0, "fan_sideways", "normal")(
            jax.random.key(0), (2, 2)
        )
    with pytest.raises(ValueError, match="invalid distribution"):
        jax.nn.initializers.variance_scaling(1.0, "fan_in", "cauchy")


def test_reductions_take_where_and_initial():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    mask = x % 3 != 0
    np.testing.assert_array_equal(
        np.asarray(jnp.sum(x, axis=1, where=mask, initial=1.0)),
        np.sum(x, axis=1, where=mask, initial=1.0),
    )
    np.testing.assert_allclose(
        np.asarray(jnp.mean(x, axis=0, where=mask)), np.mean(x, axis=0, where=mask)
    )
    np.testing.assert_allclose(
        np.asarray(jnp.var(x, axis=1, where=mask, ddof=1)),
        np.var(x, axis=1, where=mask, ddof=1),
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        np.asarray(jnp.max(x, axis=1, where=mask, initial=-1.0)),
        np.max(x, axis=1, where=mask, initial=-1.0),
    )
    np.testing.assert_array_equal(
        np.asarray(jnp.min(x, axis=0, where=mask, initial=100.0)),
        np.min(x, axis=0, where=mask, initial=100.0),
    )
    assert bool(jnp.all(x > 0, where=mask)) and not bool(jnp.any(x > 10, where=mask & (x < 9)))
    with pytest.raises(ValueError, match="specify 'initial'"):
        jnp.max(x, where=mask)
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    sharded = jax.device_put(
        np.arange(48.0, dtype=np.float32).reshape(8, 6), NamedSharding(mesh, P("x", "y"))
    )
    masked_mean = jax.jit(lambda v: jnp.mean(v, axis=0, where=v > 10))
    np.testing.assert_allclose(
        np.asarray(masked_mean(sharded)),
        np.mean(np.asarray(sharded), axis=0, where=np.asarray(sharded) > 10),
    )
