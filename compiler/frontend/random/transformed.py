"""The samplers that transform one uniform, normal or exponential draw (no rejection loops):
rademacher, laplace, logistic, cauchy, lognormal, rayleigh, maxwell, double_sided_maxwell,
weibull_min, pareto, geometric, triangular and wald, each with JAX 0.10.2's formula and op order
and XLA's CPU arithmetic (its log, log1p and exp, its simplifier's rewrites, the multiply-adds
LLVM fuses), so that the numbers are JAX's.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..operands import as_operand, dtype_of, shape_of, x64
from ..promotion import default_float
from ..lax_branches import optimization_barrier
from ..vmap.transform import traced_batch_size
from . import libm_pow, libm_tan, xla_float32
from .bits import split
from .continuous import _bounds_to, _constant, _log, _log1p, exponential, normal, uniform
from .discrete import bernoulli


def _exp(x):
    return {"f32": xla_float32.exp, "f64": xla_float32.exp_f64}.get(dtype_of(x).name, lax.exp)(x)


def _parameter(value, shape, dtype: str, name: str, function: str):
    """A distribution's parameter in ``dtype``, broadcast to ``shape``."""
    return _bounds_to(lax.convert_element_type(as_operand(value, dtype), dtype), shape, dtype, name, function)


def _divide(numerator, denominator, shape, dtype: str, name: str, function: str):
    """``numerator / denominator`` with ``denominator`` broadcast to ``shape``. XLA's simplifier
    turns a division by a broadcast into a multiplication by the broadcast of its reciprocal
    (``numerator * broadcast(1 / denominator)``), whose rounding differs: the numbers are JAX's
    only that way. A divisor of the full shape is divided by."""
    if _size(shape_of(denominator)) < _size(shape):
        one = _constant(shape_of(denominator), 1.0, dtype)
        return lax.mul(numerator, _bounds_to(lax.div(one, denominator), shape, dtype, name, function))
    return lax.div(numerator, _bounds_to(denominator, shape, dtype, name, function))


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def rademacher(key, shape, dtype: str):
    """-1 or 1 with equal probability: ``2 * bernoulli(0.5) - 1`` in ``dtype``."""
    shape = tuple(shape)
    work = "i32" if dtype == "bool" else dtype  # JAX's 2 * b - 1 of bools is an int (never 0)
    half = np.asarray(0.5, to_numpy(default_float(x64())))  # JAX's p=0.5 is a weak float
    flips = lax.convert_element_type(bernoulli(key, half, shape, "low"), work)
    signs = lax.sub(lax.mul(_constant(shape, 2, work), flips), _constant(shape, 1, work))
    return lax.convert_element_type(signs, dtype)


def laplace(key, shape, dtype: str):
    """Laplace values: ``sign(u) * log1p(-|u|)`` for u uniform in (-1, 1)."""
    shape = tuple(shape)
    lowest = -1.0 + float(np.finfo(to_numpy(dtype)).epsneg)
    u = uniform(key, shape, dtype, lowest, 1.0, "laplace")
    return lax.mul(lax.sign(u), _log1p(lax.neg(lax.abs(u))))


def logistic(key, shape, dtype: str):
    """Logistic values: ``log(u) - log1p(-u)`` for u uniform in [tiny, 1)."""
    shape = tuple(shape)
    u = uniform(key, shape, dtype, float(np.finfo(to_numpy(dtype)).tiny), 1.0, "logistic")
    return lax.sub(_log(u), _log1p(lax.neg(u)))


def cauchy(key, shape, dtype: str):
    """Cauchy values: ``tan(pi * (u - 1/2))`` for u uniform in [eps, 1), tan being the C
    library's as XLA calls it (``libm_tan``)."""
    shape = tuple(shape)
    u = uniform(key, shape, dtype, float(np.finfo(to_numpy(dtype)).eps), 1.0, "cauchy")
    angle = lax.mul(_constant(shape, np.pi, dtype), lax.sub(u, _constant(shape, 0.5, dtype)))
    # NOTE: float32's lax.tan is glibc's tanf already (a kernel helper, lowering/codegen_trig.py);
    # float64's is numpy's, so the fdlibm kernel spelled in IR ops stands in for the C library's
    return libm_tan.tan(angle) if dtype == "f64" else lax.tan(angle)


