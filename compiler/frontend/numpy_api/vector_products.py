"""jax.numpy's ``matvec`` and ``vecmat`` (NumPy 2.2's batched matrix-vector products) and
``mask_indices``."""

from __future__ import annotations

from .. import numpy_api as jnp
from .arguments import as_array_argument

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``).
__all__ = ("mask_indices", "matvec", "vecmat")


def _arrays(function: str, *values):
    return [jnp.asarray(as_array_argument(value, function)) for value in values]


def _check_ranks(function: str, matrix, vector):
    if matrix.ndim < 2 or vector.ndim < 1:
        raise ValueError(f"{function}: needs a matrix of rank >= 2 and a vector of rank >= 1, "
                         f"got shapes {matrix.shape} and {vector.shape}")


def matvec(x1, x2, /):
    """The product of the matrices ``x1[..., m, n]`` and the vectors ``x2[..., n]``, batch
    dims broadcast: shape ``(..., m)``."""
    x1, x2 = _arrays("matvec", x1, x2)
    _check_ranks("matvec", x1, x2)
    return jnp.matmul(x1, x2[..., None])[..., 0]


def vecmat(x1, x2, /):
    """The product of the conjugated vectors ``x1[..., n]`` and the matrices ``x2[..., n, m]``,
    batch dims broadcast: shape ``(..., m)``."""
    x1, x2 = _arrays("vecmat", x1, x2)
    _check_ranks("vecmat", x2, x1)
    return jnp.matmul(jnp.conj(x1)[..., None, :], x2)[..., 0, :]


def mask_indices(n: int, mask_func, k: int = 0, *, size: int | None = None):
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (``triu``/``tril`` give
    the triangles' indices)."""
    return jnp.nonzero(mask_func(jnp.ones((n, n), dtype=bool), k), size=size)
