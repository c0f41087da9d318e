"""jax.random's gamma family (gamma, loggamma, beta, dirichlet, chisquare, f, t) with JAX's
parameter checks and broadcasting; the samplers are compiler/frontend/random/gamma_family.py."""

from __future__ import annotations

from meshjit.compiler.frontend import random as _random

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


__all__ = ["beta", "chisquare", "dirichlet", "f", "gamma", "loggamma", "t"]
