"""Random jnp programs under random input and output shardings, through the public jit: the
whole stack (tracing, propagation, partitioning, optimisation, kernels, executor) must give
numpy's answer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

# NOTE: random layouts include reshards the partitioner can only do by gathering a dim whole;
# it says so with a FullRematerializationWarning, which is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:involuntary full rematerialization")

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
SPECS = [P(), P("x"), P("y"), P(None, "x"), P(None, "y"), P("x", "y"), P("y", "x"), P(("x", "y")), P(None, ("x", "y"))]

UNARY = {
    "tanh": (jnp.tanh, np.tanh), "exp": (lambda v: jnp.exp(jnp.tanh(v)), lambda v: np.exp(np.tanh(v))),
    "square": (lambda v: jnp.tanh(v * v), lambda v: np.tanh(v * v)), "neg": (lambda v: -v, lambda v: -v),
    "relu": (lambda v: jnp.maximum(v, 0.0), lambda v: np.maximum(v, 0.0)),
    "transpose": (lambda v: v.T, lambda v: v.T),
    "scale": (lambda v: v * 0.5 + 1.0, lambda v: v * 0.5 + 1.0),
    "softmax": (lambda v: jax.nn.softmax(v, axis=-1), lambda v: np.exp(v - v.max(-1, keepdims=True))
                / np.exp(v - v.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "row_mean": (lambda v: jnp.mean(v, axis=1, keepdims=True) - v, lambda v: v.mean(1, keepdims=True) - v),
    "col_max": (lambda v: jnp.max(v, axis=0) + v, lambda v: v.max(0) + v),
}
# Control flow: loops and branches whose bodies the partitioner lays out like any code. The
# branch predicates compare a sum of squares with a threshold, never a sum with zero: programs
# such as row_mean make sums that are zero up to rounding, whose sign float32 and the float64
# reference need not agree on.
def _numpy_scan_rows(v):
    total, rows = np.zeros(v.shape[1]), []
    for row in v:
        rows.append(np.tanh(total))
        total = total + row
    return np.stack(rows)


def _numpy_fori(v):
    carry = v
    for _ in range(3):
        carry = np.tanh(carry) * 0.5 + v
    return carry


def _numpy_halve(v):
    while np.max(np.abs(v)) > 1.0:
        v = v * 0.5
    return v


def _numpy_rnn(a, b):
    h, ys = a[0], []
    for x in a:
        ys.append(h)
        h = np.tanh(h @ b / 8.0 + x)
    return np.stack(ys) + h


UNARY |= {
    "scan_rows": (lambda v: lax.scan(lambda c, row: (c + row, jnp.tanh(c)), jnp.zeros(v.shape[1]), v)[1],
                  _numpy_scan_rows),
    "fori": (lambda v: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) * 0.5 + v, v), _numpy_fori),
    "cond_norm": (lambda v: lax.cond(jnp.sum(v * v) > 64.0, lambda u: u * 0.5, lambda u: -u, v),
                  lambda v: v * 0.5 if (v * v).sum() > 64.0 else -v),
    "while_halve": (lambda v: lax.while_loop(lambda c: jnp.max(jnp.abs(c)) > 1.0, lambda c: c * 0.5, v),
                    _numpy_halve),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "matmul": (lambda a, b: jnp.tanh(a @ b.T / 8.0), lambda a, b: np.tanh(a @ b.T / 8.0)),
    "scan_rnn": (lambda a, b: (lambda out: out[1] + out[0])(
        lax.scan(lambda h, x: (jnp.tanh(h @ b / 8.0 + x), h), a[0], a)), _numpy_rnn),
    "switch": (lambda a, b: lax.switch((jnp.sum(a * a) > 64.0).astype(jnp.int32), [lambda: a - b, lambda: a * b]),
               lambda a, b: a * b if (a * a).sum() > 64.0 else a - b),
}


@st.composite
def programs(draw):
    steps = draw(st.lists(st.one_of(st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY))),
                                    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)))),
                          min_size=1, max_size=5))
    return steps


def _run(steps, table, a, b):
    value = a
    for kind, name in steps:
        function = (UNARY if kind == "unary" else BINARY)[name][table]
        value = function(value) if kind == "unary" else function(value, b)
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=programs(), spec_a=st.sampled_from(SPECS), spec_b=st.sampled_from(SPECS),
       spec_out=st.sampled_from(SPECS + [None]), seed=st.integers(0, 2**16))
def test_random_program_matches_numpy(steps, spec_a, spec_b, spec_out, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    expected = _run(steps, 1, a.astype(np.float64), b.astype(np.float64))
    out_shardings = None if spec_out is None else NamedSharding(MESH, spec_out)
    function = jax.jit(lambda a, b: _run(steps, 0, a, b), out_shardings=out_shardings)
    placed = (jax.device_put(a, NamedSharding(MESH, spec_a)), jax.device_put(b, NamedSharding(MESH, spec_b)))
    result = function(*placed)
    np.testing.assert_allclose(np.asarray(result), expected, rtol=2e-4, atol=2e-4)
    if spec_out is not None:
        assert result.sharding.is_equivalent_to(out_shardings, result.ndim)
    for shard in result.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), np.asarray(result)[shard.index], rtol=0, atol=0)
