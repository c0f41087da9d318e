"""Regenerate ``jax_linspace.json`` from JAX: run from tests/api with a Python that has JAX
0.10.2: ``python data/make_linspace_table.py`` (float32 cases, then float64 with x64 on)."""

import json
import pathlib
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from linspace_cases import cases, flat  # noqa: E402

table = {"x64_off": {name: flat(call(jax, jnp)) for name, call in cases().items()}}
jax.config.update("jax_enable_x64", True)
table["x64_on"] = {name: flat(call(jax, jnp)) for name, call in cases().items()}
path = pathlib.Path(__file__).parent / "jax_linspace.json"
path.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
print(f"wrote {sum(len(part) for part in table.values())} cases to {path.name}")
