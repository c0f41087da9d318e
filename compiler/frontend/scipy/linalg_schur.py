"""jax.scipy.linalg's functions of the Schur and Hessenberg forms: schur, hessenberg (with Q
from the Householder vectors), rsf2csf (a real Schur form made complex by Givens rotations of
its 2 x 2 blocks), and the matrix functions sqrtm (Björck and Hammarling's recurrence) and funm
(Parlett's recurrence) on the complex Schur form. The recurrences run one superdiagonal at a
time: every entry of a superdiagonal depends only on the ones below it, so each step is a few
batched products."""

from __future__ import annotations

import numpy as np

from .. import lax_linalg
from .. import numpy_api as jnp
from . import numpy_linalg
from .special import floats

__all__ = ("funm", "hessenberg", "rsf2csf", "schur", "sqrtm")


def _complex(a):
    return a.astype(jnp.result_type(a.dtype, jnp.complex64))


def schur(a, output: str = "real"):
    """``(T, Z)`` with ``a = Z T Z^H``: the real Schur form (``output='real'``) or the complex
    one (``'complex'``, also of a real matrix)."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output!r}.")
    (a,) = floats("schur", a)
    if output == "complex":
        a = _complex(a)
    return lax_linalg.schur(a)


def _householder_product(packed, taus):
    """``Q = H_0 H_1 ... H_{n-2}`` from gehrd's Householder vectors (below the subdiagonal, a
    unit entry on it) and their taus."""
    size = packed.shape[-1]
    rows = jnp.arange(size)
    unitary = jnp.broadcast_to(jnp.eye(size, dtype=packed.dtype), packed.shape)
    for step in range(size - 1):
        column = packed[..., :, step]
        vector = jnp.where(rows == step + 1, 1, jnp.where(rows > step + 1, column, 0)).astype(packed.dtype)
        product = jnp.matmul(unitary, vector[..., :, None])
        unitary = unitary - jnp.matmul(product * taus[..., step, None, None], jnp.conj(vector)[..., None, :])
    return unitary


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``H`` (zero below the first subdiagonal) with ``a = Q H Q^H``, and ``Q`` with ``calc_q``."""
    (a,) = floats("hessenberg", a)
    if a.shape[-1] == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    packed, taus = lax_linalg.hessenberg(a)
    upper = jnp.triu(packed, -1)
    return (upper, _householder_product(packed, taus)) if calc_q else upper


def _by_superdiagonals(diagonal_values, next_values):
    """The upper triangular matrix with ``diagonal_values`` on its diagonal, each superdiagonal
    ``d`` filled by ``next_values(current, d)`` from the matrix of the diagonals below it."""
    size = diagonal_values.shape[-1]
    current = diagonal_values[..., :, None] * jnp.eye(size, dtype=diagonal_values.dtype)
    rows, columns = np.indices((size, size))
    for offset in range(1, size):
        band = jnp.asarray(columns - rows == offset)
        current = jnp.where(band, next_values(current, offset), current)
    return current


def _shifted(values, offset: int):
    """``values[j] `` at each ``(i, j)`` with ``j = i + offset`` (and ``values[i]``)."""
    return values[..., None, :], values[..., :, None]


def sqrtm(A, blocksize: int = 1):
    """The principal square root of each square matrix, complex, from its complex Schur form."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    (A,) = floats("sqrtm", A)
    form, vectors = schur(A, output="complex")
    roots = jnp.sqrt(lax_linalg.diagonal(form))

    def next_values(current, offset):
        known = jnp.matmul(current, current)
        column_roots, row_roots = _shifted(roots, offset)
        return jnp.where(form == known, 0, (form - known) / (row_roots + column_roots))

    root = _by_superdiagonals(roots, next_values)
    return jnp.matmul(jnp.matmul(vectors, root), lax_linalg.adjoint(vectors))


def _parlett(values, form):
    """``F`` with ``F T = T F`` and ``diag(F) = values``, and the smallest gap between two
    diagonal entries of ``T`` (or ``|T[0, 0]|``) that Parlett's recurrence divides by."""
    diagonal = lax_linalg.diagonal(form)
    column_entries, row_entries = _shifted(diagonal, 0)
    gaps = column_entries - row_entries

    def next_values(current, offset):
        numerator = jnp.matmul(form, current) - jnp.matmul(current, form)
        return jnp.where(gaps != 0, numerator / jnp.where(gaps != 0, gaps, 1), numerator)

    size = form.shape[-1]
    upper = jnp.asarray(np.triu(np.ones((size, size), bool), 1))
    smallest = jnp.min(jnp.where(upper, jnp.abs(gaps), np.inf), axis=(-2, -1), initial=np.inf)
    return _by_superdiagonals(values, next_values), jnp.minimum(jnp.abs(form[..., 0, 0]), smallest)


