"""Make jax_gamma_values.npz: run once in a JAX 0.10.2 environment (jax is never a meshjit
dependency), from tests/api:

    /work/jaxenv/bin/python data/make_gamma_table.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
from gamma_cases import CASES, CLOSE_DRAWS, DECOMPOSITION_DRAWS, GRADIENTS, X64_CLOSE_CASES  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
table = {name: np.asarray(call(jax)) for name, call in {**CASES, **DECOMPOSITION_DRAWS}.items()}
table.update({name: np.asarray(call(jax)) for name, (_, call) in {**CLOSE_DRAWS, **GRADIENTS}.items()})
jax.config.update("jax_enable_x64", True)
table.update({name: np.asarray(call(jax)) for name, (_, call) in X64_CLOSE_CASES.items()})
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_gamma_values.npz")
np.savez_compressed(path, **table)
print(f"{len(table)} entries in {path}")
