"""jax.pure_callback and jax.experimental.io_callback against JAX 0.10.2 (the expected values,
call counts, shapes and messages below are what JAX gives for the same programs): eager and under
jit, with sharded arguments (gathered whole, the gather in the per-device program), inside
shard_map (once per device), under vmap with each vmap_method, in scan/while/cond bodies, under
grad (JAX's errors, and derivatives through custom_jvp/custom_vjp), and JAX's errors for results
of the wrong count, shape or dtype."""

from __future__ import annotations

import meshjit as jax
import meshjit.numpy as jnp
import numpy as np
import pytest
from meshjit.experimental import io_callback
from meshjit.ir import parse_module, print_module

F32_3 = jax.ShapeDtypeStruct((3,), jnp.float32)
SCALAR = jax.ShapeDtypeStruct((), jnp.float32)


def _doubled(calls=None):
    def callback(value):
        if calls is not None:
            calls.append(np.asarray(value).tolist())
        return np.asarray(value) * 2

    return callback


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_pure_callback_returns_what_the_host_function_computes(transform):
    seen = []

    def callback(a, *, b):
        seen.append((type(a), a.dtype, type(b)))
        return np.asarray(a) + np.asarray(b)

    x = jnp.arange(3.0)
    result = transform(lambda x: jax.pure_callback(callback, F32_3, x, b=np.float32(2)))(x)
    assert result.dtype == jnp.float32 and result.tolist() == [2.0, 3.0, 4.0]
    assert seen == [(jax.Array, np.dtype("float32"), jax.Array)]
    pair = transform(lambda x: jax.pure_callback(lambda a: {"s": a.sum(), "d": a * 2},
                                                 {"d": F32_3, "s": SCALAR}, x))(x)
    assert pair["d"].tolist() == [0.0, 2.0, 4.0] and float(pair["s"]) == 3.0


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
@pytest.mark.parametrize(("callback", "expected", "message"), [
    (lambda x: np.zeros(4, np.float32), F32_3, "Incorrect output shape for return value #0: Expected: (3,), Actual: (4,)"),
    (lambda x: np.zeros(3, np.int32), F32_3, "Incorrect output dtype for return value #0: Expected: float32, Actual: int32"),
    (lambda x: (x, x), F32_3, "Mismatched number of outputs from callback. Expected: 1, Actual: 2"),
    (lambda x: x, (F32_3, F32_3), "Mismatched number of outputs from callback. Expected: 2, Actual: 1"),
    (lambda x: 1, SCALAR, "Incorrect output dtype for return value #0: Expected: float32, Actual: int32"),
    (lambda x: 1 / 0, F32_3, "ZeroDivisionError: division by zero"),
])
def test_wrong_results_raise_jax_runtime_errors(transform, callback, expected, message):
    with pytest.raises(jax.errors.JaxRuntimeError, match="CpuCallback error calling callback") as caught:
        transform(lambda x: jax.pure_callback(callback, expected, x))(jnp.arange(3.0))
    assert message in str(caught.value)


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_results_are_canonicalized_as_jax_does(transform):
    # NOTE: a float64 result or a Python float stands for a declared float32 without x64 (JAX's
    # canonicalization); a Python int is int32 there and so does not
    x = jnp.arange(3.0)
    assert transform(lambda x: jax.pure_callback(lambda a: np.zeros(3), F32_3, x))(x).dtype == jnp.float32
    assert float(transform(lambda x: jax.pure_callback(lambda a: 1.0, SCALAR, x))(x)) == 1.0


