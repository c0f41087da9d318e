"""jax.numpy.fft (and the Array API's fft extension): the discrete Fourier transforms over
chosen axes, built on the IR's ``fft`` op (which transforms trailing dims: the axes are moved
last and back), with numpy's ``n``/``s`` (zero-padding or cropping each axis first) and ``norm``
("backward": the inverse scaled by 1/n; "ortho": both by 1/sqrt(n); "forward": the forward one by
1/n); and ``fftfreq rfftfreq fftshift ifftshift``.
"""

from __future__ import annotations

import math

import numpy as np

from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of, x64
from ..promotion import is_complex
from ..trace import bind
from .arguments import array_operand, convert_operand, dtype_argument, normalize_axis
from .complex_functions import conjugate
from .shifts import roll

# NOTE: the public names, re-exported by the facade (``meshjit.numpy.fft``).
__all__ = (
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft",
    "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
)

_NORMS = (None, "backward", "ortho", "forward")
_INVERSE = {"FFT": False, "RFFT": False, "IFFT": True, "IRFFT": True}


def _check_norm(norm, function: str) -> None:
    if norm not in _NORMS:
        raise ValueError(f"{function}: invalid norm value {norm!r}; should be None, 'backward', 'ortho' or 'forward'")


def _complex_name(value) -> str:
    """The complex type a transform of ``value`` computes in (integers as the default float)."""
    name = dtype_of(value).name
    if is_complex(name):
        return name
    return "c128" if name == "f64" or (x64() and name in ("i64", "u64", "f64")) else "c64"


def _real_name(value, function: str) -> str:
    name = dtype_of(value).name
    if is_complex(name):
        raise ValueError(f"{function}: only real valued inputs are supported, got {to_numpy(name)}")
    if name in ("f16", "bf16"):  # JAX's error: its real transforms take f32 and f64 only
        raise ValueError(f"RFFT input must be float32 or float64, got {to_numpy(name)}")
    return "f64" if name == "f64" or (x64() and name in ("i64", "u64")) else "f32"


def _resize(value, axis: int, size: int):
    """``value`` cropped or zero-padded along ``axis`` to ``size`` (numpy's ``n``/``s``)."""
    current = shape_of(value)[axis]
    if size == current:
        return value
    if size < current:
        limits = list(shape_of(value))
        limits[axis] = size
        return lax.slice(value, (0,) * len(limits), tuple(limits))
    padding = [(0, 0, 0)] * len(shape_of(value))
    padding[axis] = (0, size - current, 0)
    return lax.pad(value, np.zeros((), to_numpy(dtype_of(value).name)), padding)


def _axes_and_sizes(function: str, value, s, axes, default_axes):
    rank = len(shape_of(value))
    if axes is None:
        axes = default_axes(rank) if s is None else tuple(range(rank - len(s), rank))
    axes = tuple(normalize_axis(axis, rank, function) for axis in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{function}: axes {axes} must be distinct")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{function}: s {tuple(s)} and axes {axes} must have one length")
    return axes, None if s is None else tuple(int(size) for size in s)


def _to_end(value, axes):
    """``value`` with ``axes`` moved last in their order, and the permutation to undo it."""
    rank = len(shape_of(value))
    order = [dim for dim in range(rank) if dim not in axes] + list(axes)
    inverse = [order.index(dim) for dim in range(rank)]
    return _permuted(value, order), tuple(inverse)


def _permuted(value, order):
    """``value`` transposed to ``order``; the identity order stages no op."""
    return value if list(order) == sorted(order) else lax.transpose(value, tuple(order))


def _transform(value, fft_type: str, lengths):
    """The IR op over the trailing ``len(lengths)`` dims, in groups of at most three (the op's
    limit): a transform over more axes is one over the last three, then one over the others."""
    lengths = tuple(lengths)
    if len(lengths) <= 3:
        return bind("fft", [value], {"fft_type": fft_type, "fft_lengths": lengths})[0]
    head, tail = lengths[:-3], lengths[-3:]
    if fft_type == "IRFFT":  # the complex axes first, the real output last
        inner = _transform_head(value, "IFFT", head, 3)
        return _transform(inner, "IRFFT", tail)
    value = _transform(value, fft_type, tail)
    return _transform_head(value, "FFT" if fft_type == "RFFT" else fft_type, head, 3)


def _transform_head(value, fft_type: str, head, tail_count: int):
    """The transform over the ``len(head)`` dims just before the last ``tail_count`` ones."""
    rank = len(shape_of(value))
    start = rank - tail_count - len(head)
    order = list(range(start)) + list(range(rank - tail_count, rank)) + list(range(start, rank - tail_count))
    moved = _transform(lax.transpose(value, tuple(order)), fft_type, head)
    return lax.transpose(moved, tuple(order.index(dim) for dim in range(rank)))


def _scale(value, fft_type: str, norm, total: int):
    """numpy's ``norm`` on top of the op's convention (the inverse already divides by n)."""
    if norm in (None, "backward") or total == 0:
        return value
    inverse = _INVERSE[fft_type]
    if norm == "ortho":
        factor = math.sqrt(total) if inverse else 1 / math.sqrt(total)
    else:  # forward
        factor = total if inverse else 1 / total
    return lax.mul(value, factor)


