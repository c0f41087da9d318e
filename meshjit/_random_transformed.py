"""jax.random's samplers built on uniform, normal and exponential draws (rademacher, laplace,
lognormal, pareto, wald, ...), with JAX's parameter checks and broadcasting."""

from __future__ import annotations


import numpy as np

from meshjit.compiler.frontend import random as _random
from meshjit.compiler.frontend.numpy_api.arguments import dtype_argument
from meshjit.compiler.frontend.operands import dtype_of, is_array_like, shape_of, x64
from meshjit.compiler.frontend.promotion import default_float, default_int
from meshjit.ir.dtypes import to_numpy

from ._prng_keys import KEY_DTYPE
from ._prng_keys import PRNGKeyArray as PRNGKeyArray
from ._prng_keys import key_argument
from ._random import _check_broadcast, _check_impl, _float_dtype, _sampler, _shape


# --- transformations of uniform, normal and exponential draws -------------------------------------


def clone(key):
    """The same key (JAX's clone marks a key as reusable for key-reuse checking; it is the
    identity otherwise)."""
    return key


def key_dtype(impl_spec=None):
    """The dtype of typed keys of the PRNG implementation ``impl_spec`` (``key<fry>``)."""
    _check_impl(impl_spec, "key_dtype")
    return KEY_DTYPE


def _parameter_shape(value) -> tuple[int, ...]:
    return tuple(shape_of(value)) if is_array_like(value) else tuple(np.shape(value))


def _parameter(value):
    """A distribution parameter as an array (a Python scalar stays weakly typed)."""
    if is_array_like(value) or isinstance(value, (int, float, np.number)):
        return value
    return np.asarray(value)


def _check_safe_to_cast(function: str, dtype: str, *parameters) -> None:
    """JAX's TypePromotionError (a ValueError) for a parameter that the result's dtype cannot
    hold: a float64 array (with x64) for float32 results, or a complex number."""
    for value in parameters:
        if isinstance(value, complex) or (isinstance(value, np.ndarray) and value.dtype.kind == "c"):
            given = "complex128" if isinstance(value, complex) else value.dtype.name
            raise ValueError(f"In arguments to {function}, cannot safely cast argument of type {given} "
                             f"to {np.dtype(to_numpy(dtype))}")
        if type(value) in (int, float):  # noqa: E721 - np.float64 is a float subclass, and strong
            continue  # weakly typed: any float dtype holds it
        if dtype == "f32" and dtype_of(value).name == "f64":
            raise ValueError(f"In arguments to {function}, cannot safely cast argument of type float64 "
                             f"to float32")


def _result_shape(function: str, shape, *parameters) -> tuple[int, ...]:
    """JAX's result shape: ``shape``, or the parameters' broadcast shape when it is None;
    ``shape`` must be that broadcast (ValueError)."""
    shapes = [_parameter_shape(value) for value in parameters]
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
    shape = _shape(shape, function)
    _check_broadcast(function, shape, *shapes)
    return shape


_rademacher = _sampler(_random.rademacher, (1, 2, 3))


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
    """-1 or 1 with equal probability (int32, or int64 with x64, unless ``dtype`` says)."""
    data, _ = key_argument("rademacher", key)
    name = default_int(x64()) if dtype is None else dtype_argument(dtype, "rademacher")
    return _rademacher(data, _shape(shape, "rademacher"), name, out_sharding)


def _simple_sampler(name: str, kind: str = "float"):
    """A sampler of ``(key, shape=(), dtype=None, *, out_sharding=None)``."""
    jitted = _sampler(getattr(_random, name), (1, 2, 3))

    def sample(key, shape=(), dtype=None, *, out_sharding=None):
        data, _ = key_argument(name, key)
        dtype_name = _float_dtype(dtype, name, kind)
        return jitted(data, _shape(shape, name), dtype_name, out_sharding)

    sample.__name__ = sample.__qualname__ = name
    return sample


laplace = _simple_sampler("laplace")
laplace.__doc__ = "Laplace-distributed floats (density exp(-|x|) / 2)."
logistic = _simple_sampler("logistic")
logistic.__doc__ = "Logistic-distributed floats (density e^-x / (1 + e^-x)^2)."
cauchy = _simple_sampler("cauchy")
cauchy.__doc__ = "Cauchy-distributed floats (density proportional to 1 / (x^2 + 1))."
maxwell = _simple_sampler("maxwell")
maxwell.__doc__ = "One-sided Maxwell floats: the norm of three standard normal values."