def test_argument_errors_match_jax():
    x = jnp.arange(3.0)
    with pytest.raises(ValueError, match="result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is"):
        jax.pure_callback(_doubled(), jax.ShapeDtypeStruct((3,), np.float64), x)
    with pytest.raises(ValueError, match="result_shape_dtypes cannot specify 64-bit types"):
        io_callback(_doubled(), jax.ShapeDtypeStruct((3,), np.float64), x)
    with pytest.raises(ValueError, match=r"vmap_method must be on of the allowed methods \['sequential', "
                                         r"'sequential_unrolled', 'expand_dims', 'broadcast_all', "
                                         r"'legacy_vectorized', None\], but got: foo"):
        jax.pure_callback(_doubled(), F32_3, x, vmap_method="foo")
    with pytest.raises(AttributeError, match="'int' object has no attribute 'dtype'"):
        jax.pure_callback(_doubled(), 3, x)
    with pytest.raises(TypeError, match="Error interpreting argument to pure_callback as a JAX value. The "
                                        "problematic value is of type <class 'str'> and was passed to "
                                        "pure_callback at position 1."):
        jax.pure_callback(lambda a, s: a, F32_3, x, "s")


def test_an_unused_pure_callback_is_dropped_and_calls_are_not_merged():
    calls = []

    def unused(x):
        jax.pure_callback(_doubled(calls), F32_3, x)
        return x * 2

    def twice(x):
        return jax.pure_callback(_doubled(calls), F32_3, x) + jax.pure_callback(_doubled(calls), F32_3, x)

    x = jnp.arange(3.0)
    jax.jit(unused)(x)
    assert calls == []
    assert jax.jit(twice)(x).tolist() == [0.0, 4.0, 8.0] and len(calls) == 2
    text = jax.jit(twice).lower(x).as_text()
    assert text.count("pure_callback(") == 2 and print_module(parse_module(text)) == text


def test_io_callback_always_runs_in_program_order():
    log = []

    def record(value):
        log.append(float(value))
        return np.float32(len(log))

    @jax.jit
    def program(a):
        io_callback(record, SCALAR, a * 10)  # NOTE: its result is unused; it runs anyway
        first = io_callback(record, SCALAR, a, ordered=True)
        second = io_callback(record, SCALAR, a + 1, ordered=True)
        return first, second

    first, second = program(1.0)
    # NOTE: JAX orders only the ordered calls (it gave [1.0, 10.0, 2.0]); meshjit runs every
    # io_callback in program order ([10.0, 1.0, 2.0]); both run the unused one
    assert sorted(log) == [1.0, 2.0, 10.0] and log.index(1.0) < log.index(2.0)
    assert log == [10.0, 1.0, 2.0] and (float(first), float(second)) == (2.0, 3.0)
    log.clear()
    assert float(io_callback(record, SCALAR, 5.0)) == 1.0 and log == [5.0]


def test_pure_callback_with_constant_operands_runs_on_every_call():
    # NOTE: a callback step is never folded into a constant of the plan
    log = []

    @jax.jit
    def program():
        return io_callback(lambda: (log.append(1), np.float32(len(log)))[1], SCALAR)

    assert [float(program()) for _ in range(3)] == [1.0, 2.0, 3.0]


# --- vmap -----------------------------------------------------------------------------------


def _recorder(shapes):
    def callback(a, b):
        shapes.append((np.shape(a), np.shape(b)))
        return np.asarray(a) * 2

    return callback


# NOTE: JAX 0.10.2's calls for vmap(in_axes=(0, None)) over a (4, 3) batch and a scalar
@pytest.mark.parametrize(("method", "expected_calls"), [
    ("sequential", [((3,), ())] * 4),
    ("sequential_unrolled", [((3,), ())] * 4),
    ("expand_dims", [((4, 3), (1,))]),
    ("broadcast_all", [((4, 3), (4,))]),
    ("legacy_vectorized", [((4, 3), ())]),
])
@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
@pytest.mark.parametrize("batch_dim", [0, 1])
def test_vmap_methods_call_as_jax_does(method, expected_calls, transform, batch_dim):
    shapes = []

    def f(x, y):
        return jax.pure_callback(_recorder(shapes), jax.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)

    values = jnp.arange(12.0).reshape(4, 3)
    batch = values if batch_dim == 0 else values.T
    result = transform(jax.vmap(f, in_axes=(batch_dim, None)))(batch, jnp.float32(1.0))
    assert result.tolist() == (values * 2).tolist()
    assert shapes == expected_calls


