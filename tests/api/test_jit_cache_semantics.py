"""jit's cache is keyed as JAX 0.10.2 keys it: by the function and jit's settings, so ``jit(f)``
made twice traces once (and a changed global is not read again); jit takes partials and
decorates methods (``partial(jit, static_argnums=0)`` gets ``self``)."""

import functools

import meshjit as jax
import meshjit.numpy as jnp

OFFSET = 1.0


def test_jit_made_twice_reuses_the_trace_and_does_not_reread_globals():
    global OFFSET
    traces = []

    def f(x):
        traces.append(1)
        return x + OFFSET

    assert float(jax.jit(f)(1.0)) == 2.0
    OFFSET = 10.0
    try:
        assert float(jax.jit(f)(1.0)) == 2.0
        assert len(traces) == 1
        # other settings are another cache entry, traced again (and reading the new global)
        assert float(jax.jit(f, donate_argnums=())(jnp.float32(1.0))) == 11.0
    finally:
        OFFSET = 1.0


def test_jit_of_a_partial_and_of_a_callable_object():
    def add(a, b):
        return a + b

    jitted = jax.jit(functools.partial(add, 1.0))
    assert float(jitted(2.0)) == 3.0
    assert jitted.__name__ == "add"

    class Scale:
        def __call__(self, x):
            return 2 * x

    assert float(jax.jit(Scale())(3.0)) == 6.0


def test_jitted_method_with_static_self():
    class Model:
        def __init__(self, weight):
            self.weight = weight

        @functools.partial(jax.jit, static_argnums=0)
        def apply(self, x):
            return x * self.weight

    model = Model(5.0)
    assert float(model.apply(2.0)) == 10.0
    assert float(Model.apply(model, 3.0)) == 15.0
    assert model.apply.__self__ is model
