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
from random_cases import CASES, X64_CASES  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
x64 = "--x64" in sys.argv
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_random_values.npz")
table = dict(np.load(path)) if os.path.exists(path) else {}
for name, call in (X64_CASES if x64 else CASES).items():
    table[name] = np.asarray(call(jax))
np.savez_compressed(path, **table)
print(f"{len(table)} entries in {path}")
