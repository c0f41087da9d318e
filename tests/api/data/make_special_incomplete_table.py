"""Make jax_special_incomplete.npz: run once in a JAX 0.10.2 environment, from tests/api:

    /work/jaxenv/bin/python data/make_special_incomplete_table.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.scipy.special  # noqa: E402, F401
import jax.scipy.stats  # noqa: E402, F401
from special_incomplete_cases import CASES  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
table = {name: np.asarray(call(jax)) for name, call in CASES.items()}
jax.config.update("jax_enable_x64", True)
table.update({f"x64_{name}": np.asarray(call(jax)) for name, call in CASES.items()})
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_special_incomplete.npz")
np.savez_compressed(path, **table)
print(f"{len(table)} entries in {path}")
