"""Regenerate ``explicit_types.json`` from JAX: run with a Python that has JAX 0.10 and 8 CPU
devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8``) from this folder:
``python generate_explicit_types.py``."""

import json
import pathlib

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from explicit_type_cases import CASES, run_case

mesh = jax.make_mesh((2, 4), ("X", "Y"))
table = {case[0]: run_case(jax, jnp, lax, P, mesh, case) for case in CASES}
path = pathlib.Path(__file__).with_name("explicit_types.json")
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
print(f"wrote {len(table)} cases to {path.name}")
