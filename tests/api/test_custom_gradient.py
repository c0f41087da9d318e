"""jax.custom_gradient, jax.closure_convert, jax.named_scope, jax.named_call, jax.live_arrays and
Array.copy_to_host_async against JAX 0.10.2 (the expected values and messages are JAX's for
the same programs)."""

from __future__ import annotations

import functools

import meshjit as jax
import meshjit.numpy as jnp
import numpy as np
import pytest
from meshjit.ir import parse_module, print_module


@jax.custom_gradient
def _square(x):
    return x ** 2, lambda g: (g * x,)


@jax.custom_gradient
def _product(x, y):
    return x * y, lambda g: (g * y, g * x)


@jax.custom_gradient
def _scaled_sin(x):
    y = jnp.sin(x)  # NOTE: the VJP closes over a value computed in the forward pass
    return y, lambda g: (g * jnp.cos(x) * 10,)


def test_custom_gradient_uses_the_returned_vjp():
    assert float(_square(3.0)) == 9.0
    assert float(jax.grad(_square)(3.0)) == 3.0 == float(jax.jit(jax.grad(_square))(3.0))
    assert float(_product(3.0, 4.0)) == 12.0
    assert tuple(map(float, jax.grad(_product, argnums=(0, 1))(3.0, 4.0))) == (4.0, 3.0)
    values = jnp.array([0.0, 1.0])
    assert jax.vmap(jax.grad(_scaled_sin))(values).tolist() == (jnp.cos(values) * 10).tolist()
    assert _square.__name__ == "_square"


def test_custom_gradient_takes_a_lone_cotangent_and_pytrees():
    @jax.custom_gradient
    def lone(x):
        return x ** 2, lambda g: g * x

    @jax.custom_gradient
    def tree(x):
        return {"a": x * 2, "b": x}, lambda g: (g["a"] * 3 + g["b"],)

    assert float(jax.grad(lone)(3.0)) == 3.0
    assert float(jax.grad(lambda x: tree(x)["a"] + tree(x)["b"])(1.0)) == 4.0


def test_custom_gradient_in_forward_mode_is_jax_error():
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function."):
        jax.jvp(_square, (3.0,), (1.0,))


def test_custom_gradient_on_sharded_values():
    mesh = jax.make_mesh((8,), ("x",))
    x = jax.device_put(jnp.arange(8.0), jax.NamedSharding(mesh, jax.P("x")))
    grads = jax.jit(jax.grad(lambda v: _scaled_sin(v).sum()))(x)
    assert grads.tolist() == (jnp.cos(jnp.arange(8.0)) * 10).tolist()
    assert grads.sharding.spec == jax.P("x")


def test_closure_convert_hoists_traced_float_values():
    hoisted_counts = []

    def traced(y):
        converted, hoisted = jax.closure_convert(lambda x: x * y + jnp.arange(2), jnp.ones(2))
        hoisted_counts.append([tuple(value.shape) for value in hoisted])
        return converted(jnp.ones(2), *hoisted)

    assert jax.jit(traced)(2.0).tolist() == [2.0, 3.0]
    assert float(jax.grad(lambda y: traced(y).sum())(2.0)) == 2.0
    assert hoisted_counts == [[()], [()]]  # JAX: one hoisted scalar each time

    def traced_int(n):
        converted, hoisted = jax.closure_convert(lambda x: x * n, 1.0)
        hoisted_counts.append(len(hoisted))
        return converted(1.0, *hoisted)

    assert float(jax.jit(traced_int)(3)) == 3.0 and hoisted_counts[-1] == 0  # NOTE: ints are not hoisted


def test_closure_convert_outside_a_trace_and_its_structure_check():
    converted, hoisted = jax.closure_convert(lambda x: x * 2.0, 1.0)
    assert hoisted == [] and float(converted(3.0)) == 6.0
    with pytest.raises(TypeError, match="The inputs to the closure produced by closure_convert must have the same "
                                        "Pytree structure as the example arguments passed when closure_convert was "
                                        "called."):
        converted((1.0, 2.0))


def test_closure_convert_feeds_custom_vjp():
    # NOTE: the pattern of JAX's closure_convert docstring: a higher-order custom_vjp function
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(fn, x, *args):
        return fn(x, *args)

    def apply_fwd(fn, x, *args):
        return fn(x, *args), (x, args)

    def apply_bwd(fn, residuals, g):
        x, args = residuals
        _, pullback = jax.vjp(fn, x, *args)
        return pullback(g)

    apply.defvjp(apply_fwd, apply_bwd)

    def loss(scale, x):
        converted, hoisted = jax.closure_convert(lambda v: jnp.sin(v) * scale, x)
        return apply(converted, x, *hoisted)

    assert float(jax.grad(loss)(2.0, 0.5)) == pytest.approx(float(jnp.sin(0.5)), rel=1e-6)
    assert float(jax.grad(loss, argnums=1)(2.0, 0.5)) == pytest.approx(float(2 * jnp.cos(0.5)), rel=1e-6)


def _scoped(x):
    with jax.named_scope("outer"):
        with jax.named_scope("inner"):
            y = jnp.sin(x)
        return y * 2


def test_named_scope_names_the_ops_and_changes_no_value():
    text = jax.jit(_scoped).lower(1.0).as_text()
    assert text.count('loc("outer/inner @ ') == 1 and 'mul(%0, %1) : f32[] loc("outer @ ' in text
    assert print_module(parse_module(text)) == text
    assert float(jax.jit(_scoped)(1.0)) == float(jnp.sin(1.0) * 2) == float(_scoped(1.0))
    mesh = jax.make_mesh((8,), ("x",))
    x = jax.device_put(jnp.arange(8.0), jax.NamedSharding(mesh, jax.P("x")))
    assert 'loc("outer/inner @ ' in jax.jit(_scoped).lower(x).compile().as_text()
    with pytest.raises(TypeError, match="named_scope name argument must be a string."):
        jax.named_scope(3)


def test_named_scope_as_a_decorator_and_named_call():
    @jax.named_scope("layer")
    def layer(x):
        return x + 1

    assert float(layer(1.0)) == 2.0 == float(jax.jit(layer)(1.0))
    assert 'loc("layer @ ' in jax.jit(layer).lower(1.0).as_text()

    def double(x):
        return x * 2

    named = jax.named_call(double, name="twice")
    assert float(named(3.0)) == 6.0 == float(jax.jit(named)(3.0))
    assert 'loc("twice @ ' in jax.jit(named).lower(1.0).as_text()
    assert 'loc("double @ ' in jax.jit(jax.named_call(double)).lower(1.0).as_text()
    assert float(jax.named_call(lambda x: x, name=3)(1.0)) == 1.0  # NOTE: JAX does not check the name here


def test_live_arrays_lists_undeleted_arrays():
    kept = jnp.ones(3)
    live = jax.live_arrays()
    assert isinstance(live, list) and any(value is kept for value in live)
    kept.delete()
    assert not any(value is kept for value in jax.live_arrays())
    assert any(value is kept for value in jax.live_arrays("cpu")) is False
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested"):
        jax.live_arrays("gpu")


def test_copy_to_host_async_returns_none_and_keeps_the_value():
    mesh = jax.make_mesh((8,), ("x",))
    value = jax.device_put(np.arange(8.0, dtype=np.float32), jax.NamedSharding(mesh, jax.P("x")))
    assert value.copy_to_host_async() is None
    assert np.asarray(value).tolist() == list(range(8))
    value.delete()
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        value.copy_to_host_async()
