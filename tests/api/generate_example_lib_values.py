"""Regenerate ``data/jax_example_lib_values.npz`` from JAX: run from this folder with a Python
that has JAX 0.10.2: ``python generate_example_lib_values.py``."""

import pathlib

import jax
import numpy as np

from example_lib_cases import cases

jax.config.update("jax_platforms", "cpu")
table = {}
for name, thunk in cases(jax).items():
    for i, value in enumerate(thunk()):
        table[f"{name}/{i}"] = np.asarray(value)
path = pathlib.Path(__file__).parent / "data" / "jax_example_lib_values.npz"
np.savez_compressed(path, **table)
print(f"wrote {len(table)} arrays to {path.name}")
