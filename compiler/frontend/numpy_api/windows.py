"""jax.numpy's window functions (``bartlett``, ``blackman``, ``hamming``, ``hanning``,
``kaiser``) of ``M`` points, ``i0`` (the modified Bessel function the Kaiser window is made of),
and ``unwrap`` (phase jumps larger than ``discont`` replaced by their complement)."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..scipy import special_incomplete
from ..trace import ConcretizationTypeError, Tracer
from .arguments import as_array_argument, is_inexact_dtype, normalize_axis

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "bartlett",
    "blackman",
    "hamming",
    "hanning",
    "i0",
    "kaiser",
    "unwrap",
)


def _points(M, function: str):
    """The sample positions ``2 pi n / (M - 1)`` for n in 0..M-1 (None for M < 2)."""
    try:
        M = operator.index(M)
    except TypeError:
        raise TypeError(f"{function}: M must be a static integer, got {M!r}") from None
    if M <= 1:
        return M, None
    return M, jnp.arange(M, dtype=jnp.float32)


def _window(function: str, M, shape):
    M, n = _points(M, function)
    if n is None:
        return jnp.ones((max(M, 0),), dtype=jnp.float32)
    return shape(n, M)


def hamming(M: int):
    """The Hamming window: ``0.54 - 0.46 cos(2 pi n / (M - 1))``."""
    return _window("hamming", M, lambda n, M: 0.54 - 0.46 * jnp.cos(2 * np.pi * n / (M - 1)))


def hanning(M: int):
    """The Hann window: ``0.5 - 0.5 cos(2 pi n / (M - 1))``."""
    return _window("hanning", M, lambda n, M: 0.5 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1)))


def blackman(M: int):
    """The Blackman window."""
    return _window("blackman", M, lambda n, M: 0.42 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1))
                   + 0.08 * jnp.cos(4 * np.pi * n / (M - 1)))


def bartlett(M: int):
    """The Bartlett (triangular) window."""
    return _window("bartlett", M, lambda n, M: 1 - jnp.absolute(2 * n - M + 1) / (M - 1))


def i0(x):
    """The modified Bessel function of the first kind of order 0, of real arguments (its
    derivative is I_1, zero at 0)."""
    x = jnp.asarray(as_array_argument(x, "i0"))
    if jnp.iscomplexobj(x):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {x.dtype}")
    return special_incomplete.i0(x)


def kaiser(M: int, beta):
    """The Kaiser window: ``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``."""
    if isinstance(M, Tracer):
        raise ConcretizationTypeError("Abstract tracer value encountered where concrete value is expected: traced "
                                      f"array with shape {np.dtype(M.dtype).name}[]\nM argument of jnp.kaiser")
    M = int(M)
    if M <= 1:
        return jnp.ones((max(M, 0),), dtype=jnp.float32)
    n = jnp.arange(M, dtype=jnp.float32)
    alpha = 0.5 * (M - 1)
    return i0(beta * jnp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """``p`` with each jump between neighbours along ``axis`` larger than ``discont`` (half a
    period by default) reduced by a multiple of ``period``."""
    p = jnp.asarray(as_array_argument(p, "unwrap"))
    if not is_inexact_dtype(p.dtype):
        p = p.astype(jnp.float32)
    axis = normalize_axis(axis, p.ndim, "unwrap")
    half = period / 2
    discont = half if discont is None else discont
    steps = jnp.diff(p, axis=axis)
    wrapped = jnp.remainder(steps + half, period) - half
    wrapped = jnp.where((wrapped == -half) & (steps > 0), half, wrapped)
    correction = jnp.where(jnp.absolute(steps) < discont, 0, wrapped - steps)
    first = jnp.take(p, np.arange(1), axis=axis)
    rest = jnp.take(p, np.arange(1, p.shape[axis]), axis=axis) + jnp.cumsum(correction, axis=axis)
    return jnp.concatenate([first, rest.astype(p.dtype)], axis=axis)
