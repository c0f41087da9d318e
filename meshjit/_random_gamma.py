"""jax.random's gamma family (gamma, loggamma, beta, dirichlet, chisquare, f, t), its count
samplers (poisson, binomial, multinomial) and multivariate_normal, with JAX's parameter checks
and broadcasting; the samplers are compiler/frontend/random/gamma_family.py and counts.py."""

from __future__ import annotations

import operator

import numpy as np

from meshjit.compiler.frontend import numpy_api as jnp
from meshjit.compiler.frontend import random as _random
from meshjit.compiler.frontend.numpy_api.arguments import dtype_argument
from meshjit.compiler.frontend.operands import x64
from meshjit.compiler.frontend.promotion import default_int

from ._prng_keys import key_argument
from ._random import _check_broadcast, _float_dtype, _sampler, _shape
from ._random_transformed import _check_safe_to_cast, _parameter, _parameter_shape, _result_shape

_gamma = _sampler(_random.gamma, (2, 3, 4, 5))


def _gamma_sample(function: str, key, a, shape, dtype, out_sharding, log_space: bool):
    data, _ = key_argument(function, key)
    name = _float_dtype(dtype, function)
    a = _parameter(a)
    if shape is None:
        shape = _parameter_shape(a)
    else:
        shape = _shape(shape, function)
        _check_broadcast(function, shape, _parameter_shape(a))
    return _gamma(data, a, shape, name, log_space, out_sharding)


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """Gamma(a) floats (density proportional to x^(a - 1) e^-x), bit for bit JAX's."""
    return _gamma_sample("gamma", key, a, shape, dtype, out_sharding, False)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """The logarithms of Gamma(a) floats, accurate for small ``a``."""
    return _gamma_sample("loggamma", key, a, shape, dtype, out_sharding, True)


_beta = _sampler(_random.beta, (3, 4, 5))


def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
    """Beta(a, b) floats."""
    data, _ = key_argument("beta", key)
    name = _float_dtype(dtype, "beta")
    a, b = _parameter(a), _parameter(b)
    _check_safe_to_cast("beta", name, a, b)
    return _beta(data, a, b, _result_shape("beta", shape, a, b), name, out_sharding)


_dirichlet = _sampler(_random.dirichlet, (2, 3, 4))


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
    """Dirichlet(alpha) floats of shape ``shape + alpha.shape[-1:]`` (``shape`` defaults to
    ``alpha.shape[:-1]``), each row summing to one."""
    data, _ = key_argument("dirichlet", key)
    name = _float_dtype(dtype, "dirichlet")
    alpha = _parameter(alpha)
    alpha_shape = _parameter_shape(alpha)
    if len(alpha_shape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(alpha_shape)}")
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        shape = _shape(shape, "dirichlet")
        _check_broadcast("dirichlet", shape, alpha_shape[:-1])
    return _dirichlet(data, alpha, tuple(shape), name, out_sharding)


def _one_parameter(function: str, sampler):
    jitted = _sampler(sampler, (2, 3, 4))

    def sample(key, df, shape=None, dtype=None, *, out_sharding=None):
        data, _ = key_argument(function, key)
        name = _float_dtype(dtype, function)
        df = _parameter(df)
        shape = _result_shape(function, shape, df)
        _check_safe_to_cast(function, name, df)
        return jitted(data, df, shape, name, out_sharding)

    sample.__name__ = sample.__qualname__ = function
    return sample


chisquare = _one_parameter("chisquare", _random.chisquare)
chisquare.__doc__ = "Chi-square floats with ``df`` degrees of freedom."
t = _one_parameter("t", _random.t)
t.__doc__ = "Student's t floats with ``df`` degrees of freedom."

_f = _sampler(_random.f, (3, 4, 5))


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
    """F-distributed floats with ``dfnum`` and ``dfden`` degrees of freedom."""
    data, _ = key_argument("f", key)
    name = _float_dtype(dtype, "f")
    dfnum, dfden = _parameter(dfnum), _parameter(dfden)
    shape = _result_shape("f", shape, dfnum, dfden)
    _check_safe_to_cast("f", name, dfnum, dfden)
    return _f(data, dfnum, dfden, shape, name, out_sharding)