def lognormal(key, sigma, shape, dtype: str):
    """Log-normal values: ``exp(z * sigma)`` for z standard normal (sigma folded into normal's
    sqrt(2), as XLA does)."""
    shape = tuple(shape)
    sigma = lax.convert_element_type(as_operand(sigma, dtype), dtype)
    return _exp(normal(key, shape, dtype, scale=sigma))


def rayleigh(key, scale, shape, dtype: str):
    """Rayleigh values: ``scale * sqrt(-2 log u)`` for u uniform in [0, 1)."""
    shape = tuple(shape)
    u = uniform(key, shape, dtype, 0.0, 1.0, "rayleigh")
    scale = _parameter(scale, shape, dtype, "scale", "rayleigh")
    return lax.mul(scale, lax.sqrt(lax.mul(_log(u), _constant(shape, -2.0, dtype))))


_YNN_REDUCTION_ELEMENTS = 4096  # XLA's CPU backend gives larger reductions to YNNPACK


def maxwell(key, shape, dtype: str):
    """One-sided Maxwell values: the Euclidean norm of three standard normal values."""
    shape = tuple(shape)
    draws = normal(key, shape + (3,), dtype)
    components = [lax.reshape(lax.slice(draws, (0,) * len(shape) + (index,), shape + (index + 1,)), shape)
                  for index in range(3)]
    a, b, c = (lax.mul(component, component) for component in components)
    # under vmap the reduction runs over every example at once (for a key batched with them)
    if 3 * _size(shape) * traced_batch_size() > _YNN_REDUCTION_ELEMENTS:
        # NOTE: XLA's CPU backend hands a reduction of more than 4096 elements to YNNPACK, which
        # adds the three squares as (x0^2 + x2^2) + x1^2, unfused: the barrier keeps meshjit's
        # contraction of products into fused multiply-adds (what XLA's own loops do) away
        a, b, c = optimization_barrier((a, b, c))
        total = lax.add(lax.add(a, c), b)
    elif dtype == "f32":
        # NOTE: XLA's own loop starts from x1^2 and LLVM fuses the other squares into fmas.
        total = lax.fma(components[2], components[2], lax.fma(components[0], components[0], b))
    else:
        total = lax.fma(components[2], components[2], lax.fma(components[1], components[1], a))
    return lax.sqrt(total)


def double_sided_maxwell(key, loc, scale, shape, dtype: str):
    """Maxwell values with a random sign, scaled and shifted: ``sign * maxwell * scale + loc``
    (the result's shape is ``shape`` followed by the parameters' broadcast shape, as in JAX)."""
    shape = tuple(shape)
    maxwell_key, sign_key = _split_two(key)
    magnitude = maxwell(maxwell_key, shape, dtype)
    sign = rademacher(sign_key, shape, dtype)
    loc = _parameter(loc, shape, dtype, "loc", "double_sided_maxwell")
    scale = _parameter(scale, shape, dtype, "scale", "double_sided_maxwell")
    return lax.fma(lax.mul(sign, magnitude), scale, loc)


def _split_two(key):
    keys = split(key, (2,))
    return tuple(lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)) for index in (0, 1))


def weibull_min(key, scale, concentration, shape, dtype: str):
    """Weibull values by the inverse CDF: ``(-log1p(-u)) ** (1 / concentration) * scale``, with
    u of ``shape`` broadcast against the parameters (numpy's rule, as JAX's jnp arithmetic)."""
    draw = tuple(shape)
    shape = tuple(np.broadcast_shapes(draw, shape_of(scale), shape_of(concentration)))
    u = _bounds_to(uniform(key, draw, dtype, 0.0, 1.0, "weibull_min"), shape, dtype, "shape", "weibull_min")
    concentration = _parameter(concentration, shape, dtype, "concentration", "weibull_min")
    scale = _parameter(scale, shape, dtype, "scale", "weibull_min")
    exponent = lax.div(_constant(shape, 1.0, dtype), concentration)
    power = libm_pow.pow if dtype in ("f32", "f64") else lax.pow  # C's pow, as XLA calls it
    return lax.mul(power(lax.neg(_log1p(lax.neg(u))), exponent), scale)