def test_vmap_errors_match_jax():
    x = jnp.arange(3.0)
    with pytest.raises(NotImplementedError, match="vmap is only supported for the pure_callback primitive when "
                                                  "vmap_method is one of 'sequential', 'sequential_unrolled', "
                                                  "'expand_dims', 'broadcast_all', or 'legacy_vectorized'. Got "
                                                  "vmap_method=None."):
        jax.vmap(lambda v: jax.pure_callback(_doubled(), SCALAR, v))(x)
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
        jax.vmap(lambda v: io_callback(_doubled(), SCALAR, v, ordered=True))(x)
    calls = []
    assert jax.vmap(lambda v: io_callback(_doubled(calls), SCALAR, v))(x).tolist() == [0.0, 2.0, 4.0]
    assert calls == [0.0, 1.0, 2.0]


# --- autodiff -------------------------------------------------------------------------------


def _sin_callback(x):
    return jax.pure_callback(lambda a: np.sin(np.asarray(a)), jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                             vmap_method="sequential")


def test_differentiating_a_callback_raises_jax_errors():
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                                         "callbacks while taking gradients."):
        jax.grad(_sin_callback)(1.0)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        jax.jvp(_sin_callback, (1.0,), (1.0,))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP."):
        jax.grad(lambda x: io_callback(lambda a: a, SCALAR, x))(1.0)
    # NOTE: a callback on a value that carries no derivative needs none
    two = np.float32(2.0)
    assert float(jax.grad(lambda x: x * jax.pure_callback(lambda a: np.sin(a), SCALAR, two))(1.0)) == float(np.sin(two))


def test_callbacks_differentiate_inside_custom_jvp_and_custom_vjp():
    @jax.custom_jvp
    def f(x):
        return _sin_callback(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.cos(primals[0]) * tangents[0]))

    @jax.custom_vjp
    def g(x):
        return _sin_callback(x)

    g.defvjp(lambda x: (g(x), x), lambda x, cotangent: (jnp.cos(x) * cotangent,))
    half = jnp.float32(0.5)
    expected = float(jnp.cos(half))  # JAX: 0.87758255
    assert float(jax.grad(f)(half)) == expected == float(jax.jit(jax.grad(f))(half)) == float(jax.grad(g)(half))
    assert jax.vmap(jax.grad(f))(jnp.array([0.5, 1.0])).tolist() == jnp.cos(jnp.array([0.5, 1.0])).tolist()


# --- loops and branches ----------------------------------------------------------------------


def test_loop_and_branch_bodies_call_back_on_every_trip():
    calls = []
    cb = _doubled(calls)

    def body(carry, a):
        return carry + jax.pure_callback(cb, SCALAR, a), carry

    total, ys = jax.jit(lambda xs: jax.lax.scan(body, 0.0, xs))(jnp.arange(3.0))
    assert float(total) == 6.0 and ys.tolist() == [0.0, 0.0, 2.0] and calls == [0.0, 1.0, 2.0]
    calls.clear()
    loop = jax.jit(lambda: jax.lax.while_loop(lambda c: c < 10, lambda c: jax.pure_callback(cb, SCALAR, c + 1), 1.0))
    assert float(loop()) == 10.0 and calls == [2.0, 5.0]
    calls.clear()
    branch = jax.jit(lambda p, a: jax.lax.cond(p, lambda a: jax.pure_callback(cb, SCALAR, a), lambda a: a, a))
    assert float(branch(True, 3.0)) == 6.0 and calls == [3.0]
    calls.clear()
    assert float(branch(False, 3.0)) == 3.0 and calls == []
    total, _ = jax.jit(lambda xs: jax.lax.scan(lambda c, a: (c + io_callback(cb, SCALAR, a, ordered=True), c),
                                                0.0, xs))(jnp.arange(3.0))
    assert float(total) == 6.0 and calls == [0.0, 1.0, 2.0]


# --- sharded arguments and shard_map ------------------------------------------------------------


