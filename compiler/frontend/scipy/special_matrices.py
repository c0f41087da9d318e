"""jax.scipy.linalg's special matrices: toeplitz, hankel, circulant (batched over leading
dims), convolution_matrix, companion, fiedler, fiedler_companion, leslie, block_diag,
hadamard, hilbert, helmert, dft, pascal, invpascal, invhilbert. The structured ones gather
from their defining vector with static index tables, so they trace and differentiate as
meshjit.numpy does."""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import numpy_api as jnp
from ..numpy_api.arguments import as_array_argument
from ..numpy_api.stacking import atleast_1d
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.linalg``).
__all__ = ("block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion",
           "hadamard", "hankel", "helmert", "hilbert", "invhilbert", "invpascal", "leslie", "pascal", "toeplitz")


def _vector(value, function: str):
    return atleast_1d(jnp.asarray(as_array_argument(value, function)))


def _gather(values, index: np.ndarray):
    """``values[..., index]`` for a static integer table ``index``."""
    return jnp.take(values, jnp.asarray(index.astype(np.int32)), axis=-1)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` ignored;
    ``conj(c)`` when omitted, so a complex ``c`` alone gives a Hermitian matrix)."""
    c = _vector(c, "toeplitz")
    r = jnp.conj(c) if r is None else _vector(r, "toeplitz")
    dtype = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    values = jnp.concatenate([jnp.broadcast_to(jnp.flip(r[..., 1:], -1), (*batch, n - 1)).astype(dtype),
                              jnp.broadcast_to(c, (*batch, m)).astype(dtype)], axis=-1)
    return _gather(values, n - 1 + np.arange(m)[:, None] - np.arange(n)[None, :])


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (``r[0]`` ignored; zeros
    when omitted)."""
    c = _vector(c, "hankel")
    r = jnp.zeros_like(c) if r is None else _vector(r, "hankel")
    dtype = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    values = jnp.concatenate([jnp.broadcast_to(c, (*batch, m)).astype(dtype),
                              jnp.broadcast_to(r[..., 1:], (*batch, n - 1)).astype(dtype)], axis=-1)
    return _gather(values, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
    """The circulant matrix whose first column is ``c``."""
    c = _vector(c, "circulant")
    n = c.shape[-1]
    return _gather(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length ``n``."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    a = jnp.asarray(as_array_argument(a, "convolution_matrix"))
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    trim = min(n, m) - 1
    begin, end = {"full": (0, 0), "valid": (trim, trim), "same": (trim // 2, trim - trim // 2)}[mode]
    length = m + n - 1
    widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    column = jnp.pad(a, widths)[..., begin:length - end]
    row = jnp.pad(jnp.flip(a, -1), widths)[..., length - n - begin:length - begin]
    return toeplitz(column, row)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest power first)."""
    (a,) = floats("companion", a)
    a = atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {a.shape}.")
    n = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    shift = jnp.broadcast_to(jnp.eye(n - 1, n, dtype=a.dtype), (*a.shape[:-1], n - 1, n))
    return jnp.concatenate([first[..., None, :], shift], axis=-2)


def fiedler(a):
    """The symmetric matrix ``|a[i] - a[j]|``."""
    a = _vector(a, "fiedler")
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial ``a`` (highest power first)."""
    (a,) = floats("fiedler_companion", a)
    a = atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, "
                         f"but got an array of shape {a.shape}.")
    c = a[..., 1:] / a[..., :1]
    n = c.shape[-1]
    result = jnp.zeros((*a.shape[:-1], n, n), a.dtype).at[..., 0, 0].set(-c[..., 0])
    if n > 1:
        result = result.at[..., 0, 1].set(-c[..., 1]).at[..., 1, 0].set(1)
    for k in range(2, n, 2):
        result = result.at[..., k, k - 1].set(-c[..., k]).at[..., k - 2, k].set(1)
        if k + 1 < n:
            result = result.at[..., k, k + 1].set(-c[..., k + 1]).at[..., k + 1, k - 1].set(1)
    return result


def leslie(f, s):
    """The Leslie matrix of fecundities ``f`` (first row) and survival rates ``s``
    (subdiagonal)."""
    f, s = _vector(f, "leslie"), _vector(s, "leslie")
    if f.shape[-1] != s.shape[-1] + 1:
        raise ValueError(f"Incorrect lengths for f and s. The length of s along the last axis must be one less "
                         f"than the length of f. Got f.shape={f.shape}, s.shape={s.shape}.")
    n = f.shape[-1]
    dtype = jnp.result_type(f, s)
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    below = jnp.broadcast_to(s, (*batch, n - 1))[..., :, None] * jnp.eye(n - 1, n, dtype=dtype)
    return jnp.concatenate([jnp.broadcast_to(f, (*batch, n))[..., None, :].astype(dtype), below.astype(dtype)], -2)


def block_diag(*arrs):
    """The block-diagonal matrix of the (at most 2-d) arrays ``arrs``."""
    if not arrs:
        return jnp.zeros((1, 0))
    blocks = [jnp.asarray(as_array_argument(arr, "block_diag")) for arr in arrs]
    if any(block.ndim > 2 for block in blocks):
        raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions")
    blocks = [block.reshape((1, -1)) if block.ndim < 2 else block for block in blocks]
    dtype = jnp.result_type(*blocks)
    columns = sum(block.shape[1] for block in blocks)
    rows, start = [], 0
    for block in blocks:
        rows.append(jnp.pad(block.astype(dtype), ((0, 0), (start, columns - start - block.shape[1]))))
        start += block.shape[1]
    return jnp.concatenate(rows, axis=0)


def hadamard(n: int, dtype=int):
    """Sylvester's Hadamard matrix of order ``n`` (a power of 2)."""
    n = operator.index(n)
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    table = np.ones((1, 1), np.int64)
    while table.shape[0] < n:
        table = np.block([[table, table], [table, -table]])
    return jnp.asarray(table, dtype=dtype)


def hilbert(n: int):
    """The Hilbert matrix ``1 / (i + j + 1)``."""
    index = jnp.arange(n, dtype=float)[:, None]
    return 1 / (index + index.T + 1)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of order ``n`` (without its first row unless ``full``)."""
    i, j = jnp.arange(n - 1)[:, None], jnp.arange(n)[None, :]
    k = (i + 1).astype(float)
    denominator = jnp.sqrt(k * (k + 1))
    result = jnp.where(j <= i, 1.0 / denominator, jnp.where(j == i + 1, -k / denominator, jnp.zeros_like(denominator)))
    if full:
        result = jnp.concatenate([jnp.full((1, n), 1.0 / jnp.sqrt(n), dtype=result.dtype), result], axis=0)
    return result


def dft(n: int, scale: str | None = None, dtype=None):
    """The discrete Fourier transform matrix ``exp(-2j pi jk / n)``, divided by ``sqrt(n)`` or
    ``n`` for ``scale`` "sqrtn" or "n"."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    dtype = complex if dtype is None else dtype
    if not np.issubdtype(np.dtype(dtype), np.complexfloating):
        raise ValueError(f"dtype must be a complex floating-point type; got {np.dtype(dtype)}.")
    index = jnp.arange(n).astype(dtype)
    result = jnp.exp(-2j * np.pi * index[:, None] * index[None, :] / n)
    if scale == "sqrtn":
        return result / jnp.sqrt(n)
    return result / n if scale == "n" else result


def _kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of: ['symmetric', 'lower', 'upper']; got {kind}")
    return kind


def _binomials(n: int, alternating: bool):
    """The lower triangle of binomial coefficients ``C(i, j)`` (signed ``(-1)^(i-j)``)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    table = np.array([[math.comb(int(a), int(b)) for b in range(n)] for a in range(n)], dtype=np.float64)
    return jnp.asarray(np.where(alternating & ((i - j) % 2 == 1), -table, table), dtype=float)


def _triangle_product(lower, kind: str, inverse: bool):
    if kind == "lower":
        return lower
    if kind == "upper":
        return lower.T
    return jnp.dot(lower.T, lower) if inverse else jnp.dot(lower, lower.T)


def pascal(n: int, kind=None):
    """The Pascal matrix: binomial coefficients, symmetric or its lower/upper Cholesky factor."""
    return _triangle_product(_binomials(n, False), _kind(kind), False)


def invpascal(n: int, kind=None):
    """The inverse of ``pascal(n, kind)``."""
    return _triangle_product(_binomials(n, True), _kind(kind), True)


def invhilbert(n: int):
    """The inverse of the Hilbert matrix of order ``n``, from its closed form."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    s = i + j
    table = np.array([[(-1.0) ** (a + b) * (a + b + 1) * math.comb(n + a, n - b - 1) * math.comb(n + b, n - a - 1)
                       * math.comb(a + b, a) ** 2 for b in range(n)] for a in range(n)])
    del s
    return jnp.asarray(table, dtype=float)
