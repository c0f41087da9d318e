"""jax.numpy's order statistics: ``quantile``/``percentile``/``median`` and their NaN-ignoring
forms. The reduced axes move last and are sorted (NaN sorts last); each quantile is the
interpolation of the two order statistics around position ``q * (n - 1)``, gathered with
``take_along_axis``. A sharded reduced axis is gathered by the sort; batch axes stay sharded."""

from __future__ import annotations

import numpy as np

from .. import numpy_api as jnp
from .arguments import as_array_argument, is_inexact_dtype, normalize_axes
from .reductions import divide_as_compiled

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "percentile",
    "quantile",
)

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _inexact_array(value, function: str):
    value = jnp.asarray(as_array_argument(value, function))
    if not is_inexact_dtype(value.dtype):
        value = value.astype(jnp.result_type(value.dtype, jnp.float32) if value.dtype != np.bool_ else jnp.float32)
    return value


def _reduced_last(a, axis, function: str):
    """``a`` with the reduced axes merged into one last axis, and the reduced axes."""
    axes = tuple(range(a.ndim)) if axis is None else normalize_axes(axis, a.ndim, function)
    kept = [dim for dim in range(a.ndim) if dim not in axes]
    moved = jnp.transpose(a, kept + list(axes))
    return jnp.reshape(moved, tuple(a.shape[dim] for dim in kept) + (-1,)), axes


def _order_statistics(values, positions, count, method: str):
    """The quantiles at fractional ``positions`` of each sorted row of ``values``."""
    low = jnp.floor(positions)
    high = jnp.ceil(positions)
    high_weight = positions - low
    last = jnp.maximum(count - 1, 0)
    low_index = jnp.clip(low, 0, last).astype(jnp.int32)
    high_index = jnp.clip(high, 0, last).astype(jnp.int32)
    low_value = jnp.take_along_axis(values, low_index, axis=-1)
    high_value = jnp.take_along_axis(values, high_index, axis=-1)
    if method == "linear":
        return low_value * (1 - high_weight) + high_value * high_weight
    if method == "lower":
        return low_value
    if method == "higher":
        return high_value
    if method == "nearest":
        return jnp.where(high_weight <= 0.5, low_value, high_value)
    return (low_value + high_value) * 0.5


def _quantile(function: str, a, q, axis, method: str, keepdims: bool, ignore_nan: bool):
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'")
    a = _inexact_array(a, function)
    q = jnp.asarray(as_array_argument(q, function))
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    q = q.astype(a.dtype)
    rank = a.ndim
    rows, axes = _reduced_last(a, axis, function)
    nan_mask = jnp.isnan(rows)
    if not ignore_nan:
        rows = jnp.where(jnp.any(nan_mask, axis=-1, keepdims=True), np.nan, rows)
    ordered = jnp.sort(rows, axis=-1)
    if ignore_nan:
        count = jnp.sum(jnp.logical_not(nan_mask), axis=-1, keepdims=True).astype(a.dtype)
    else:
        count = jnp.full(rows.shape[:-1] + (1,), rows.shape[-1], dtype=a.dtype)
    positions = jnp.reshape(q, (1,) * (rows.ndim - 1) + (-1,)) * (count - 1)
    result = _order_statistics(ordered, positions, count, method)
    result = jnp.moveaxis(result, -1, 0) if q.ndim else result[..., 0]
    if keepdims:
        shape = list(result.shape[: q.ndim])
        kept = iter(result.shape[q.ndim:])
        shape += [1 if dim in axes else next(kept) for dim in range(rank)]
        result = jnp.reshape(result, tuple(shape))
    return result


def _check_unused(function: str, out, overwrite_input) -> None:
    if out is not None:
        raise ValueError(f"{function}: the 'out' argument is not supported (JAX arrays are immutable)")
    if overwrite_input:
        raise ValueError(f"{function}: overwrite_input=True is not supported (JAX arrays are immutable)")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
    """The ``q``-th quantiles (q in [0, 1]) of ``a`` over ``axis``; NaN where a row holds NaN."""
    _check_unused("quantile", out, overwrite_input)
    if weights is not None:
        from .weighted_quantiles import weighted_quantile

        return weighted_quantile("quantile", a, q, axis, method, keepdims, weights, ignore_nan=False)
    return _quantile("quantile", a, q, axis, method, keepdims, ignore_nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights=None):
    """``quantile`` ignoring NaN (NaN only where a row is all NaN)."""
    _check_unused("nanquantile", out, overwrite_input)
    if weights is not None:
        from .weighted_quantiles import weighted_quantile

        return weighted_quantile("nanquantile", a, q, axis, method, keepdims, weights, ignore_nan=True)
    return _quantile("nanquantile", a, q, axis, method, keepdims, ignore_nan=True)


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights=None):
    """``quantile`` with ``q`` in percent."""
    q = jnp.asarray(as_array_argument(q, "percentile"))
    q = divide_as_compiled(q.astype(jnp.result_type(q.dtype, jnp.float32)), 100.0)
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights=None):
    """``nanquantile`` with ``q`` in percent."""
    q = jnp.asarray(as_array_argument(q, "nanpercentile"))
    q = divide_as_compiled(q.astype(jnp.result_type(q.dtype, jnp.float32)), 100.0)
    return nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median (mean of the two middle values for even counts) over ``axis``."""
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """``median`` ignoring NaN."""
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)
