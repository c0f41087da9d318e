"""Make jax_complex_special_values.npz: JAX 0.10.2's complex elementwise functions on the grid of
special values in complex_special_cases.py (complex64 and complex128), and its holomorphic
gradients at GRADIENT_POINTS. Run once in a JAX environment (jax is never a meshjit dependency),
from tests/api:

    PYTHONPATH=. /work/jaxenv/bin/python data/make_complex_special_table.py
"""

from __future__ import annotations

import os

import jax
import numpy as np

assert jax.__version__ == "0.10.2"
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

import complex_special_cases as cases  # noqa: E402

table = cases.run_all(jax, jnp)
table.update(cases.gradients(jax, jnp))
path = os.path.join(os.path.dirname(__file__), "jax_complex_special_values.npz")
np.savez_compressed(path, **table)
print(f"wrote {len(table)} arrays to {path}")
