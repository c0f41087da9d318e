"""jacfwd, jacrev and hessian as JAX's: pytree structure (outputs outside, inputs inside),
argnums, has_aux, against finite differences and closed forms; JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
X = RNG.standard_normal((4,)).astype(np.float32)


def model(x, scales):
    return {"linear": jnp.tanh(A @ x) * scales[0], "norm": jnp.sum(x * x) * scales[1]}


SCALES = (np.float32(2.0), np.float32(0.5))


def _expected_jacobian_in_x(x):
    hidden = np.tanh(A @ x)
    return {"linear": (SCALES[0] * (1 - hidden**2))[:, None] * A, "norm": 2 * x * SCALES[1]}


@pytest.mark.parametrize("transform", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_of_a_pytree_function(transform):
    jacobian = transform(model)(X, SCALES)
    expected = _expected_jacobian_in_x(X)
    assert set(jacobian) == {"linear", "norm"}
    assert jacobian["linear"].shape == (3, 4) and jacobian["norm"].shape == (4,)
    for name in expected:
        np.testing.assert_allclose(np.asarray(jacobian[name]), expected[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transform", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_argnums_tuple_nests_inputs_inside_outputs(transform):
    jacobian = transform(model, argnums=(0, 1))(X, SCALES)
    by_x, by_scales = jacobian["linear"]
    assert by_x.shape == (3, 4) and by_scales[0].shape == (3,) and by_scales[1].shape == (3,)
    np.testing.assert_allclose(np.asarray(by_scales[0]), np.tanh(A @ X), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jacobian["norm"][1][1]), np.sum(X * X), rtol=1e-6)


def test_jacfwd_and_jacrev_agree_and_has_aux():
    def function(x):
        return jnp.sin(x) * x[::-1], {"sum": jnp.sum(x)}

    forward, aux = jax.jacfwd(function, has_aux=True)(X)
    reverse, aux_reverse = jax.jacrev(function, has_aux=True)(X)
    np.testing.assert_allclose(np.asarray(forward), np.asarray(reverse), rtol=1e-6, atol=1e-6)
    assert float(aux["sum"]) == pytest.approx(float(X.sum())) == float(aux_reverse["sum"])


def test_hessian_matches_the_closed_form_and_runs_under_jit():
    def energy(x):
        return jnp.sum(x**3) + jnp.dot(x, A.T @ A @ x)

    hessian = jax.jit(jax.hessian(energy))(X)
    np.testing.assert_allclose(np.asarray(hessian), np.diag(6 * X) + 2 * A.T @ A, rtol=1e-4, atol=1e-4)


def test_jacobian_against_finite_differences():
    def function(x):
        return jnp.exp(x[:2]) * jnp.cos(x[2:])

    x = np.array([0.1, -0.3, 0.7, 0.2], np.float64)
    jax.config.update("jax_enable_x64", True)
    try:
        jacobian = np.asarray(jax.jacrev(function)(x))
        step = 1e-6
        numeric = np.stack([(np.asarray(function(x + step * e)) - np.asarray(function(x - step * e))) / (2 * step)
                            for e in np.eye(4)], axis=1)
    finally:
        jax.config.update("jax_enable_x64", False)
    np.testing.assert_allclose(jacobian, numeric, rtol=1e-6, atol=1e-8)


def test_integer_inputs_are_jax_s_type_errors():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        jax.jacfwd(lambda x: x)(np.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
        jax.jacrev(lambda x: x)(np.arange(3))


def test_aux_data_that_is_not_traced_comes_back_as_it_is():
    """As JAX's: Python values, strings and numpy arrays in aux are returned unchanged (they had
    become float64 arrays, and strings had raised)."""
    loss = lambda p: (p * 2.0, {"count": 3, "name": "step", "scale": 0.5, "p": p})  # noqa: E731
    (value, aux), gradient = jax.value_and_grad(loss, has_aux=True)(1.0)
    assert aux["count"] == 3 and aux["name"] == "step" and aux["scale"] == 0.5
    assert type(aux["scale"]) is float and float(aux["p"]) == 1.0 and float(gradient) == 2.0
    assert jax.grad(lambda p: (p * 2.0, "text"), has_aux=True)(1.0)[1] == "text"
    for transform in (lambda f: jax.vjp(f, 1.0, has_aux=True)[2],
                      lambda f: jax.jvp(f, (1.0,), (1.0,), has_aux=True)[2],
                      lambda f: jax.linearize(f, 1.0, has_aux=True)[2]):
        traced, kept = transform(lambda p: (p * 2.0, (p, "x")))
        assert kept == "x" and float(traced) == 1.0
