"""jax.numpy's polynomial functions that need linear algebra: ``roots`` (the eigenvalues of the
companion matrix, through eig) and ``polyfit`` (least squares on the scaled Vandermonde matrix,
through lstsq, with numpy's ``w``, ``full`` and ``cov``), as JAX computes them."""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import numpy_api as jnp
from ..scipy import numpy_linalg
from ..trace import ConcretizationTypeError, Tracer
from .arguments import as_array_argument, is_inexact_dtype
from .diagonals import diag
from .numerical import vander
from .stacking import atleast_1d

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``).
__all__ = ("polyfit", "roots")


def _inexact(value):
    if is_inexact_dtype(value.dtype):
        return value
    return value.astype(jnp.result_type(value.dtype, jnp.float32) if value.dtype != np.bool_ else jnp.float32)


def _complex_dtype(dtype):
    return jnp.result_type(dtype, jnp.complex64)


def _roots_without_zeros(p):
    """The eigenvalues of the companion matrix of ``p`` (its first coefficient nonzero)."""
    if p.size < 2:
        return jnp.zeros((0,), _complex_dtype(p.dtype))
    companion = diag(jnp.ones((p.size - 2,), p.dtype), -1)
    companion = companion.at[0, :].set(-p[1:] / p[0])
    return numpy_linalg.eigvals(companion)


def _roots_with_zeros(p, leading):
    """The roots of ``p`` with ``leading`` (traced) leading zeros: those of the coefficients
    rolled to put the zeros last, the zero roots that gives sorted last and replaced by NaN."""
    p = jnp.where(p.size == leading, 1.0, p).astype(p.dtype)
    found = _roots_without_zeros(jnp.roll(p, -leading))
    found = jnp.take(found, jnp.argsort(found == 0, stable=True))
    kept = jnp.arange(found.size) < found.size - leading
    return jnp.where(kept, found, jnp.asarray(complex(math.nan, math.nan), found.dtype))


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients ``p`` (highest power first), complex. With
    ``strip_zeros`` the leading zeros are dropped (``p`` must then be concrete); without, each
    leading zero gives a NaN root."""
    p = _inexact(atleast_1d(jnp.asarray(as_array_argument(p, "roots"))))
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if p.size < 2:
        return jnp.zeros((0,), _complex_dtype(p.dtype))
    leading = jnp.where(jnp.all(p == 0), p.size, jnp.argmin(p == 0))
    if not strip_zeros:
        return _roots_with_zeros(p, leading)
    if isinstance(leading, Tracer):
        known = leading.known_value()
        if known is None:
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: traced array with shape "
                f"{np.dtype(leading.dtype).name}[]\nThe error occurred in the jnp.roots() function. To use this within "
                "a JIT-compiled context, pass strip_zeros=False, but be aware that leading zeros will result in some "
                "returned roots being set to NaN.")
        leading = known
    return _roots_without_zeros(p[int(leading):])


def _check_fit_arguments(x, y, deg):
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")


def _weighted(lhs, rhs, w):
    w = _inexact(jnp.asarray(as_array_argument(w, "polyfit")))
    if w.ndim != 1:
        raise TypeError("expected a 1-d array for weights")
    if w.shape[0] != rhs.shape[0]:
        raise TypeError("expected w and y to have the same length")
    return lhs * w[:, None], rhs * (w[:, None] if rhs.ndim == 2 else w)


def _covariance(lhs, scale, residuals, y, order: int, cov):
    """The coefficients' covariance: ``(V^T V)^{-1}`` unscaled, or times the residual variance."""
    base = numpy_linalg.inv(jnp.matmul(lhs.T, lhs)) / jnp.outer(scale, scale)
    if cov == "unscaled":
        factor = jnp.asarray(1.0)
    else:
        if y.shape[0] <= order:
            raise ValueError("the number of data points must exceed order to scale the covariance matrix")
        factor = residuals / (y.shape[0] - order)
    if y.ndim == 1:
        return base * atleast_1d(factor)[None]
    return base[:, :, None] * atleast_1d(factor)[None, None, :]


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (``y`` may hold
    several columns), highest power first; ``full`` adds the residuals, rank, singular values
    and ``rcond``; ``cov`` the coefficients' covariance."""
    x, y = (jnp.asarray(as_array_argument(value, "polyfit")) for value in (x, y))
    deg = operator.index(deg)
    order = deg + 1
    _check_fit_arguments(x, y, deg)
    if rcond is None and not is_inexact_dtype(x.dtype):
        # NOTE: JAX's error (the machine epsilon of x's dtype)
        raise ValueError(f"data type {np.dtype(x.dtype).type} not inexact")
    dtype = jnp.result_type(_inexact(x).dtype, _inexact(y).dtype)
    x, y = x.astype(dtype), y.astype(dtype)
    rcond = float(x.shape[0] * np.finfo(np.dtype(x.dtype)).eps if rcond is None else rcond)
    lhs, rhs = vander(x, order), y
    if w is not None:
        lhs, rhs = _weighted(lhs, rhs, w)
    # NOTE: the columns scaled to unit norm improve the condition number
    scale = jnp.sqrt(jnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]
    coefficients, residuals, rank, values = numpy_linalg.lstsq(lhs, rhs, rcond)
    coefficients = (coefficients.T / scale[None, :]).T if coefficients.ndim > 1 else coefficients / scale
    if full:
        return coefficients, residuals, rank, values, jnp.asarray(rcond)
    if cov:
        return coefficients, _covariance(lhs, scale, residuals, y, order, cov)
    return coefficients
