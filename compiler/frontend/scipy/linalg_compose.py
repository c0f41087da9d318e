"""Cholesky factorization and triangular solves written as loops of meshjit.numpy ops (one
column or row per iteration), so they trace, batch over leading dims and differentiate like
any loop; scipy.stats' multivariate normal uses them."""

from __future__ import annotations

from .. import lax_loops
from .. import numpy_api as jnp


def cholesky_lower(matrix):
    """The lower Cholesky factor ``L`` (``L @ L^T = matrix``) of the last two dims; NaN where
    the matrix is not positive definite (as LAPACK-backed JAX)."""
    size = matrix.shape[-1]
    rows = jnp.arange(size)

    def column(j, factor):
        row_j = jnp.take(factor, j, axis=-2)
        # NOTE: column j of factor is still zero, so this sums L[i, k] L[j, k] over k < j only
        remaining = jnp.take(matrix, j, axis=-1) - jnp.einsum("...ik,...k->...i", factor, row_j)
        pivot = jnp.sqrt(jnp.take(remaining, j, axis=-1))[..., None]
        values = jnp.where(rows > j, remaining / pivot, jnp.where(rows == j, pivot, 0.0))
        return jnp.where(rows == j, values[..., :, None], factor)

    return lax_loops.fori_loop(0, size, column, jnp.zeros_like(matrix))


def solve_lower_triangular(factor, rhs):
    """``y`` with ``factor @ y = rhs`` over the last dim of ``rhs`` (forward substitution)."""
    size = factor.shape[-1]
    rows = jnp.arange(size)

    def row(i, solution):
        row_i = jnp.take(factor, i, axis=-2)
        value = (jnp.take(rhs, i, axis=-1) - jnp.sum(row_i * solution, axis=-1)) / jnp.take(row_i, i, axis=-1)
        return jnp.where(rows == i, value[..., None], solution)

    return lax_loops.fori_loop(0, size, row, jnp.zeros_like(rhs + jnp.zeros(factor.shape[:-1], rhs.dtype)))
