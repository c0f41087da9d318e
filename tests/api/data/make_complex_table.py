"""Make jax_complex_values.npz: JAX 0.10.2's complex64 and complex128 arithmetic, transcendental
functions, reductions, products, autodiff and jnp.fft results on fixed inputs, x64 off (c64) and
on (c128). Run once in a JAX environment (jax is never a meshjit dependency), from tests/api:

    /work/jaxenv/bin/python data/make_complex_table.py
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

assert jax.__version__ == "0.10.2"
import complex_cases as cases  # noqa: E402  (tests/api/complex_cases.py: the inputs and programs)

table = {}
for x64 in (False, True):
    jax.config.update("jax_enable_x64", x64)
    for name, value in cases.run_all(jax, jnp, x64).items():
        table[f"{'x64' if x64 else 'x32'}/{name}"] = np.asarray(value)
path = os.path.join(os.path.dirname(__file__), "jax_complex_values.npz")
np.savez_compressed(path, **table)
print(f"wrote {len(table)} arrays to {path}")
