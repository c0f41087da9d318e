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
    "reciprocal": lambda jax, jnp: jnp.reciprocal,
}
DTYPES = ("complex64", "complex128")
INVERSE_FUNCTIONS = ("arcsin", "asin", "arccos", "arcsinh", "arccosh", "acosh", "arctan", "arctanh")


def _zero_or_nan_part(z, dtype):
    return (z.real == 0) | (z.imag == 0) | np.isnan(z.real) | np.isnan(z.imag)


# name -> (why meshjit differs from JAX there, the grid points: function of (GRID, dtype))
DEVIATIONS = {
    "exp2": ("JAX multiplies z by ln 2 as a complex number, so an infinite or NaN real part meets "
             "inf * 0 or NaN * 0 = NaN; meshjit scales each part (exp2(inf + 0i) = inf + 0i, "
             "exp2(NaN + 0i) = NaN + 0i as exp)", lambda z, dtype: ~np.isfinite(z.real)),
    "expm1": ("JAX takes e^x as expm1(x) + 1, which cancels for x = -30 (imaginary parts off or 0); "
              "and the standard's expm1(-inf + i inf or NaN) = -1 + 0i where JAX gives NaN",
              lambda z, dtype: (z.real == -30) | ((z.real == -np.inf) & ~np.isfinite(z.imag))),
    "sinh": ("JAX computes (e^z - e^-z) / 2, which gives 0 for the real part of sinh(1e-30 + iy); "
             "meshjit sinh(x) cos y", lambda z, dtype: z.real == 1e-30),
    "cosh": ("the same cancellation in JAX's imaginary part sinh(x) sin y for x = 1e-30",
             lambda z, dtype: z.real == 1e-30),
    "log1p": ("JAX's |1 + z|^2 underflows in complex64 at -1 + 1e-30i and gives -inf; meshjit "
              "log(1e-30)", lambda z, dtype: (z == complex(-1, 1e-30)) & (dtype == "complex64")),
    **{name: ("C99's symmetries (odd, conj(f(z)) = f(conj z)) fix the signs of zero and the results "
              "beside a NaN, where JAX's differ; test_inverse_functions_keep_c99_symmetries and "
              "the standard's table check these points", _zero_or_nan_part) for name in INVERSE_FUNCTIONS},
}
RELATIVE_TOLERANCE = {"complex64": 2e-6, "complex128": 1e-14}


def run_all(jax, jnp) -> dict:
    """{"<dtype>/<function>": result on GRID}; x64 must be on for complex128."""
    results = {}
    for dtype in DTYPES:
        z = jnp.asarray(GRID, dtype)
        for name, make in FUNCTIONS.items():
            results[f"{dtype}/{name}"] = np.asarray(make(jax, jnp)(z))
    return results


GRADIENT_POINTS = np.array([0.3 + 0.4j, -1.5 + 0.2j, 2.0 - 1.0j, -0.7 - 2.5j])
GRADIENT_FUNCTIONS = ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "sinh", "cosh",
                      "tan", "tanh", "exp2", "log2", "log10", "sqrt", "expm1", "log1p", "square")


def gradients(jax, jnp) -> dict:
    """{"grad/<function>": holomorphic derivative at GRADIENT_POINTS} in complex128."""
    z = jnp.asarray(GRADIENT_POINTS, jnp.complex128)
    return {f"grad/{name}": np.asarray(jax.vmap(jax.grad(getattr(jnp, name), holomorphic=True))(z))
            for name in GRADIENT_FUNCTIONS}
