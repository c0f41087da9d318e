"""meshjit.random's gamma family, count samplers and multivariate_normal against JAX 0.10.2's
values (data/jax_gamma_values.npz, made by data/make_gamma_table.py): float32 bit for bit
(multivariate_normal within 16 ulps), float64 within 16 ulps; sharded draws equal unsharded
ones; JAX's errors for bad parameters."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gamma_cases import CASES, CLOSE_DRAWS, DECOMPOSITION_DRAWS, GRADIENTS, X64_CLOSE_CASES

import meshjit

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_gamma_values.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_jax(name):
    actual, expected = np.asarray(CASES[name](meshjit)), TABLE[name]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, name
    np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.mark.parametrize("name", sorted(CLOSE_DRAWS))
def test_close_to_jax(name):
    ulps, call = CLOSE_DRAWS[name]
    actual, expected = np.asarray(call(meshjit)), TABLE[name]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, name
    np.testing.assert_array_max_ulp(actual, expected, maxulp=ulps)


@pytest.mark.parametrize("name", sorted(DECOMPOSITION_DRAWS))
def test_draws_through_decompositions_close_to_jax(name):
    actual, expected = np.asarray(DECOMPOSITION_DRAWS[name](meshjit)), TABLE[name]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, name
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_close_to_jax(name):
    rtol, call = GRADIENTS[name]
    np.testing.assert_allclose(np.asarray(call(meshjit)), TABLE[name], rtol=rtol)


@pytest.fixture
def x64():
    meshjit.config.update("jax_enable_x64", True)
    yield
    meshjit.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", sorted(X64_CLOSE_CASES))
def test_close_to_jax_with_x64(name, x64):
    ulps, call = X64_CLOSE_CASES[name]
    actual, expected = np.asarray(call(meshjit)), TABLE[name]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, name
    if actual.dtype.kind == "f":
        np.testing.assert_array_max_ulp(actual, expected, maxulp=ulps)
    else:
        np.testing.assert_array_equal(actual, expected)


def _auto_mesh():
    return meshjit.make_mesh((2, 4), ("x", "y"), axis_types=(meshjit.sharding.AxisType.Auto,) * 2)


@pytest.mark.parametrize("sampler", ["gamma", "beta", "dirichlet"])
def test_sharded_draws_equal_unsharded_ones(sampler):
    sharding = meshjit.NamedSharding(_auto_mesh(), meshjit.P("x", "y"))
    key = meshjit.random.key(7)
    alphas = np.linspace(0.1, 6.0, 32, dtype=np.float32).reshape(4, 8)
    draw = {"gamma": lambda key, a: meshjit.random.gamma(key, a),
            "beta": lambda key, a: meshjit.random.beta(key, a, 2.0),
            "dirichlet": lambda key, a: meshjit.random.dirichlet(key, a)}[sampler]
    expected = np.asarray(draw(key, alphas))
    sharded = meshjit.jit(draw, out_shardings=sharding)(key, meshjit.device_put(alphas, sharding))
    assert sharded.sharding == sharding
    np.testing.assert_array_equal(np.asarray(sharded), expected)
    drawn = meshjit.random.gamma(key, 2.0, (4, 8), out_sharding=sharding)
    np.testing.assert_array_equal(np.asarray(drawn), np.asarray(meshjit.random.gamma(key, 2.0, (4, 8))))


def test_errors_are_jax_errors():
    key = meshjit.random.key(0)
    with pytest.raises(ValueError, match="dtype argument to `gamma` must be a float dtype"):
        meshjit.random.gamma(key, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
        meshjit.random.dirichlet(key, 1.0)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        meshjit.random.beta(key, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)\]"):
        meshjit.random.gamma(key, np.ones(3), (2,))
