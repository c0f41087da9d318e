"""Make jax_random_values.npz: run once in a JAX 0.10.2 environment (jax is never a meshjit
dependency), from tests/api:

    /work/jaxvenv/bin/python data/make_random_table.py
    JAX_ENABLE_X64=1 /work/jaxvenv/bin/python data/make_random_table.py --x64
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
from random_cases import CASES, X64_CASES, X64_CLOSE_CASES  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
x64 = "--x64" in sys.argv
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_random_values.npz")
table = dict(np.load(path)) if os.path.exists(path) else {}
calls = {**X64_CASES, **{name: call for name, (_, call) in X64_CLOSE_CASES.items()}} if x64 else CASES
for name, call in calls.items():
    table[name] = np.asarray(call(jax))
np.savez_compressed(path, **table)
print(f"{len(table)} entries in {path}")