def _sharded():
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    return mesh, jax.device_put(jnp.arange(8.0), jax.NamedSharding(mesh, jax.P("x")))


@pytest.mark.parametrize("callback_op", [jax.pure_callback, io_callback])
def test_a_sharded_argument_is_gathered_and_called_once(callback_op):
    mesh, x = _sharded()
    calls = []

    def f(a):
        return callback_op(_doubled(calls), jax.ShapeDtypeStruct(a.shape, a.dtype), a) + a

    result = jax.jit(f)(x)
    assert result.tolist() == [3.0 * value for value in range(8)] and calls == [list(map(float, range(8)))]
    assert result.sharding.spec == jax.P("x")  # JAX: NamedSharding(mesh, P('x'))
    text = jax.jit(f).lower(x).compile().as_text()
    gather, call = text.index("all_gather("), text.index(f"{callback_op.__name__}(")
    assert gather < call
    calls.clear()
    assert callback_op(_doubled(calls), jax.ShapeDtypeStruct(x.shape, x.dtype), x).tolist() == (x * 2).tolist()
    assert len(calls) == 1


@pytest.mark.parametrize("callback_op", [jax.pure_callback, io_callback])
def test_shard_map_calls_back_once_per_device_with_its_shard(callback_op):
    mesh, x = _sharded()
    calls = []

    def body(block):
        return callback_op(_doubled(calls), jax.ShapeDtypeStruct(block.shape, block.dtype), block)

    result = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=jax.P("x"), out_specs=jax.P("x")))(x)
    assert result.tolist() == (x * 2).tolist()
    assert sorted(calls) == [[0.0, 1.0, 2.0, 3.0]] * 4 + [[4.0, 5.0, 6.0, 7.0]] * 4


def test_sharding_argument_as_jax_allows_it():
    mesh, x = _sharded()
    device = jax.devices()[3]
    one_device = jax.sharding.SingleDeviceSharding(device)
    result = jax.pure_callback(_doubled(), jax.ShapeDtypeStruct(x.shape, x.dtype), x, sharding=one_device)
    assert result.sharding == one_device and result.tolist() == (x * 2).tolist()
    jitted = jax.jit(lambda a: jax.pure_callback(_doubled(), jax.ShapeDtypeStruct(a.shape, a.dtype), a,
                                                 sharding=one_device))
    assert jitted(x).tolist() == (x * 2).tolist()
    with pytest.raises(NotImplementedError, match="pure_callback only supports SingleDeviceSharding, but got "
                                                  "<class 'meshjit.runtime.sharding.NamedSharding'>"):
        jax.pure_callback(_doubled(), F32_3, x, sharding=jax.NamedSharding(mesh, jax.P()))
    with pytest.raises(NotImplementedError, match="callbacks do not support specifying sharding inside spmd "
                                                  "computations"):
        jax.jit(jax.shard_map(lambda b: jax.pure_callback(_doubled(), jax.ShapeDtypeStruct(b.shape, b.dtype), b,
                                                          sharding=one_device),
                              mesh=mesh, in_specs=jax.P("x"), out_specs=jax.P("x")))(x)


def test_the_copies_autodiff_replays_are_merged_in_a_sharded_program():
    # NOTE: reverse mode replays a non-differentiated callback for the backward pass; common-
    # subexpression elimination merges the copies (the same host function on the same value)
    mesh = jax.make_mesh((8,), ("x",))
    x, w = (jax.device_put(value, jax.NamedSharding(mesh, jax.P("x"))) for value in (jnp.arange(8.0), jnp.ones(8)))
    calls = []

    def f(x, w):
        return (x * jax.pure_callback(_doubled(calls), jax.ShapeDtypeStruct(w.shape, w.dtype), w)).sum()

    assert jax.jit(jax.grad(f))(x, w).tolist() == [2.0] * 8 and len(calls) == 1  # JAX: one call
    assert jax.jit(jax.grad(f)).lower(x, w).compile().as_text().count("pure_callback(") == 1
