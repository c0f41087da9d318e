"""linspace calls whose values meshjit gives bit for bit as JAX 0.10.2 does on CPU, shared by
``test_linspace.py`` and ``data/make_linspace_table.py`` (which runs them under JAX). Each case
is ``(name, function)``, the function taking ``(jax, jnp)``: eager calls, traced bounds, bounds
that are constants of a jitted program (which XLA folds), array bounds along an axis, retstep,
integer dtypes, float64."""

import numpy as np

BOUNDS = [(0.0, 1.0, 7), (-3.0, 11.0, 50), (0.1, 0.7, 13), (2.0, 3.0, 4), (0.3, 1.7, 29),
          (1.1, 9.3, 77), (-1e3, 1e-3, 33), (5.0, -2.5, 10)]


def _calls(a, b, n, endpoint):
    f32 = np.float32
    return {
        "eager": lambda jax, jnp: jnp.linspace(a, b, n, endpoint=endpoint),
        "f32_bounds": lambda jax, jnp: jnp.linspace(f32(a), f32(b), n, endpoint=endpoint),
        "jit_constants": lambda jax, jnp: jax.jit(lambda: jnp.linspace(a, b, n, endpoint=endpoint))(),
        "jit_traced": lambda jax, jnp: jax.jit(lambda x, y: jnp.linspace(x, y, n, endpoint=endpoint))(a, b),
        "arrays_axis1": lambda jax, jnp: jnp.linspace(
            jnp.array([a, a + 1, -a]), jnp.array([b, b + 2, b * 3]), n, endpoint=endpoint, axis=1),
        "arrays_axis0": lambda jax, jnp: jnp.linspace(
            jnp.array([[a], [b]]), jnp.array([[b], [a]]), n, endpoint=endpoint),
        "retstep": lambda jax, jnp: jnp.linspace(a, b, n, endpoint=endpoint, retstep=True)[1],
        "int32": lambda jax, jnp: jnp.linspace(a, b * 5, n, endpoint=endpoint, dtype=jnp.int32),
    }


def cases():
    table = {}
    for a, b, n in BOUNDS:
        for endpoint in (True, False):
            for kind, call in _calls(a, b, n, endpoint).items():
                table[f"{kind}({a}, {b}, {n}, endpoint={endpoint})"] = call
    for n in (0, 1, 2):
        for endpoint in (True, False):
            table[f"small({n}, endpoint={endpoint})"] = (
                lambda jax, jnp, n=n, endpoint=endpoint: jnp.linspace(1.0, 2.0, n, endpoint=endpoint))
            table[f"small_step({n}, endpoint={endpoint})"] = (
                lambda jax, jnp, n=n, endpoint=endpoint:
                jnp.linspace(1.0, 2.0, n, endpoint=endpoint, retstep=True)[1])
    return table


def flat(value) -> dict:
    """An array as its dtype, shape and bytes (hex), so float results compare bit for bit."""
    value = np.asarray(value)
    return {"dtype": str(value.dtype), "shape": list(value.shape),
            "bytes": np.ascontiguousarray(value).tobytes().hex()}
