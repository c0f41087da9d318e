"""Random small scalar programs (f32[] and bool[] arguments) with dead values, unused
arguments, sharding constraints, ``where`` and ``sum(keepdims=True)``, differentiated by
grad, jit(grad), value_and_grad and vjp, in float32 and with x64, on a 2x2x2 mesh of permuted
devices with committed and uncommitted arguments.

The oracle is independent of meshjit: the same statements evaluated in numpy float64, and
central differences for the gradient. Such programs once crashed the generated plan function
(``UnboundLocalError``): a constant gradient broadcast twice was returned without the inner
broadcast (compiler/fusion_groups.py placed only the returned one of two deferred broadcasts).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.lax import with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PERMUTATION = [3, 1, 7, 5, 0, 2, 6, 4]
FLOATS = 3          # arguments a0..a2 are f32[]; the last one, b, is bool[]
STEP = 1e-3

# statement kind -> (meshjit, numpy), each a function of the values it reads
STATEMENTS = {
    "index": (lambda mesh, v: v[...], lambda v: v),
    "constrain": (lambda mesh, v: with_sharding_constraint(v, NamedSharding(mesh, P())), lambda v: v),
    "where const": (lambda mesh, b, v: jnp.where(b, 1.25, v), lambda b, v: np.where(b, 1.25, v)),
    "where": (lambda mesh, b, v, w: jnp.where(b, v, w), lambda b, v, w: np.where(b, v, w)),
    "add": (lambda mesh, v, w: v + w, lambda v, w: v + w),
    "mul": (lambda mesh, v, w: v * w, lambda v, w: v * w),
    "tanh": (lambda mesh, v: jnp.tanh(v), np.tanh),
    "sum keepdims": (lambda mesh, v: jnp.sum(v, axis=None, keepdims=True), lambda v: v),
    "sum": (lambda mesh, v: jnp.sum(v), lambda v: v),
    "scale": (lambda mesh, v: v * 0.5 - 2.0, lambda v: v * 0.5 - 2.0),
}
# NOTE: the linear, shape-keeping kinds twice: chains of them give constant gradients, which
# reverse mode returns as broadcasts of broadcasts
KINDS = sorted(STATEMENTS) + ["index", "constrain", "sum keepdims", "sum"]
ARITY = {"index": 1, "constrain": 1, "where const": 1, "where": 2, "add": 2, "mul": 2, "tanh": 1,
         "sum keepdims": 1, "sum": 1, "scale": 1}


@st.composite
def scalar_program(draw):
    """Statements (kind, operand positions) over the float values so far; the result is one
    value, so the others are dead and some arguments unused."""
    statements = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(KINDS))
        latest = FLOATS + len(statements) - 1
        # NOTE: mostly chains (each statement reads the value before it), so that a result
        # passes through several sums and constraints; the other reads make values dead
        position = st.integers(0, latest) | st.just(latest)
        statements.append((kind, tuple(draw(position) for _ in range(ARITY[kind]))))
    latest = FLOATS + len(statements) - 1
    return statements, draw(st.integers(0, latest) | st.just(latest))


def _run(statements, result, floats, b, implementation, mesh=None):
    values = list(floats)
    for kind, reads in statements:
        function = STATEMENTS[kind][implementation]
        operands = [values[position] for position in reads]
        if kind.startswith("where"):
            operands = [b, *operands]
        values.append(function(mesh, *operands) if implementation == 0 else function(*operands))
    return values[result]


def _numeric_gradient(statements, result, floats, b, argnums):
    gradient = []
    for position in argnums:
        up, down = list(floats), list(floats)
        up[position] += STEP
        down[position] -= STEP
        gradient.append((_run(statements, result, up, b, 1) - _run(statements, result, down, b, 1)) / (2 * STEP))
    return gradient


@SETTINGS
@given(program=scalar_program(), transform=st.sampled_from(["grad", "jit(grad)", "value_and_grad", "vjp"]),
       argnums=st.sampled_from([(0,), (1,), (2,), (0, 2), (0, 1, 2)]), x64=st.booleans(),
       committed=st.booleans(), seed=st.integers(0, 2**16))
def test_gradients_of_random_scalar_programs(program, transform, argnums, x64, committed, seed):
    jax.config.update("jax_enable_x64", x64)
    statements, result = program
    mesh = Mesh(np.array(jax.devices())[PERMUTATION].reshape(2, 2, 2), ("x", "y", "z"))
    rng = np.random.default_rng(seed)
    floats = [float(value) for value in rng.uniform(-1.5, 1.5, FLOATS)]
    b = bool(rng.integers(2))
    dtype = np.float64 if x64 else np.float32
    arguments = [np.asarray(value, dtype) for value in floats] + [np.asarray(b)]
    if committed:
        arguments = [jax.device_put(argument, NamedSharding(mesh, P())) for argument in arguments]

    def f(*args):
        return _run(statements, result, args[:FLOATS], args[FLOATS], 0, mesh)

    expected_value = _run(statements, result, floats, b, 1)
    expected = _numeric_gradient(statements, result, floats, b, argnums)
    value = None
    if transform == "grad":
        gradient = jax.grad(f, argnums=argnums)(*arguments)
    elif transform == "jit(grad)":
        gradient = jax.jit(jax.grad(f, argnums=argnums))(*arguments)
    elif transform == "value_and_grad":
        value, gradient = jax.value_and_grad(f, argnums=argnums)(*arguments)
    else:
        value, pullback = jax.vjp(lambda *chosen: f(*_with(arguments, argnums, chosen)),
                                  *(arguments[position] for position in argnums))
        gradient = pullback(jnp.ones((), dtype))
    tolerance = {"rtol": 1e-3, "atol": 1e-3} if not x64 else {"rtol": 1e-5, "atol": 1e-6}
    if value is not None:
        np.testing.assert_allclose(np.asarray(value), expected_value, rtol=1e-5, atol=1e-6)
    for actual, wanted in zip(gradient, expected):
        assert np.asarray(actual).dtype == dtype
        np.testing.assert_allclose(np.asarray(actual), wanted, **tolerance)


def _with(arguments, argnums, chosen):
    arguments = list(arguments)
    for position, value in zip(argnums, chosen):
        arguments[position] = value
    return arguments


def test_the_fuzz_campaign_program(mesh_of):
    """The reported reproducer: jit(grad) of a program whose result reads only a2."""
    mesh = Mesh(np.array(jax.devices())[PERMUTATION].reshape(2, 2, 2), ("x", "y", "z"))

    def f(a0, a1, a2):
        v1 = with_sharding_constraint(a0[...], NamedSharding(mesh, P()))
        jnp.where(a1, 1.25, v1)
        v1 + a2
        v4 = jnp.sum(a2, axis=None, keepdims=True)
        return jnp.sum(v4)

    arguments = [jax.device_put(value, NamedSharding(mesh, P()))
                 for value in (np.float32(0.5), np.bool_(True), np.float32(2.0))]
    assert float(jax.jit(jax.grad(f))(*arguments)) == 0.0
    assert [float(g) for g in jax.jit(jax.grad(f, argnums=(0, 2)))(*arguments)] == [0.0, 1.0]
