"""jax.scipy.stats' summaries of samples, ``mode`` and ``sem``, and the Poisson entropy
(``poisson.entropy``: the sum of -p log p over the support for mu < 100, the asymptotic
series ``log(2 pi e mu) / 2 - 1 / (12 mu)`` above, as JAX computes it)."""

from __future__ import annotations

import math

import numpy as np

from .. import numpy_api as jnp
from ..numpy_api.arguments import as_array_argument
from ..numpy_api.stacking import atleast_1d
from ..numpy_api.statistics import nanstd
from .special import floats, gammaln, xlogy

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.stats``).
__all__ = ("mode", "sem")


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """``(mode, count)``: the most frequent value along ``axis`` (the smallest among ties) and
    how often it occurs; ``axis=None`` flattens."""
    if nan_policy != "propagate":
        raise ValueError(f"mode: nan_policy must be 'propagate' (as JAX's), got {nan_policy!r}")
    a = jnp.asarray(as_array_argument(a, "mode"))
    if axis is None:
        a, axis = a.reshape(-1), 0
    a = jnp.moveaxis(atleast_1d(a), axis, -1)
    counts = jnp.sum(a[..., :, None] == a[..., None, :], axis=-1)
    most = jnp.max(counts, axis=-1, keepdims=True)
    value = jnp.min(jnp.where(counts == most, a, jnp.max(a, axis=-1, keepdims=True)), axis=-1)
    most = most[..., 0]
    if keepdims:
        value, most = jnp.expand_dims(value, axis), jnp.expand_dims(most, axis)
    return value, most


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean along ``axis``: ``std(a, ddof) / sqrt(n)``
    (``nan_policy="omit"`` leaves NaNs out of both)."""
    (a,) = floats("sem", a)
    if nan_policy == "propagate":
        size = a.size if axis is None else a.shape[axis]
        return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(a.dtype)
    if nan_policy == "omit":
        count = jnp.sum(~jnp.isnan(a), axis=axis, keepdims=keepdims)
        return nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count).astype(a.dtype)
    raise ValueError(f"{nan_policy!r} is not a valid nan_policy for sem; use 'propagate' or 'omit'")


def _entropy_by_sum(mu, terms: int, upper):
    k = jnp.arange(terms, dtype=mu.dtype)[:, None]
    probabilities = jnp.exp(xlogy(k, mu) - gammaln(k + 1.0) - mu)
    probabilities = jnp.where(k < upper[None, :], probabilities, 0.0)
    plogp = jnp.where(probabilities > 0, -probabilities * jnp.log(jnp.where(probabilities > 0, probabilities, 1.0)),
                      0.0)
    return jnp.sum(plogp, axis=0)


def poisson_entropy(mu, loc=0):
    """The entropy of the Poisson distribution of mean ``mu`` (``loc`` only shifts it)."""
    mu, loc = floats("poisson.entropy", mu, loc)
    shape = np.broadcast_shapes(mu.shape, loc.shape)
    flat = mu.reshape(-1)
    small = _entropy_by_sum(flat, 35, jnp.ceil(flat + 20))
    medium = _entropy_by_sum(flat, 250, jnp.ceil(flat + 10 * jnp.sqrt(flat) + 20))
    safe = jnp.where(flat == 0, 1.0, flat)
    large = 0.5 * jnp.log(2 * math.pi * math.e * safe) - 1.0 / (12 * safe)
    result = jnp.where(flat == 0, 0.0, jnp.where(flat < 10, small, jnp.where(flat < 100, medium, large)))
    return jnp.broadcast_to(result.reshape(mu.shape), shape)


FUNCTIONS = {"poisson": {"entropy": poisson_entropy}}
