"""Make jax_trig_values.npz: float32 sin, cos, tan and cbrt as JAX 0.10.2 computes them on CPU
(glibc 2.36's sinf, cosf, tanf and cbrtf), over the whole float range with its edges: signed
zeros, denormals, the branch points of glibc's code (2^-12, pi/4, 120), near multiples of pi/2,
large arguments to 3.4e38, infinities and NaN. Run once in a JAX environment (jax is never a meshjit dependency), from
tests/api:

    /work/jaxenv/bin/python data/make_trig_table.py
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

assert jax.__version__ == "0.10.2"
rng = np.random.default_rng(32)


def _around(value, count=64):
    start = np.float32(value)
    steps = np.arange(-count, count, dtype=np.float32)
    return np.concatenate([start + np.spacing(start) * steps, -(start + np.spacing(start) * steps)])


info = np.finfo(np.float32)
edges = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, 1e-40, -1e-40, info.tiny,
                  -info.tiny, info.max, -info.max, 1.0, -1.0, np.inf, -np.inf, np.nan], np.float32)
x = np.concatenate([
    edges,
    *(_around(value) for value in (2.0 ** -12, np.pi / 4, 120.0, 2.0 ** -126)),
    *(_around(k * np.pi / 2, 8) for k in range(1, 80)),
    rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    rng.uniform(-10, 10, 5000).astype(np.float32),
    rng.uniform(-1e5, 1e5, 5000).astype(np.float32),
    (rng.choice([-1, 1], 5000) * 10.0 ** rng.uniform(-8, 30, 5000)).astype(np.float32),
    (rng.choice([-1, 1], 5000) * 10.0 ** rng.uniform(4, np.log10(3.4e38), 5000)).astype(np.float32),
])
table = {"x": x}
for name in ("sin", "cos", "tan", "cbrt"):
    table[name] = np.asarray(jax.jit(getattr(jnp, name))(x))
    assert np.array_equal(table[name], np.asarray(getattr(jnp, name)(x)), equal_nan=True)  # eager alike
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_trig_values.npz")
np.savez_compressed(path, **table)
print({name: value.shape for name, value in table.items()}, os.path.getsize(path), "bytes")
