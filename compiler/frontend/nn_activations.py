"""The rest of jax.nn's activations and normalisers: the exponential-linear family, the hard and
sparse piecewise ones, gated units, ``standardize`` and ``logmeanexp``.

Each is written with meshjit.numpy, so it promotes, broadcasts, shards and differentiates as
those functions do; the formulas are JAX's, so values agree with JAX's to rounding.
"""

from __future__ import annotations

import math

from . import lax_ops as lax
from . import numpy_api as jnp
from .nn import relu6, sigmoid, softplus
from .numpy_api.arguments import array_operand, normalize_axes
from .operands import shape_of
from .scipy.special import logsumexp

# NOTE: the public names, re-exported by the facade (``meshjit.nn``).
__all__ = (
    "celu",
    "elu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "log1mexp",
    "logmeanexp",
    "mish",
    "selu",
    "soft_sign",
    "sparse_plus",
    "sparse_sigmoid",
    "squareplus",
    "standardize",
    "tanh",
)

# The self-normalising constants of Klambauer et al. (2017).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def identity(x):
    """``x`` as an array."""
    return array_operand(x, "identity")


def tanh(x):
    """The hyperbolic tangent, as ``jnp.tanh``."""
    return jnp.tanh(x)


def elu(x, alpha=1.0):
    """``x`` for positive inputs, ``alpha * (exp(x) - 1)`` otherwise (the exponent sees only the
    non-positive inputs, so large ones never overflow it)."""
    operand = array_operand(x, "elu")
    positive = jnp.greater(operand, 0)
    return jnp.where(positive, operand, jnp.multiply(alpha, jnp.expm1(jnp.where(positive, 0.0, operand))))


def celu(x, alpha=1.0):
    """The continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    operand = array_operand(x, "celu")
    negative_part = jnp.expm1(jnp.divide(jnp.minimum(operand, 0.0), alpha))
    return jnp.add(jnp.maximum(operand, 0.0), jnp.multiply(alpha, negative_part))


def selu(x):
    """The scaled ELU with the self-normalising ``alpha`` and ``scale``."""
    return jnp.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def hard_tanh(x):
    """``x`` clipped to [-1, 1]."""
    operand = array_operand(x, "hard_tanh")
    return jnp.where(jnp.greater(operand, 1), 1, jnp.where(jnp.less(operand, -1), -1, operand))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``: a piecewise linear sigmoid."""
    return jnp.divide(relu6(jnp.add(array_operand(x, "hard_sigmoid"), 3.0)), 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard_swish)."""
    operand = array_operand(x, "hard_silu")
    return jnp.multiply(operand, hard_sigmoid(operand))


hard_swish = hard_silu


def soft_sign(x):
    """``x / (|x| + 1)``."""
    operand = array_operand(x, "soft_sign")
    return jnp.divide(operand, jnp.add(jnp.abs(operand), 1))


def sparse_plus(x):
    """0 below -1, ``x`` above 1, and the parabola ``(x + 1)**2 / 4`` joining them."""
    operand = array_operand(x, "sparse_plus")
    parabola = jnp.divide(jnp.square(jnp.add(operand, 1.0)), 4)
    return jnp.where(
        jnp.less_equal(operand, -1.0), 0.0, jnp.where(jnp.greater_equal(operand, 1.0), operand, parabola)
    )


def sparse_sigmoid(x):
    """``(x + 1) / 2`` clipped to [0, 1]."""
    return jnp.multiply(0.5, jnp.clip(jnp.add(array_operand(x, "sparse_sigmoid"), 1.0), 0.0, 2.0))


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth relu."""
    operand = array_operand(x, "squareplus")
    return jnp.divide(jnp.add(operand, jnp.sqrt(jnp.add(jnp.square(operand), b))), 2)


def mish(x):
    """``x * tanh(softplus(x))``."""
    operand = array_operand(x, "mish")
    return jnp.multiply(operand, jnp.tanh(softplus(operand)))


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate at both ends: through ``expm1`` below log 2
    and ``log1p`` above."""
    operand = array_operand(x, "log1mexp")
    near_zero = jnp.log(jnp.negative(jnp.expm1(jnp.negative(operand))))
    far = jnp.log1p(jnp.negative(jnp.exp(jnp.negative(operand))))
    return jnp.where(jnp.less(operand, math.log(2.0)), near_zero, far)


def glu(x, axis: int = -1):
    """The gated linear unit: the first half of ``axis`` times the sigmoid of the second."""
    operand = array_operand(x, "glu")
    size = shape_of(operand)[normalize_axes(axis, len(shape_of(operand)), "glu")[0]]
    if size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size}")
    first, second = jnp.split(operand, 2, axis)
    return jnp.multiply(first, sigmoid(second))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``log(mean(exp(x)))`` over ``axis``, computed stably (the count honours ``where``)."""
    operand = array_operand(x, "logmeanexp")
    total = logsumexp(operand, axis=axis, where=where, keepdims=keepdims)
    if where is None:
        axes = normalize_axes(axis, len(shape_of(operand)), "logmeanexp")
        count = math.prod(shape_of(operand)[dim] for dim in axes)
        return jnp.subtract(total, jnp.log(jnp.asarray(count, dtype=total.dtype)))
    mask = jnp.broadcast_to(jnp.asarray(where, dtype=bool), shape_of(operand))
    count = jnp.sum(mask, axis=axis, keepdims=keepdims, dtype=total.dtype)
    return jnp.subtract(total, jnp.log(count))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``. The variance is
    ``mean(x**2) - mean(x)**2`` clipped at 0 (``algorithm="fast"``, JAX's default) or
    ``mean((x - mean)**2)`` (``"stable"``)."""
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    operand = array_operand(x, "standardize")
    if mean is None:
        mean = jnp.mean(operand, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            centred = jnp.square(jnp.subtract(operand, mean))
            variance = jnp.mean(centred, axis, keepdims=True, where=where)
        else:
            squares = jnp.mean(jnp.square(operand), axis, keepdims=True, where=where)
            variance = jnp.clip(jnp.subtract(squares, jnp.square(mean)), 0)
    return jnp.multiply(jnp.subtract(operand, mean), lax.rsqrt(jnp.add(variance, epsilon)))