def funm(A, func, disp: bool = True):
    """``func`` of the square matrix ``A`` (``func`` maps an array of eigenvalues to their
    images), complex; ``disp=False`` also gives an estimate of the relative error."""
    (A,) = floats("funm", A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("expected square array_like input")
    form, vectors = schur(A, output="complex")
    values = jnp.asarray(func(lax_linalg.diagonal(form))).astype(form.dtype)
    result, smallest = _parlett(values, form)
    result = jnp.matmul(jnp.matmul(vectors, result), lax_linalg.adjoint(vectors))
    if disp:
        return result
    tolerance = float(np.finfo(np.float32 if form.dtype == jnp.complex64 else np.float64).eps)
    smallest = jnp.where(smallest == 0.0, tolerance, smallest)
    bound = (tolerance / smallest) * numpy_linalg.norm(jnp.triu(form, 1), 1)
    error = jnp.where(jnp.any(jnp.isinf(result)), np.inf, jnp.minimum(1, jnp.maximum(tolerance, bound)))
    return result, error


def _rotate_block(form, vectors, m: int):
    """The Givens rotation that makes ``T[m, m - 1]`` zero, applied to ``T`` and ``Z``."""
    block = form[..., m - 1:m + 1, m - 1:m + 1]
    shift = numpy_linalg.eigvals(block)[..., 0] - form[..., m, m]
    below = form[..., m, m - 1]
    radius = jnp.sqrt(jnp.abs(shift) ** 2 + jnp.abs(below) ** 2).astype(form.dtype)
    cosine, sine = shift / radius, below / radius
    rotation = jnp.stack([jnp.stack([jnp.conj(cosine), sine], -1), jnp.stack([-sine, cosine], -1)], -2)
    rotated_rows = jnp.matmul(rotation, form[..., m - 1:m + 1, m - 1:])
    form = jnp.concatenate([form[..., :m - 1, :], jnp.concatenate(
        [form[..., m - 1:m + 1, :m - 1], rotated_rows], -1), form[..., m + 1:, :]], -2)
    adjoint = lax_linalg.adjoint(rotation)
    rotated_columns = jnp.matmul(form[..., :m + 1, m - 1:m + 1], adjoint)
    form = jnp.concatenate([form[..., :, :m - 1], jnp.concatenate(
        [rotated_columns, form[..., m + 1:, m - 1:m + 1]], -2), form[..., :, m + 1:]], -1)
    vectors = jnp.concatenate([vectors[..., :, :m - 1], jnp.matmul(vectors[..., :, m - 1:m + 1], adjoint),
                               vectors[..., :, m + 1:]], -1)
    return form, vectors


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form ``(T, Z)`` of a real one: each 2 x 2 block's subdiagonal entry
    rotated away (those already negligible are set to zero)."""
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    T, Z = floats("rsf2csf", T, Z)
    form, vectors = _complex(T), _complex(Z)
    batch = np.broadcast_shapes(form.shape[:-2], vectors.shape[:-2])
    form = jnp.broadcast_to(form, batch + form.shape[-2:])
    vectors = jnp.broadcast_to(vectors, batch + vectors.shape[-2:])
    epsilon = float(np.finfo(np.float32 if form.dtype == jnp.complex64 else np.float64).eps)
    for m in range(form.shape[-1] - 1, 0, -1):
        below = jnp.abs(form[..., m, m - 1])
        needed = below > epsilon * (jnp.abs(form[..., m - 1, m - 1]) + jnp.abs(form[..., m, m]))
        rotated_form, rotated_vectors = _rotate_block(form, vectors, m)
        form = jnp.where(needed[..., None, None], rotated_form, form)
        vectors = jnp.where(needed[..., None, None], rotated_vectors, vectors)
        form = form.at[..., m, m - 1].set(0)
    return form, vectors
