"""What jnp.linalg, jax.scipy.linalg and jax.scipy.stats share on top of the LU, Cholesky and
triangular-solve ops (lax_linalg.py): the LU factors with the sign of their row exchanges,
solves from them, and triangular solves over broadcast batch dims."""

from __future__ import annotations

import numpy as np

from .. import lax_linalg
from .. import numpy_api as jnp


def factor(matrix):
    """``(packed, pivots, permutation)``: LU with partial pivoting of each matrix."""
    return lax_linalg.lu(matrix)


def pivot_sign(pivots, dtype):
    """The determinant of the row permutation: -1 to the number of real row exchanges."""
    exchanges = jnp.sum(pivots != jnp.arange(pivots.shape[-1], dtype=pivots.dtype), axis=-1)
    return jnp.where(exchanges % 2 == 0, 1.0, -1.0).astype(dtype)


def permutation_matrix(permutation, dtype):
    """``P`` with ``(P @ x)[i] = x[permutation[i]]``."""
    return (permutation[..., :, None] == jnp.arange(permutation.shape[-1], dtype=permutation.dtype)).astype(dtype)


def broadcast_batches(matrix, rhs):
    """``matrix`` and the matrix ``rhs`` with their batch dims broadcast to one shape."""
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    return jnp.broadcast_to(matrix, batch + matrix.shape[-2:]), jnp.broadcast_to(rhs, batch + rhs.shape[-2:])


def solve_triangular(matrix, rhs, *, lower: bool, transpose: bool = False, conjugate: bool = False,
                     unit_diagonal: bool = False):
    """``x`` with ``op(matrix) @ x = rhs`` (a matrix ``rhs``, batch dims broadcast), ``op`` the
    transpose when ``transpose``, of the conjugate when ``conjugate``."""
    matrix, rhs = broadcast_batches(matrix, rhs)
    return lax_linalg.triangular_solve(matrix, rhs, left_side=True, lower=lower, transpose_a=transpose,
                                       conjugate_a=conjugate, unit_diagonal=unit_diagonal)


def lu_solve(packed, permutation, rhs):
    """``x`` with ``matrix @ x = rhs`` (a matrix ``rhs``) from the LU factors of ``matrix``."""
    permuted = jnp.matmul(permutation_matrix(permutation, packed.dtype), rhs)
    middle = solve_triangular(packed, permuted, lower=True, unit_diagonal=True)
    return solve_triangular(packed, middle, lower=False)


def cholesky_lower(matrix):
    """The lower Cholesky factor of a symmetric positive-definite matrix."""
    return lax_linalg.cholesky(matrix)


def solve_lower_triangular(factor_matrix, vectors):
    """``y`` with ``factor_matrix @ y = vectors`` over the last dim of ``vectors``."""
    return solve_triangular(factor_matrix, vectors[..., None], lower=True)[..., 0]
