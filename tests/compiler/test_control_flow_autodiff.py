"""Autodiff of loops beyond the op table's cases (tests/compiler/autodiff_cases.py): while_loop
in forward mode and under linearize, its reverse mode's ValueError (JAX's message), a
fori_loop with traced bounds likewise, and which carries of a JVP'd scan get tangents."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax

pytestmark = pytest.mark.usefixtures("x64")


def _power_loop(x, a):
    """x * a ** 5 by a while loop (carry: count, value)."""
    return lax.while_loop(lambda state: state[0] < 5, lambda state: (state[0] + 1, state[1] * a), (0, x))[1]


def test_while_loop_jvp_equals_finite_differences():
    x, a = np.float64(1.3), np.float64(0.9)
    value, tangent = jax.jvp(_power_loop, (x, a), (0.5, -0.25))
    step = 1e-6
    numerical = (_power_loop(x + 0.5 * step, a - 0.25 * step) - _power_loop(x - 0.5 * step, a + 0.25 * step)) / (2 * step)
    np.testing.assert_allclose(np.asarray(value), x * a ** 5, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(numerical), rtol=1e-6)


def test_linearize_of_a_while_loop_runs_its_linear_part_forward():
    x, a = np.float64(1.3), np.float64(0.9)
    value, linear = jax.linearize(_power_loop, x, a)
    np.testing.assert_allclose(np.asarray(value), x * a ** 5, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(linear(1.0, 0.0)), a ** 5, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(linear(0.0, 1.0)), 5 * x * a ** 4, rtol=1e-12)


@pytest.mark.parametrize("function", [
    lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c * 2.0, x),
    lambda x: lax.fori_loop(0, (x * 0 + 3).astype(jnp.int32), lambda i, c: c * x, 1.0),
], ids=["while_loop", "fori_loop_traced_bounds"])
def test_reverse_mode_of_a_while_loop_is_jaxs_value_error(function):
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop or "
                                         "lax.fori_loop with dynamic start/stop values"):
        jax.grad(function)(np.float64(1.0))


def test_a_carry_whose_initial_tangent_is_zero_gets_one_from_the_body():
    def function(x):
        # the second carry starts as a constant but the body mixes the first one into it
        return lax.scan(lambda c, _: ((c[0] * 1.5, c[1] + c[0]), None), (x, 0.0), length=3)[0][1]

    value, tangent = jax.jvp(function, (np.float64(2.0),), (np.float64(1.0),))
    np.testing.assert_allclose(np.asarray(value), 2.0 * (1 + 1.5 + 2.25), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tangent), 1 + 1.5 + 2.25, rtol=1e-12)
    assert float(jax.grad(function)(np.float64(2.0))) == pytest.approx(4.75)


def test_integer_carries_take_no_tangent_and_reverse_scans_differentiate():
    def function(x):
        (count, total), ys = lax.scan(lambda c, v: ((c[0] + 1, c[1] * v), c[1]), (0, x), jnp.arange(1.0, 4.0),
                                      reverse=True)
        return total * count + jnp.sum(ys)

    x = np.float64(0.5)
    gradient = jax.grad(function)(x)
    # total = x * 6 after the three steps (3, 2, 1), ys = x * (1, 3, 6) ... reversed order
    np.testing.assert_allclose(np.asarray(gradient), 6 * 3 + (1 + 3 + 6), rtol=1e-12)


def test_the_forward_loop_saves_what_a_broadcast_reads_not_the_broadcast():
    """A layer norm's per-row statistic and a scanned weight enter the body's arithmetic through
    broadcasts; reverse mode's forward loop saves the small statistic (and passes the scanned
    weight through), and the backward loop broadcasts them again."""
    from meshjit.ir import parse_module

    def step(h, w):
        inverse = 1.0 / jnp.sqrt(jnp.mean(h * h, axis=-1, keepdims=True) + 1.0)
        return jnp.tanh(h * inverse * w), None

    def loop(h, ws):
        return jnp.sum(lax.scan(step, h, ws)[0])

    def straight(h, ws):
        for w in ws:
            h = step(h, w)[0]
        return jnp.sum(h)

    h, ws = np.random.default_rng(0).normal(size=(4, 8)), np.random.default_rng(1).normal(size=(3, 8))
    module = parse_module(jax.jit(jax.grad(loop, argnums=(0, 1))).lower(h, ws).as_text())
    forward = next(op for op in module.main.body.ops if op.name == "scan")
    body = forward.regions[0]
    producers = {result.id: op.name for op in body.ops for result in op.results}
    saved = body.returns[forward.attrs["num_carry"]:]
    assert "broadcast_in_dim" not in [producers.get(value.id) for value in saved]
    assert (4, 1) in [value.type.shape for value in saved]
    for got, want in zip(jax.grad(loop, argnums=(0, 1))(h, ws), jax.grad(straight, argnums=(0, 1))(h, ws)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
