"""The continuous samplers: uniform (the mantissa trick), and normal, truncated_normal, gumbel and
exponential built on it, each with JAX's algorithm and op order so that the numbers are JAX's.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from meshjit.ir.dtypes import NARROW_FLOATS, to_numpy

from .. import lax_ops as lax
from ..autodiff import stop_gradient
from ..operands import as_operand, dtype_of, shape_of
from . import xla_float32
from .bits import random_bits

_UNSIGNED = {16: "u16", 32: "u32", 64: "u64"}


def _log(x):
    return {"f32": xla_float32.log, "f64": xla_float32.log_f64}.get(shape_dtype(x), lax.log)(x)


def _log1p(x):
    return xla_float32.log1p(x) if shape_dtype(x) in ("f32", "f64") else lax.log1p(x)


def _erf(x):
    return xla_float32.erf(x) if shape_dtype(x) == "f32" else lax.erf(x)


def shape_dtype(x) -> str:
    return dtype_of(x).name


def _constant(shape, value, dtype: str):
    return lax.full(shape, np.asarray(value, to_numpy(dtype)), dtype)


def _bounds_to(value, shape, dtype: str, name: str, function: str):
    """``value`` converted to ``dtype`` and broadcast to ``shape`` (numpy's rule, from the left
    as JAX's broadcast_to_rank); a shape that does not broadcast is JAX's TypeError."""
    value = lax.convert_element_type(as_operand(value, dtype), dtype)
    given = shape_of(value)
    if len(given) > len(shape) or any(
        size not in (1, target) for size, target in zip(given[::-1], shape[::-1])
    ):
        raise TypeError(
            f"{function}: {name} of shape {given} does not broadcast to the result shape {shape}"
        )
    padded = (1,) * (len(shape) - len(given)) + given
    value = lax.reshape(value, padded)
    kept = tuple(dim for dim, size in enumerate(padded) if size == shape[dim])
    squeezed = lax.reshape(value, tuple(padded[dim] for dim in kept))
    return lax.broadcast_in_dim(squeezed, shape, kept)


def _is_number(value, expected: float) -> bool:
    """``value`` is a Python or numpy scalar equal to ``expected`` (and not -0.0)."""
    if not isinstance(value, (int, float, np.number, np.ndarray)) or np.ndim(value) != 0:
        return False
    return float(value) == expected and not np.signbit(value)


def uniform(key, shape, dtype: str, minval=0.0, maxval=1.0, function: str = "uniform"):
    """Floats in ``[minval, maxval)``: random mantissa bits under the exponent of 1.0 give
    ``[1, 2)``; minus one, scaled and shifted (one fused multiply-add, as XLA computes it)."""
    shape = tuple(shape)
    return uniform_from_bits(random_bits(key, _drawn_bits(dtype), shape), shape, dtype, minval, maxval, function)


def _drawn_bits(dtype: str) -> int:
    """How many random bits a float of ``dtype`` draws: its width, but 8 for a mantissa of fewer
    than 8 bits (bf16's 7), as JAX draws."""
    info = ml_dtypes.finfo(to_numpy(dtype))
    return 8 if info.nmant < 8 else info.bits


def uniform_from_bits(bits, shape, dtype: str, minval=0.0, maxval=1.0, function: str = "uniform"):
    """``uniform``'s floats from its random ``bits`` (``_drawn_bits(dtype)`` of them)."""
    info = ml_dtypes.finfo(to_numpy(dtype))
    width, mantissa = info.bits, info.nmant
    unsigned = _UNSIGNED[width]
    drawn = _drawn_bits(dtype)
    if drawn != width:
        bits = lax.convert_element_type(bits, unsigned)
    shift = _constant(shape, drawn - mantissa, unsigned)
    one_bits = np.array(1.0, to_numpy(dtype)).view(to_numpy(unsigned))
    float_bits = lax.bitwise_or(lax.shift_right_logical(bits, shift), _constant(shape, one_bits, unsigned))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), _constant(shape, 1.0, dtype))
    if _is_number(minval, 0.0) and _is_number(maxval, 1.0):
        # XLA's simplifier drops `* (1 - 0) + 0` and the max with 0 of these values (never
        # negative, never -0.0): the numbers are the same, without an emulated fma per element
        return floats
    low = _bounds_to(minval, shape, dtype, "minval", function)
    high = _bounds_to(maxval, shape, dtype, "maxval", function)
    # NOTE: JAX subtracts the bounds before broadcasting them; the values are the same.
    if dtype in NARROW_FLOATS:
        # XLA rounds the 16-bit product before the sum: no fused multiply-add
        return lax.max(low, lax.add(lax.mul(floats, lax.sub(high, low)), low))
    return lax.max(low, lax.fma(floats, lax.sub(high, low), low))


