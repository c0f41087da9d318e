"""Regenerate ``data/linalg_values.json``, ``data/linalg_complex_values.json`` and
``data/polynomial_values.json`` from JAX: run from this folder with a Python that has JAX 0.10.2:
``python generate_linalg_values.py``."""

import json
import pathlib

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

import linalg_cases
import linalg_complex_cases
import polynomial_cases

MODULES = ((linalg_cases, "linalg_values.json"), (linalg_complex_cases, "linalg_complex_values.json"),
           (polynomial_cases, "polynomial_values.json"))
for module, file_name in MODULES:
    table = {}
    for name, thunk in module.cases(jax, jnp, jsl).items():
        try:
            result = thunk()
            table[name] = module.flat(result if hasattr(result, "shape") else tuple(jax.tree.leaves(result)))
        except Exception as error:  # noqa: BLE001 - the error JAX raises is the expected value
            table[name] = f"{type(error).__name__}: {error}"
    path = pathlib.Path(__file__).parent / "data" / file_name
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(table)} cases to {path.name}")
