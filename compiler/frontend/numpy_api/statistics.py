"""jax.numpy's statistics over axes: the NaN-ignoring reductions (``nansum`` ... ``nanvar``,
``nanargmax``, ``nancumsum``), ``average`` with weights, ``ptp``, ``cov`` and ``corrcoef``.

Each is built from the ordinary reductions (a NaN is first replaced by the reduction's identity),
so they shard, differentiate and type-promote as those do."""

from __future__ import annotations

import numpy as np

from .. import numpy_api as jnp
from .arguments import as_array_argument, is_inexact_dtype, normalize_axes
from .diagonals import diagonal
from .stacking import atleast_2d

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "average",
    "corrcoef",
    "cov",
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "ptp",
)


def _array(value, function: str):
    return jnp.asarray(as_array_argument(value, function))


def _inexact(value):
    if is_inexact_dtype(value.dtype):
        return value
    return value.astype(jnp.float32 if value.dtype == np.bool_ else jnp.result_type(value.dtype, jnp.float32))


def _is_float(value) -> bool:
    return is_inexact_dtype(value.dtype)


def _filled(function: str, a, fill):
    a = _array(a, function)
    return jnp.where(jnp.isnan(a), fill, a) if _is_float(a) else a


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``sum`` treating NaN as 0."""
    _no_out("nansum", out)
    return jnp.sum(_filled("nansum", a, 0), axis, dtype, keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``prod`` treating NaN as 1."""
    _no_out("nanprod", out)
    return jnp.prod(_filled("nanprod", a, 1), axis, dtype, keepdims, initial=initial, where=where)


def _nan_extremum(function: str, reduce, fill: float):
    def extremum(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
        _no_out(function, out)
        a = _array(a, function)
        if not _is_float(a):
            return reduce(a, axis, keepdims=keepdims, initial=initial, where=where)
        result = reduce(jnp.where(jnp.isnan(a), fill, a), axis, keepdims=keepdims, initial=initial, where=where)
        # as JAX: NaN only where the whole axis is NaN, whatever ``where`` selects
        all_nan = jnp.all(jnp.isnan(a), axis, keepdims=keepdims)
        return jnp.where(all_nan, np.nan, result)

    extremum.__name__ = function
    extremum.__doc__ = f"``{reduce.__name__}`` ignoring NaN (NaN where every element is NaN)."
    return extremum


nanmax = _nan_extremum("nanmax", jnp.max, -np.inf)
nanmin = _nan_extremum("nanmin", jnp.min, np.inf)


def _nan_arg_extremum(function: str, reduce, fill: float):
    def arg_extremum(a, axis=None, out=None, keepdims=None):
        _no_out(function, out)
        a = _array(a, function)
        if not _is_float(a):
            return reduce(a, axis, keepdims=keepdims)
        nan_mask = jnp.isnan(a)
        result = reduce(jnp.where(nan_mask, fill, a), axis, keepdims=keepdims)
        return jnp.where(jnp.all(nan_mask, axis, keepdims=bool(keepdims)), -1, result)

    arg_extremum.__name__ = function
    arg_extremum.__doc__ = f"``{reduce.__name__}`` ignoring NaN (-1 where every element is NaN)."
    return arg_extremum


nanargmax = _nan_arg_extremum("nanargmax", jnp.argmax, -np.inf)
nanargmin = _nan_arg_extremum("nanargmin", jnp.argmin, np.inf)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``cumsum`` treating NaN as 0."""
    _no_out("nancumsum", out)
    return jnp.cumsum(_filled("nancumsum", a, 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``cumprod`` treating NaN as 1."""
    _no_out("nancumprod", out)
    return jnp.cumprod(_filled("nancumprod", a, 1), axis, dtype)


def _valid_count(a, axis, keepdims: bool, where):
    return jnp.sum(jnp.logical_not(jnp.isnan(a)), axis, keepdims=keepdims, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, where=None):
    """``mean`` of the non-NaN elements (NaN where there are none)."""
    _no_out("nanmean", out)
    a = _array(a, "nanmean")
    if not _is_float(a):
        return jnp.mean(a, axis, dtype, keepdims, where=where)
    total = nansum(a, axis, dtype, keepdims=keepdims, where=where)
    return jnp.true_divide(total, _valid_count(a, axis, keepdims, where).astype(total.dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None):
    """``var`` of the non-NaN elements, divided by their count minus ``ddof``."""
    _no_out("nanvar", out)
    a = _array(a, "nanvar")
    if not _is_float(a):
        return jnp.var(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where)
    centred = a - nanmean(a, axis, dtype, keepdims=True, where=where)
    squares = jnp.where(jnp.isnan(a), 0, jnp.square(centred))
    total = jnp.sum(squares, axis, dtype, keepdims=keepdims, where=where)
    normalizer = _valid_count(a, axis, keepdims, where).astype(total.dtype) - ddof
    return jnp.where(normalizer <= 0, np.nan, jnp.true_divide(total, normalizer))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None):
    """The square root of ``nanvar``."""
    _no_out("nanstd", out)
    return jnp.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where))


