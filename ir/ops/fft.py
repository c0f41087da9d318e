"""The fft family: ``fft`` (lax.fft), the discrete Fourier transform over an operand's trailing
``len(fft_lengths)`` dims (one to three). ``fft_type`` is one of
- ``FFT`` / ``IFFT``: complex to complex, forward or inverse (the inverse scaled by 1/n);
- ``RFFT``: real to complex, the last transform dim n becoming n // 2 + 1 (the other half is the
  conjugate of the first);
- ``IRFFT``: its inverse, complex to real, the last dim n // 2 + 1 becoming n.
Shape rule and numpy reference (numpy.fft in float64, rounded once to the result's type).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_OF, COMPONENT_DTYPE, from_numpy, to_numpy
from ..reference import reference_impls
from ..shape_rules import COMPLEX, WIDE_FLOATS, choice_attr, expect_dtype, expect_operand_count, fail, ints_attr, shape_rules

OPS = ("fft",)
FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def fft_attrs(op: str, attrs, operand) -> tuple[str, tuple[int, ...]]:
    """The checked ``fft_type`` and ``fft_lengths`` of an fft op on ``operand``."""
    fft_type = choice_attr(op, attrs, "fft_type", FFT_TYPES)
    lengths = ints_attr(op, attrs, "fft_lengths", minimum=0)
    if not 1 <= len(lengths) <= 3:
        fail(op, f"fft_lengths must name one to three trailing dims, got {list(lengths)}")
    if len(lengths) > operand.rank:
        fail(op, f"fft_lengths {list(lengths)} name more dims than {operand} has")
    return fft_type, lengths


@shape_rules.register("fft")
def _fft(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    fft_type, lengths = fft_attrs(op, attrs, operand)
    expect_dtype(op, "operand 0", operand, WIDE_FLOATS if fft_type == "RFFT" else COMPLEX)
    trailing = operand.shape[operand.rank - len(lengths):]
    expected = lengths
    if fft_type == "IRFFT":
        expected = lengths[:-1] + (lengths[-1] // 2 + 1,)
    if trailing != expected:
        fail(op, f"{fft_type} of fft_lengths {list(lengths)} needs trailing dims {list(expected)}, got {operand}")
    shape = operand.shape[: operand.rank - len(lengths)]
    if fft_type == "RFFT":
        return (operand.with_shape(shape + lengths[:-1] + (lengths[-1] // 2 + 1,)).with_dtype(COMPLEX_OF[operand.dtype]),)
    if fft_type == "IRFFT":
        return (operand.with_shape(shape + lengths).with_dtype(COMPONENT_DTYPE[operand.dtype]),)
    return (operand,)


def transform(fft_type: str, lengths, operand: np.ndarray, result_dtype: np.dtype) -> np.ndarray:
    """The transform over ``operand``'s trailing dims (leading dims are batch), in float64."""
    axes = tuple(range(operand.ndim - len(lengths), operand.ndim))
    if operand.size == 0 or 0 in lengths:
        shape = operand.shape[: operand.ndim - len(lengths)] + _result_lengths(fft_type, lengths)
        return np.zeros(shape, result_dtype)
    wide = operand.astype(np.complex128 if operand.dtype.kind == "c" else np.float64)
    if fft_type == "FFT":
        result = np.fft.fftn(wide, axes=axes)
    elif fft_type == "IFFT":
        result = np.fft.ifftn(wide, axes=axes)
    elif fft_type == "RFFT":
        result = np.fft.rfftn(wide, axes=axes)
    else:
        result = np.fft.irfftn(wide, s=lengths, axes=axes)
    return np.asarray(result.astype(result_dtype))


def _result_lengths(fft_type: str, lengths) -> tuple[int, ...]:
    if fft_type == "RFFT":
        return tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    return tuple(lengths)


@reference_impls.register("fft")
def _fft_impl(attrs, operand):
    fft_type, lengths = attrs["fft_type"], tuple(attrs["fft_lengths"])
    if fft_type == "RFFT":
        dtype = to_numpy(COMPLEX_OF[from_numpy(operand.dtype)])
    elif fft_type == "IRFFT":
        dtype = to_numpy(COMPONENT_DTYPE[from_numpy(operand.dtype)])
    else:
        dtype = operand.dtype
    return (transform(fft_type, lengths, operand, dtype),)

