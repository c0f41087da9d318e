"""jnp.linalg's functions that Cholesky and LU give (linalg_compose.py): cholesky, solve, inv,
det, slogdet, matrix_power, and norm (vector norms and the matrix norms that need no singular
values). Arguments are promoted to the default float as in JAX."""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

from .. import numpy_api as jnp
from . import linalg_compose as compose
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.numpy.linalg``).
__all__ = ("SlogdetResult", "cholesky", "det", "inv", "matrix_power", "norm", "slogdet", "solve")


def square(a, function: str):
    (a,) = floats(function, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{function}: argument must be a square matrix (or a stack of them), got shape {a.shape}")
    return a


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of a Hermitian positive-definite ``a`` (lower, or ``upper``)."""
    a = square(a, "cholesky")
    if symmetrize_input:
        a = (a + jnp.swapaxes(a, -1, -2)) / 2
    factor = compose.cholesky_lower(a)
    return jnp.swapaxes(factor, -1, -2) if upper else factor


def solve(a, b):
    """``x`` with ``a @ x = b``; ``b`` is a vector when it has one dim, or one dim fewer than ``a``."""
    a = square(a, "solve")
    (b,) = floats("solve", b)
    packed, order, _, _ = compose.lu_factor(a)
    if b.ndim == 1 or b.ndim == a.ndim - 1:
        return compose.lu_solve(packed, order, b[..., None])[..., 0]
    return compose.lu_solve(packed, order, b)


def inv(a):
    """The inverse of each square matrix in ``a``."""
    a = square(a, "inv")
    packed, order, _, _ = compose.lu_factor(a)
    return compose.lu_solve(packed, order, jnp.eye(a.shape[-1], dtype=a.dtype))


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def slogdet(a, *, method=None) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant."""
    a = square(a, "slogdet")
    packed, _, _, sign = compose.lu_factor(a)
    diagonal = compose.diagonal(packed)
    sign = sign * jnp.prod(jnp.sign(diagonal), axis=-1)
    return SlogdetResult(sign, jnp.sum(jnp.log(jnp.abs(diagonal)), axis=-1))


def det(a):
    """The determinant of each square matrix in ``a``."""
    a = square(a, "det")
    packed, _, _, sign = compose.lu_factor(a)
    return sign * jnp.prod(compose.diagonal(packed), axis=-1)


def matrix_power(a, n: int):
    """``a`` raised to the integer power ``n`` by repeated squaring (negative: of the inverse)."""
    a = square(a, "matrix_power")
    n = operator.index(n)
    if n < 0:
        a, n = inv(a), -n
    result = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    power = a
    while n:
        if n & 1:
            result = jnp.matmul(result, power)
        n >>= 1
        if n:
            power = jnp.matmul(power, power)
    return result


def _vector_norm(x, ord, axis, keepdims):
    magnitude = jnp.abs(x)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == math.inf:
        return jnp.max(magnitude, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return jnp.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum((x != 0).astype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(magnitude, axis=axis, keepdims=keepdims)
    return jnp.sum(magnitude ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axis, keepdims):
    rows, columns = axis
    magnitude = jnp.abs(x)
    if ord in (None, "fro", "f"):
        result = jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    elif ord in (1, -1, math.inf, -math.inf):
        summed, reduced = (rows, columns) if ord in (1, -1) else (columns, rows)
        sums = jnp.sum(magnitude, axis=summed, keepdims=True)
        pick = jnp.max if ord > 0 else jnp.min
        result = pick(sums, axis=reduced, keepdims=True)
        if not keepdims:
            result = jnp.squeeze(result, axis=axis)
    else:
        raise ValueError(f"norm: matrix norm ord={ord!r} needs singular values, which meshjit does not "
                         f"compute yet; ord may be None, 'fro', 1, -1, inf or -inf")
    return result


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norms (``ord`` None, inf, -inf, 0 or any p) over one axis, matrix norms over two."""
    (x,) = floats("norm", x)
    if axis is None:
        if ord is None:
            return jnp.sqrt(jnp.sum(x * x, keepdims=keepdims))
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: improper number of axes for norm: {axis!r}")
