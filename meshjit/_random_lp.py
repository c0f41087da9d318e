"""jax.random's generalized_normal and ball (uniform in the unit Lp ball, after Barthe,
Guédon, Mendelson and Naor, arXiv:math/0503650), composed from gamma, rademacher and
exponential draws in JAX's order, so the values are JAX's where those are."""

from __future__ import annotations

import operator

from meshjit.compiler.frontend import numpy_api as jnp

from meshjit.ir.dtypes import to_numpy

from ._random import _constrained, _float_dtype, _shape, exponential, split
from ._random_gamma import gamma
from ._random_transformed import rademacher
from .jit_api import jit


@jit(static_argnums=(2, 3))
def _generalized_normal(key, p, shape, dtype):
    keys = split(key)
    magnitude = gamma(keys[0], 1 / p, shape, dtype)
    sign = rademacher(keys[1], shape, dtype)
    return sign * magnitude ** (1 / p)


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
    """Floats of density proportional to ``exp(-|x|^p)`` (``p > 0``)."""
    name = to_numpy(_float_dtype(dtype, "generalized_normal"))
    result = _generalized_normal(key, p, _shape(shape, "generalized_normal"), name)
    return _constrained(result, out_sharding, "generalized_normal")


@jit(static_argnums=(2, 3, 4))
def _ball(key, p, d, shape, dtype):
    first, second = split(key)
    point = _generalized_normal(first, p, (*shape, d), dtype)
    extra = exponential(second, shape, dtype)
    return point / (((jnp.abs(point) ** p).sum(-1) + extra) ** (1 / p))[..., None]


def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
    """Points uniform in the unit Lp ball of dimension ``d``: shape ``(*shape, d)``."""
    name = to_numpy(_float_dtype(dtype, "ball"))
    d = operator.index(d)
    result = _ball(key, p, d, _shape(shape, "ball"), name)
    return _constrained(result, out_sharding, "ball")
