"""jax.numpy's ``poly`` (the coefficients of the polynomial with given roots, or of a square
matrix's characteristic polynomial) and ``polydiv`` (long division), with JAX's arithmetic
order: ``poly`` convolves ``[1, -root]`` in turn, ``polydiv`` subtracts each quotient term's
multiple of the divisor in turn."""

from __future__ import annotations

import numpy as np

from .. import numpy_api as jnp
from .arguments import as_array_argument
from .polynomials import _inexact
from .stacking import atleast_1d

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``).
__all__ = ("poly", "polydiv")


def poly(seq_of_zeros):
    """The coefficients (highest power first) of the monic polynomial with roots
    ``seq_of_zeros``; of a non-empty square matrix, its characteristic polynomial."""
    zeros = atleast_1d(_inexact(jnp.asarray(as_array_argument(seq_of_zeros, "poly"))))
    if zeros.ndim == 2 and zeros.shape[0] == zeros.shape[1] and zeros.shape[0]:
        from ..scipy.numpy_linalg_decompositions import eigvals

        zeros = eigvals(zeros)
    if zeros.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if not zeros.shape[0]:
        return jnp.ones((), zeros.dtype)
    coefficients = jnp.ones((1,), zeros.dtype)
    for index in range(zeros.shape[0]):
        factor = jnp.stack([jnp.ones((), zeros.dtype), -zeros[index]])
        coefficients = jnp.convolve(coefficients, factor, mode="full")
    return coefficients


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """``(quotient, remainder)`` of the polynomial ``u`` divided by ``v``; with
    ``trim_leading_zeros`` the remainder's leading near-zeros (below sqrt(eps)) are dropped,
    which needs a concrete remainder."""
    u, v = jnp.asarray(as_array_argument(u, "polydiv")), jnp.asarray(as_array_argument(v, "polydiv"))
    dtype = jnp.result_type(_inexact(u), _inexact(v))
    u, v = u.astype(dtype), v.astype(dtype)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    quotient = jnp.zeros(max(m - n + 1, 1), dtype)
    for k in range(m - n + 1):
        term = scale * u[k]
        quotient = quotient.at[k].set(term)
        u = u.at[k:k + n + 1].add(-term * v)
    if trim_leading_zeros:
        tolerance = np.sqrt(np.finfo(np.dtype(dtype)).eps)
        magnitudes = np.abs(np.asarray(u))
        start = next((index for index, value in enumerate(magnitudes) if value >= tolerance), len(magnitudes))
        u = u[start:]
    return quotient, u
