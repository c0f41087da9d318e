"""jnp.linalg's functions that Cholesky and LU give: cholesky, solve, inv, det, slogdet,
matrix_power, and norm (its matrix norms 2, -2 and 'nuc' from the singular values). They bind the
linear algebra ops (lax_linalg.py); the decompositions and what they give (qr, eigh, svd, pinv,
lstsq, ...) are in numpy_linalg_decompositions.py. Arguments are promoted to the default float as
in JAX."""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

from .. import lax_linalg
from .. import numpy_api as jnp
from . import linalg_solvers as solvers
from .numpy_linalg_decompositions import (
    EigResult, EighResult, QRResult, SVDResult, eig, eigh, eigvals, eigvalsh, lstsq, matrix_rank, pinv, qr, svd,
    svdvals,
)
from .numpy_linalg_products import cross, diagonal, multi_dot, tensorinv, tensorsolve, trace, vector_norm
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.numpy.linalg``).
__all__ = ("EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross", "det",
           "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensorinv", "tensorsolve", "trace", "vector_norm")


def square(a, function: str, error=ValueError, end: str = ""):
    """``a`` as a float stack of square matrices; else ``error`` with JAX's message."""
    (a,) = floats(function, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise error(f"Argument to {function} must have shape [..., n, n], got {a.shape}{end}")
    return a


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of a symmetric positive-definite ``a`` (lower, or ``upper``); NaN
    where the matrix is not positive definite."""
    a = square(a, "cholesky", TypeError)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return lax_linalg.adjoint(factor) if upper else factor


def solve(a, b):
    """``x`` with ``a @ x = b``: ``b`` is a vector when it has one dim, else a (stack of)
    matrices; batch dims broadcast."""
    (a, b) = floats("solve", a, b)
    if a.ndim < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a.shape}")
    if b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1] and a.shape[-1] != b.shape[-2]:
        raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, this would have "
                         "been treated as a batched 1-dimensional solve. To recover this behavior, use "
                         "solve(a, b[..., None]).squeeze(-1).")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve: a must be a (stack of) square matrices, got shape {a.shape}")
    rhs = b[:, None] if b.ndim == 1 else b
    if rhs.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: b has {rhs.shape[-2]} rows, a {a.shape} needs {a.shape[-1]}")
    result = solvers.lu_solve(*solvers.factor(a)[::2], rhs)
    return result[..., 0] if b.ndim == 1 else result


def inv(a):
    """The inverse of each square matrix in ``a``."""
    a = square(a, "inv", end=".")
    packed, _, permutation = solvers.factor(a)
    return solvers.lu_solve(packed, permutation, jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape))


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def slogdet(a, *, method=None) -> SlogdetResult:
    """The sign (a unit complex number for a complex matrix) and the log of the absolute value
    of the determinant (by LU)."""
    a = square(a, "slogdet()")
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`).")
    packed, pivots, _ = solvers.factor(a)
    diagonal = lax_linalg.diagonal(packed)
    magnitude = jnp.abs(diagonal)
    sign = solvers.pivot_sign(pivots, a.dtype) * jnp.prod(_unit(diagonal, magnitude), axis=-1)
    return SlogdetResult(sign, jnp.sum(jnp.log(magnitude), axis=-1))


def _unit(values, magnitude):
    """``values / |values|`` (0 at 0): the sign of a real number, the phase of a complex one."""
    if not jnp.iscomplexobj(values):
        return jnp.sign(values)
    nonzero = magnitude != 0
    return jnp.where(nonzero, values / jnp.where(nonzero, magnitude, 1).astype(values.dtype), 0)


def det(a):
    """The determinant of each square matrix in ``a`` (by LU)."""
    a = square(a, "_det()")
    packed, pivots, _ = solvers.factor(a)
    return solvers.pivot_sign(pivots, a.dtype) * jnp.prod(lax_linalg.diagonal(packed), axis=-1)


def matrix_power(a, n: int):
    """``a`` raised to the integer power ``n`` by repeated squaring (negative: of the inverse)."""
    (a,) = floats("matrix_power", a)
    if a.ndim < 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise TypeError("Last 2 dimensions of the array must be square")
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


def _squares(x):
    """``|x|^2`` entrywise: ``x * x`` of a real ``x``, ``re^2 + im^2`` of a complex one."""
    if jnp.iscomplexobj(x):
        return jnp.real(x) * jnp.real(x) + jnp.imag(x) * jnp.imag(x)
    return x * x


def _vector_norm(x, ord, axis, keepdims):
    magnitude = jnp.abs(x)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(_squares(x), axis=axis, keepdims=keepdims))
    if ord == math.inf:
        return jnp.max(magnitude, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return jnp.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum((x != 0).astype(magnitude.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(magnitude, axis=axis, keepdims=keepdims)
    return jnp.sum(magnitude ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _singular_value_norm(x, ord, axis, keepdims):
    values = svd(jnp.moveaxis(x, axis, (-2, -1)), compute_uv=False)
    if ord == 2:
        result = jnp.max(values, axis=-1, initial=0.0)
    elif ord == -2:
        result = jnp.min(values, axis=-1)
    else:
        result = jnp.sum(values, axis=-1)
    return jnp.expand_dims(result, axis) if keepdims else result


def _matrix_norm(x, ord, axis, keepdims):
    rows, columns = axis
    magnitude = jnp.abs(x)
    if ord in (None, "fro", "f"):
        return jnp.sqrt(jnp.sum(_squares(x), axis=axis, keepdims=keepdims))
    if ord in (2, -2, "nuc"):
        return _singular_value_norm(x, ord, axis, keepdims)
    if ord not in (1, -1, math.inf, -math.inf):
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    summed, reduced = (rows, columns) if ord in (1, -1) else (columns, rows)
    sums = jnp.sum(magnitude, axis=summed, keepdims=True)
    pick = jnp.max if ord > 0 else jnp.min
    result = pick(sums, axis=reduced, keepdims=True)
    return result if keepdims else jnp.squeeze(result, axis=axis)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norms (``ord`` None, inf, -inf, 0 or any p) over one axis, matrix norms (None,
    'fro', 1, -1, inf, -inf, 2, -2, 'nuc') over two."""
    (x,) = floats("norm", x)
    if axis is None:
        if ord is None:
            return jnp.sqrt(jnp.sum(_squares(x), keepdims=keepdims))
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={axis!r}. Pass one axis to compute a vector-norm, "
                     "or two axes to compute a matrix-norm.")


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm ``ord`` of the last two dims."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def cond(x, p=None):
    """The condition number in norm ``p`` (default 2: the ratio of the extreme singular
    values); infinite for a singular matrix."""
    (x,) = floats("cond", x)
    if x.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={x.shape}")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={x.shape}")
    if p is None or p == 2:
        values = svdvals(x)
        return values[..., 0] / values[..., -1]
    if p == -2:
        values = svdvals(x)
        ratio = values[..., -1] / values[..., 0]
    else:
        if x.shape[-2] != x.shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got arr.shape={x.shape}")
        ratio = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # NOTE: a NaN from a singular matrix (not from NaN entries) is an infinite condition number
    singular = jnp.isnan(ratio) & ~jnp.any(jnp.isnan(x), axis=(-2, -1))
    return jnp.where(singular, math.inf, ratio)
