"""Weighted quantiles (``quantile(..., weights=w, method="inverted_cdf")`` and the nan and
percentile forms): the smallest sorted value whose cumulative weight reaches ``q`` of the
total, as numpy defines it; NaNs weigh nothing in the nan forms (NaN where a row holds one
otherwise)."""

from __future__ import annotations

from .. import numpy_api as jnp
from .arguments import as_array_argument


def weighted_quantile(function: str, a, q, axis, method: str, keepdims: bool, weights, ignore_nan: bool):
    """``function``'s weighted quantiles of ``a`` over the int ``axis`` (or all of ``a``)."""
    from .quantiles import _inexact_array, _reduced_last

    if method != "inverted_cdf":
        raise ValueError(f"{function}: weights are supported only by method='inverted_cdf', got {method!r}")
    a = _inexact_array(a, function)
    weights = jnp.asarray(as_array_argument(weights, function))
    if weights.shape != a.shape:
        if weights.ndim != 1 or not isinstance(axis, int):
            raise ValueError(f"{function}: weights must have a's shape {a.shape}, or be 1-d along an int axis; "
                             f"got shape {weights.shape}")
        shape = [1] * a.ndim
        shape[axis] = -1
        weights = jnp.broadcast_to(weights.reshape(shape), a.shape)
    values, axes = _reduced_last(a, axis, function)
    weights, _ = _reduced_last(weights.astype(a.dtype), axis, function)
    missing = jnp.isnan(values)
    if ignore_nan:
        weights = jnp.where(missing, 0, weights)
    order = jnp.argsort(values, axis=-1)
    values, weights = jnp.take_along_axis(values, order, -1), jnp.take_along_axis(weights, order, -1)
    cumulative = jnp.cumsum(weights, axis=-1)
    q = jnp.asarray(as_array_argument(q, function)).astype(a.dtype)
    targets = q.reshape(q.shape + (1,) * values.ndim) * cumulative[..., -1:]
    index = jnp.minimum(jnp.sum(cumulative < targets, axis=-1), values.shape[-1] - 1)
    result = jnp.take_along_axis(jnp.broadcast_to(values, q.shape + values.shape), index[..., None], -1)[..., 0]
    if not ignore_nan:
        result = jnp.where(jnp.any(missing, axis=-1), float("nan"), result)
    if keepdims:
        for dim in sorted(axes):
            result = jnp.expand_dims(result, q.ndim + dim)
    return result
