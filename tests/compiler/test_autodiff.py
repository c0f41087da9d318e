"""The autodiff API: grad, value_and_grad, vjp, jvp and linearize over pytrees, has_aux, argnums,
composition with jit and with themselves, custom_jvp / custom_vjp, stop_gradient, and the
errors JAX raises. Float64 throughout (gradients are compared with closed forms or central
differences)."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.frontend.trace import ConcretizationTypeError
from meshjit.runtime.array import Array

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import nn
from meshjit.dtypes import float0
from meshjit.ad_api import (
    custom_jvp,
    custom_vjp,
    grad,
    jvp,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
)

pytestmark = pytest.mark.usefixtures("x64")

X = np.array([0.3, -1.2, 2.0])


def _close(actual, expected, tolerance=1e-12):
    np.testing.assert_allclose(
        np.asarray(actual), np.asarray(expected), rtol=tolerance, atol=tolerance
    )


def test_grad_of_a_pytree_with_argnums_and_keywords():
    def loss(params, x, scale=1.0):
        return scale * jnp.sum(params["w"] * x**2) + jnp.sum(params["b"][0] * params["b"][1])

    params = {"w": np.array([1.0, 2.0, 3.0]), "b": [np.float64(2.0), np.float64(5.0)]}
    gradient = grad(loss)(params, X, scale=2.0)
    assert isinstance(gradient["w"], Array)
    _close(gradient["w"], 2 * X**2)
    _close(gradient["b"][0], 5.0)
    _close(gradient["b"][1], 2.0)
    _, gradient_x = grad(loss, argnums=(0, 1))(params, X)
    _close(gradient_x, 2 * params["w"] * X)
    _close(grad(loss, argnums=1)(params, X), 2 * params["w"] * X)


def test_python_scalars_not_differentiated_stay_static():
    def f(x, steps):
        for _ in range(steps):  # a Python loop over a non-differentiated Python int, as in JAX
            x = jnp.sin(x)
        return jnp.sum(x)

    _close(grad(f)(X, 2), np.cos(np.sin(X)) * np.cos(X))


def test_value_and_grad_with_aux():
    def loss(x):
        return jnp.sum(jnp.sin(x)), {"double": 2 * x, "count": jnp.sum(x > 0)}

    (value, aux), gradient = value_and_grad(loss, has_aux=True)(X)
    _close(value, np.sum(np.sin(X)))
    _close(aux["double"], 2 * X)
    assert int(aux["count"]) == 2
    _close(gradient, np.cos(X))
    gradient, aux = grad(loss, has_aux=True)(X)
    _close(gradient, np.cos(X))


def test_higher_derivatives():
    def f(x):
        return jnp.sin(x) * x**3

    first = grad(f)
    second = grad(first)
    third = grad(second)
    x = 0.7
    _close(first(x), np.cos(x) * x**3 + 3 * x**2 * np.sin(x))
    _close(second(x), -np.sin(x) * x**3 + 6 * x**2 * np.cos(x) + 6 * x * np.sin(x))
    _close(third(x), -np.cos(x) * x**3 - 9 * x**2 * np.sin(x) + 18 * x * np.cos(x) + 6 * np.sin(x))


def test_jit_and_grad_compose_both_ways():
    def f(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    w, x = (
        np.random.default_rng(0).standard_normal((3, 2)),
        np.random.default_rng(1).standard_normal((4, 3)),
    )
    expected = grad(f)(w, x)
    _close(jax.jit(grad(f))(w, x), expected)
    _close(grad(jax.jit(f))(w, x), expected)

    def second(w, x):
        return jnp.sum(grad(jax.jit(f))(w, x) ** 2)

    _close(jax.jit(grad(jax.jit(second), argnums=1))(w, x), grad(second, argnums=1)(w, x), 1e-10)


def test_backward_ops_keep_the_source_line_of_their_forward_op():
    def f(x):
        return jnp.sum(jnp.sin(x))  # the line every op of the gradient points at

    text = jax.jit(grad(f)).lower(X).as_text()
    line = f.__code__.co_firstlineno + 1
    assert "cos(" in text
    rows = [row for row in text.splitlines() if "cos(" in row or "mul(" in row]
    assert rows and all(f'test_autodiff.py":{line})' in row for row in rows)


def test_closures_over_arrays_and_outer_traced_values():
    data = jnp.asarray(X)

    def outer(scale):
        # grad of grad inside jit, closing over a value of the jit trace three levels out
        inner = lambda y: jnp.sum(jnp.sin(y * scale * data))
        return grad(grad(lambda y: inner(y)))(1.5)

    scale = 0.4
    expected = -np.sum(np.sin(1.5 * scale * X) * (scale * X) ** 2)
    _close(jax.jit(outer)(scale), expected)


def test_vjp_jvp_and_linearize_on_pytrees():
    def f(inputs):
        a, b = inputs["a"], inputs["b"]
        return {"sum": a * b, "sin": jnp.sin(a)}

    inputs = {"a": X, "b": 2 * X}
    output, pullback = vjp(f, inputs)
    _close(output["sum"], 2 * X * X)
    (cotangent,) = pullback({"sum": np.ones(3), "sin": np.ones(3)})
    _close(cotangent["a"], 2 * X + np.cos(X))
    _close(cotangent["b"], X)
    tangents = {"a": np.ones(3), "b": np.zeros(3)}
    _, tangent = jvp(f, (inputs,), (tangents,))
    _close(tangent["sum"], 2 * X)
    _close(tangent["sin"], np.cos(X))
    output, f_jvp = linearize(f, inputs)
    _close(f_jvp(tangents)["sin"], np.cos(X))


def test_integer_inputs_get_float0_tangents_as_in_jax():
    def f(x, n):
        return x * n

    _, pullback = vjp(f, X, np.int64(3))
    cotangent_x, cotangent_n = pullback(np.ones(3))
    _close(cotangent_x, np.full(3, 3.0))
    assert cotangent_n.dtype == float0 and cotangent_n.shape == ()
    gradient = grad(lambda x, n: jnp.sum(f(x, n)), argnums=(0, 1), allow_int=True)(X, np.int64(3))
    assert gradient[1].dtype == float0
    flags = np.array([True, False, True])
    _, tangent = jvp(lambda x, b: jnp.where(b, x, 0.0), (X, flags), (np.ones(3), np.zeros(3, float0)))
    _close(tangent, np.array([1.0, 0.0, 1.0]))
    with pytest.raises(TypeError, match="tangent dtype must be float0"):
        jvp(f, (X, np.int64(3)), (np.ones(3), np.int64(0)))
    # integer outputs: float0 tangents out, and float0 (or same-dtype) cotangents in
    _, integer_tangent = jvp(lambda n: n * 2, (np.int64(3),), (np.zeros((), float0),))
    assert integer_tangent.dtype == float0
    _, pullback = vjp(lambda n: n * 2, np.int64(3))
    for cotangent in (np.zeros((), float0), np.int64(1)):
        assert pullback(cotangent)[0].dtype == float0


def test_mlp_gradient_matches_central_differences():
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((5, 8)),
        "b1": rng.standard_normal(8),
        "w2": rng.standard_normal((8, 3)),
        "b2": rng.standard_normal(3),
    }
    x, labels = rng.standard_normal((6, 5)), rng.integers(0, 3, 6)

    def loss(params):
        hidden = nn.gelu(x @ params["w1"] + params["b1"])
        logits = hidden @ params["w2"] + params["b2"]
        return -jnp.mean(jnp.take_along_axis(nn.log_softmax(logits), labels[:, None], axis=1))

    gradient = grad(loss)(params)
    direction = {name: rng.standard_normal(value.shape) for name, value in params.items()}
    step = 1e-6
    shifted = [
        float(loss({name: params[name] + sign * step * direction[name] for name in params}))
        for sign in (1, -1)
    ]
    analytic = sum(np.vdot(np.asarray(gradient[name]), direction[name]) for name in params)
    _close(analytic, (shifted[0] - shifted[1]) / (2 * step), 1e-7)


# --- custom derivatives and stop_gradient ------------------------------------------------------


@custom_jvp
def clipped_log(x):
    return jnp.log(x)


@clipped_log.defjvp
def _clipped_log_jvp(primals, tangents):
    (x,), (tangent,) = primals, tangents
    return clipped_log(x), tangent / jnp.maximum(x, 1.0)


def test_custom_jvp_in_both_modes_and_under_jit():
    x = np.array([0.5, 2.0])
    _close(jvp(clipped_log, (x,), (np.ones(2),))[1], [1.0, 0.5])
    _close(grad(lambda x: jnp.sum(clipped_log(x)))(x), [1.0, 0.5])
    _close(
        jax.jit(grad(lambda x: jnp.sum(clipped_log(x) * x)))(x), np.log(x) + x / np.maximum(x, 1.0)
    )
    _close(clipped_log(x), np.log(x))
    # the rule itself is differentiated for second derivatives: d/dx (1 / max(x, 1)) = -1/x^2 for x > 1
    _close(grad(grad(lambda x: clipped_log(x)))(2.0), -0.25)


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @custom_jvp
    def product(x, y):
        return x * y

    product.defjvps(
        lambda tangent, out, x, y: 10 * tangent * y, lambda tangent, out, x, y: 100 * tangent * x
    )
    _close(grad(product, argnums=(0, 1))(2.0, 3.0), (30.0, 200.0))

    def apply(function, x):
        return function(x)

    apply = custom_jvp(apply, nondiff_argnums=(0,))
    apply.defjvp(lambda function, primals, tangents: (function(primals[0]), 7 * tangents[0]))
    _close(grad(lambda x: apply(jnp.sin, x))(1.0), 7.0)


def test_custom_vjp_with_pytrees_nondiff_and_none_cotangents():
    @custom_vjp
    def scaled(pair, factor):
        return pair[0] * factor + pair[1]

    scaled.defvjp(
        lambda pair, factor: (scaled(pair, factor), factor),
        lambda factor, cotangent: ((cotangent * factor * 10, cotangent), None),
    )
    gradients = grad(lambda pair, factor: scaled(pair, factor), argnums=(0, 1))((2.0, 3.0), 4.0)
    _close(gradients[0][0], 40.0)
    _close(gradients[0][1], 1.0)
    _close(gradients[1], 0.0)

    def power(n, x):
        return x**n

    power = custom_vjp(power, nondiff_argnums=(0,))
    power.defvjp(
        lambda n, x: (x**n, x), lambda n, x, cotangent: (cotangent * n * x ** (n - 1) * 2,)
    )
    _close(jax.jit(grad(lambda x: power(3, x)))(2.0), 24.0)
    _close(power(3, 2.0), 8.0)


def test_stop_gradient():
    def f(x):
        return jnp.sum(x * stop_gradient(x) + stop_gradient({"a": x})["a"])

    _close(grad(f)(X), X)
    _close(jax.jit(grad(f))(X), X)
    _close(grad(lambda x: grad(lambda y: y * y * stop_gradient(y))(x))(2.0), 4.0)
    _close(stop_gradient(X), X)


# --- errors ------------------------------------------------------------------------------------


def test_grad_errors():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*int"):
        grad(lambda x: x * 1.0)(3)
    with pytest.raises(
        TypeError,
        match="Gradient only defined for scalar-output functions. Output had shape: \\(3,\\)",
    ):
        grad(lambda x: x)(X)
    with pytest.raises(TypeError, match="real-valued outputs"):
        grad(lambda x: jnp.sum(x > 0))(X)
    with pytest.raises(TypeError, match="pair"):
        grad(lambda x: jnp.sum(x), has_aux=True)(X)
    with pytest.raises(TypeError, match="argnums=2 requires at least 3 positional arguments"):
        grad(lambda x, y: x, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        grad(lambda x: x, argnums="x")
    with pytest.raises(TypeError, match="expects a callable"):
        grad(3)


def test_value_dependent_python_control_flow_is_a_concretization_error_only_under_jit():
    def f(x):
        return x if x > 0 else -x

    assert float(grad(f)(-1.0)) == -1.0  # outside jit the values are known, as in JAX
    with pytest.raises(ConcretizationTypeError):
        jax.jit(grad(f))(1.0)


def test_jvp_vjp_and_custom_errors():
    with pytest.raises(TypeError, match="must be tuples or lists"):
        jvp(jnp.sin, X, X)
    with pytest.raises(TypeError, match="same tree structure"):
        jvp(lambda a, b: a, (X, X), (X,))
    with pytest.raises(ValueError, match="tangent 0 has type float64\\[2\\]"):
        jvp(jnp.sin, (X,), (np.ones(2),))
    _, pullback = vjp(jnp.sin, X)
    with pytest.raises(ValueError, match="cotangent 0"):
        pullback(np.ones(4))
    with pytest.raises(TypeError, match="tree structure"):
        pullback((np.ones(3),))
    undefined = custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="No JVP defined"):
        undefined(1.0)

    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda residuals, cotangent: (cotangent,))
    with pytest.raises(TypeError, match="forward-mode"):
        jvp(f, (1.0, 2.0), (1.0, 1.0))
    with pytest.raises(
        TypeError, match="tuple of length equal to the number of differentiated arguments"
    ):
        grad(f)(1.0, 2.0)
