"""``jnp.sinc`` with JAX's derivatives at 0: at ``y = pi x = 0`` the k-th derivative of
``sin(y) / y`` is its Maclaurin coefficient (``(-1)^(k/2) / (k + 1)`` for even k, 0 for odd),
given through a custom_jvp; the chain rule multiplies in ``pi`` per order, so
``grad(grad(sinc))(0.)`` is ``-pi^2/3`` (a ``where`` alone would give 0)."""

from __future__ import annotations

import functools
import math

from meshjit.compiler.frontend.numpy_api import float_math
from meshjit.compiler.frontend.numpy_api.creation import full_like
from meshjit.compiler.frontend.numpy_api.elementwise import equal, multiply, where
from meshjit.custom_derivatives import custom_jvp


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _derivative_at_zero(order: int, y):
    return full_like(y, 0.0 if order % 2 else (-1) ** (order // 2) / (order + 1))


@_derivative_at_zero.defjvp
def _derivative_at_zero_jvp(order, primals, tangents):
    (y,), (tangent,) = primals, tangents
    return _derivative_at_zero(order, y), multiply(_derivative_at_zero(order + 1, y), tangent)


def sinc(x, /):
    """The normalised sinc, ``sin(pi x) / (pi x)``, 1 at 0, with every derivative at 0 exact."""
    x = float_math._inexact("sinc", x)
    return where(equal(x, 0), _derivative_at_zero(0, multiply(x, math.pi)), float_math.sinc(x))
