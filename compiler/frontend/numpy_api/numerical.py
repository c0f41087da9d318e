"""jax.numpy's numerical helpers on sampled data: finite differences (``gradient``,
``ediff1d``), ``trapezoid``, linear ``interp``, binning (``digitize``, ``bincount`` and the
histograms, scatter-adds into a static number of bins) and the products ``cross``, ``kron`` and
``vander``. All are compositions of existing ops, so they trace, shard and differentiate as
those do; a result whose size depends on values needs a static ``length``/``bins``."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..trace import ConcretizationTypeError, Tracer
from .arguments import as_array_argument, is_inexact_dtype, normalize_axis
from .diagonals import ravel_multi_index

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "bincount",
    "cross",
    "digitize",
    "ediff1d",
    "gradient",
    "histogram",
    "histogram2d",
    "histogram_bin_edges",
    "histogramdd",
    "interp",
    "kron",
    "trapezoid",
    "vander",
)


def _array(value, function: str):
    return jnp.asarray(as_array_argument(value, function))


def _inexact(*values):
    dtype = jnp.result_type(*[value.dtype for value in values])
    if not is_inexact_dtype(dtype):
        dtype = jnp.result_type(dtype, jnp.float32) if dtype != np.bool_ else np.dtype(np.float32)
    converted = [value.astype(dtype) for value in values]
    return converted if len(converted) > 1 else converted[0]


def _along(a, axis: int, start, stop):
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, stop)
    return a[tuple(index)]


def _gradient_along(a, spacing, axis: int):
    """Central differences inside, one-sided at the two ends (numpy's first-order edges)."""
    first = _along(a, axis, 1, 2) - _along(a, axis, 0, 1)
    last = _along(a, axis, -1, None) - _along(a, axis, -2, -1)
    if np.ndim(spacing) == 0:
        inner = (_along(a, axis, 2, None) - _along(a, axis, None, -2)) * 0.5 / spacing
        return jnp.concatenate([first / spacing, inner, last / spacing], axis=axis)
    if np.ndim(spacing) != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    if spacing.shape[0] != a.shape[axis]:
        raise ValueError("Spacing arrays must have the same length as the dimension along which the "
                         "gradient is calculated.")
    shape = [1] * a.ndim
    shape[axis] = spacing.shape[0]
    h = jnp.reshape(spacing, tuple(shape))
    before = _along(h, axis, 1, -1) - _along(h, axis, 0, -2)
    after = _along(h, axis, 2, None) - _along(h, axis, 1, -1)
    inner = (-after / (before * (before + after)) * _along(a, axis, 0, -2)
             + (after - before) / (before * after) * _along(a, axis, 1, -1)
             + before / (after * (before + after)) * _along(a, axis, 2, None))
    first = first / (_along(h, axis, 1, 2) - _along(h, axis, 0, 1))
    last = last / (_along(h, axis, -1, None) - _along(h, axis, -2, -1))
    return jnp.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The numerical derivative of sampled ``f`` along each axis (one array per axis), with
    uniform spacings (scalars) or sample coordinates (1-d arrays) in ``varargs``."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    values = _inexact(_array(f, "gradient"), *[_array(value, "gradient") for value in varargs])
    a, spacings = (values[0], values[1:]) if varargs else (values, [])
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        normalize_axis(dim, a.ndim, "gradient") for dim in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return []
    if min(a.shape[dim] for dim in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 elements are required.")
    if not spacings:
        spacings = [1.0] * len(axes)
    elif len(spacings) == 1:
        spacings = spacings * len(axes)
    elif len(spacings) != len(axes):
        raise TypeError(f"Invalid number of spacing arguments {len(spacings)} for axis={axis}")
    results = [_gradient_along(a, spacing if np.ndim(spacing) else spacing, dim) for dim, spacing in zip(axes, spacings)]
    return results[0] if len(axes) == 1 else results


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences between consecutive elements of the flattened array, with ``to_begin`` and
    ``to_end`` prepended and appended."""
    flat = jnp.ravel(_array(ary, "ediff1d"))
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts.insert(0, jnp.ravel(_array(to_begin, "ediff1d")).astype(flat.dtype))
    if to_end is not None:
        parts.append(jnp.ravel(_array(to_end, "ediff1d")).astype(flat.dtype))
    return jnp.concatenate(parts)


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of the samples ``y`` by the trapezoidal rule (at coordinates ``x`` or with
    spacing ``dx``)."""
    y = _array(y, "trapezoid")
    if x is None:
        y = _inexact(y)
        widths = dx
    else:
        y, x = _inexact(y, _array(x, "trapezoid"))
        widths = jnp.diff(x if x.ndim == 1 else jnp.moveaxis(x, axis, -1))
    y = jnp.moveaxis(y, normalize_axis(axis, y.ndim, "trapezoid"), -1)
    return 0.5 * jnp.sum(widths * (y[..., 1:] + y[..., :-1]), axis=-1)


def _periodic(x, xp, fp, period):
    period = jnp.absolute(period)
    x = jnp.remainder(x, period)
    xp = jnp.remainder(xp, period)
    order = jnp.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = jnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
    return x, xp, fp


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (``xp``, ``fp``) at ``x``; ``left``/``right``
    outside (``fp``'s end values by default), or periodic with ``period``."""
    x, xp, fp = (_array(value, "interp") for value in (x, xp, fp))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("xp and fp must be one-dimensional")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("xp and fp must have the same length")
    x, xp, fp = _inexact(x, xp, fp)
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        x, xp, fp = _periodic(x, xp, fp, period)
    index = jnp.clip(jnp.searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
    rise = fp[index] - fp[index - 1]
    run = xp[index] - xp[index - 1]
    offset = x - xp[index - 1]
    flat = jnp.absolute(run) <= 10 * jnp.finfo(run.dtype).eps
    result = jnp.where(flat, fp[index - 1], fp[index - 1] + (offset / jnp.where(flat, 1, run)) * rise)
    if period is None:
        result = jnp.where(x < xp[0], fp[0] if left is None else left, result)
        result = jnp.where(x > xp[-1], fp[-1] if right is None else right, result)
    return result


def digitize(x, bins, right: bool = False, *, method=None):
    """The index of the bin each value falls in (bins increasing or decreasing)."""
    x, bins = _array(x, "digitize"), _array(bins, "digitize")
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got {bins.shape}")
    if bins.shape[0] == 0:
        return jnp.zeros(x.shape, dtype=jnp.int32)
    side = "left" if right else "right"
    increasing = jnp.searchsorted(bins, x, side=side)
    decreasing = bins.shape[0] - jnp.searchsorted(bins[::-1], x, side=side)
    return jnp.where(bins[-1] >= bins[0], increasing, decreasing)


def _static_length(value, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise ConcretizationTypeError(f"bincount: the {name} argument must be a static integer under "
                                      f"tracing, got {value!r}") from None


def bincount(x, weights=None, minlength: int = 0, *, length=None):
    """The count (or summed ``weights``) of each non-negative integer in the 1-d ``x``, over
    ``max(x) + 1`` bins (at least ``minlength``), or exactly ``length`` bins (needed under jit)."""
    x = _array(x, "bincount")
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = _static_length(minlength, "minlength")
    if minlength < 0:
        raise ValueError(f"minlength must be nonnegative, got {minlength}")
    if length is None:
        if isinstance(x, Tracer):
            raise ConcretizationTypeError("bincount: the number of bins depends on the values of a traced "
                                          "array; pass a static length= argument under jit")
        length = max(minlength, int(np.max(np.asarray(x)) + 1) if x.shape[0] else 0)
    else:
        length = _static_length(length, "length")
    if weights is None:
        weights = jnp.ones(x.shape, dtype=jnp.int32)
    else:
        weights = jnp.broadcast_to(_array(weights, "bincount"), x.shape)
    return jnp.zeros(length, dtype=weights.dtype).at[jnp.clip(x, 0)].add(weights, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 - numpy's name
    """The edges of the histogram's bins: ``bins + 1`` evenly spaced from the data's (or
    ``range``'s) minimum to maximum, or the given edges."""
    if isinstance(bins, str):  # numpy's estimators ("auto", ...): JAX takes no string either
        raise TypeError(f"histogram: bins must be an int or a sequence of bin edges, got the string {bins!r}")
    a = _inexact(jnp.ravel(_array(a, "histogram_bin_edges")))
    if np.ndim(bins) == 1:
        return _array(bins, "histogram_bin_edges").astype(a.dtype)
    count = _static_length(bins, "bins")
    if count < 0:
        raise ValueError(f"`bins` must be positive, when an integer, got {count}")
    low, high = (jnp.min(a), jnp.max(a)) if range is None else (jnp.asarray(range[0], a.dtype), jnp.asarray(range[1], a.dtype))
    if range is not None and not isinstance(range[0], Tracer) and not isinstance(range[1], Tracer) and range[0] > range[1]:
        raise ValueError("max must be larger than min in range parameter.")
    empty = low == high
    low, high = jnp.where(empty, low - 0.5, low), jnp.where(empty, high + 0.5, high)
    return jnp.linspace(low, high, count + 1, dtype=a.dtype)


def _bin_positions(values, edges):
    """Each value's bin, 1-based (0 before the first edge, len(edges) past the last); values on
    the last edge fall into the last bin, as numpy counts them."""
    position = jnp.searchsorted(edges, values, side="right")
    return jnp.where(values == edges[-1], edges.shape[0] - 1, position)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002 - numpy's name
    """The counts (or summed weights, or a density) of ``a``'s values in each bin, and the edges."""
    a = _array(a, "histogram")
    edges = histogram_bin_edges(a, bins, range, weights)
    flat = _inexact(jnp.ravel(a))
    if weights is None:
        weights = jnp.ones(flat.shape, dtype=edges.dtype)
    else:
        weights = jnp.ravel(_array(weights, "histogram"))
        if weights.shape != flat.shape:
            raise ValueError("weights should have the same shape as a.")
    counts = jnp.zeros(edges.shape[0] + 1, dtype=weights.dtype).at[_bin_positions(flat, edges)].add(weights)[1:-1]
    if density:
        widths = jnp.diff(edges)
        counts = counts / widths / counts.sum()
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002 - numpy's name
    """The multidimensional histogram of the ``(N, D)`` points ``sample``, and each axis's edges."""
    sample = _inexact(_array(sample, "histogramdd"))
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be a 2-d array of points, got shape {sample.shape}")
    dims = sample.shape[1]
    bins_per_axis = [bins] * dims if np.ndim(bins) == 0 else list(bins)
    if len(bins_per_axis) != dims:
        raise ValueError("should be a bin for each dimension.")
    ranges = [None] * dims if range is None else list(range)
    edges = [histogram_bin_edges(sample[:, dim], bins_per_axis[dim], ranges[dim]) for dim in np.arange(dims)]
    sizes = tuple(edge.shape[0] + 1 for edge in edges)
    flat_index = ravel_multi_index(tuple(_bin_positions(sample[:, dim], edges[dim]) for dim in np.arange(dims)),
                                       sizes, mode="clip")
    # unweighted counts are integers here (unlike histogram's), as in JAX
    weights = jnp.ones(sample.shape[0], jnp.int32) if weights is None else _inexact(
        jnp.ravel(_array(weights, "histogramdd")))
    counts = jnp.zeros(int(np.prod(sizes)), weights.dtype).at[flat_index].add(weights).reshape(sizes)
    counts = counts[(slice(1, -1),) * dims]
    if density:
        counts = counts.astype(sample.dtype)
        counts = counts / counts.sum()
        for dim in np.arange(dims):
            shape = [1] * dims
            shape[dim] = -1
            counts = counts / jnp.reshape(jnp.diff(edges[dim]), tuple(shape))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002 - numpy's name
    """The 2-d histogram of the points (``x``, ``y``), and the two axes' edges."""
    x, y = _array(x, "histogram2d"), _array(y, "histogram2d")
    counts, edges = histogramdd(jnp.stack([x, y], axis=1), bins, range, weights, density)
    return counts, edges[0], edges[1]


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """The cross product of 2- or 3-element vectors along ``axisa``/``axisb`` (a scalar per pair
    when both are 2-vectors)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _array(a, "cross"), _array(b, "cross")
    a = jnp.moveaxis(a, normalize_axis(axisa, a.ndim, "cross"), -1)
    b = jnp.moveaxis(b, normalize_axis(axisb, b.ndim, "cross"), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1, a2 = a[..., 0], a[..., 1], (a[..., 2] if a.shape[-1] == 3 else 0)
    b0, b1, b2 = b[..., 0], b[..., 1], (b[..., 2] if b.shape[-1] == 3 else 0)
    result = jnp.stack(jnp.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)
    return jnp.moveaxis(result, -1, normalize_axis(axisc, result.ndim, "cross"))


def kron(a, b):
    """The Kronecker product: blocks of ``b`` scaled by each element of ``a``."""
    a, b = _array(a, "kron"), _array(b, "kron")
    rank = max(a.ndim, b.ndim)
    a = jnp.reshape(a, (1,) * (rank - a.ndim) + a.shape)
    b = jnp.reshape(b, (1,) * (rank - b.ndim) + b.shape)
    interleaved_a = jnp.reshape(a, tuple(size for dim in a.shape for size in (dim, 1)))
    interleaved_b = jnp.reshape(b, tuple(size for dim in b.shape for size in (1, dim)))
    return jnp.reshape(interleaved_a * interleaved_b, tuple(x * y for x, y in zip(a.shape, b.shape)))


def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix: columns are powers of the 1-d ``x`` (decreasing unless ``increasing``)."""
    x = _array(x, "vander")
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    exponents = np.arange(N)
    if not increasing:
        exponents = exponents[::-1]
    return jnp.power(x[:, None], jnp.asarray(exponents, dtype=jnp.int32)[None, :])
