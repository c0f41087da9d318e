"""Make jax_atan_values.npz: float32 arctan and arctan2 as JAX 0.10.2 computes them on CPU
(glibc 2.36's atanf/atan2f, with XLA's denormals-are-zero and flush-to-zero), over the whole
float range with its edges: signed zeros, denormals, atanf's branch points (2^-29, 7/16, 11/16,
19/16, 39/16, 2^25), every pair of special values, far-apart magnitudes (atan2f's |y/x| > 2^60
shortcuts), infinities and NaN; also float16 and bfloat16 (computed through float32). Run once in a JAX
environment (jax is never a meshjit dependency), from tests/api:

    /work/jaxenv/bin/python data/make_atan_table.py

NOTE: JAX is called on pieces of 32768 elements: on a jitted arctan of an odd number of at
least 65537 elements, XLA 0.10.2's CPU code runs another atan (5.8% of values differ by one ulp
from glibc's, which every other size gives); meshjit gives glibc's.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

assert jax.__version__ == "0.10.2"
rng = np.random.default_rng(34)
PIECE = 32768


def _around(value, count=64):
    start = np.float32(value)
    steps = np.arange(-count, count, dtype=np.float32)
    return np.concatenate([start + np.spacing(start) * steps, -(start + np.spacing(start) * steps)])


def _pieces(function, *arguments):
    return np.concatenate([np.asarray(jax.jit(function)(*(a[i:i + PIECE] for a in arguments)))
                           for i in range(0, arguments[0].size, PIECE)])


def _bits(count):
    return rng.integers(0, 2 ** 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)


info = np.finfo(np.float32)
special = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, 1e-40, -1e-40, info.tiny, -info.tiny,
                    info.max, -info.max, 1.0, -1.0, 2.0, -0.5, np.inf, -np.inf, np.nan], np.float32)
x = np.concatenate([
    special,
    *(_around(value) for value in (2.0 ** -29, 7 / 16, 11 / 16, 19 / 16, 39 / 16, 2.0 ** 25, 2.0 ** -126)),
    _bits(12000), rng.uniform(-4, 4, 6000).astype(np.float32),
    (rng.choice([-1, 1], 6000) * 10.0 ** rng.uniform(-12, 38, 6000)).astype(np.float32),
])
grid_y, grid_x = (part.ravel() for part in np.meshgrid(special, special))
with np.errstate(all="ignore"):
    far = (_bits(4000) * np.float32(1e-19)).astype(np.float32)  # magnitudes far apart
pair_y = np.concatenate([grid_y, _bits(12000), rng.uniform(-4, 4, 6000).astype(np.float32), far,
                         rng.choice(special, 4000), _bits(4000)])
pair_x = np.concatenate([grid_x, _bits(12000), rng.uniform(-4, 4, 6000).astype(np.float32), _bits(4000),
                         _bits(4000), rng.choice(special, 4000)])
table = {"x": x, "arctan": _pieces(jnp.arctan, x), "y2": pair_y, "x2": pair_x,
         "arctan2": _pieces(jnp.arctan2, pair_y, pair_x)}
assert np.array_equal(table["arctan"], np.asarray(jnp.arctan(x)), equal_nan=True)  # eager alike
every = np.arange(2 ** 16, dtype=np.uint16)  # arctan of every 16-bit pattern; arctan2 of random pairs
for name, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
    narrow, other = (rng.integers(0, 2 ** 16, 6000, dtype=np.uint32).astype(np.uint16) for _ in range(2))
    table[f"y_{name}"], table[f"x_{name}"] = narrow, other
    table[f"arctan_{name}"] = _pieces(jnp.arctan, every.view(dtype)).view(np.uint16)
    table[f"arctan2_{name}"] = _pieces(jnp.arctan2, narrow.view(dtype), other.view(dtype)).view(np.uint16)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_atan_values.npz")
np.savez_compressed(path, **table)
print({name: value.shape for name, value in table.items()}, os.path.getsize(path), "bytes")
