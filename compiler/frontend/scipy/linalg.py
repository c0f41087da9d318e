"""jax.scipy.linalg's factorizations and solves that Cholesky and LU give (linalg_compose.py):
cholesky (upper by default, as scipy), cho_factor/cho_solve, solve_triangular, lu_factor, lu,
solve, inv and det."""

from __future__ import annotations

from .. import numpy_api as jnp
from . import linalg_compose as compose
from . import numpy_linalg
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.linalg``).
__all__ = ("cho_factor", "cho_solve", "cholesky", "det", "inv", "lu", "lu_factor", "solve", "solve_triangular")

det = numpy_linalg.det
inv = numpy_linalg.inv


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of ``a``: upper (``a = U^T U``) unless ``lower``."""
    return numpy_linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(factor, lower)`` for cho_solve."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """``x`` with ``a @ x = b`` from cho_factor's ``(factor, lower)``."""
    factor, lower = c_and_lower
    (b,) = floats("cho_solve", b)
    lower_factor = factor if lower else jnp.swapaxes(factor, -1, -2)
    vector = b.ndim == factor.ndim - 1
    rhs = b[..., None] if vector else b
    middle = compose.solve_triangular_matrix(lower_factor, rhs, lower=True)
    result = compose.solve_triangular_matrix(jnp.swapaxes(lower_factor, -1, -2), middle, lower=False)
    return result[..., 0] if vector else result


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """``x`` with ``op(a) @ x = b`` for a triangular ``a``: op is the identity (``trans`` 0 or
    'N') or the transpose (1, 'T', and 'C' for real matrices)."""
    a = numpy_linalg.square(a, "solve_triangular")
    (b,) = floats("solve_triangular", b)
    if trans in (1, 2, "T", "C"):
        a, lower = jnp.swapaxes(a, -1, -2), not lower
    elif trans not in (0, "N"):
        raise ValueError(f"solve_triangular: invalid value for trans: {trans!r}")
    vector = b.ndim == a.ndim - 1
    result = compose.solve_triangular_matrix(a, b[..., None] if vector else b, lower=lower,
                                             unit_diagonal=unit_diagonal)
    return result[..., 0] if vector else result


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: the packed factors and the row each step exchanged with (LAPACK's)."""
    a = numpy_linalg.square(a, "lu_factor")
    packed, _, pivots, _ = compose.lu_factor(a)
    return packed, pivots


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
    a = numpy_linalg.square(a, "lu")
    packed, order, _, _ = compose.lu_factor(a)
    size = a.shape[-1]
    rows = jnp.arange(size)
    lower = jnp.where(rows[:, None] > rows[None, :], packed, 0.0) + jnp.eye(size, dtype=a.dtype)
    upper = jnp.where(rows[:, None] <= rows[None, :], packed, 0.0)
    permutation = jnp.swapaxes((order[..., :, None] == rows).astype(a.dtype), -1, -2)
    if permute_l:
        return jnp.matmul(permutation, lower), upper
    return permutation, lower, upper


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """``x`` with ``a @ x = b`` (``assume_a='pos'`` uses Cholesky)."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    a = numpy_linalg.square(a, "solve")
    (b,) = floats("solve", b)
    packed, order, _, _ = compose.lu_factor(a)
    vector = b.ndim == a.ndim - 1
    result = compose.lu_solve(packed, order, b[..., None] if vector else b)
    return result[..., 0] if vector else result
