"""Dense linear algebra written as loops of meshjit.numpy ops (one column or row per
iteration, over any leading batch dims): Cholesky, triangular solves and LU with partial
pivoting, and what they give (solve, inverse, determinants). They trace, batch and
differentiate like any loop; sharded matrix dims are gathered by the ops' own rules.

Row exchanges are products with permutation matrices (exact in floating point), so a batch of
matrices pivots independently without gathers.
"""

from __future__ import annotations

import numpy as np

from .. import lax_loops
from .. import numpy_api as jnp


def _rows(size: int):
    return jnp.arange(size)


def cholesky_lower(matrix):
    """The lower Cholesky factor ``L`` (``L @ L^T = matrix``) of the last two dims; NaN where
    the matrix is not positive definite (as LAPACK-backed JAX)."""
    size = matrix.shape[-1]
    rows = _rows(size)

    def column(j, factor):
        row_j = jnp.take(factor, j, axis=-2)
        # NOTE: column j of factor is still zero, so this sums L[i, k] L[j, k] over k < j only
        remaining = jnp.take(matrix, j, axis=-1) - jnp.einsum("...ik,...k->...i", factor, row_j)
        pivot = jnp.sqrt(jnp.take(remaining, j, axis=-1))[..., None]
        values = jnp.where(rows > j, remaining / pivot, jnp.where(rows == j, pivot, 0.0))
        return jnp.where(rows == j, values[..., :, None], factor)

    return lax_loops.fori_loop(0, size, column, jnp.zeros_like(matrix))


def _broadcast_rhs(factor, rhs, vector: bool):
    batch = factor.shape[:-2]
    shape = batch + ((factor.shape[-1],) if vector else rhs.shape[-2:])
    return jnp.broadcast_to(rhs, np.broadcast_shapes(shape, rhs.shape))


def solve_triangular_matrix(factor, rhs, lower: bool, unit_diagonal: bool = False):
    """``x`` with ``factor @ x = rhs`` for a triangular ``factor`` and a matrix ``rhs`` (its
    last two dims), by substitution one row at a time (forward if ``lower``)."""
    size = factor.shape[-1]
    rows = _rows(size)
    rhs = _broadcast_rhs(factor, rhs, vector=False)

    def row(step, solution):
        i = step if lower else size - 1 - step
        row_i = jnp.take(factor, i, axis=-2)
        known = jnp.einsum("...k,...kj->...j", row_i, solution)
        value = jnp.take(rhs, i, axis=-2) - known
        if not unit_diagonal:
            value = value / jnp.take(row_i, i, axis=-1)[..., None]
        return jnp.where((rows == i)[:, None], value[..., None, :], solution)

    return lax_loops.fori_loop(0, size, row, jnp.zeros_like(rhs))


def solve_lower_triangular(factor, rhs):
    """``y`` with ``factor @ y = rhs`` over the last dim of ``rhs`` (forward substitution)."""
    return solve_triangular_matrix(factor, rhs[..., None], lower=True)[..., 0]


def lu_factor(matrix):
    """``(lu, order, pivots, sign)``: the packed LU factors of ``P @ matrix`` (unit-diagonal L
    below the diagonal, U on and above), the row order ``P`` takes, the row each step
    exchanged with (LAPACK's pivots) and det(P)."""
    size = matrix.shape[-1]
    rows = _rows(size)

    def column(k, state):
        packed, order, pivots, sign = state
        candidates = jnp.where(rows >= k, jnp.abs(jnp.take(packed, k, axis=-1)), -1.0)
        pivot = jnp.argmax(candidates, axis=-1)
        exchange = jnp.where(rows == k, pivot[..., None], jnp.where(rows == pivot[..., None], k, rows))
        permutation = (exchange[..., :, None] == rows).astype(packed.dtype)
        packed = jnp.einsum("...ij,...jk->...ik", permutation, packed)
        order = jnp.einsum("...ij,...j->...i", permutation, order)
        sign = jnp.where(pivot == k, sign, -sign)
        pivots = jnp.where(rows == k, pivot[..., None], pivots)
        pivot_row = jnp.take(packed, k, axis=-2)
        multipliers = jnp.where(rows > k, jnp.take(packed, k, axis=-1) / jnp.take(pivot_row, k, axis=-1)[..., None], 0.0)
        below = (rows > k)[:, None] & (rows > k)[None, :]
        packed = packed - jnp.where(below, multipliers[..., :, None] * pivot_row[..., None, :], 0.0)
        packed = jnp.where((rows == k)[None, :] & (rows > k)[:, None], multipliers[..., :, None], packed)
        return packed, order, pivots, sign

    batch = matrix.shape[:-2]
    order = jnp.broadcast_to(rows.astype(matrix.dtype), batch + (size,))
    pivots = jnp.zeros(batch + (size,), rows.dtype)
    sign = jnp.ones(batch, matrix.dtype)
    packed, order, pivots, sign = lax_loops.fori_loop(0, size, column, (matrix, order, pivots, sign))
    return packed, order.astype(rows.dtype), pivots, sign


def lu_solve(packed, order, rhs):
    """``x`` with ``matrix @ x = rhs`` (a matrix rhs) from ``lu_factor``'s factors."""
    size = packed.shape[-1]
    rows = _rows(size)
    permutation = (order[..., :, None] == rows).astype(packed.dtype)
    permuted = jnp.einsum("...ij,...jk->...ik", permutation, _broadcast_rhs(packed, rhs, vector=False))
    lower = jnp.where(rows[:, None] > rows[None, :], packed, 0.0) + jnp.eye(size, dtype=packed.dtype)
    upper = jnp.where(rows[:, None] <= rows[None, :], packed, 0.0)
    middle = solve_triangular_matrix(lower, permuted, lower=True, unit_diagonal=True)
    return solve_triangular_matrix(upper, middle, lower=False)


def diagonal(matrix):
    """The last two dims' diagonal."""
    size = matrix.shape[-1]
    return jnp.sum(matrix * jnp.eye(size, dtype=matrix.dtype), axis=-1)
