"""jnp.linalg's decompositions and what they give: qr, eig, eigvals, eigh, eigvalsh, svd, svdvals, and from
the singular values pinv, lstsq and matrix_rank, with JAX's conventions (eigenvalues ascending,
singular values descending, JAX's default cutoffs)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import lax_linalg
from .. import numpy_api as jnp
from .special import floats


class QRResult(NamedTuple):
    Q: object
    R: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def qr(a, mode: str = "reduced"):
    """``QRResult(Q, R)`` with ``a = Q @ R``: ``Q`` is ``m x k`` (``mode='reduced'``, k =
    min(m, n)) or ``m x m`` ('complete'); ``mode='r'`` gives ``R`` alone."""
    (a,) = floats("jnp.linalg.qr", a)
    if mode not in ("reduced", "complete", "r", "full"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eig(a) -> EigResult:
    """``EigResult(eigenvalues, eigenvectors)`` of general square matrices, complex, the
    eigenvectors as unit columns (LAPACK's geev)."""
    (a,) = floats("jnp.linalg.eig", a)
    values, vectors = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(values, vectors)


def eigvals(a):
    """The complex eigenvalues of general square matrices, in LAPACK's order."""
    (a,) = floats("jnp.linalg.eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _symmetric(a, function: str):
    (a,) = floats(function, a)
    if a.ndim < 2:
        raise TypeError(f"{function}: argument must have rank >= 2, got shape {a.shape}")
    if a.shape[-1] != a.shape[-2]:
        raise TypeError(f"{function}: argument must be a (stack of) square matrices, got shape {a.shape}")
    return a


def _lower(UPLO) -> bool:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    return UPLO != "U"


def eigh(a, UPLO=None, symmetrize_input: bool = True) -> EighResult:
    """``EighResult(eigenvalues, eigenvectors)`` of symmetric matrices: eigenvalues ascending,
    the eigenvectors as columns."""
    a = _symmetric(a, "eigh")
    vectors, values = lax_linalg.eigh(a, lower=_lower(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(values, vectors)


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(_symmetric(a, "eigvalsh"), UPLO, symmetrize_input).eigenvalues


def _hermitian_svd(a, compute_uv: bool):
    """The SVD of a symmetric matrix from its eigendecomposition (numpy's ``hermitian=True``):
    singular values are the eigenvalues' magnitudes, sorted descending."""
    vectors, values = lax_linalg.eigh(a)
    order = jnp.argsort(-jnp.abs(values), axis=-1)
    singular = jnp.take_along_axis(jnp.abs(values), order, axis=-1)
    if not compute_uv:
        return singular
    u = jnp.take_along_axis(vectors, order[..., None, :], axis=-1)
    signs = jnp.take_along_axis(jnp.sign(values), order, axis=-1)
    vh = lax_linalg.adjoint(u * signs[..., None, :].astype(u.dtype))
    return SVDResult(u, singular, vh)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index=None):
    """``SVDResult(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, singular values descending, or
    ``S`` alone when not ``compute_uv``."""
    (a,) = floats("jnp.linalg.svd", a)
    if hermitian and a.ndim >= 2 and a.shape[-1] == a.shape[-2]:
        return _hermitian_svd(a, compute_uv)
    result = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
    return SVDResult(*result) if compute_uv else result


def svdvals(x, /):
    """The singular values, descending."""
    return svd(x, compute_uv=False)


def _epsilon(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse: singular values at most ``rtol`` times the largest are
    dropped (default ``10 * max(m, n) * eps``, JAX's)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = floats("jnp.linalg.pinv", a)
    rows, columns = a.shape[-2:]
    if rows == 0 or columns == 0:
        return jnp.zeros(a.shape[:-2] + (columns, rows), a.dtype)
    if rtol is None:
        rtol = 10.0 * max(rows, columns) * _epsilon(a.dtype)
    u, values, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = jnp.asarray(rtol, dtype=values.dtype)
    cutoff = rtol[..., None] * values[..., :1]
    kept = jnp.where(values > cutoff, values, np.inf)
    return jnp.matmul(lax_linalg.adjoint(vh), lax_linalg.adjoint(u) / kept[..., :, None].astype(u.dtype))


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """The number of singular values above ``rtol`` times the largest (default ``max(m, n) * eps``)."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = floats("jnp.linalg.matrix_rank", M)
    if M.ndim < 2:
        return jnp.any(M != 0).astype(np.int32)
    values = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = jnp.max(values, axis=-1) * (max(M.shape[-2:]) * _epsilon(values.dtype))
    rtol = jnp.asarray(rtol, dtype=values.dtype)
    return jnp.sum(values > rtol[..., None], axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """``(x, residuals, rank, s)``: the least-squares solution of ``a @ x = b`` by the SVD,
    dropping singular values below ``rcond`` times the largest (default ``eps * max(m, n)``)."""
    a, b = floats("jnp.linalg.lstsq", a, b)
    if a.shape[0] != b.shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if rhs.ndim != 2:
        raise TypeError(f"{rhs.ndim}-dimensional array given. Array must be one or two-dimensional")
    rows, columns = a.shape
    if a.size == 0:
        values, rank = jnp.zeros((0,), jnp.real(a).dtype), jnp.asarray(0, np.int32)
        solution = jnp.zeros((columns,) + rhs.shape[1:], a.dtype)
    else:
        cutoff = _epsilon(a.dtype) * max(rows, columns) if rcond is None else \
            jnp.where(jnp.asarray(rcond) < 0, _epsilon(a.dtype), rcond)
        u, values, vh = svd(a, full_matrices=False)
        kept = (values > 0) & (values >= jnp.asarray(cutoff, values.dtype) * values[0])
        rank = jnp.sum(kept)
        inverse = jnp.where(kept, 1.0 / jnp.where(kept, values, 1.0), 0.0)[:, None].astype(a.dtype)
        solution = jnp.matmul(lax_linalg.adjoint(vh), inverse * jnp.matmul(lax_linalg.adjoint(u), rhs))
    if numpy_resid and (int(rank) < columns or rows <= columns):
        residuals = jnp.zeros((0,), values.dtype)
    else:
        residuals = jnp.sum(jnp.abs(rhs - jnp.matmul(a, solution)) ** 2, axis=0)
    return (solution.ravel() if vector else solution), residuals, rank, values
