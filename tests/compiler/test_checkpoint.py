"""jax.checkpoint / jax.remat: the same derivatives, fewer saved values as the policy asks,
recomputation inside the backward pass (inside a transposed scan's body for a checkpointed
scan body), behind an optimization_barrier unless prevent_cse=False."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax

POLICIES = {
    "none": None,
    "nothing_saveable": jax.checkpoint_policies.nothing_saveable,
    "dots_saveable": jax.checkpoint_policies.dots_saveable,
    "everything_saveable": jax.checkpoint_policies.everything_saveable,
}


def _random(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


W, H, XS = _random(8, 8, scale=0.3), _random(4, 8, seed=1), _random(6, 4, 8, seed=2)


def _cell(w):
    def cell(h, x):
        a = h @ w
        b = jnp.tanh(a + x)
        return jnp.sin(b) * b
    return cell


def _loss(policy_name: str | None):
    def loss(w, h, xs):
        cell = _cell(w)
        if policy_name is not None:
            cell = jax.checkpoint(cell, policy=POLICIES[policy_name])
        return jnp.sum(lax.scan(lambda h, x: (cell(h, x), None), h, xs)[0] ** 2)
    return loss


def _forward_scan(text: str) -> str:
    return next(line for line in text.splitlines() if "scan(" in line)


# Without remat the forward loop saves h (for dw), tanh's 1 - b**2, sin(b), cos(b) and b; with
# nothing_saveable only h, the body's input; dots_saveable adds h @ w.
@pytest.mark.parametrize("policy, saved", [(None, 5), ("none", 1), ("nothing_saveable", 1), ("dots_saveable", 2),
                                           ("everything_saveable", 5)])
def test_a_checkpointed_scan_body_saves_what_its_policy_allows(policy, saved):
    gradient = jax.jit(jax.grad(_loss(policy), argnums=(0, 1, 2)))
    results = _forward_scan(gradient.lower(W, H, XS).as_text()).split("=")[0].split(",")
    assert len(results) == 1 + saved, "the final carry, then one stacked residual per saved value"
    for got, want in zip(gradient(W, H, XS), jax.jit(jax.grad(_loss(None), argnums=(0, 1, 2)))(W, H, XS)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def _reverse_body(policy: str) -> str:
    text = jax.jit(jax.grad(_loss(policy))).lower(W, H, XS).as_text()
    return text.partition("reverse = true")[2].split("^body", 1)[1]


def test_dots_saveable_saves_the_matmul_and_recomputes_the_rest():
    recompute_all, keep_dots = _reverse_body("nothing_saveable"), _reverse_body("dots_saveable")
    assert "tanh" in keep_dots and "tanh" in recompute_all, "elementwise ops are recomputed in the reverse loop"
    # the reverse body's own matmuls (for dh and dw) plus, without dots saved, h @ w again
    assert keep_dots.count("dot_general(") == 2 and recompute_all.count("dot_general(") == 3


def test_recomputation_sits_behind_a_barrier_unless_prevent_cse_is_false():
    def loss(prevent_cse):
        cell = jax.checkpoint(lambda x: jnp.sin(jnp.tanh(x) * 2.0), prevent_cse=prevent_cse)
        return lambda x: jnp.sum(cell(x) ** 2)

    x = _random(4, 4)
    with_barrier = jax.jit(jax.grad(loss(True))).lower(x).as_text()
    without = jax.jit(jax.grad(loss(False))).lower(x).as_text()
    assert "optimization_barrier" in with_barrier and "optimization_barrier" not in without
    assert with_barrier.count("tanh(") == 2, "the forward tanh and its recomputation"
    np.testing.assert_allclose(np.asarray(jax.grad(loss(True))(x)), np.asarray(jax.grad(loss(False))(x)), rtol=1e-6)


def test_checkpoint_without_differentiation_is_the_function():
    cell = jax.remat(_cell(W))
    np.testing.assert_allclose(np.asarray(jax.jit(cell)(H, XS[0])), np.asarray(_cell(W)(H, XS[0])), rtol=1e-6)
    assert "checkpoint(" not in jax.jit(cell).lower(H, XS[0]).as_text()


def test_checkpoint_with_static_arguments_and_pytrees():
    @jax.checkpoint
    def scaled(pair, power):
        first, second = pair
        return {"value": (first * second) ** power}

    static = jax.checkpoint(lambda x, power: x ** power, static_argnums=(1,))
    x = _random(3)
    gradient = jax.grad(lambda x: jnp.sum(scaled((x, x), 2)["value"]) + jnp.sum(static(x, 3)))(x)
    np.testing.assert_allclose(np.asarray(gradient), 4 * x ** 3 + 3 * x ** 2, rtol=1e-5)


def test_checkpoint_rejects_a_policy_that_is_not_callable():
    with pytest.raises(TypeError, match="checkpoint policy must be a callable"):
        jax.checkpoint(lambda x: x, policy="dots")
