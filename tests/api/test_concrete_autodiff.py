"""grad, vjp, jvp, linearize and the jacobians called outside jit see the caller's values, so
Python control flow on them works as in JAX 0.10.2 (expected values from JAX); under jit and
vmap the values stay abstract and the concretization errors remain."""

import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.frontend.trace import ConcretizationTypeError, TracerBoolConversionError


def branchy(x):
    if x < 3:
        return 3.0 * x**2
    return -4 * x


def loopy(x):
    while x < 10:
        x = x * 2
    return x


def test_grad_follows_python_branches_on_values():
    assert float(jax.grad(branchy)(2.0)) == 12.0
    assert float(jax.grad(branchy)(4.0)) == -4.0
    assert float(jax.grad(loopy)(2.0)) == 8.0
    value, gradient = jax.value_and_grad(loopy)(3.0)
    assert (float(value), float(gradient)) == (12.0, 4.0)


def test_vjp_jvp_linearize_and_higher_order():
    assert float(jax.vjp(branchy, 2.0)[1](1.0)[0]) == 12.0
    primal, tangent = jax.jvp(lambda x: x**3 if x > 1 else x, (2.0,), (1.0,))
    assert (float(primal), float(tangent)) == (8.0, 12.0)
    assert float(jax.linearize(lambda x: x**3 if x > 1 else x, 2.0)[1](1.0)) == 12.0
    assert float(jax.grad(jax.grad(lambda x: x**3 if x > 1 else x))(2.0)) == 12.0
    assert float(jax.hessian(lambda x: x**3 if x > 1 else x)(2.0)) == 12.0


def test_int_index_item_and_boolean_masks_are_concrete():
    assert float(jax.grad(lambda x: x * int(x))(2.0)) == 2.0
    assert float(jax.grad(lambda x: jnp.arange(5.0)[x.astype(int)] * x)(2.0)) == 2.0
    assert float(jax.grad(lambda x: x * x.item())(2.0)) == 2.0
    gradient = jax.grad(lambda x: x[x > 0].sum())(jnp.array([1.0, -1.0, 2.0]))
    assert gradient.tolist() == [1.0, 0.0, 1.0]


def test_float_and_numpy_conversion_still_raise_as_in_jax():
    import numpy as np

    with pytest.raises(ConcretizationTypeError):
        jax.grad(lambda x: x * float(x))(2.0)
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.grad(lambda x: x * np.asarray(x))(2.0)


def test_values_stay_abstract_under_jit_and_vmap():
    with pytest.raises(TracerBoolConversionError):
        jax.jit(jax.grad(branchy))(2.0)
    with pytest.raises(TracerBoolConversionError):
        jax.vmap(jax.grad(branchy))(jnp.ones(2))
