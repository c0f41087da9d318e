"""jax.numpy's functions of complex numbers: ``real imag conj conjugate angle`` and the dtype
tests ``iscomplexobj isrealobj iscomplex isreal``. Real arrays are their own real part and
conjugate (a zero imaginary part, an angle of 0 or pi), as in JAX."""

from __future__ import annotations

import numpy as np

from .. import lax_complex
from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from ..promotion import is_complex
from ..trace import Tracer, is_concrete_array
from .arguments import array_operand, as_array_argument, convert_operand, inexact_dtype, with_weak_type

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "angle",
    "conj",
    "conjugate",
    "imag",
    "iscomplex",
    "iscomplexobj",
    "isreal",
    "isrealobj",
    "real",
)


def real(val, /):
    """The real part; a real array comes back as it is."""
    operand = array_operand(val, "real")
    dtype = dtype_of(operand)
    return with_weak_type(lax_complex.real(operand), dtype.weak) if is_complex(dtype.name) else operand


def imag(val, /):
    """The imaginary part; zeros of a real array's dtype for a real array."""
    operand = array_operand(val, "imag")
    dtype = dtype_of(operand)
    if is_complex(dtype.name):
        return with_weak_type(lax_complex.imag(operand), dtype.weak)
    return with_weak_type(lax.full(shape_of(operand), 0, dtype.name), dtype.weak)


def conjugate(x, /):
    """The complex conjugate; a real array is its own conjugate."""
    operand = array_operand(x, "conjugate")
    dtype = dtype_of(operand)
    return with_weak_type(lax_complex.conj(operand), dtype.weak) if is_complex(dtype.name) else operand


conj = conjugate


def angle(z, deg: bool = False):
    """The argument ``atan2(imag, real)`` in radians (degrees with ``deg``); integers as floats."""
    value = as_array_argument(z, "angle")
    dtype = inexact_dtype(dtype_of(value))
    operand = convert_operand(value, dtype.name)
    if is_complex(dtype.name):
        real_part, imaginary_part = lax_complex.real(operand), lax_complex.imag(operand)
    else:
        real_part, imaginary_part = operand, lax.full(shape_of(operand), 0, dtype.name)
    result = lax.atan2(imaginary_part, real_part)
    if deg:
        result = lax.mul(result, 180.0 / np.pi)
    return with_weak_type(result, dtype.weak)


def _dtype_kind(value) -> str:
    if isinstance(value, Tracer) or is_concrete_array(value):
        return np.dtype(value.dtype).kind
    if isinstance(value, complex):
        return "c"
    return np.asarray(value).dtype.kind


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (its values are not looked at)."""
    return _dtype_kind(x) == "c"


def isrealobj(x) -> bool:
    """Whether ``x`` has a non-complex dtype."""
    return not iscomplexobj(x)


def iscomplex(x, /):
    """Elementwise: a non-zero imaginary part (false for every element of a real array)."""
    return lax.ne(imag(x), 0)


def isreal(x, /):
    """Elementwise: a zero imaginary part (true for every element of a real array)."""
    return lax.eq(imag(x), 0)
