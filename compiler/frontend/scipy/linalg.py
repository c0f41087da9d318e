"""jax.scipy.linalg's factorizations and solves: cholesky (upper by default, as scipy),
cho_factor/cho_solve, solve_triangular, lu_factor, lu, solve, inv, det, qr, eigh and svd over the
linear algebra ops (lax_linalg.py); expm and polar are in linalg_functions.py, schur, hessenberg,
rsf2csf, sqrtm and funm in linalg_schur.py."""

from __future__ import annotations

import warnings

from .. import lax_linalg
from .. import numpy_api as jnp
from . import linalg_solvers as solvers
from . import numpy_linalg
from .linalg_functions import expm, polar
from .linalg_schur import funm, hessenberg, rsf2csf, schur, sqrtm
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.linalg``).
__all__ = ("cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "funm", "hessenberg", "inv", "lu", "lu_factor",
           "lu_solve", "polar", "qr", "rsf2csf", "schur", "solve", "solve_triangular", "sqrtm", "svd")

det = numpy_linalg.det
inv = numpy_linalg.inv


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of ``a``: upper (``a = U^T U``) unless ``lower``."""
    (a,) = floats("cholesky", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        # NOTE: JAX names the shape of the matrix transposed
        shown = a.shape[:-2] + a.shape[-2:][::-1]
        raise ValueError(f"The input to cholesky must be a square matrix. Got shape {shown}.")
    return numpy_linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(factor, lower)`` for cho_solve."""
    return cholesky(a, lower=lower), lower


