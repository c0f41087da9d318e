"""jax.scipy.special's functions written with meshjit.numpy's elementwise ops, so they
broadcast, shard (elementwise) and differentiate like any jnp code.

Integers and bools become the default float first (JAX's ``promote_args_inexact``). The
log-gamma family uses the Lanczos approximation (g = 7, nine terms) with the reflection
formula below 1/2; erfc and the normal distribution's tails use a Chebyshev-fitted
``erfc(z) = t exp(-z^2 + P(t))`` with ``t = 1 / (1 + z/2)`` (fractional error below 1.2e-7),
whose logarithm needs no exp, so ``log_ndtr`` stays finite far into the lower tail.
"""

from __future__ import annotations

import math

from .. import lax_ops as lax
from .. import nn
from ..autodiff.markers import stop_gradient
from .. import numpy_api as jnp
from ..operands import dtype_of
from ..numpy_api.arguments import as_array_argument, convert_operand, inexact_dtype, result_dtype, with_weak_type

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.special``).
__all__ = (
    "betainc", "betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "factorial", "gamma",
    "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
    "rel_entr", "softmax", "xlog1py", "xlogy",
)

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_ERFC_POLYNOMIAL = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
                    1.48851587, -0.82215223, 0.17087277)
_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def floats(function: str, *values) -> list:
    """The arguments in their promoted float dtype (weak when every argument is a weak scalar)."""
    operands = [as_array_argument(value, function) for value in values]
    dtype = inexact_dtype(result_dtype(*operands))
    return [with_weak_type(convert_operand(operand, dtype.name), dtype.weak) for operand in operands]


def _unary(function: str, kernel):
    def apply(x, /):
        (value,) = floats(function, x)
        return with_weak_type(kernel(value), dtype_of(value).weak)

    apply.__name__ = apply.__qualname__ = function
    return apply


# --- the log-gamma family --------------------------------------------------------------------


def _lanczos_sums(z):
    """``a = c0 + sum c_i / (z + i)`` and its derivative ``a' = -sum c_i / (z + i)^2``."""
    total, slope = _LANCZOS[0], 0.0
    for index, coefficient in enumerate(_LANCZOS[1:], start=1):
        denominator = z + index
        total = total + coefficient / denominator
        slope = slope - coefficient / (denominator * denominator)
    return total, slope


def _reflected(x):
    """Whether ``x`` takes the reflection formula, the argument the Lanczos series gets, and
    x where it is reflected (1/4 elsewhere, so the unused branch has no pole whose nan would
    leak into derivatives through where)."""
    reflect = x < 0.5
    return reflect, jnp.where(reflect, 1.0 - x, x), jnp.where(reflect, x, 0.25)


def _sin_pi_abs(x):
    """``|sin(pi x)|`` from x's distance to the nearest integer (exact period reduction)."""
    fraction = x - jnp.floor(x)
    return jnp.sin(math.pi * jnp.minimum(fraction, 1.0 - fraction))


def _gammaln(x):
    reflect, y, x = _reflected(x)
    z = y - 1.0
    total, _ = _lanczos_sums(z)
    t = z + (_LANCZOS_G + 0.5)
    positive = _HALF_LOG_TWO_PI + (z + 0.5) * jnp.log(t) - t + jnp.log(total)
    reflected = math.log(math.pi) - jnp.log(_sin_pi_abs(x)) - positive
    return jnp.where(reflect, reflected, positive)


def _digamma(x):
    pole = (x <= 0) & (x == jnp.floor(x))
    reflect, y, x = _reflected(x)
    z = y - 1.0
    total, slope = _lanczos_sums(z)
    t = z + (_LANCZOS_G + 0.5)
    positive = jnp.log(t) - _LANCZOS_G / t + slope / total
    # NOTE: tan has period pi, so the offset from the nearest integer keeps precision near poles
    offset = x - jnp.round(x)
    reflected = positive - math.pi / jnp.tan(math.pi * offset)
    return jnp.where(pole, math.nan, jnp.where(reflect, reflected, positive))


def _gammasgn(x):
    odd = jnp.remainder(jnp.floor(x), 2.0) == 1.0
    sign = jnp.where((x > 0) | ~odd, 1.0, -1.0)
    return jnp.where((x <= 0) & (x == jnp.floor(x)), math.nan, sign)


gammaln = _unary("gammaln", _gammaln)
digamma = _unary("digamma", _digamma)
gammasgn = _unary("gammasgn", _gammasgn)
gamma = _unary("gamma", lambda x: _gammasgn(x) * jnp.exp(_gammaln(x)))


