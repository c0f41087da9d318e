"""Make jax_half_values.npz: run once in a JAX 0.10.2 environment (jax is never a meshjit
dependency), from tests/api:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 /work/jaxenv/bin/python data/make_half_table.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
from half_cases import CASES, CLOSE_CASES, as_table_entry  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
assert jax.device_count() == 8, "set XLA_FLAGS=--xla_force_host_platform_device_count=8"
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_half_values.npz")
table = {}
for name, call in {**CASES, **CLOSE_CASES}.items():
    value = np.asarray(call(jax))
    table[name] = as_table_entry(value)
    table[f"{name}.dtype"] = np.array(str(value.dtype))
np.savez_compressed(path, **table)
print(f"{len(table) // 2} entries in {path}")