def normal(key, shape, dtype: str, scale=None):
    """Standard normal values: sqrt(2) * erf_inv(u) for u uniform in (-1, 1); times ``scale``
    (broadcast to ``shape``) if given, which XLA's simplifier folds into the constant before
    broadcasting: erf_inv(u) * (scale * sqrt(2)), rounded differently from (sqrt(2) *
    erf_inv(u)) * scale."""
    numpy_dtype = to_numpy(dtype)
    lowest = np.nextafter(np.array(-1.0, numpy_dtype), np.array(0.0, numpy_dtype))
    u = uniform(key, shape, dtype, lowest, 1.0, "normal")
    if scale is not None:
        factor = lax.mul(scale, _constant(shape_of(scale), np.sqrt(2), dtype))
        return lax.mul(lax.erf_inv(u), _bounds_to(factor, tuple(shape), dtype, "scale", "normal"))
    return lax.mul(_constant(tuple(shape), np.sqrt(2), dtype), lax.erf_inv(u))


def truncated_normal(key, lower, upper, shape, dtype: str):
    """Normal values in the open interval ``(lower, upper)``: erf_inv of a uniform draw between
    the bounds' images under erf, clamped strictly inside the bounds."""
    shape = tuple(shape)
    sqrt2 = np.sqrt(np.asarray(2.0, to_numpy(dtype)))
    lower = lax.convert_element_type(as_operand(lower, dtype), dtype)
    upper = lax.convert_element_type(as_operand(upper, dtype), dtype)
    # NOTE: XLA's simplifier turns the division by the constant sqrt(2) into a multiplication
    # by its rounded reciprocal; the bounds' images under erf are JAX's only that way.
    reciprocal = np.asarray(1.0, to_numpy(dtype)) / sqrt2
    a = _erf(lax.mul(lower, _constant(shape_of(lower), reciprocal, dtype)))
    b = _erf(lax.mul(upper, _constant(shape_of(upper), reciprocal, dtype)))
    u = uniform(key, shape, dtype, a, b, "truncated_normal")
    out = lax.mul(_constant(shape, sqrt2, dtype), lax.erf_inv(u))
    low = _nudged(lower, np.inf, shape, dtype)
    high = _nudged(upper, -np.inf, shape, dtype)
    return lax.min(lax.max(out, low), high)


def _nudged(bound, towards, shape, dtype: str):
    """The float next to ``bound`` (no gradient) towards ``towards``, broadcast to ``shape``."""
    bound = stop_gradient(bound)
    step = lax.nextafter(bound, _constant(shape_of(bound), towards, dtype))
    return _bounds_to(step, shape, dtype, "bound", "truncated_normal")


def gumbel(key, shape, dtype: str, mode: str = "low"):
    """Gumbel values: -log(-log(u)) with u uniform in [tiny, 1) ("low"), or u built from two
    uniform draws for twice the resolution near 1 ("high")."""
    shape = tuple(shape)
    info = ml_dtypes.finfo(to_numpy(dtype))
    if mode == "low":
        u = uniform(key, shape, dtype, info.tiny, 1.0, "gumbel")
        return lax.neg(_log(lax.neg(_log(u))))
    both = uniform(key, (2,) + shape, dtype, 0.0, 1.0, "gumbel")
    high, low = (lax.reshape(lax.slice(both, (index,) + (0,) * len(shape), (index + 1,) + shape), shape)
                 for index in (0, 1))
    finer = lax.add(lax.fma(_constant(shape, 2.0 ** -info.nmant, dtype), low, high),
                    _constant(shape, info.tiny, dtype))
    x = lax.select(lax.ge(high, _constant(shape, 0.5, dtype)), high, finer)
    return lax.neg(_log(lax.neg(_log1p(lax.neg(x)))))


def exponential(key, shape, dtype: str):
    """Exponential values: -log1p(-u) for u uniform in [0, 1)."""
    u = uniform(key, shape, dtype, 0.0, 1.0, "exponential")
    return lax.neg(_log1p(lax.neg(u)))
