"""jax.scipy.linalg's matrix functions: expm (Higham's Pade approximation with scaling and
squaring, chosen per matrix by its 1-norm, so a batch stays one program) and polar (from the
singular value decomposition)."""

from __future__ import annotations

import math

from .. import lax_linalg
from .. import numpy_api as jnp
from . import numpy_linalg
from .special import floats

# NOTE: Higham (2005), "The scaling and squaring method for the matrix exponential revisited":
# the Pade degrees and the largest 1-norm each is accurate to unit roundoff for, in double and
# single precision, and the coefficients b_0..b_m of each degree's numerator.
_THETAS = {
    "float64": ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
                (9, 2.097847961257068e0), (13, 5.371920351148152e0)),
    "float32": ((3, 4.258730016922831e-1), (5, 1.880152677804762e0), (7, 3.925724783138660e0)),
}
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0,
        1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}


def _even_powers(matrix, degree: int) -> dict:
    """``{0: I, 2: A^2, 4: A^4, ...}`` up to the degree's need (A^6 at most)."""
    identity = jnp.broadcast_to(jnp.eye(matrix.shape[-1], dtype=matrix.dtype), matrix.shape)
    powers = {0: identity, 2: jnp.matmul(matrix, matrix)}
    for power in (4, 6):
        if power <= min(degree - 1, 6):
            powers[power] = jnp.matmul(powers[power - 2], powers[2])
    return powers


def _pade_terms(matrix, degree: int):
    """``(U, V)``: the odd and even parts of the degree's Pade numerator, ``P = V + U`` and
    ``Q = V - U``."""
    b, powers = _PADE[degree], _even_powers(matrix, degree)
    if degree == 13:
        a2, a4, a6 = powers[2], powers[4], powers[6]
        odd_high = jnp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
        odd = odd_high + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * powers[0]
        even_high = jnp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
        even = even_high + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * powers[0]
        return jnp.matmul(matrix, odd), even
    if degree == 9:
        powers[8] = jnp.matmul(powers[6], powers[2])
    odd = sum(b[power + 1] * powers[power] for power in range(0, degree, 2))
    even = sum(b[power] * powers[power] for power in range(0, degree, 2))
    return jnp.matmul(matrix, odd), even


def _pade(matrix, degree: int):
    odd, even = _pade_terms(matrix, degree)
    return numpy_linalg.solve(even - odd, even + odd)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential of each square matrix in ``A``: the lowest Pade degree accurate
    for its 1-norm, else the highest degree on ``A / 2^s`` squared ``s`` times (NaN when ``s``
    would exceed ``max_squarings``)."""
    (A,) = floats("expm", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
    thetas = _THETAS["float64" if A.dtype in (jnp.float64, jnp.complex128) else "float32"]
    norm = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
    top_degree, top_theta = thetas[-1]
    squarings = jnp.maximum(0.0, jnp.ceil(jnp.log2(norm / top_theta)))
    scaled = A / jnp.exp2(squarings)[..., None, None]
    result = _pade(scaled, top_degree)
    for step in range(max_squarings):
        result = jnp.where((step < squarings)[..., None, None], jnp.matmul(result, result), result)
    for degree, theta in reversed(thetas[:-1]):
        result = jnp.where((norm < theta)[..., None, None], _pade(A, degree), result)
    return jnp.where((squarings > max_squarings)[..., None, None], math.nan, result)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """``(u, p)``: ``a = u @ p`` (``side='right'``) or ``p @ u`` ('left'), ``u`` with
    orthonormal columns or rows and ``p`` symmetric positive semi-definite, from the SVD."""
    if side not in ("right", "left"):
        raise ValueError(f"side={side!r} is not implemented; side must be 'right' or 'left'")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"method={method!r} is not implemented; method must be 'qdwh' or 'svd'")
    (a,) = floats("polar", a)
    if a.ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    left, values, right = lax_linalg.svd(a, full_matrices=False)
    unitary = jnp.matmul(left, right)
    vectors = lax_linalg.adjoint(right) if side == "right" else left
    positive = jnp.matmul(lax_linalg.columns_times(vectors, values.astype(a.dtype)), lax_linalg.adjoint(vectors))
    return unitary, positive