# --- counts and multivariate normals --------------------------------------------------------------

_poisson = _sampler(_random.poisson, (2, 3, 4))


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
    """Poisson(lam) counts (int32, or int64 with x64, unless ``dtype`` says)."""
    data, _ = key_argument("poisson", key)
    name = default_int(x64()) if dtype is None else dtype_argument(dtype, "poisson")
    lam = _parameter(lam)
    if shape is None:
        shape = _parameter_shape(lam)
    else:
        shape = _shape(shape, "poisson")
        _check_broadcast("poisson", shape, _parameter_shape(lam))
    return _poisson(data, jnp.broadcast_to(jnp.asarray(lam, dtype=np.float32), shape), shape, name, out_sharding)


_binomial = _sampler(_random.binomial, (3, 4, 5))


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats."""
    data, _ = key_argument("binomial", key)
    name = _float_dtype(dtype, "binomial")
    n, p = _parameter(n), _parameter(p)
    shape = _result_shape("binomial", shape, n, p)
    prob = jnp.asarray(p)
    prob = prob if np.issubdtype(np.dtype(prob.dtype), np.floating) else prob.astype(name)
    count = jnp.broadcast_to(jnp.asarray(n).astype(prob.dtype), shape)
    return _binomial(data, count, jnp.broadcast_to(prob, shape), shape, name, None)


_multinomial = _sampler(_random.multinomial, (3, 4, 5))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts as floats, the categories along the last axis."""
    del unroll
    data, _ = key_argument("multinomial", key)
    name = _float_dtype(dtype, "multinomial")
    n, p = jnp.asarray(n), jnp.asarray(p)
    kind = _inexact(n.dtype, p.dtype, name)
    shape = tuple(p.shape) if shape is None else _shape(shape, "multinomial")
    n = jnp.broadcast_to(n.astype(kind), shape[:-1])
    p = jnp.broadcast_to(p.astype(kind), shape)
    return _multinomial(data, n, p, shape, name, None)


def _inexact(first, second, default: str):
    """The float dtype JAX's promote_dtypes_inexact gives two arrays' dtypes (no x64 widening)."""
    floats = [np.dtype(dtype) for dtype in (first, second) if np.issubdtype(np.dtype(dtype), np.floating)]
    if not floats:
        return default
    return max(floats, key=lambda dtype: dtype.itemsize)


_multivariate_normal = _sampler(_random.multivariate_normal, (3, 4, 5, 6))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky", *, out_sharding=None):
    """Normal vectors with mean ``mean`` (..., n) and covariance ``cov`` (..., n, n)."""
    data, _ = key_argument("multivariate_normal", key)
    name = _float_dtype(dtype, "multivariate_normal")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = _parameter(mean), _parameter(cov)
    mean_shape, cov_shape = _parameter_shape(mean), _parameter_shape(cov)
    if len(mean_shape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(mean_shape)}")
    if len(cov_shape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cov_shape)}")
    size = mean_shape[-1]
    if cov_shape[-2:] != (size, size):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={size}, but got "
                         f"cov.shape == {cov_shape}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean_shape[:-1], cov_shape[:-2]))
    else:
        shape = _shape(shape, "normal")
        _check_broadcast("normal", shape, mean_shape[:-1], cov_shape[:-2])
    return _multivariate_normal(data, mean, cov, shape, name, method, out_sharding)


_orthogonal = _sampler(_random.orthogonal, (1, 2, 3, 4, 5))


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
    """Matrices of shape ``shape + (n, m)`` (m = n by default) uniform on the orthogonal group:
    orthonormal columns, or rows when n < m."""
    data, _ = key_argument("orthogonal", key)
    name = _float_dtype(dtype, "orthogonal")
    shape = _shape(shape, "orthogonal")
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    return _orthogonal(data, n, m, shape, name, out_sharding)
