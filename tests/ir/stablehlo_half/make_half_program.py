"""Print half_floats.mlir and half_floats.npz with JAX 0.10.2 (never a meshjit dependency), from
this folder: ``/work/jaxenv/bin/python make_half_program.py``. The program computes in float16
and bfloat16 (matmul, sums, converts, a constant, a comparison) on inputs that are small
multiples of powers of two, so that its outputs are exact arithmetic. (It converts only
arguments to f32: XLA's CPU compiler gives ``convert(op(...bf16) -> f32)`` the op's unrounded
f32 value, which meshjit rounds to bf16 first; docs/numpy.md says so.)"""

import numpy as np

import jax
import jax.numpy as jnp

assert jax.__version__ == "0.10.2", jax.__version__


def program(x, w, h):
    y = x @ w + jnp.asarray([0.5, -1.25, 2.0], jnp.bfloat16)
    total = jnp.sum(y, axis=0)
    g = (h * jnp.float16(1.5) - 0.25).astype(jnp.float16)
    return y, total, g, jnp.where(h > 0, h, -h).astype(jnp.bfloat16), x.astype(jnp.float32) * 3


rng = np.random.default_rng(0)
x = jnp.asarray(rng.integers(-64, 64, (4, 8)) / 16, jnp.bfloat16)
w = jnp.asarray(rng.integers(-64, 64, (8, 3)) / 8, jnp.bfloat16)
h = jnp.asarray(rng.integers(-512, 512, (3,)) / 64, jnp.float16)
lowered = jax.jit(program).lower(x, w, h)
with open("half_floats.mlir", "w") as file:
    file.write(lowered.as_text())
outputs = jax.jit(program)(x, w, h)


def bits(value):
    value = np.asarray(value)
    return value.view(np.uint16) if value.dtype.itemsize == 2 else value


np.savez("half_floats.npz", **{f"arg{index}": bits(value) for index, value in enumerate((x, w, h))},
         **{f"out{index}": bits(value) for index, value in enumerate(outputs)})