_lognormal = _sampler(_random.lognormal, (2, 3, 4))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None, *, out_sharding=None):
    """Floats whose logarithm is normal with standard deviation ``sigma``."""
    data, _ = key_argument("lognormal", key)
    name = _float_dtype(dtype, "lognormal", "float or complex")
    sigma = _parameter(sigma)
    _check_safe_to_cast("lognormal", name, sigma)
    shape = _result_shape("lognormal", shape, sigma)
    return _lognormal(data, sigma, shape, name, out_sharding)


def _one_parameter_sampler(name: str):
    """A sampler of ``(key, parameter, shape=None, dtype=None, *, out_sharding=None)``."""
    jitted = _sampler(getattr(_random, name), (2, 3, 4))

    def sample(key, value, shape=None, dtype=None, *, out_sharding=None):
        data, _ = key_argument(name, key)
        dtype_name = _float_dtype(dtype, name)
        value = _parameter(value)
        _check_safe_to_cast(name, dtype_name, value)
        return jitted(data, value, _result_shape(name, shape, value), dtype_name, out_sharding)

    sample.__name__ = sample.__qualname__ = name
    return sample


_rayleigh = _one_parameter_sampler("rayleigh")
_pareto = _one_parameter_sampler("pareto")
_wald = _one_parameter_sampler("wald")


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
    """Rayleigh-distributed floats with scale ``scale``."""
    return _rayleigh(key, scale, shape, dtype, out_sharding=out_sharding)


def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
    """Pareto-distributed floats (density b / x^(b + 1) on x >= 1)."""
    return _pareto(key, b, shape, dtype, out_sharding=out_sharding)


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
    """Wald (inverse Gaussian) floats with mean ``mean``."""
    return _wald(key, mean, shape, dtype, out_sharding=out_sharding)


_double_sided_maxwell = _sampler(_random.double_sided_maxwell, (3, 4))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Maxwell values with a random sign, times ``scale`` plus ``loc``; the result's shape is
    ``shape`` (or the parameters' shape when ``shape`` is empty) followed by the parameters'
    broadcast shape, as in JAX."""
    data, _ = key_argument("double_sided_maxwell", key)
    name = _float_dtype(dtype, "double_sided_maxwell")
    loc, scale = _parameter(loc), _parameter(scale)
    shapes = [_parameter_shape(loc), _parameter_shape(scale)]
    try:
        parameters = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
    shape = _shape(shape, "double_sided_maxwell") or parameters
    return _double_sided_maxwell(data, loc, scale, shape + parameters, name, None)


_weibull_min = _sampler(_random.weibull_min, (3, 4))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull-distributed floats (density proportional to x^(c-1) exp(-(x/scale)^c))."""
    data, _ = key_argument("weibull_min", key)
    name = _float_dtype(dtype, "weibull_min")
    scale, concentration = _parameter(scale), _parameter(concentration)
    shapes = [_parameter_shape(scale), _parameter_shape(concentration)]
    shape = _shape(shape, "weibull_min")
    try:  # JAX broadcasts the draw of ``shape`` with the parameters (numpy's rule)
        np.broadcast_shapes(shape, *shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={[shape, *shapes]}") from None
    return _weibull_min(data, scale, concentration, shape, name, None)


_geometric = _sampler(_random.geometric, (2, 3, 4))


def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
    """The number of Bernoulli(``p``) trials up to the first success (ints)."""
    data, _ = key_argument("geometric", key)
    name = default_int(x64()) if dtype is None else dtype_argument(dtype, "geometric")
    if name not in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {np.dtype(dtype)}")
    p = _parameter(p)
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.number)) and not is_array_like(p):
        raise TypeError(f"geometric requires ndarray or scalar arguments, got {type(p)} for p")
    if isinstance(p, int):
        p = float(p)  # JAX promotes p to an inexact type
    elif dtype_of(p).name not in ("f32", "f64"):
        p = np.asarray(p, to_numpy(default_float(x64())))
    return _geometric(data, p, _result_shape("geometric", shape, p), name, out_sharding)


_triangular = _sampler(_random.triangular, (4, 5, 6))


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
    """Triangular-distributed floats on ``[left, right]`` with peak ``mode``."""
    data, _ = key_argument("triangular", key)
    name = _float_dtype(dtype, "triangular")
    left, mode, right = _parameter(left), _parameter(mode), _parameter(right)
    _check_safe_to_cast("triangular", name, left, mode, right)
    shape = _result_shape("triangular", shape, left, mode, right)
    return _triangular(data, left, mode, right, shape, name, out_sharding)
