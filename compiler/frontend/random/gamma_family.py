"""The samplers built on gamma draws, in JAX's order of key splits and operations: gamma and
loggamma (``gamma.py``), beta (two loggammas, scaled by their max before exp), dirichlet (the
softmax of loggammas), chisquare (twice a gamma of df/2, drawn in log space), f (a ratio of two
chisquares) and t (a normal over the root of a gamma)."""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..autodiff import CustomJVPRule, call_with_custom_rule, stop_gradient
from ..operands import as_operand, dtype_of, shape_of
from . import xla_float32
from .bits import split
from .continuous import normal
from .gamma import gamma as _gamma_flat


def _keys(key, count: int):
    keys = split(key, (count,))
    return [lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)) for index in range(count)]


def _exp(x):
    return xla_float32.exp(x) if dtype_of(x).name == "f32" else xla_float32.exp_f64(x)


def _full(like, value):
    dtype = dtype_of(like).name
    return lax.full(shape_of(like), np.asarray(value, to_numpy(dtype)), dtype)


def _broadcast(value, shape, dtype: str):
    """``value`` as ``dtype``, broadcast to ``shape`` (numpy's rule; shapes checked by the facade)."""
    value = lax.convert_element_type(as_operand(value, dtype), dtype)
    given = shape_of(value)
    if given == tuple(shape):
        return value
    padded = (1,) * (len(shape) - len(given)) + tuple(given)
    kept = tuple(dim for dim, size in enumerate(padded) if size == shape[dim] and size != 1 or shape[dim] == 1)
    squeezed = lax.reshape(value, tuple(padded[dim] for dim in kept))
    return lax.broadcast_in_dim(squeezed, tuple(shape), kept)


def gamma(key, a, shape, dtype: str, log_space: bool = False):
    """Gamma(a) samples of ``shape`` (their logs with ``log_space``), differentiable in ``a`` by
    implicit reparameterisation, as JAX's."""
    shape = tuple(shape)
    a = _broadcast(a, shape, dtype)

    def sample(key, a):
        return [lax.reshape(_gamma_flat(key, lax.reshape(a, (math.prod(shape),)), log_space), shape)]

    def jvp(primals, tangents):
        key, a = primals
        (out,) = sample(key, a)
        if tangents[1] is None:
            return [out], [None]
        return [out], [lax.mul(tangents[1], _sample_slope(out, a, log_space))]

    return call_with_custom_rule("random_gamma", sample, [key, a], CustomJVPRule(jvp))[0]


def _sample_slope(out, a, log_space: bool):
    """d sample / d a with the uniform draw held fixed: -(dP/da) / (dP/dx) at the sample x,
    P(a, x) the gamma distribution function (dP/da by forward mode through gammainc's loops);
    of log(sample) with ``log_space``."""
    from ..autodiff import jvp as forward
    from ..scipy.special_incomplete import gammainc
    from ..scipy.special import _gammaln

    dtype = dtype_of(a).name
    x = _exp(out) if log_space else out
    x = lax.max(x, _full(x, np.finfo(to_numpy(dtype)).tiny))
    _, (slope_a,) = forward(lambda shape_parameter: [gammainc(shape_parameter, x)], [a], [_full(a, 1.0)])
    log_density = lax.sub(lax.sub(lax.mul(lax.sub(a, _full(a, 1.0)), lax.log(x)), x), _gammaln(a))
    slope = lax.neg(lax.div(slope_a, lax.exp(log_density)))
    return lax.div(slope, x) if log_space else slope


def loggamma(key, a, shape, dtype: str):
    """log Gamma(a) samples, accurate for small ``a``."""
    return gamma(key, a, shape, dtype, log_space=True)


def beta(key, a, b, shape, dtype: str):
    """Beta(a, b) samples: G_a / (G_a + G_b) from two loggammas scaled by their max."""
    shape = tuple(shape)
    key_a, key_b = _keys(key, 2)
    log_a = loggamma(key_a, _broadcast(a, shape, dtype), shape, dtype)
    log_b = loggamma(key_b, _broadcast(b, shape, dtype), shape, dtype)
    log_max = lax.max(log_a, log_b)
    scaled_a = _exp(lax.sub(log_a, log_max))
    scaled_b = _exp(lax.sub(log_b, log_max))
    return lax.div(scaled_a, lax.add(scaled_a, scaled_b))


