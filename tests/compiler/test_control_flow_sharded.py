"""Control flow on sharded programs, through propagation, partitioning, lowering and autodiff:
the sharded RNN (batch on 'data', W on 'model': equals numpy, keeps its batch sharding, one loop
with its collectives inside, gradient equals finite differences), carries with one sharding at
entry, in the body and at exit, shardings flowing into and out of bodies, reshards placed
outside loops, shard_map inside a scan body and a scan inside shard_map."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.compiler.analysis.collectives import COLLECTIVES
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
B, D, T = 8, 16, 16


def _random(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _sharding(*spec):
    return NamedSharding(MESH, P(*spec))


def _ops(block):
    return list(block.walk())


def _top_level_collectives(module):
    return [op.name for op in module.main.body.ops if op.name in COLLECTIVES]


# --- the sharded RNN -----------------------------------------------------------------------------


def rnn(w, h, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h

    return lax.scan(step, h, xs)


def rnn_loss(w, h, xs):
    last, ys = rnn(w, h, xs)
    return jnp.mean(last ** 2) + jnp.mean(ys)


def numpy_rnn(w, h, xs):
    ys = []
    for x in xs:
        h = np.tanh(h @ w + x)
        ys.append(h)
    return h, np.stack(ys)


RNN_ARGS = (_random(D, D, scale=0.25), _random(B, D, seed=1), _random(T, B, D, seed=2))
RNN_SHARDINGS = (_sharding(None, "model"), _sharding("data"), _sharding(None, "data"))


def test_sharded_rnn_equals_numpy_and_keeps_its_batch_sharding():
    last, ys = jax.jit(rnn, in_shardings=RNN_SHARDINGS)(*RNN_ARGS)
    expected_last, expected_ys = numpy_rnn(*RNN_ARGS)
    np.testing.assert_allclose(np.asarray(last), expected_last, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ys), expected_ys, rtol=1e-5, atol=1e-5)
    assert last.sharding.spec[0] == "data" and ys.sharding.spec[1] == "data"


def test_sharded_rnn_is_one_loop_with_its_collectives_inside():
    compiled = jax.jit(rnn, in_shardings=RNN_SHARDINGS).lower(*RNN_ARGS).compile()
    module = compiled.program.partitioned
    loops = [op for op in module.main.body.walk() if op.name == "scan"]
    assert len(loops) == 1 and compiled.as_text().count("scan(") == 1
    inside = [op.name for op in _ops(loops[0].regions[0]) if op.name in COLLECTIVES]
    assert inside == ["all_gather"] and not _top_level_collectives(module)
    [record] = compiled.collectives()
    assert record.trips == T and record.total_bytes == T * record.bytes


def test_sharded_rnn_gradient_equals_finite_differences():
    gradients = jax.jit(jax.grad(rnn_loss, argnums=(0, 1, 2)), in_shardings=RNN_SHARDINGS)(*RNN_ARGS)
    rng = np.random.default_rng(3)
    arguments = [argument.astype(np.float64) for argument in RNN_ARGS]

    def loss(*values):
        last, ys = numpy_rnn(*values)
        return np.mean(last ** 2) + np.mean(ys)

    for index, gradient in enumerate(gradients):
        direction = rng.standard_normal(arguments[index].shape)
        step = 1e-6
        plus = [value + step * direction if position == index else value for position, value in enumerate(arguments)]
        minus = [value - step * direction if position == index else value for position, value in enumerate(arguments)]
        numerical = (loss(*plus) - loss(*minus)) / (2 * step)
        np.testing.assert_allclose(np.vdot(np.asarray(gradient, np.float64), direction), numerical, rtol=1e-4,
                                   atol=1e-6)


def test_gradient_of_the_rnn_is_a_forward_and_a_reverse_loop():
    compiled = jax.jit(jax.grad(rnn_loss), in_shardings=RNN_SHARDINGS).lower(*RNN_ARGS).compile()
    module = compiled.program.partitioned
    loops = [op for op in module.main.body.ops if op.name == "scan"]
    assert [loop.attrs["reverse"] for loop in loops] == [False, True]
    # dW sums partial products over the batch ("data") on every step: the accumulator stays
    # pending through the reverse loop and is all-reduced once after it
    assert ("all_reduce", ("data",), 1) in [(record.kind, record.axes, record.trips) for record in compiled.collectives()]
    assert not [op for op in loops[1].regions[0].walk() if op.name == "all_reduce"]
    assert all(record.trips == T for record in compiled.collectives() if record.kind != "all_reduce")


# --- propagation ---------------------------------------------------------------------------------


def _propagated_scan(function, *args, **options):
    propagated = jax.jit(function, **options).lower(*args).compile().program.propagated
    return next(op for op in propagated.main.body.walk() if op.name == "scan"), propagated


def test_a_constraint_in_the_body_reaches_the_carry_at_entry_and_exit():
    def function(h, xs):
        def step(h, x):
            h = lax.with_sharding_constraint(jnp.tanh(h + x), _sharding(None, "model"))
            return h, None
        return lax.scan(step, h, xs)[0] * 2.0

    loop, propagated = _propagated_scan(function, _random(B, D), _random(4, B, D))
    expected = "<@mesh, [{}, {\"model\"}]>"
    body = loop.regions[0]
    assert str(loop.sharding_of(0)).endswith("[{}, {\"model\"}]") or expected in str(propagated)
    carry_sharding = loop.sharding_of(0)
    assert carry_sharding.dims[1].axes and carry_sharding.dims[1].axes[0].name == "model"
    assert body.arg_sharding(1) == carry_sharding
    assert propagated.main.arg_shardings[0].dims[1].axes[0].name == "model"


def test_a_user_sharding_flows_into_the_body_and_through_to_the_ys():
    def function(h, xs):
        return lax.scan(lambda h, x: (h * x, jnp.sin(h)), h, xs)

    loop, _ = _propagated_scan(function, _random(B, D), _random(4, B, D),
                               in_shardings=(_sharding("data"), _sharding(None, "data")))
    body = loop.regions[0]
    assert [axis.name for axis in body.arg_sharding(1).dims[0].axes] == ["data"]
    assert [axis.name for axis in loop.sharding_of(1).dims[1].axes] == ["data"]
    assert not loop.sharding_of(1).dims[0].axes, "the scanned dim stays whole"


def test_cond_branch_results_agree_on_one_sharding():
    def function(pred, a):
        return lax.cond(pred, lambda v: lax.with_sharding_constraint(v * 2.0, _sharding("model")),
                        lambda v: -v, a)

    propagated = jax.jit(function).lower(np.bool_(True), _random(B, D)).compile().program.propagated
    cond = next(op for op in propagated.main.body.ops if op.name == "cond")
    assert [axis.name for axis in cond.sharding_of(0).dims[0].axes] == ["model"]
    other = cond.regions[1]
    assert [axis.name for axis in other.ops[-1].sharding_of(0).dims[0].axes] == ["model"]


def test_explain_covers_values_inside_regions():
    def function(h, xs):
        def step(h, x):
            return lax.with_sharding_constraint(jnp.tanh(h + x), _sharding("data")), None
        return lax.scan(step, h, xs)[0]

    text = jax.jit(function).lower(_random(B, D), _random(3, B, D)).compile().explain()
    assert "tanh" in text and "constraint 0" in text
    assert "region argument" in text


# --- partitioning --------------------------------------------------------------------------------


def test_reshards_that_make_a_carry_consistent_are_outside_the_loop():
    def function(h, xs):
        def step(h, x):
            return lax.with_sharding_constraint(jnp.tanh(h) + x, _sharding(None, "model")), None
        return lax.scan(step, h, xs)[0]

    compiled = jax.jit(function, in_shardings=(_sharding("model"), _sharding())).lower(
        _random(B, D), _random(4, B, D)).compile()
    module = compiled.program.partitioned
    loop = next(op for op in module.main.body.ops if op.name == "scan")
    inside = [op.name for op in _ops(loop.regions[0]) if op.name in COLLECTIVES]
    assert not inside, compiled.as_text()
    assert _top_level_collectives(module), "the initial carry is resharded before the loop"
    expected = np.asarray(_random(B, D))
    for x in _random(4, B, D):
        expected = np.tanh(expected) + x
    np.testing.assert_allclose(np.asarray(compiled(_random(B, D), _random(4, B, D))), expected, rtol=1e-5)


def test_while_predicate_and_cond_index_are_replicated():
    def function(a):
        def body(state):
            step, x = state
            return step + 1, lax.cond(jnp.sum(x) > 0, lambda v: v * 0.5, lambda v: v * 0.25, x)
        return lax.while_loop(lambda state: jnp.max(jnp.abs(state[1])) > 0.01, body, (0, a))

    a = _random(8, 8)
    steps, result = jax.jit(function, in_shardings=(_sharding("data", "model"),))(a)
    state = a
    count = 0
    while np.max(np.abs(state)) > 0.01:
        state = state * (0.5 if state.sum() > 0 else 0.25)
        count += 1
    assert int(steps) == count
    np.testing.assert_allclose(np.asarray(result), state, rtol=1e-6)


# --- shard_map and scans -------------------------------------------------------------------------


def _row_parallel(h, w):
    return jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=MESH,
                         in_specs=(P(None, "model"), P("model", None)), out_specs=P())(h, w)


def test_shard_map_inside_a_scan_body():
    w, h, xs = _random(8, 8, scale=0.3), _random(8, 8, seed=1), _random(3, 8, 8, seed=2)

    def loss(w, h, xs):
        last = lax.scan(lambda h, x: (jnp.tanh(_row_parallel(h, w) + x), None), h, xs)[0]
        return jnp.sum(last ** 2)

    def plain(w, h, xs):
        return jnp.sum(lax.scan(lambda h, x: (jnp.tanh(h @ w + x), None), h, xs)[0] ** 2)

    np.testing.assert_allclose(np.asarray(jax.jit(loss)(w, h, xs)), np.asarray(jax.jit(plain)(w, h, xs)), rtol=1e-5)
    for got, want in zip(jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(w, h, xs),
                         jax.jit(jax.grad(plain, argnums=(0, 1, 2)))(w, h, xs)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_scan_inside_shard_map_with_a_collective_in_the_body():
    w, h, xs = _random(8, 8, scale=0.3), _random(8, 8, seed=1), _random(3, 8, 8, seed=2)

    def mapped(w, h, xs):
        def body(w, h_block, xs_block):
            def step(h, x):
                h = jnp.tanh(h @ w + x)
                return h, lax.pmean(jnp.sum(h * h), "data")
            return lax.scan(step, h_block, xs_block)
        return jax.shard_map(body, mesh=MESH, in_specs=(P(), P("data"), P(None, "data")),
                             out_specs=(P("data"), P()))(w, h, xs)

    def plain(w, h, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h * h) / 2.0
        return lax.scan(step, h, xs)

    def loss(function):
        return lambda w, h, xs: (lambda out: jnp.sum(out[0] ** 2) + jnp.sum(out[1]))(function(w, h, xs))

    for got, want in zip(jax.jit(mapped)(w, h, xs), jax.jit(plain)(w, h, xs)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    for got, want in zip(jax.jit(jax.grad(loss(mapped), argnums=(0, 1, 2)))(w, h, xs),
                         jax.jit(jax.grad(loss(plain), argnums=(0, 1, 2)))(w, h, xs)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spec", [P(), P("data"), P(None, "model")])
def test_scan_carries_uneven_shards(spec):
    """A carry whose dims do not divide the mesh: padding must never leak through a loop."""
    h, xs = _random(6, 10), _random(3, 6, 10, seed=1)

    def function(h, xs):
        def step(h, x):
            h = lax.with_sharding_constraint(jnp.tanh(h + x), NamedSharding(MESH, spec))
            return h, jnp.sum(h, axis=0)
        return lax.scan(step, h, xs)

    last, sums = jax.jit(function)(h, xs)
    expected, rows = h, []
    for x in xs:
        expected = np.tanh(expected + x)
        rows.append(expected.sum(0))
    np.testing.assert_allclose(np.asarray(last), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(sums), np.stack(rows), rtol=1e-5, atol=1e-5)
