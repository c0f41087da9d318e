"""Regenerate ``data/linalg_values.json`` from JAX: run from this folder with a Python that has
JAX 0.10.2: ``python generate_linalg_values.py``."""

import json
import pathlib

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from linalg_cases import cases, flat

table = {}
for name, thunk in cases(jax, jnp, jsl).items():
    try:
        result = thunk()
        table[name] = flat(result if hasattr(result, "shape") else tuple(jax.tree.leaves(result)))
    except Exception as error:  # noqa: BLE001 - the error JAX raises is the expected value
        table[name] = f"{type(error).__name__}: {error}"
path = pathlib.Path(__file__).parent / "data" / "linalg_values.json"
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
print(f"wrote {len(table)} cases to {path.name}")
