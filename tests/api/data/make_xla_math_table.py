"""Make jax_xla_math_values.npz: float32 exp, exp2, expm1, log, log1p, log2, log10, tanh, logistic
(jax.nn.sigmoid) and erf as JAX 0.10.2 computes them on CPU (XLA's own polynomials, with its
denormal flushing), and x ** y (glibc's powf), over the whole float range with its edges: signed zeros, denormals, the
branch points of XLA's code (exp's clamps and underflow, tanh's 0.0004, 7.9988 and 20, expm1's
1/2, log1p's sqrt(2) - 1, erf's 3.8325), random bit patterns, infinities and NaN. Run once in a
JAX environment (jax is never a meshjit dependency), from tests/api:

    /work/jaxenv/bin/python data/make_xla_math_table.py

The values are computed as one array of a few thousand elements: XLA gives other bits for
arrays of 3, 7 or 15 elements (their odd vector widths call glibc's expf/logf) and for a lone
erf, which meshjit does not follow.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import jax.scipy.special as special
import numpy as np

assert jax.__version__ == "0.10.2"
rng = np.random.default_rng(33)


def _around(value, count=24):
    start = np.float32(value)
    steps = np.arange(-count, count, dtype=np.float32)
    return np.concatenate([start + np.spacing(start) * steps, -(start + np.spacing(start) * steps)])


info = np.finfo(np.float32)
edges = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, 1e-40, -1e-40, info.tiny,
                  -info.tiny, info.max, -info.max, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan], np.float32)
branch_points = (87.8, 88.8, 88.72, 87.33, 103.9, 0.0004, 7.9988117, 20.0, 0.5, 0.41421357, 3.8325, 2.0 ** -126,
                 1.0, 0.70710677, 1.4142135, 2.0 ** -20)
x = np.concatenate([
    edges,
    *(_around(value) for value in branch_points),
    rng.integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    rng.uniform(-1, 1, 1000).astype(np.float32),
    rng.uniform(-12, 12, 1000).astype(np.float32),
    rng.uniform(-110, 100, 1000).astype(np.float32),
    (rng.choice([-1, 1], 1000) * 10.0 ** rng.uniform(-45, 38, 1000)).astype(np.float32),
])
FUNCTIONS = {"exp": jnp.exp, "exp2": jnp.exp2, "expm1": jnp.expm1, "log": jnp.log, "log1p": jnp.log1p,
             "log2": jnp.log2, "log10": jnp.log10, "tanh": jnp.tanh, "logistic": jax.nn.sigmoid, "erf": special.erf}
table = {"x": x}
for name, function in FUNCTIONS.items():
    table[name] = np.asarray(jax.jit(function)(x))
    assert np.array_equal(table[name], np.asarray(function(x)), equal_nan=True)  # eager alike
# x ** y: glibc's powf as XLA calls it, over bases of every sign and binade (denormals too) and
# exponents integral and not, with every pair of special values
specials = np.array([0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e38, -1e38],
                    np.float32)
bases, exponents = (grid.ravel() for grid in np.meshgrid(specials, specials))
table["pow_x"] = np.concatenate([bases, x[:6000], np.abs(rng.standard_normal(2000)).astype(np.float32) * 3])
table["pow_y"] = np.concatenate([exponents, np.where(rng.random(6000) < 0.3, rng.integers(-9, 9, 6000),
                                                     rng.standard_normal(6000) * 6).astype(np.float32),
                                 (rng.standard_normal(2000) * 20).astype(np.float32)])
table["pow"] = np.asarray(jax.jit(lambda a, b: a ** b)(table["pow_x"], table["pow_y"]))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_xla_math_values.npz")
np.savez_compressed(path, **table)
print({name: value.shape for name, value in table.items()}, os.path.getsize(path), "bytes")