def _fft_core(function: str, fft_type: str, a, s, axes, norm, default_axes):
    _check_norm(norm, function)
    value = array_operand(a, function)
    axes, sizes = _axes_and_sizes(function, value, s, axes, default_axes)
    if fft_type == "RFFT":
        value = convert_operand(value, _real_name(value, function))
    else:
        value = convert_operand(value, _complex_name(value))
    if not axes:
        return value
    shape = shape_of(value)
    explicit = sizes is not None
    if sizes is None:
        sizes = tuple(shape[axis] for axis in axes)
        if fft_type == "IRFFT":
            sizes = sizes[:-1] + (2 * (sizes[-1] - 1),)
    for axis, size in zip(axes, sizes):
        if size < 1 and (explicit or fft_type == "IRFFT" or size < 0):
            raise ValueError(f"{function}: invalid number of FFT data points ({size}) along axis {axis}")
        stored = size // 2 + 1 if fft_type == "IRFFT" and axis == axes[-1] else size
        value = _resize(value, axis, stored)
    moved, inverse = _to_end(value, axes)
    result = _transform(moved, fft_type, sizes)
    result = _permuted(result, inverse)
    return _scale(result, fft_type, norm, math.prod(sizes))


def _last_axes(count: int):
    return lambda rank: tuple(range(rank - min(count, rank), rank))


def _all_axes(rank: int):
    return tuple(range(rank))


def _one_axis(function: str, fft_type: str):
    def apply(a, n=None, axis=-1, norm=None):
        return _fft_core(function, fft_type, a, None if n is None else (n,), (axis,), norm, None)

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = f"numpy.fft.{function} over one axis (``n`` crops or zero-pads it first)."
    return apply


def _many_axes(function: str, fft_type: str, default_axes):
    def apply(a, s=None, axes=None, norm=None):
        return _fft_core(function, fft_type, a, s, axes, norm, default_axes)

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = f"numpy.fft.{function} over ``axes`` (``s`` crops or zero-pads each first)."
    return apply


def _two_axes(function: str, fft_type: str):
    def apply(a, s=None, axes=(-2, -1), norm=None):
        return _fft_core(function, fft_type, a, s, axes, norm, None)

    apply.__name__ = apply.__qualname__ = function
    apply.__doc__ = f"numpy.fft.{function} over two axes, by default the last two."
    return apply


fft = _one_axis("fft", "FFT")
ifft = _one_axis("ifft", "IFFT")
rfft = _one_axis("rfft", "RFFT")
irfft = _one_axis("irfft", "IRFFT")
fft2 = _two_axes("fft2", "FFT")
ifft2 = _two_axes("ifft2", "IFFT")
rfft2 = _two_axes("rfft2", "RFFT")
irfft2 = _two_axes("irfft2", "IRFFT")
fftn = _many_axes("fftn", "FFT", _all_axes)
ifftn = _many_axes("ifftn", "IFFT", _all_axes)
rfftn = _many_axes("rfftn", "RFFT", _all_axes)
irfftn = _many_axes("irfftn", "IRFFT", _all_axes)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    _check_norm(norm, "hfft")
    value = array_operand(a, "hfft")
    size = n if n is not None else 2 * (shape_of(value)[normalize_axis(axis, len(shape_of(value)), "hfft")] - 1)
    swapped = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]
    return irfft(conjugate(value), size, axis, swapped)


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``hfft``: the first half of the spectrum of a real signal."""
    _check_norm(norm, "ihfft")
    swapped = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]
    return conjugate(rfft(a, n, axis, swapped))


# --- frequencies and shifts ----------------------------------------------------------------------


def _frequencies(values: np.ndarray, spacing, dtype, function: str):
    name = dtype_argument(dtype, function) if dtype is not None else ("f64" if x64() else "f32")
    numerator = convert_operand(values, name)
    return lax.div(numerator, lax.full((len(values),), spacing, name))


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., -(n // 2), ..., -1] / (d n)``."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"fftfreq: n must be a positive integer, got {n!r}")
    values = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _placed(_frequencies(values, d * n, dtype, "fftfreq"), device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point RFFT: ``[0, 1, ..., n // 2] / (d n)``."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"rfftfreq: n must be a positive integer, got {n!r}")
    return _placed(_frequencies(np.arange(0, n // 2 + 1), d * n, dtype, "rfftfreq"), device)


def _placed(value, device):
    return value if device is None or not hasattr(value, "to_device") else value.to_device(device)


def _shift(function: str, x, axes, sign: int):
    value = array_operand(x, function)
    rank = len(shape_of(value))
    axes = tuple(range(rank)) if axes is None else ((axes,) if isinstance(axes, (int, np.integer)) else tuple(axes))
    axes = tuple(normalize_axis(axis, rank, function) for axis in axes)
    shifts = tuple(sign * (shape_of(value)[axis] // 2) for axis in axes)
    return roll(value, shifts, axes) if axes else value


def fftshift(x, axes=None):
    """The zero frequency moved to the middle: a roll by ``n // 2`` along ``axes`` (all)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``: a roll by ``-(n // 2)``."""
    return _shift("ifftshift", x, axes, -1)
