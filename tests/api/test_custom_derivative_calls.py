"""custom_jvp and custom_vjp call the user's Python functions as often as JAX 0.10.2 does (the
call lists below are what JAX records): under differentiation the rule runs once and the
function itself only where the rule calls it. One difference is left: under two levels, a
call inside the inner level's rule runs the rule again even when its operands do not depend on
the outer level's inputs (``grad(lambda y: grad(g)(1.) * y)`` records jvp, jvp, g; JAX jvp, g),
as meshjit's traces do not follow that dependence."""

import pytest

import meshjit as jax
import meshjit.numpy as jnp

calls: list[str] = []


@jax.custom_jvp
def g(x):
    calls.append("g")
    return jnp.sin(x)


@g.defjvp
def g_jvp(primals, tangents):
    calls.append("jvp")
    (x,), (tangent,) = primals, tangents
    return g(x), jnp.cos(x) * tangent


@jax.custom_vjp
def h(x):
    calls.append("h")
    return jnp.sin(x)


def h_fwd(x):
    calls.append("fwd")
    return h(x), jnp.cos(x)


def h_bwd(residual, cotangent):
    calls.append("bwd")
    return (residual * cotangent,)


h.defvjp(h_fwd, h_bwd)

COS1 = 0.5403023
CASES = {
    "g": (lambda: g(1.0), ["g"], 0.84147096),
    "grad g": (lambda: jax.grad(g)(1.0), ["jvp", "g"], COS1),
    "jvp g": (lambda: jax.jvp(g, (1.0,), (1.0,))[1], ["jvp", "g"], COS1),
    "jit grad g": (lambda: jax.jit(jax.grad(g))(1.0), ["jvp", "g"], COS1),
    "value_and_grad g": (lambda: jax.value_and_grad(g)(1.0)[1], ["jvp", "g"], COS1),
    "vmap grad g": (lambda: jax.vmap(jax.grad(g))(jnp.ones(3)).sum(), ["jvp", "g"], 3 * COS1),
    "h": (lambda: h(1.0), ["h"], 0.84147096),
    "grad h": (lambda: jax.grad(h)(1.0), ["fwd", "h", "bwd"], COS1),
    "jit grad h": (lambda: jax.jit(jax.grad(h))(1.0), ["fwd", "h", "bwd"], COS1),
    "vjp h": (lambda: jax.vjp(h, 1.0)[1](1.0)[0], ["fwd", "h", "bwd"], COS1),
    "vmap grad h": (lambda: jax.vmap(jax.grad(h))(jnp.ones(3)).sum(), ["fwd", "h", "bwd"], 3 * COS1),
    "grad g*h": (lambda: jax.grad(lambda x: g(x) * h(x))(1.0), ["jvp", "g", "fwd", "h", "bwd"], 0.90929735),
    # second order: the outer level meets the call of g inside the inner level's rule and runs
    # the rule again; g itself runs once, inside that
    "grad grad g": (lambda: jax.grad(jax.grad(g))(1.0), ["jvp", "jvp", "g"], -0.84147096),
    "jvp grad g": (lambda: jax.jvp(jax.grad(g), (1.0,), (1.0,))[1], ["jvp", "jvp", "g"], -0.84147096),
    "jit grad grad g": (lambda: jax.jit(jax.grad(jax.grad(g)))(1.0), ["jvp", "jvp", "g"], -0.84147096),
    "grad grad grad g": (lambda: jax.grad(jax.grad(jax.grad(g)))(1.0), ["jvp", "jvp", "jvp", "g"], -COS1),
    "grad grad h": (lambda: jax.grad(jax.grad(h))(1.0), ["fwd", "fwd", "h", "bwd"], -0.84147096),
}


@pytest.mark.parametrize("name", CASES)
def test_user_functions_run_as_often_as_in_jax(name):
    run, expected_calls, expected_value = CASES[name]
    calls.clear()
    value = run()
    assert calls == expected_calls
    assert float(value) == pytest.approx(expected_value, rel=1e-6)


def test_second_order_still_differentiates_the_rule():
    assert float(jax.grad(jax.grad(g))(1.0)) == pytest.approx(-0.84147096, rel=1e-6)