def _as_matrix_rhs(function: str, a, b):
    """``b`` as a matrix right-hand side and whether it was a vector (one dim, or one dim fewer
    than ``a`` ending in ``a``'s size: the batched 1-D solve JAX deprecates with a warning)."""
    if b.ndim == 1:
        return b[:, None], True
    if a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
        warnings.warn(f"jax.scipy.linalg.{function}: batched 1D solves with b.ndim > 1 are deprecated, and in the "
                      "future will be treated as a batched 2D solve. Use "
                      f"{function}(..., b[..., None]).squeeze(-1) to avoid this warning.", FutureWarning,
                      stacklevel=3)
        return b[..., None], True
    return b, False


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """``x`` with ``a @ x = b`` from cho_factor's ``(factor, lower)``: ``a = L L^H`` or
    ``U^H U``."""
    factor, lower = c_and_lower
    factor, b = floats("cho_solve", factor, b)
    rhs, vector = _as_matrix_rhs("cho_solve", factor, b)
    middle = solvers.solve_triangular(factor, rhs, lower=lower, transpose=not lower, conjugate=not lower)
    result = solvers.solve_triangular(factor, middle, lower=lower, transpose=lower, conjugate=lower)
    return result[..., 0] if vector else result


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """``x`` with ``op(a) @ x = b`` for a triangular ``a``: op is the identity (``trans`` 0 or
    'N'), the transpose (1, 'T') or the conjugate transpose (2, 'C')."""
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ValueError(f"Invalid 'trans' value {trans}")
    transpose, conjugate = trans not in (0, "N"), trans in (2, "C")
    a, b = floats("solve_triangular", a, b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve_triangular: a must be a (stack of) square matrices, got shape {a.shape}")
    rhs, vector = _as_matrix_rhs("solve_triangular", a, b)
    if rhs.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve_triangular: b {b.shape} does not match a {a.shape}")
    result = solvers.solve_triangular(a, rhs, lower=lower, transpose=transpose, conjugate=conjugate,
                                      unit_diagonal=unit_diagonal)
    return result[..., 0] if vector else result


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: the packed factors and the row each step exchanged with (LAPACK's)."""
    (a,) = floats("lu_factor", a)
    packed, pivots, _ = lax_linalg.lu(a)
    return packed, pivots


def _pivots_to_permutation(pivots, rows: int):
    """The row order LAPACK's exchanges give: row ``k`` swapped with ``pivots[k]``, in turn."""
    positions = jnp.arange(rows, dtype=pivots.dtype)
    order = jnp.broadcast_to(positions, pivots.shape[:-1] + (rows,))
    for step in range(pivots.shape[-1]):
        target = pivots[..., step, None]
        here, there = order[..., step, None], jnp.take_along_axis(order, target, axis=-1)
        order = jnp.where(positions == step, there, jnp.where(positions == target, here, order))
    return order


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True):
    """``x`` with ``a @ x = b`` (``trans`` 0), ``a^T @ x = b`` (1) or ``a^H @ x = b`` (2) from
    lu_factor's ``(lu, piv)``."""
    packed, pivots = lu_and_piv
    packed, b = floats("lu_solve", packed, b)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    rhs, vector = _as_matrix_rhs("lu_solve", packed, b)
    permutation = solvers.permutation_matrix(_pivots_to_permutation(jnp.asarray(pivots), packed.shape[-1]),
                                             packed.dtype)
    if trans == 0:
        middle = solvers.solve_triangular(packed, jnp.matmul(permutation, rhs), lower=True, unit_diagonal=True)
        result = solvers.solve_triangular(packed, middle, lower=False)
    else:
        conjugate = trans == 2
        middle = solvers.solve_triangular(packed, rhs, lower=False, transpose=True, conjugate=conjugate)
        middle = solvers.solve_triangular(packed, middle, lower=True, transpose=True, conjugate=conjugate,
                                          unit_diagonal=True)
        result = jnp.matmul(jnp.swapaxes(permutation, -1, -2), middle)
    return result[..., 0] if vector else result


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``); ``a`` is
    ``m x n``, ``l`` is ``m x k`` and ``u`` ``k x n`` with ``k = min(m, n)``."""
    (a,) = floats("lu", a)
    packed, _, permutation = lax_linalg.lu(a)
    rows, columns = a.shape[-2:]
    inner = min(rows, columns)
    lower = lax_linalg.triangle(packed[..., :, :inner], lower=True, offset=-1) + jnp.eye(rows, inner, dtype=a.dtype)
    upper = lax_linalg.triangle(packed[..., :inner, :], lower=False)
    permutation_matrix = jnp.swapaxes(solvers.permutation_matrix(permutation, a.dtype), -1, -2)
    if permute_l:
        return jnp.matmul(permutation_matrix, lower), upper
    return permutation_matrix, lower, upper


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """``x`` with ``a @ x = b`` (``assume_a='pos'`` uses Cholesky)."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of ['gen', 'sym', 'her', 'pos']; got {assume_a!r}")
    if assume_a != "pos":
        return numpy_linalg.solve(a, b)
    a, b = floats("solve", a, b)
    if a.ndim == b.ndim + 1:
        return cho_solve(cho_factor(a, lower=lower), b[..., None])[..., 0]
    return cho_solve(cho_factor(a, lower=lower), b)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """``(q, r)``: complete (``mode='full'``) or reduced (``'economic'``); ``mode='r'`` gives
    ``(r,)``, as scipy."""
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = floats("qr", a)
    q, r = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002 - scipy's name
         check_finite: bool = True):
    """``(w, v)``: ascending eigenvalues and eigenvectors of a Hermitian ``a``; with ``b``
    (Hermitian positive definite) those of ``a v = w b v``, through ``b``'s Cholesky factor."""
    if type != 1:
        raise ValueError(f"eigh: only type=1 (a v = w b v) is supported, got type={type}")
    if eigvals is not None:
        raise ValueError("eigh: eigvals (a subset of the eigenvalues) is not supported")
    (a,) = floats("eigh", a)
    if b is None:
        vectors, values = lax_linalg.eigh(a, lower=lower)
        return values if eigvals_only else (values, vectors)
    (b,) = floats("eigh", b)
    factor = lax_linalg.cholesky(b)
    # L^{-1} a L^{-H} has the eigenvalues of the pencil; its eigenvectors map back by L^{-H}
    half = solvers.solve_triangular(factor, lax_linalg.symmetrize(a), lower=True)
    reduced = lax_linalg.adjoint(solvers.solve_triangular(factor, lax_linalg.adjoint(half), lower=True))
    vectors, values = lax_linalg.eigh(reduced)
    if eigvals_only:
        return values
    return values, solvers.solve_triangular(factor, vectors, lower=True, transpose=True, conjugate=True)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """``(u, s, vh)`` with ``a = u @ diag(s) @ vh``, or ``s`` alone."""
    (a,) = floats("svd", a)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
