"""jax.scipy.signal's convolutions and detrending: ``convolve``/``correlate`` of N-d arrays
(one ``conv_general_dilated``; complex operands as four real convolutions), the 2-d forms,
``fftconvolve`` (by real or complex FFTs) and ``detrend``. Operands are promoted to an
inexact dtype, as JAX does; the larger operand (in every dim) is the input, as in JAX."""

from __future__ import annotations

import numpy as np

from .. import lax_complex
from .. import lax_ops as lax
from .. import numpy_api as jnp
from ..lax_windows import conv_general_dilated
from ..numpy_api import fft as jfft
from ..numpy_api.arguments import as_array_argument
from .numpy_linalg_decompositions import lstsq
from .special import floats

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.signal``).
__all__ = ("convolve", "convolve2d", "correlate", "correlate2d", "detrend", "fftconvolve")

_MODES = ("full", "same", "valid")


def _operands(function: str, in1, in2, mode: str):
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = floats(function, in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if not in1.size or not in2.size:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes {in1.shape} and {in2.shape}.")
    return in1, in2


def _real_convolve(in1, in2, mode: str, precision):
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    original = in2.shape
    if swap:
        in1, in2 = in2, in1
    kernel = in2.shape
    padding = {"valid": [(0, 0) for _ in kernel],
               "same": [(k - 1 - (o - 1) // 2, k - o + (o - 1) // 2) for k, o in zip(kernel, original)],
               "full": [(k - 1, k - 1) for k in kernel]}[mode]
    result = conv_general_dilated(in1[None, None], jnp.flip(in2)[None, None], (1,) * in1.ndim, padding,
                                  precision=precision)
    return result[0, 0]


def _convolve(in1, in2, mode: str, precision):
    if not jnp.iscomplexobj(in1) and not jnp.iscomplexobj(in2):
        return _real_convolve(in1, in2, mode, precision)
    dtype = jnp.result_type(in1, in2)
    in1, in2 = in1.astype(dtype), in2.astype(dtype)
    a_re, a_im, b_re, b_im = (lax_complex.real(in1), lax_complex.imag(in1), lax_complex.real(in2),
                              lax_complex.imag(in2))

    def part(x, y):
        return _real_convolve(x, y, mode, precision)

    return lax_complex.complex(lax.sub(part(a_re, b_re), part(a_im, b_im)), lax.add(part(a_re, b_im), part(a_im, b_re)))


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` ("full", "same" as ``in1``'s shape, "valid")."""
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}")
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    in1, in2 = _operands("convolve", in1, in2, mode)
    return _convolve(in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d cross-correlation: ``convolve(in1, flip(conj(in2)))``."""
    in1, in2 = _operands("correlate", in1, in2, mode)
    return convolve(in1, jnp.flip(jnp.conj(in2)), mode, method=method, precision=precision)


def _two_d(function: str, in1, in2, boundary: str, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise ValueError(f"{function}() supports only boundary='fill' with fillvalue=0, as JAX's, "
                         f"got boundary={boundary!r}, fillvalue={fillvalue!r}")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{function}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """The 2-d convolution (zero fill outside)."""
    _two_d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode, precision=precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation (zero fill outside); "same" is centred as scipy's
    correlate2d centres it (on the flipped input, which differs for even kernel sizes)."""
    _two_d("correlate2d", in1, in2, boundary, fillvalue)
    if mode == "same":
        in1, in2 = _operands("correlate2d", in1, in2, mode)
        return jnp.flip(_convolve(jnp.flip(in1), jnp.conj(in2), mode, precision))
    return correlate(in1, in2, mode, precision=precision)


def fftconvolve(in1, in2, mode: str = "full", axes=None):
    """The N-d convolution computed by FFTs over every dim (``axes`` must be None)."""
    if axes is not None:
        raise ValueError("fftconvolve: only axes=None (every dim) is supported")
    in1, in2 = _operands("fftconvolve", in1, in2, mode)
    full = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    if jnp.iscomplexobj(in1) or jnp.iscomplexobj(in2):
        result = jfft.ifftn(jfft.fftn(in1, full) * jfft.fftn(in2, full), full)
    else:
        result = jfft.irfftn(jfft.rfftn(in1, full) * jfft.rfftn(in2, full), full)
    if mode == "full":
        return result
    if mode == "same":
        starts, sizes = [(f - a) // 2 for f, a in zip(full, in1.shape)], in1.shape
    else:
        sizes = tuple(abs(a - b) + 1 for a, b in zip(in1.shape, in2.shape))
        starts = [(f - s) // 2 for f, s in zip(full, sizes)]
    return result[tuple(slice(start, start + size) for start, size in zip(starts, sizes))]


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):  # noqa: A002 - scipy's name
    """``data`` less its mean ("constant") or its least-squares line between breakpoints
    ``bp`` ("linear"), along ``axis``."""
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = floats("detrend", jnp.asarray(as_array_argument(data, "detrend")))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    size = data.shape[axis]
    points = np.sort(np.unique(np.r_[0, bp, size]))
    if points[0] < 0 or points[-1] > size:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    moved = jnp.moveaxis(data, axis, 0)
    shape = moved.shape
    moved = moved.reshape(size, -1)
    for start, stop in zip(points[:-1], points[1:]):
        count = int(stop - start)
        design = jnp.stack([jnp.ones(count, dtype=moved.dtype),
                            jnp.arange(1, count + 1, dtype=moved.dtype) / np.asarray(count, moved.dtype)], axis=1)
        coefficients = lstsq(design, moved[start:stop])[0]
        moved = moved.at[start:stop].add(-jnp.matmul(design, coefficients, precision="highest"))
    return jnp.moveaxis(moved.reshape(shape), 0, axis)