def pareto(key, b, shape, dtype: str):
    """Pareto values: ``exp(e / b)`` for e standard exponential."""
    shape = tuple(shape)
    b = lax.convert_element_type(as_operand(b, dtype), dtype)
    return _exp(_divide(exponential(key, shape, dtype), b, shape, dtype, "b", "pareto"))


def geometric(key, p, shape, dtype: str):
    """Geometric values (trials to the first success): ``floor(log u / log1p(-p)) + 1``."""
    shape = tuple(shape)
    float_dtype = dtype_of(p).name
    u = uniform(key, shape, float_dtype, 0.0, 1.0, "geometric")
    u = lax.select(lax.eq(u, _constant(shape, 0.0, float_dtype)), _constant(shape, 1.0, float_dtype), u)
    p = lax.convert_element_type(as_operand(p, float_dtype), float_dtype)
    ratio = _divide(_log(u), _log1p(lax.neg(p)), shape, float_dtype, "p", "geometric")
    trials = lax.add(lax.floor(ratio), _constant(shape, 1.0, float_dtype))
    return lax.convert_element_type(trials, dtype)


def triangular(key, left, mode, right, shape, dtype: str):
    """Triangular values by the inverse CDF, on either side of the mode."""
    shape = tuple(shape)
    left, mode, right = (lax.convert_element_type(as_operand(value, dtype), dtype) for value in (left, mode, right))
    # NOTE: XLA computes the parameters' differences at their broadcast shape (it hoists
    # elementwise ops above broadcasts), so the mode's fraction of the width divides by a
    # broadcast when the parameters are smaller than the result
    common = tuple(np.broadcast_shapes(shape_of(left), shape_of(mode), shape_of(right)))
    low, peak, high = (_bounds_to(value, common, dtype, name, "triangular")
                       for value, name in ((left, "left"), (mode, "mode"), (right, "right")))
    rise = _bounds_to(lax.sub(peak, low), shape, dtype, "mode", "triangular")
    fraction = _divide(rise, lax.sub(high, low), shape, dtype, "right", "triangular")
    left = _parameter(left, shape, dtype, "left", "triangular")
    right = _parameter(right, shape, dtype, "right", "triangular")
    mode = _parameter(mode, shape, dtype, "mode", "triangular")
    width = lax.sub(right, left)
    u = uniform(key, shape, dtype, 0.0, 1.0, "triangular")
    below = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    rest = lax.sub(_constant(shape, 1.0, dtype), u)
    above = lax.sub(right, lax.sqrt(lax.mul(lax.mul(rest, width), lax.sub(right, mode))))
    return lax.select(lax.lt(u, fraction), below, above)


def wald(key, mean, shape, dtype: str):
    """Wald (inverse Gaussian) values by Michael, Schucany and Haas' transformation of a normal
    and a uniform draw."""
    shape = tuple(shape)
    normal_key, uniform_key = _split_two(key)
    mean = _parameter(mean, shape, dtype, "mean", "wald")
    v = normal(normal_key, shape, dtype)
    z = uniform(uniform_key, shape, dtype, 0.0, 1.0, "wald")
    y = lax.mul(v, v)
    y_squared = lax.mul(y, y)
    mean_squared = lax.mul(mean, mean)
    four_mean = lax.mul(_constant(shape, 4.0, dtype), mean)
    root = lax.sqrt(lax.fma(four_mean, y, lax.mul(mean_squared, y_squared)))
    half = _constant(shape, 0.5, dtype)
    x = lax.add(mean, lax.mul(lax.mul(mean_squared, y), half))
    x = lax.fma(lax.neg(lax.mul(mean, half)), root, x)
    accept = lax.le(z, lax.div(mean, lax.add(mean, x)))
    return lax.select(accept, x, lax.div(mean_squared, x))
