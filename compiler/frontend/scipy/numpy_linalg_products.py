"""jnp.linalg's products and reshaped solves: vector_norm, diagonal, trace, cross, multi_dot,
tensorinv and tensorsolve (the Array API's and numpy's names), over jnp ops and jnp.linalg's
inv and solve."""

from __future__ import annotations

import functools
import math

from .. import lax_linalg
from .. import numpy_api as jnp
from .special import floats


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm ``ord`` over ``axis`` (all dims, flattened, when None)."""
    from .numpy_linalg import norm

    (x,) = floats("vector_norm", x)
    if axis is None:
        result = norm(jnp.ravel(x), ord=ord)
        return jnp.reshape(result, (1,) * x.ndim) if keepdims else result
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def diagonal(x, /, *, offset: int = 0):
    """The ``offset`` diagonal of each matrix in the last two dims."""
    x = jnp.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions; got shape {x.shape}")
    part = x[..., :, offset:] if offset >= 0 else x[..., -offset:, :]
    return lax_linalg.diagonal(part)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of each matrix's ``offset`` diagonal."""
    return jnp.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along ``axis``."""
    x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                         f"x1.shape[axis]={x1.shape[axis]} and x2.shape[axis]={x2.shape[axis]}")
    a, b = jnp.moveaxis(x1, axis, -1), jnp.moveaxis(x2, axis, -1)
    parts = [a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
             a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]]
    return jnp.moveaxis(jnp.stack(parts, axis=-1), -1, axis)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first and last may be vectors), left to right."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrays)}")
    return functools.reduce(jnp.matmul, arrays)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` as a linear map from its first ``ind`` dims to the rest."""
    from .numpy_linalg import inv

    a = jnp.asarray(a)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    rows, columns = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
    if rows != columns:
        raise ValueError("tensorinv is only possible when the product of the first `ind` dimensions equals that of "
                         f"the remaining dimensions. got a.shape={a.shape}, ind={ind}.")
    return jnp.reshape(inv(jnp.reshape(a, (rows, columns))), a.shape[ind:] + a.shape[:ind])


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) = b``."""
    from .numpy_linalg import solve

    a, b = jnp.asarray(a), jnp.asarray(b)
    if axes is not None:
        a = jnp.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    solution_shape = a.shape[b.ndim:]
    if a.shape[:b.ndim] != b.shape or math.prod(solution_shape) != b.size:
        raise ValueError(f"tensorsolve: a {a.shape} does not map a tensor onto b {b.shape}")
    return jnp.reshape(solve(jnp.reshape(a, (b.size, b.size)), jnp.ravel(b)), solution_shape)
