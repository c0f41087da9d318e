"""jax.numpy's polynomial helpers on coefficient arrays (highest power first): ``polyval`` by
Horner's rule, ``polyadd``/``polysub``, ``polymul`` (a full convolution), ``polyder`` and
``polyint`` (one multiplication or division by the exact integer factors of each power)."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from .arguments import as_array_argument, is_inexact_dtype

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "polyadd",
    "polyder",
    "polyint",
    "polymul",
    "polysub",
    "polyval",
)


def _coefficients(value, function: str, name: str):
    value = jnp.asarray(as_array_argument(value, function))
    if value.ndim != 1:
        raise ValueError(f"{function}: {name} must be a 1-d array of coefficients, got shape {value.shape}")
    return value


def _inexact(value):
    if is_inexact_dtype(value.dtype):
        return value
    return value.astype(jnp.result_type(value.dtype, jnp.float32) if value.dtype != np.bool_ else jnp.float32)


def polyval(p, x, *, unroll: int = 16):
    """The polynomial with coefficients ``p`` evaluated at ``x`` (Horner's rule)."""
    p = _coefficients(p, "polyval", "p")
    x = jnp.asarray(as_array_argument(x, "polyval"))
    dtype = jnp.result_type(p.dtype, x.dtype)
    result = jnp.zeros(x.shape, dtype=dtype)
    for index in range(p.shape[0]):
        result = result * x + p[index]
    return result


def _aligned(a1, a2, function: str):
    a1, a2 = _coefficients(a1, function, "a1"), _coefficients(a2, function, "a2")
    length = max(a1.shape[0], a2.shape[0])
    a1 = jnp.pad(a1, (length - a1.shape[0], 0))
    a2 = jnp.pad(a2, (length - a2.shape[0], 0))
    return a1, a2


def _leading_axis_sum(a1, a2, function: str):
    """JAX's polyadd on arrays of any rank: the shorter operand (along axis 0) is added to the
    last rows of the longer one, broadcasting the rest."""
    a1, a2 = jnp.asarray(as_array_argument(a1, function)), jnp.asarray(as_array_argument(a2, function))
    if a1.ndim == 1 and a2.ndim == 1:
        a1, a2 = _aligned(a1, a2, function)
        return a1 + a2
    dtype = jnp.result_type(a1, a2)
    a1, a2 = a1.astype(dtype), a2.astype(dtype)
    if a2.shape[0] > a1.shape[0]:
        a1, a2 = a2, a1
    return a1.at[a1.shape[0] - a2.shape[0]:].add(a2)


def polyadd(a1, a2):
    """The sum of two polynomials (coefficients along axis 0)."""
    return _leading_axis_sum(a1, a2, "polyadd")


def polysub(a1, a2):
    """The difference of two polynomials (coefficients along axis 0)."""
    a2 = jnp.asarray(as_array_argument(a2, "polysub"))
    return _leading_axis_sum(a1, -a2, "polysub")


def _without_leading_zeros(value, trim: bool):
    if not trim:
        return value
    from .rearranging import trim_zeros

    return trim_zeros(value, trim="f")


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials."""
    a1, a2 = _coefficients(a1, "polymul", "a1"), _coefficients(a2, "polymul", "a2")
    a1, a2 = _without_leading_zeros(a1, trim_leading_zeros), _without_leading_zeros(a2, trim_leading_zeros)
    if not a1.shape[0]:
        a1 = jnp.zeros((1,), a1.dtype)
    if not a2.shape[0]:
        a2 = jnp.zeros((1,), a2.dtype)
    dtype = jnp.result_type(a1.dtype, a2.dtype)
    return jnp.convolve(a1.astype(dtype), a2.astype(dtype))


def _order(m, function: str) -> int:
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"Order of derivative must be positive, got m={m}" if function == "polyder"
                         else "Order of integral must be positive (see polyder)")
    return m


def polyder(p, m: int = 1):
    """The ``m``-th derivative of the polynomial ``p``."""
    p = _inexact(_coefficients(p, "polyder", "p"))
    m = _order(m, "polyder")
    if m == 0:
        return p
    degrees = np.arange(p.shape[0] - 1, m - 1, -1)
    factors = np.ones(degrees.shape, np.int64)
    for step in range(m):
        factors *= degrees - step
    return p[: p.shape[0] - m] * jnp.asarray(factors, dtype=p.dtype)


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of ``p``, with integration constants ``k`` (0 by default)."""
    p = _inexact(_coefficients(p, "polyint", "p"))
    m = _order(m, "polyint")
    if m == 0:
        return p
    constants = jnp.ravel(jnp.asarray(0 if k is None else k, dtype=p.dtype))
    if constants.shape[0] == 1:
        constants = jnp.full((m,), constants[0], dtype=p.dtype)
    if constants.shape[0] != m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    degrees = np.arange(p.shape[0] + m)[::-1]
    divisors = np.ones(degrees.shape, np.int64)
    for step in range(m):
        divisors *= np.maximum(1, degrees - step)
    return jnp.true_divide(jnp.concatenate([p, constants]), jnp.asarray(divisors, dtype=p.dtype))
