"""Make jax_libm_values.npz: the C library's functions as JAX 0.10.2 calls them on CPU (glibc 2.36
on Linux: tanf, log, powf, pow) over sweeps with their edges, inputs and results. Run once in a
JAX environment (jax is never a meshjit dependency), from tests/api:

    JAX_ENABLE_X64=1 /work/jaxenv/bin/python data/make_libm_table.py
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

assert jax.__version__ == "0.10.2" and jax.config.read("jax_enable_x64")
rng = np.random.default_rng(29)


def _floats(dtype, size, low_bits, high_bits):
    """Values with uniformly random bit patterns in [low_bits, high_bits): every binade alike."""
    unsigned = np.uint32 if dtype == np.float32 else np.uint64
    return rng.integers(low_bits, high_bits, size, dtype=np.uint64).astype(unsigned).view(dtype)


def _edges(dtype):
    info = np.finfo(dtype)
    values = [0.0, -0.0, info.smallest_subnormal, info.tiny, info.max, 1.0, np.inf, -np.inf, np.nan]
    return np.array(values, dtype)


quarter_turn = np.float32(np.pi / 4)
near_quarter = np.nextafter(quarter_turn, np.float32(np.inf)) + np.arange(-50, 50, dtype=np.float32) * np.float32(6e-8)
tan_x = np.concatenate([
    _edges(np.float32)[:2], near_quarter, np.float32(np.pi / 2) + np.arange(-20, 20, dtype=np.float32) * np.float32(1.2e-7),
    _floats(np.float32, 8000, 0x30000000, 0x4016CBE4), -_floats(np.float32, 4000, 0x30000000, 0x4016CBE4),
    np.random.default_rng(1).uniform(-2.35, 2.35, 4000).astype(np.float32)])
log_x = np.concatenate([
    _edges(np.float64), [-1.0, 1 - 2.0 ** -4, 1.064697265625, np.nextafter(1, 0), np.nextafter(1, 2)],
    _floats(np.float64, 6000, 1, 0x7FF0000000000000), np.random.default_rng(2).uniform(0.9, 1.1, 3000),
    _floats(np.float64, 1000, 1, 1 << 52)])  # denormals
pow32_x = np.concatenate([_edges(np.float32), _floats(np.float32, 6000, 1, 0x7F800000),
                          np.random.default_rng(3).uniform(0, 20, 4000).astype(np.float32)])
pow32_y = np.concatenate([_edges(np.float32)[[5, 5, 5, 5, 5, 5, 5, 5, 5]] * np.float32(0.5),
                          np.random.default_rng(4).uniform(-40, 40, 6000).astype(np.float32),
                          np.random.default_rng(5).uniform(0.05, 5, 4000).astype(np.float32)])
pow64_x = np.concatenate([_edges(np.float64), _floats(np.float64, 6000, 1, 0x7FF0000000000000),
                          np.random.default_rng(6).uniform(0, 20, 4000)])
pow64_y = np.concatenate([np.full(9, 0.5), np.random.default_rng(7).uniform(-3, 3, 6000),
                          np.random.default_rng(8).uniform(0.05, 5, 4000)])
table = {
    "tan_f32_x": tan_x, "tan_f32": np.asarray(jax.jit(jnp.tan)(tan_x)),
    "log_f64_x": log_x, "log_f64": np.asarray(jax.jit(jnp.log)(log_x)),
    "pow_f32_x": pow32_x, "pow_f32_y": pow32_y, "pow_f32": np.asarray(jax.jit(jnp.power)(pow32_x, pow32_y)),
    "pow_f64_x": pow64_x, "pow_f64_y": pow64_y, "pow_f64": np.asarray(jax.jit(jnp.power)(pow64_x, pow64_y)),
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_libm_values.npz")
np.savez_compressed(path, **table)
print({name: value.dtype for name, value in table.items()}, os.path.getsize(path), "bytes")
