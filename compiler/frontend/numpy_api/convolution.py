"""jax.numpy's ``convolve`` and ``correlate`` of 1-d arrays, as one ``conv_general_dilated``
(numpy's modes: "full", "same" centred on the longer input, "valid")."""

from __future__ import annotations

from .. import lax_complex
from .. import lax_ops as lax
from ..lax_windows import conv_general_dilated
from ..operands import dtype_of, shape_of
from .arguments import as_array_argument, convert_operand, inexact_dtype, result_dtype

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "convolve",
    "correlate",
)

_MODES = ("full", "same", "valid")


def _conv(function: str, a, v, mode: str, flip: bool, precision, preferred_element_type):
    if mode not in _MODES:
        raise ValueError(f"{function}: mode must be one of full, same, valid, got {mode!r}")
    a, v = as_array_argument(a, function), as_array_argument(v, function)
    if len(shape_of(a)) != 1 or len(shape_of(v)) != 1:
        raise ValueError(f"{function}() only support 1-dimensional inputs, got shapes {shape_of(a)} and {shape_of(v)}")
    if not shape_of(a)[0] or not shape_of(v)[0]:
        raise ValueError(f"{function}: inputs cannot be empty")
    dtype = result_dtype(a, v)
    # as JAX: inexact unless preferred_element_type is given (then bool alone becomes f32)
    kind = dtype.name if dtype.name != "bool" and preferred_element_type is not None else inexact_dtype(dtype).name
    a, v = convert_operand(a, kind), convert_operand(v, kind)
    if kind in ("c64", "c128"):
        return _complex_conv(function, a, v, mode, flip, precision)
    swapped = shape_of(a)[0] < shape_of(v)[0]
    if swapped:
        a, v = v, a
    if flip:
        v = lax.rev(v, (0,))
    size = shape_of(v)[0]
    padding = {"full": (size - 1, size - 1), "same": (size // 2, size - size // 2 - 1), "valid": (0, 0)}[mode]
    result = conv_general_dilated(lax.reshape(a, (1, 1, shape_of(a)[0])), lax.reshape(v, (1, 1, size)), (1,),
                                  (padding,), precision=precision, preferred_element_type=preferred_element_type)
    result = lax.reshape(result, shape_of(result)[2:])
    # correlate(a, v) with a shorter than v is correlate(v, a) reversed
    return lax.rev(result, (0,)) if swapped and not flip else result


def _complex_conv(function: str, a, v, mode: str, flip: bool, precision):
    """A complex convolution from four real ones; correlate conjugates ``v`` as numpy does."""
    real = "f64" if dtype_of(a).name == "c128" else "f32"
    a_re, a_im = lax_complex.real(a), lax_complex.imag(a)
    v_re, v_im = lax_complex.real(v), lax_complex.imag(v)
    if not flip:
        v_im = lax.neg(v_im)

    def part(x, y):
        return _conv(function, x, y, mode, flip, precision, real)

    return lax_complex.complex(lax.sub(part(a_re, v_re), part(a_im, v_im)), lax.add(part(a_re, v_im), part(a_im, v_re)))


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete convolution of two 1-d arrays."""
    return _conv("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-d arrays."""
    return _conv("correlate", a, v, mode, False, precision, preferred_element_type)
