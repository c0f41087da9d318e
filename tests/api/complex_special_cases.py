"""The complex special values compared with JAX 0.10.2 (data/jax_complex_special_values.npz, made
by data/make_complex_special_table.py): every elementwise function of complex numbers on the grid
of GRID_PARTS x GRID_PARTS, which holds signed zeros, +-1, +-inf, NaN, tiny and huge parts.

``DEVIATIONS`` lists, per function, the grid points where meshjit deliberately gives another
result than JAX's, and why; everywhere else a zero, infinite or NaN part equals JAX's exactly
(the sign of zero and of infinity included) and a finite part within ``RELATIVE_TOLERANCE``.
"""

from __future__ import annotations

import numpy as np

GRID_PARTS = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 30.0, -30.0, 1e-30,
              np.inf, -np.inf, np.nan, 1e30, -1e30)
GRID = np.array([complex(real, imaginary) for real in GRID_PARTS for imaginary in GRID_PARTS])

# name -> function of (jax, jnp)
FUNCTIONS = {
    **{name: (lambda name: lambda jax, jnp: getattr(jnp, name))(name) for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "sinh",
        "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "sign",
        "square", "abs")},
    "asin": lambda jax, jnp: jnp.asin, "acosh": lambda jax, jnp: jnp.acosh,
    "sigmoid": lambda jax, jnp: jax.nn.sigmoid, "expit": lambda jax, jnp: jax.scipy.special.expit,
}
DTYPES = ("complex64", "complex128")
RELATIVE_TOLERANCE = {"complex64": 2e-6, "complex128": 1e-14}


def run_all(jax, jnp) -> dict:
    """{"<dtype>/<function>": result on GRID}; x64 must be on for complex128."""
    results = {}
    for dtype in DTYPES:
        z = jnp.asarray(GRID, dtype)
        for name, make in FUNCTIONS.items():
            results[f"{dtype}/{name}"] = np.asarray(make(jax, jnp)(z))
    return results
