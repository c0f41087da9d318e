"""meshjit.jit as a user sees it: caching, static arguments, pytrees, errors, shardings chosen
by propagation (JAX semantics), eager ops on sharded Arrays."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.frontend.trace import ConcretizationTypeError
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture
def mesh():
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def _put(value, mesh, *spec):
    return jax.device_put(np.asarray(value, np.float32), NamedSharding(mesh, P(*spec)))


def test_traces_once_per_signature():
    traces = []

    @jax.jit
    def f(x, y):
        traces.append(1)
        return x * y + 1

    a = np.ones((3, 4), np.float32)
    for _ in range(3):
        f(a, a)
    f(a, 2.0)
    f(np.ones((5,), np.float32), 1.0)
    assert len(traces) == 3


def test_static_arguments_by_position_and_name():
    calls = []

    @functools.partial(jax.jit, static_argnums=1, static_argnames="mode")
    def f(x, power, mode="add"):
        calls.append((power, mode))
        return x ** power + (1 if mode == "add" else -1)

    x = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(x, 2)), x ** 2 + 1)
    np.testing.assert_allclose(np.asarray(f(x, 3, mode="sub")), x ** 3 - 1)
    f(x, 2)
    assert calls == [(2, "add"), (3, "sub")]


def test_unhashable_static_argument_is_a_clear_error():
    f = jax.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        f(np.ones(4, np.float32), [2, 2])


def test_pytrees_in_and_out():
    @jax.jit
    def f(params, x):
        return {"y": x @ params["w"] + params["b"], "sum": [jnp.sum(x)]}

    params = {"w": np.ones((3, 2), np.float32), "b": np.arange(2.0, dtype=np.float32)}
    x = np.ones((4, 3), np.float32)
    out = f(params, x)
    np.testing.assert_allclose(np.asarray(out["y"]), x @ params["w"] + params["b"])
    assert float(out["sum"][0]) == 12.0


def test_wrong_number_of_arguments():
    f = jax.jit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="wrong arguments"):
        f(np.ones(2))


def test_non_array_argument():
    f = jax.jit(lambda x: x)
    with pytest.raises(TypeError, match="not a valid array"):
        f("hello")


def test_shape_mismatch_names_the_op_and_line():
    f = jax.jit(lambda x, w: jax.lax.dot_general(x, w, (((1,), (0,)), ((), ()))))
    with pytest.raises(TypeError, match=r"dot_general.*test_jit\.py"):
        f(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_python_control_flow_on_traced_value():
    @jax.jit
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ConcretizationTypeError, match="test_jit.py"):
        f(np.ones(3, np.float32))


def test_lower_and_compile_texts():
    lowered = jax.jit(lambda x: jnp.tanh(x) * 2).lower(np.ones((2, 2), np.float32))
    assert "tanh" in lowered.as_text()
    compiled = lowered.compile()
    assert "tanh" in compiled.as_text()
    assert compiled.cost_analysis()["flops"] > 0
    np.testing.assert_allclose(np.asarray(compiled(np.ones((2, 2), np.float32))), np.tanh(np.ones((2, 2))) * 2,
                               rtol=1e-6)


def test_elementwise_keeps_the_input_sharding(mesh):
    a = _put(np.ones((8, 8)), mesh, "x", "y")
    out = jax.jit(lambda a: a * 2 + 1)(a)
    assert out.sharding == NamedSharding(mesh, P("x", "y"))


def test_matmul_output_sharding(mesh):
    a = _put(np.ones((8, 16)), mesh, "x", None)
    b = _put(np.ones((16, 8)), mesh, None, "y")
    out = jax.jit(lambda a, b: a @ b)(a, b)
    assert out.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_allclose(np.asarray(out), np.full((8, 8), 16.0))


def test_contracting_dim_sharded_gives_fully_reduced_result(mesh):
    a = _put(np.arange(64.0).reshape(8, 8), mesh, None, "y")
    b = _put(np.eye(8), mesh, "y", None)
    out = jax.jit(lambda a, b: a @ b)(a, b)
    assert out.sharding.spec in (P(), P(None, None))
    np.testing.assert_allclose(np.asarray(out), np.arange(64.0).reshape(8, 8))
    for shard in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), np.arange(64.0).reshape(8, 8)[shard.index])


def test_reduction_over_sharded_dim_is_replicated(mesh):
    a = _put(np.arange(64.0).reshape(8, 8), mesh, "x", None)
    out = jax.jit(lambda a: jnp.sum(a, axis=0))(a)
    assert out.sharding.is_fully_replicated
    np.testing.assert_allclose(np.asarray(out), np.arange(64.0).reshape(8, 8).sum(0))


def test_transpose_permutes_the_spec(mesh):
    a = _put(np.ones((8, 4)), mesh, "x", "y")
    assert jax.jit(lambda a: a.T)(a).sharding.spec == P("y", "x")


def test_reshape_keeps_major_dim_sharding(mesh):
    a = _put(np.arange(64.0).reshape(8, 8), mesh, "x", None)
    out = jax.jit(lambda a: a.reshape(8, 2, 4))(a)
    assert out.sharding.spec == P("x")
    np.testing.assert_array_equal(np.asarray(out), np.arange(64.0).reshape(8, 2, 4))


def test_in_and_out_shardings(mesh):
    f = jax.jit(lambda a: a + 1, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P(None, "y")))
    out = f(np.zeros((8, 8), np.float32))
    assert out.sharding == NamedSharding(mesh, P(None, "y"))
    assert [r.kind for r in f.lower(np.zeros((8, 8), np.float32)).compile().collectives()] == ["all_gather"]


def test_eager_ops_on_sharded_arrays(mesh):
    a = _put(np.arange(64.0).reshape(8, 8), mesh, "x", "y")
    b = a * 2 + 1
    assert b.sharding == a.sharding
    np.testing.assert_allclose(np.asarray(b[1:3]), (np.arange(64.0).reshape(8, 8) * 2 + 1)[1:3])


def test_jit_of_jit_inlines():
    inner = jax.jit(lambda x: x * 3)
    outer = jax.jit(lambda x: inner(x) + 1)
    assert "mul" in outer.lower(np.ones(2, np.float32)).as_text()
    np.testing.assert_allclose(np.asarray(outer(np.ones(2, np.float32))), [4.0, 4.0])


def test_explain_names_the_origin(mesh):
    a = _put(np.ones((8, 8)), mesh, "x", None)
    text = jax.jit(lambda a: jnp.exp(a)).lower(a).compile().explain()
    assert '"x" from input 0' in text


def test_mesh_over_a_subset_of_devices():
    devices = jax.devices()[4:]
    mesh = Mesh(np.array(devices), ("x",))
    a = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    out = jax.jit(lambda a: a * 2)(a)
    assert out.devices() == set(devices)
    assert out.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(out), np.arange(8.0) * 2)
    text = jax.jit(lambda a: a * 2).lower(a).compile().as_text()
    assert "device_ids=[4, 5, 6, 7]" in text


def test_a_traced_value_prints_as_jax_jit_tracer(capsys):
    # JAX 0.10: print(x) inside jit shows JitTracer(<type>), weak types with a leading ~
    jax.jit(lambda x, y: print(x, y * 2.0, x.sum()))(np.arange(3.0, dtype=np.float32), 1.0)
    assert capsys.readouterr().out == "JitTracer(float32[3]) JitTracer(~float32[]) JitTracer(float32[])\n"
