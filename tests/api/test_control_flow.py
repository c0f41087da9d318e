"""lax's control flow through the public API: scan (pytrees, length, reverse, unroll), fori_loop
(static and traced bounds), while_loop, cond and switch (traced and Python predicates), map;
eagerly and under jit, on sharded operands, each against numpy; and JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
MODES = ("eager", "jit")


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _call(mode, function, *args):
    return function(*args) if mode == "eager" else jax.jit(function)(*args)


def _close(actual, expected, tolerance=2e-5):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tolerance, atol=tolerance)


# --- scan --------------------------------------------------------------------------------------


def _cumulative(xs, reverse=False):
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    total, ys = np.zeros_like(xs[0]), np.zeros_like(xs)
    for index in order:
        ys[index] = total
        total = total + xs[index]
    return total, ys


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 3, True])
def test_scan_reverse_and_unroll_equal_numpy(mode, reverse, unroll):
    xs = _random(7, 3)

    def function(xs):
        return lax.scan(lambda carry, x: (carry + x, carry), jnp.zeros(3), xs, reverse=reverse, unroll=unroll)

    total, ys = _call(mode, function, xs)
    expected_total, expected_ys = _cumulative(xs, reverse)
    _close(total, expected_total)
    _close(ys, expected_ys)


def test_unroll_runs_several_steps_per_trip_of_the_loop():
    function = jax.jit(lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(3), xs, unroll=3))
    plan = function.lower(_random(7, 3)).compile().runtime_executable().plan
    [loop] = [step for step in plan.steps if hasattr(step, "unrolled")]
    assert loop.unroll == 3 and len(loop.unrolled.arg_slots) == loop.num_consts + 1 + 3
    assert len(loop.unrolled.result_slots) == 1 + 3
    carry, expected = np.zeros(3, np.float32), []
    for x in _random(7, 3):
        expected.append(carry)
        carry = carry * 0.5 + x
    _close(function(_random(7, 3))[1], np.stack(expected))


@pytest.mark.parametrize("mode", MODES)
def test_scan_with_pytree_carry_and_xs(mode):
    xs = {"a": _random(5, 2), "b": (_random(5, seed=1), _random(5, 4, seed=2))}

    def body(carry, x):
        total, count = carry
        total = total + x["a"] * x["b"][0]
        return (total, count + 1), {"sum": jnp.sum(x["b"][1]), "copy": total}

    def function(xs):
        return lax.scan(body, (jnp.zeros(2), 0), xs)

    (total, count), ys = _call(mode, function, xs)
    terms = xs["a"] * xs["b"][0][:, None]
    _close(total, terms.sum(0))
    assert int(count) == 5 and np.asarray(count).dtype == np.int32
    _close(ys["sum"], xs["b"][1].sum(1))
    _close(ys["copy"], np.cumsum(terms, axis=0))


def test_scan_with_length_and_no_xs_and_none_ys():
    carry, ys = jax.jit(lambda c: lax.scan(lambda c, _: (c * 2.0, None), c, length=5))(np.float32(1.5))
    assert ys is None
    _close(carry, 48.0)


def test_scan_closes_over_traced_and_concrete_values():
    w = _random(3, 3)
    device_w = jax.device_put(_random(3, 3, seed=4), NamedSharding(MESH, P()))

    def function(h, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ device_w), h), h, xs)[0]

    h, xs = _random(2, 3, seed=1), _random(4, 2, 3, seed=2)
    expected = h
    for x in xs:
        expected = np.tanh(expected @ w + x @ np.asarray(device_w))
    _close(jax.jit(function)(h, xs), expected)


def test_scan_promotes_a_weakly_typed_initial_carry():
    carry, _ = lax.scan(lambda c, x: (c + x, None), 0, jnp.arange(4.0))
    assert carry.dtype == np.float32 and float(carry) == 6.0


# --- fori_loop, while_loop ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fori_loop_with_static_bounds_is_a_scan(mode):
    def function(x):
        return lax.fori_loop(2, 7, lambda i, value: value * 0.5 + i, x)

    expected = np.float32(3.0)
    for index in range(2, 7):
        expected = expected * 0.5 + index
    _close(_call(mode, function, np.float32(3.0)), expected)
    assert "scan(" in jax.jit(function).lower(np.float32(3.0)).as_text()


def test_fori_loop_with_traced_bounds_is_a_while():
    function = jax.jit(lambda n, x: lax.fori_loop(0, n, lambda i, value: value + i, x))
    assert int(function(10, 0)) == 45
    assert "while(" in function.lower(10, 0).as_text()
    assert int(lax.fori_loop(5, 3, lambda i, value: value + i, 7)) == 7


@pytest.mark.parametrize("mode", MODES)
def test_while_loop_newton_iteration_on_a_sharded_vector(mode):
    targets = np.linspace(1.0, 9.0, 16).astype(np.float32)
    sharded = jax.device_put(targets, NamedSharding(MESH, P(("x", "y"))))

    def sqrt_newton(a):
        def cond(state):
            step, x = state
            return jnp.logical_and(step < 50, jnp.max(jnp.abs(x * x - a)) > 1e-5)

        def body(state):
            step, x = state
            return step + 1, 0.5 * (x + a / x)

        return lax.while_loop(cond, body, (0, a))

    steps, roots = _call(mode, sqrt_newton, sharded)
    _close(roots, np.sqrt(targets), 1e-5)
    assert 0 < int(steps) < 50
    if mode == "jit":
        assert roots.sharding.is_equivalent_to(NamedSharding(MESH, P(("x", "y"))), 1)


# --- cond, switch ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("flag", [True, False])
def test_cond_with_sharded_operands(mode, flag):
    a = jax.device_put(_random(8, 4), NamedSharding(MESH, P("x", "y")))
    b = jax.device_put(_random(8, 4, seed=1), NamedSharding(MESH, P("x")))

    def function(pred, a, b):
        return lax.cond(pred, lambda a, b: (a @ b.T, a + b), lambda a, b: (b @ a.T, a - b), a, b)

    first, second = _call(mode, function, np.bool_(flag), a, b)
    host_a, host_b = np.asarray(a), np.asarray(b)
    _close(first, host_a @ host_b.T if flag else host_b @ host_a.T, 1e-4)
    _close(second, host_a + host_b if flag else host_a - host_b)


def test_cond_with_a_python_predicate_traces_both_branches():
    function = jax.jit(lambda x: lax.cond(True, lambda v: v * 2.0, lambda v: v - 1.0, x))
    assert "cond(" in function.lower(np.float32(1.0)).as_text()
    _close(function(np.float32(3.0)), 6.0)
    _close(lax.cond(0.0, lambda: 1.0, lambda: 2.0), 2.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", [-3, 0, 1, 2, 9])
def test_switch_clamps_its_index(mode, index):
    x = jax.device_put(_random(8, 8), NamedSharding(MESH, P(None, "y")))
    branches = [lambda v: jnp.sin(v), lambda v: v @ v, lambda v: jnp.sum(v, axis=0, keepdims=True) * v]
    expected = [np.sin, lambda v: v @ v, lambda v: v.sum(0, keepdims=True) * v][min(max(index, 0), 2)]
    _close(_call(mode, lambda i, v: lax.switch(i, branches, v), np.int32(index), x), expected(np.asarray(x)), 1e-4)


# --- map -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [None, 2, 3, 16])
def test_map_with_and_without_batches(batch_size):
    xs = _random(7, 3)
    result = jax.jit(lambda xs: lax.map(lambda x: {"s": jnp.sum(x), "d": x * 2}, xs, batch_size=batch_size))(xs)
    _close(result["s"], xs.sum(1))
    _close(result["d"], xs * 2)


# --- errors --------------------------------------------------------------------------------------


def _raises(error, fragment, call):
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value), str(caught.value)


def test_scan_carry_type_mismatch_is_a_type_error():
    _raises(TypeError, "The input carry c has type float32[] but the corresponding output carry component "
            "has type int32[], so the dtypes do not match.",
            lambda: lax.scan(lambda c, x: (c.astype(jnp.int32), x), jnp.float32(0), jnp.arange(3.0)))
    _raises(TypeError, "so the shapes do not match",
            lambda: lax.scan(lambda c, x: (jnp.zeros(2), x), jnp.zeros(3), jnp.arange(3.0)))
    _raises(TypeError, "carry input and carry output must have the same pytree structure",
            lambda: lax.scan(lambda c, x: ((c, c), x), 0.0, jnp.zeros(3)))
    _raises(TypeError, "scan body output must be a pair",
            lambda: lax.scan(lambda c, x: c, 0.0, jnp.zeros(3)))


def test_scan_length_errors_are_value_errors():
    _raises(ValueError, "scan got no values to scan over and `length` not provided.",
            lambda: lax.scan(lambda c, x: (c, x), 0.0, None))
    _raises(ValueError, "scan got `length` argument of 4 which disagrees with leading axis sizes [3].",
            lambda: lax.scan(lambda c, x: (c, x), 0.0, jnp.zeros(3), length=4))
    _raises(ValueError, "scan got values with different leading axis sizes: 3, 4.",
            lambda: lax.scan(lambda c, x: (c, x), 0.0, (jnp.zeros(3), jnp.zeros(4))))


def test_while_and_cond_errors():
    _raises(TypeError, "cond_fun must return a boolean scalar, but got output type(s) "
            "[ShapedArray(int32[], weak_type=True)].", lambda: lax.while_loop(lambda c: c, lambda c: c + 1, 0))
    _raises(TypeError, "while_loop body function carry input and carry output must have the same pytree",
            lambda: lax.while_loop(lambda c: c < 3, lambda c: (c + 1, c), 0))
    _raises(TypeError, "cond branches must have equal output types but they differ.",
            lambda: lax.cond(True, lambda: 1, lambda: jnp.float32(2)))
    _raises(TypeError, "Pred must be a scalar, got [ True False] of shape (2,).",
            lambda: lax.cond(np.array([True, False]), lambda x: x, lambda x: x, 1.0))
    _raises(TypeError, "cond branch outputs must have the same pytree structure",
            lambda: lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0))
    _raises(ValueError, "Empty branch sequence", lambda: lax.switch(0, [], 1.0))
    _raises(TypeError, "Index type must be an integer, got 1.0 as float32",
            lambda: lax.switch(np.float32(1.0), [lambda: 1.0, lambda: 2.0]))
    _raises(TypeError, "if 'operand' keyword is passed then no positional operands can be passed",
            lambda: lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0))
    _raises(ValueError, "Can only use `unroll` in `fori_loop` if the loop bounds are statically known.",
            lambda: jax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + 1, 0, unroll=2))(3))
    _raises(TypeError, "lower and upper arguments to fori_loop must have equal types, got float32 and int32",
            lambda: lax.fori_loop(0.0, 3, lambda i, c: c, 0.0))