def betaln(a, b):
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``."""
    a, b = floats("betaln", a, b)
    return _gammaln(a) + _gammaln(b) - _gammaln(a + b)


def factorial(n, exact: bool = False):
    """``n!`` as ``exp(gammaln(n + 1))`` (0 for negative n)."""
    if exact:
        raise ValueError("factorial with exact=True is only supported in NumPy/SciPy, not in JAX")
    (n,) = floats("factorial", n)
    return jnp.where(n < 0, 0.0, jnp.exp(_gammaln(n + 1.0)))


def multigammaln(a, d: int):
    """The log of the multivariate gamma function of dimension ``d``."""
    (a,) = floats("multigammaln", a)
    terms = [_gammaln(a - 0.5 * index) for index in range(d)]
    return sum(terms[1:], terms[0]) + d * (d - 1) / 4.0 * math.log(math.pi)


# --- erf, erfc and the normal distribution ---------------------------------------------------


def _log_erfc_nonnegative(z):
    """``log erfc(z)`` for ``z >= 0``, without computing erfc itself."""
    t = 1.0 / (1.0 + 0.5 * z)
    polynomial = _ERFC_POLYNOMIAL[-1]
    for coefficient in reversed(_ERFC_POLYNOMIAL[:-1]):
        polynomial = coefficient + t * polynomial
    return jnp.log(t) - z * z + polynomial


def _erfc(x):
    tail = jnp.exp(_log_erfc_nonnegative(jnp.abs(x)))
    return jnp.where(x < 0, 2.0 - tail, tail)


def _log_ndtr(x):
    tail = _log_erfc_nonnegative(jnp.abs(x) / math.sqrt(2.0)) - math.log(2.0)
    return jnp.where(x < 0, tail, jnp.log1p(-jnp.exp(tail)))


def _ndtr(x):
    tail = 0.5 * jnp.exp(_log_erfc_nonnegative(jnp.abs(x) / math.sqrt(2.0)))
    return jnp.where(x < 0, tail, 1.0 - tail)


erf = _unary("erf", lax.erf)
erfc = _unary("erfc", _erfc)
erfinv = _unary("erfinv", lax.erf_inv)
ndtr = _unary("ndtr", _ndtr)
log_ndtr = _unary("log_ndtr", _log_ndtr)


def _ndtri(p):
    """The normal quantile: erf_inv's estimate for the smaller tail, then two Newton steps
    on ``log_ndtr`` (erf_inv alone loses the digits of ``2p - 1`` near 0 and 1)."""
    tail = jnp.minimum(p, 1.0 - p)
    x = math.sqrt(2.0) * lax.erf_inv(2.0 * tail - 1.0)
    safe = jnp.where(tail > 0, x, -1.0)
    for _ in range(2):
        log_cdf = _log_ndtr(safe)
        log_density = -0.5 * safe * safe - _HALF_LOG_TWO_PI
        safe = safe - (log_cdf - jnp.log(jnp.where(tail > 0, tail, 1.0))) * jnp.exp(log_cdf - log_density)
    x = jnp.where(tail > 0, safe, -math.inf)
    x = jnp.where(p > 0.5, -x, x)
    return jnp.where((p < 0) | (p > 1), math.nan, x)


ndtri = _unary("ndtri", _ndtri)

# --- logistic, entropies ---------------------------------------------------------------------

expit = _unary("expit", lax.logistic)
logit = _unary("logit", lambda p: jnp.log(p / (1.0 - p)))


def xlogy(x, y):
    """``x * log(y)``, 0 where x is 0 (also in the gradient)."""
    x, y = floats("xlogy", x, y)
    zero = x == 0
    return jnp.where(zero, 0.0, x * jnp.log(jnp.where(zero, 1.0, y)))


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where x is 0 (also in the gradient)."""
    x, y = floats("xlog1py", x, y)
    zero = x == 0
    return jnp.where(zero, 0.0, x * jnp.log1p(jnp.where(zero, 0.0, y)))


def _entr(x):
    positive = x > 0
    entropy = -x * jnp.log(jnp.where(positive, x, 1.0))
    return jnp.where(positive, entropy, jnp.where(x == 0, 0.0, -math.inf))


entr = _unary("entr", _entr)


def rel_entr(x, y):
    """``x log(x / y)`` for positive x and y, 0 for x = 0 <= y, inf otherwise."""
    x, y = floats("rel_entr", x, y)
    both = (x > 0) & (y > 0)
    safe_x, safe_y = jnp.where(both, x, 1.0), jnp.where(both, y, 1.0)
    value = safe_x * jnp.log(safe_x / safe_y)
    return jnp.where(both, value, jnp.where((x == 0) & (y >= 0), 0.0, math.inf))


def kl_div(x, y):
    """``x log(x / y) - x + y`` for positive x and y, y for x = 0 <= y, inf otherwise."""
    x, y = floats("kl_div", x, y)
    both = (x > 0) & (y > 0)
    safe_x, safe_y = jnp.where(both, x, 1.0), jnp.where(both, y, 1.0)
    value = safe_x * jnp.log(safe_x / safe_y) - safe_x + safe_y
    return jnp.where(both, value, jnp.where((x == 0) & (y >= 0), y, math.inf))


# --- reductions ------------------------------------------------------------------------------


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis``, stably; with ``return_sign`` the pair (log of
    the absolute value, its sign), else negative sums give nan."""
    if where is not None:
        a = jnp.where(where, a, -math.inf)
    if b is None:
        result = nn.logsumexp(a, axis=axis, keepdims=keepdims)
        if not return_sign:
            return result
        # the sum of exponentials is 0 exactly where every term is exp(-inf)
        return result, jnp.where(jnp.isneginf(result), 0.0, 1.0).astype(result.dtype)
    (a, b) = floats("logsumexp", a, b)
    maximum = jnp.max(a, axis=axis, keepdims=True)
    maximum = jnp.where(jnp.isfinite(maximum), stop_gradient(maximum), 0.0)
    total = jnp.sum(b * jnp.exp(a - maximum), axis=axis, keepdims=keepdims)
    shift = maximum if keepdims else jnp.squeeze(maximum, axis=axis)
    sign = jnp.sign(total)
    if return_sign:
        return jnp.log(jnp.abs(total)) + shift, sign
    return jnp.where(sign < 0, math.nan, jnp.log(jnp.abs(total)) + shift)


softmax = nn.softmax
log_softmax = nn.log_softmax


# NOTE: the incomplete gamma and beta functions and the Bessel functions live in their own file,
# which reads the log-gamma family above
from .special_incomplete import betainc, gammainc, gammaincc, i0, i0e, i1, i1e  # noqa: E402, F401