def ptp(a, axis=None, out=None, keepdims: bool = False):
    """The range (maximum minus minimum) over ``axis``."""
    _no_out("ptp", out)
    a = _array(a, "ptp")
    return jnp.max(a, axis, keepdims=keepdims) - jnp.min(a, axis, keepdims=keepdims)


def _no_out(function: str, out) -> None:
    if out is not None:
        raise ValueError(f"{function}: the 'out' argument is not supported (JAX arrays are immutable)")


def _weights_along(weights, a, axis):
    """``weights`` shaped to broadcast against ``a`` (1-d weights lie along the one ``axis``)."""
    if weights.shape == a.shape:
        return weights
    if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
    axes = normalize_axes(axis, a.ndim, "average")
    if weights.ndim != len(axes) or weights.shape != tuple(a.shape[dim] for dim in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
    order = np.argsort(axes)
    shape = [1] * a.ndim
    for position in order:
        shape[axes[position]] = weights.shape[position]
    return jnp.reshape(jnp.transpose(weights, tuple(order)), tuple(shape))


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """The weighted mean over ``axis`` and, when ``returned``, the sum of the weights."""
    a = _inexact(_array(a, "average"))
    if weights is None:
        result = jnp.mean(a, axis, keepdims=keepdims)
        count = a.size if axis is None else int(np.prod([a.shape[d] for d in normalize_axes(axis, a.ndim, "average")]))
        scale = jnp.full(result.shape, count, dtype=result.dtype)
    else:
        weights = _array(weights, "average")
        dtype = jnp.result_type(a.dtype, weights.dtype)
        a = a.astype(dtype)
        weights = _weights_along(weights.astype(dtype), a, axis)
        scale = jnp.sum(jnp.broadcast_to(weights, a.shape), axis, keepdims=keepdims)
        result = jnp.true_divide(jnp.sum(a * weights, axis, keepdims=keepdims), scale)
    if returned:
        return result, jnp.broadcast_to(scale, result.shape)
    return result


def _integer_weights(fweights, width: int):
    fweights = _array(fweights, "cov")
    if fweights.ndim > 1:
        raise RuntimeError("cannot handle multidimensional fweights")
    if fweights.shape[0] != width:
        raise RuntimeError("incompatible numbers of samples and fweights")
    if not np.issubdtype(fweights.dtype, np.integer):
        raise TypeError("fweights must be integer.")
    return fweights


def _sample_weights(aweights, width: int):
    aweights = _array(aweights, "cov")
    if aweights.ndim > 1:
        raise RuntimeError("cannot handle multidimensional aweights")
    if aweights.shape[0] != width:
        raise RuntimeError("incompatible numbers of samples and aweights")
    return aweights


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``m``'s rows (columns unless ``rowvar``),
    optionally joined by ``y``'s, with frequency and observation weights."""
    if m is not None and np.ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    data = _inexact(atleast_2d(_array(m, "cov")))
    if not rowvar and data.shape[0] != 1:
        data = data.T
    if data.shape[0] == 0:
        return jnp.zeros((0, 0), dtype=data.dtype)
    if y is not None:
        other = _inexact(atleast_2d(_array(y, "cov")))
        if not rowvar and other.shape[0] != 1:
            other = other.T
        data = jnp.concatenate([data, other.astype(jnp.result_type(data.dtype, other.dtype))])
    ddof = (0 if bias else 1) if ddof is None else ddof
    width = data.shape[1]
    weights = None
    if fweights is not None:
        weights = _integer_weights(fweights, width).astype(data.dtype)
    if aweights is not None:
        sample = _sample_weights(aweights, width).astype(data.dtype)
        weights = sample if weights is None else weights * sample
    mean, weight_sum = average(data, axis=1, weights=weights, returned=True)
    weight_sum = weight_sum[0]
    if weights is None:
        factor = width - ddof
    elif ddof == 0:
        factor = weight_sum
    elif aweights is None:
        factor = weight_sum - ddof
    else:
        factor = weight_sum - ddof * jnp.sum(weights * sample) / weight_sum
    centred = data - mean[:, None]
    weighted = centred.T if weights is None else (centred * weights).T
    return jnp.squeeze(jnp.true_divide(jnp.dot(centred, weighted), factor))


def corrcoef(x, y=None, rowvar: bool = True):
    """The Pearson correlation coefficients: ``cov`` normalised by the standard deviations."""
    covariance = cov(x, y, rowvar)
    if covariance.ndim == 0:
        return jnp.true_divide(covariance, covariance)
    stddev = jnp.sqrt(diagonal(covariance))
    normalised = covariance / stddev[:, None] / stddev[None, :]
    return jnp.clip(normalised, -1, 1)
