"""The calls behind data/jax_special_incomplete.npz (made by data/make_special_incomplete_table.py
with JAX 0.10.2): jax.scipy.special's incomplete gamma and beta functions and scaled Bessel
functions, and the stats distribution functions built on them, over grids that cross each
algorithm's switch (x = a + 1, x = (a + 1) / (a + b + 2), |x| = 20) and the edges. Each takes
the ``jax`` module and returns an array; meshjit must be within ``TOLERANCES`` of JAX."""

from __future__ import annotations

import numpy as np

_A = np.array([0.05, 0.5, 1.0, 1.5, 3.0, 10.0, 40.0, 150.0, 800.0])
_X = np.array([0.0, 1e-3, 0.1, 0.9, 1.0, 2.0, 3.9, 4.1, 9.0, 11.5, 39.0, 42.0, 140.0, 160.0, 800.0, 1e4, np.inf])
A_GRID, X_GRID = (grid.ravel() for grid in np.meshgrid(_A, _X))
_B = np.array([0.2, 1.0, 2.5, 30.0])
_U = np.array([0.0, 1e-4, 0.05, 0.3, 0.5, 0.7, 0.95, 0.9999, 1.0])
BA, BB, BX = (grid.ravel() for grid in np.meshgrid(_A[:7], _B, _U))
BESSEL_X = np.concatenate([np.linspace(-30, 30, 121), [19.99, 20.0, 20.01, 100.0, 700.0, -1e3, 1e5]])
_NORMAL_CDF = (X_GRID >= 0.8 * A_GRID) & (X_GRID > 0.5)
_GRAD_A, _GRAD_X = np.array([0.5, 2.0, 7.0, 30.0]), np.array([0.3, 2.5, 6.0, 45.0])
COUNTS = np.array([-1.0, 0.0, 1.0, 2.5, 4.0, 10.0, 30.0])

CASES = {
    "gammainc": lambda jax: jax.scipy.special.gammainc(A_GRID, X_GRID),
    "gammaincc": lambda jax: jax.scipy.special.gammaincc(A_GRID, X_GRID),
    "betainc": lambda jax: jax.scipy.special.betainc(BA, BB, BX),
    "i0e": lambda jax: jax.scipy.special.i0e(BESSEL_X),
    "i1e": lambda jax: jax.scipy.special.i1e(BESSEL_X),
    "i0": lambda jax: jax.scipy.special.i0(BESSEL_X[np.abs(BESSEL_X) < 80]),
    "i1": lambda jax: jax.scipy.special.i1(BESSEL_X[np.abs(BESSEL_X) < 80]),
    "gamma_cdf": lambda jax: jax.scipy.stats.gamma.cdf(X_GRID - 1.0, A_GRID, 0.5, 2.0),
    "gamma_sf": lambda jax: jax.scipy.stats.gamma.sf(X_GRID - 1.0, A_GRID, 0.5, 2.0),
    # NOTE: where the cdf is not below the normal floats (XLA flushes denormal results to zero)
    "gamma_logcdf": lambda jax: jax.scipy.stats.gamma.logcdf(X_GRID[_NORMAL_CDF], A_GRID[_NORMAL_CDF]),
    "chi2_cdf": lambda jax: jax.scipy.stats.chi2.cdf(X_GRID, 2.0 * A_GRID),
    "chi2_sf": lambda jax: jax.scipy.stats.chi2.sf(X_GRID, 2.0 * A_GRID),
    "beta_cdf": lambda jax: jax.scipy.stats.beta.cdf(BX, BA, BB),
    "beta_sf": lambda jax: jax.scipy.stats.beta.sf(BX, BA, BB),
    "poisson_cdf": lambda jax: jax.scipy.stats.poisson.cdf(COUNTS[:, None], np.array([0.5, 3.0, 20.0])),
    "gammainc_grad_x": lambda jax: jax.vmap(jax.grad(jax.scipy.special.gammainc, 1))(_GRAD_A, _GRAD_X),
    "gammainc_grad_a": lambda jax: jax.vmap(jax.grad(jax.scipy.special.gammainc, 0))(_GRAD_A, _GRAD_X),
    "betainc_grad_x": lambda jax: jax.vmap(jax.grad(jax.scipy.special.betainc, 2))(_GRAD_A, _GRAD_A[::-1],
                                                                                  _GRAD_X / 50.0),
    "i0e_grad": lambda jax: jax.vmap(jax.grad(jax.scipy.special.i0e))(_GRAD_X - 3.0),
}

# (rtol, atol): float32 results against JAX's float64 ones (JAX's own float32 values are off by
# up to 5e-4 for large a; JAX's tests compare with scipy at about these tolerances)
TOLERANCES = {"float32": (3e-4, 1e-6), "float64": (1e-9, 1e-14)}