def dirichlet(key, alpha, shape, dtype: str):
    """Dirichlet(alpha) samples of ``shape + alpha.shape[-1:]``: the softmax of loggammas."""
    alpha = lax.convert_element_type(as_operand(alpha, dtype), dtype)
    full_shape = tuple(shape) + shape_of(alpha)[-1:]
    log_samples = loggamma(key, alpha, full_shape, dtype)
    last = len(full_shape) - 1
    peak = stop_gradient(lax.reduce_max(log_samples, (last,)))
    unnormalized = _exp(lax.sub(log_samples, lax.broadcast_in_dim(peak, full_shape, tuple(range(last)))))
    total = lax.reduce_sum(unnormalized, (last,))
    # NOTE: XLA's simplifier divides by a broadcast value as a multiplication by its reciprocal
    reciprocal = lax.div(_full(total, 1.0), total)
    return lax.mul(unnormalized, lax.broadcast_in_dim(reciprocal, full_shape, tuple(range(last))))


def chisquare(key, df, shape, dtype: str):
    """Chi-square(df) samples: 2 exp(loggamma(df / 2))."""
    shape = tuple(shape)
    half = lax.div(_broadcast(df, shape, dtype), _full_shape(shape, 2.0, dtype))
    return lax.mul(_exp(loggamma(key, half, shape, dtype)), _full_shape(shape, 2.0, dtype))


def _full_shape(shape, value, dtype: str):
    return lax.full(tuple(shape), np.asarray(value, to_numpy(dtype)), dtype)


def f(key, dfnum, dfden, shape, dtype: str):
    """F(dfnum, dfden) samples: (chi2_num / dfnum) / (chi2_den / dfden), as XLA rewrites it."""
    shape = tuple(shape)
    key_den, key_num = _keys(key, 2)
    dfnum, dfden = _broadcast(dfnum, shape, dtype), _broadcast(dfden, shape, dtype)
    # NOTE: XLA's simplifier turns (a / b) / (c / d) into (a d) / (b c)
    num = chisquare(key_num, dfnum, shape, dtype)
    den = chisquare(key_den, dfden, shape, dtype)
    return lax.div(lax.mul(num, dfden), lax.mul(dfnum, den))


def t(key, df, shape, dtype: str):
    """Student's t(df) samples: n sqrt((df / 2) / g) for n normal and g Gamma(df / 2)."""
    shape = tuple(shape)
    key_n, key_g = _keys(key, 2)
    n = normal(key_n, shape, dtype)
    half = lax.div(_broadcast(df, shape, dtype), _full_shape(shape, 2.0, dtype))
    g = gamma(key_g, half, shape, dtype)
    return lax.mul(n, lax.sqrt(lax.div(half, g)))


def multivariate_normal(key, mean, cov, shape, dtype: str, method: str):
    """Normal vectors ``mean + factor @ z`` for z standard normal of ``shape + mean.shape[-1:]``,
    the factor of ``cov`` by ``method`` (cholesky, eigh or svd, through jnp.linalg)."""
    from .. import numpy_api as jnp
    from ..scipy import numpy_linalg

    mean = lax.convert_element_type(as_operand(mean, dtype), dtype)
    cov = lax.convert_element_type(as_operand(cov, dtype), dtype)
    if method == "svd":
        u, s, _ = numpy_linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = numpy_linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = numpy_linalg.cholesky(cov)
    samples = normal(key, tuple(shape) + shape_of(mean)[-1:], dtype)
    return mean + jnp.einsum("...ij,...j->...i", factor, samples)


def orthogonal(key, n: int, m: int, shape, dtype: str):
    """Haar-random matrices of ``shape + (n, m)`` with orthonormal columns (rows when n < m): Q of
    a normal matrix's QR, its columns' signs those of R's diagonal (Mezzadri's correction)."""
    from .. import numpy_api as jnp
    from ..scipy import numpy_linalg

    z = normal(key, tuple(shape) + (max(n, m), min(n, m)), dtype)
    q, r = numpy_linalg.qr(z)
    signs = jnp.sign(numpy_linalg.diagonal(r))
    x = q * jnp.expand_dims(signs, -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x
