"""The inverse trigonometric and hyperbolic functions of complex numbers (asin, acos, atan,
asinh, acosh, atanh), written with the IR's real ops on the (real, imaginary) parts like
lax_complex.py, so kernels, sharding and derivatives are the real ops'.

Each function is computed for |x| + i|y| (the first quadrant) and the signs are put back by the
function's symmetries (odd in x, conjugate-symmetric in y), which gives C99's (and the Array API
standard's) results for signed zeros, infinities and NaNs. The first-quadrant arcsine follows
Hull, Fairgrieve and Tang (ACM TOMS 23(3), 1997): with r = |z + 1|, s = |z - 1|, A = (r + s)/2,
Re asin = atan2(x, D) and Re acos = atan2(D, x) for a D free of cancellation in each region, and
Im asin = log(A + sqrt(A^2 - 1)) through log1p of A - 1 near A = 1. The arctangent uses
Re atanh = log1p(4x / ((1 - x)^2 + y^2)) / 4, Im atanh = atan2(2y, (1 - x)(1 + x) - y^2) / 2,
and x/|z|^2 + i pi/2 once |z| is large enough for the squares to overflow.
"""

from __future__ import annotations

import math

from .lax_complex import _add, _constant, _mul, _op, _sub, make, parts
from .lax_complex import _compare as _cmp
from .operands import canonical_numpy, dtype_of, shape_of

# NOTE: the public names, re-exported through the numpy functions (jnp.arcsin, ...).
__all__ = ("acos", "acosh", "asin", "asinh", "atan", "atanh")

# Above this magnitude x*x overflows (as array_api_math's _LARGE).
_LARGE = {"f32": 1e18, "f64": 1e150}


def _c(like, value):
    return _constant(like, value)


def _div(a, b):
    return _op("div", a, b)


def _select(pred, a, b):
    return _op("select", pred, a, b)


def _hypot(a, b):
    return _op("abs", make(a, b))


def _is_inf(x):
    return _cmp(_op("abs", x), _c(x, math.inf), "eq")


def _is_nan(x):
    return _cmp(x, x, "ne")


def _negative_sign(x):
    """True where the sign bit of ``x`` is set (-0.0 and negative NaNs included)."""
    integer = {"f32": "i32", "f64": "i64"}[dtype_of(x).name]
    bits = _op("bitcast_convert_type", x, new_dtype=integer)
    zero = _op("broadcast_in_dim", canonical_numpy(0, integer), shape=tuple(shape_of(x)), broadcast_dimensions=())
    return _cmp(bits, zero, "lt")


def _with_sign_of(magnitude, sign_source):
    return _select(_negative_sign(sign_source), _op("neg", magnitude), magnitude)


def _hull_terms(x, y):
    """r = |z + 1|, s = |z - 1|, A = (r + s) / 2 and r + x + 1 of x + iy."""
    one = _c(x, 1.0)
    r, s = _hypot(_add(x, one), y), _hypot(_sub(x, one), y)
    big_a = _add(_mul(_c(x, 0.5), r), _mul(_c(x, 0.5), s))
    return r, s, big_a, _add(_add(r, x), one)


def _cosine_term(x, y, s, big_a, r_term):
    """D = A cos(Re asin), free of cancellation in each region: x well below A, x <= 1, x > 1."""
    one, half, a_plus_x = _c(x, 1.0), _c(x, 0.5), _add(big_a, x)
    small = _mul(_op("sqrt", _sub(big_a, x)), _op("sqrt", a_plus_x))
    inside = _op("sqrt", _mul(_mul(half, a_plus_x), _add(_div(_mul(y, y), r_term), _add(s, _sub(one, x)))))
    outside = _mul(y, _op("sqrt", _mul(half, _add(_div(a_plus_x, r_term), _div(a_plus_x, _add(s, _sub(x, one)))))))
    b_small = _cmp(_div(x, big_a), _c(x, 0.6417), "le")
    return _select(b_small, small, _select(_cmp(x, one, "le"), inside, outside))


def _arccosh_of_a(x, y, s, big_a, r_term):
    """Im asin = log(A + sqrt(A^2 - 1)), through log1p of A - 1 near A = 1 (as y * t inside the
    unit interval, where y^2 underflows for tiny y) and as log A + log1p(sqrt(1 - 1/A^2)) far."""
    one, half = _c(x, 1.0), _c(x, 0.5)
    t_inside = _mul(half, _add(_div(y, r_term), _div(y, _add(s, _sub(one, x)))))
    sqrt_inside = _mul(_op("sqrt", y), _op("sqrt", _mul(t_inside, _add(big_a, one))))
    near_inside = _op("log1p", _add(_mul(y, t_inside), sqrt_inside))
    a_minus_one = _mul(half, _add(_div(_mul(y, y), r_term), _add(s, _sub(x, one))))
    near_outside = _op("log1p", _add(a_minus_one, _op("sqrt", _mul(a_minus_one, _add(big_a, one)))))
    reciprocal = _div(one, big_a)
    far = _add(_op("log", big_a), _op("log1p", _op("sqrt", _mul(_sub(one, reciprocal), _add(one, reciprocal)))))
    near = _select(_cmp(x, one, "lt"), near_inside, near_outside)
    return _select(_cmp(big_a, _c(x, 1.5), "le"), near, far)


def _asin_first_quadrant(x, y):
    """(Re asin, Re acos, Im asin) of x + iy for x, y >= 0 (NaNs pass through)."""
    r, s, big_a, r_term = _hull_terms(x, y)
    d = _cosine_term(x, y, s, big_a, r_term)
    imaginary = _arccosh_of_a(x, y, s, big_a, r_term)
    # an infinite part: the arguments tend to arg(z), the imaginary part to +inf
    infinite = _op("or", _is_inf(x), _is_inf(y))
    real_asin = _select(infinite, _op("atan2", x, y), _op("atan2", x, d))
    real_acos = _select(infinite, _op("atan2", y, x), _op("atan2", d, x))
    return real_asin, real_acos, _select(infinite, _c(x, math.inf), imaginary)


def asin(z):
    x, y = parts(z)
    real, _, imaginary = _asin_first_quadrant(_op("abs", x), _op("abs", y))
    return make(_with_sign_of(real, x), _with_sign_of(imaginary, y))


def acos(z):
    x, y = parts(z)
    _, real, imaginary = _asin_first_quadrant(_op("abs", x), _op("abs", y))
    real = _select(_negative_sign(x), _sub(_c(x, math.pi), real), real)
    return make(real, _op("neg", _with_sign_of(imaginary, y)))


def asinh(z):
    """-i asin(iz): the first-quadrant arcsine of |y| + i|x|, parts swapped."""
    x, y = parts(z)
    real, _, imaginary = _asin_first_quadrant(_op("abs", y), _op("abs", x))
    return make(_with_sign_of(imaginary, x), _with_sign_of(real, y))


def acosh(z):
    """i acos(z) for y >= +0, -i acos(z) below: Re = |Im acos|, Im = Re acos with y's sign."""
    x, y = parts(z)
    _, real, imaginary = _asin_first_quadrant(_op("abs", x), _op("abs", y))
    real = _select(_negative_sign(x), _sub(_c(x, math.pi), real), real)
    return make(imaginary, _with_sign_of(real, y))


def _atanh_first_quadrant(x, y):
    """(Re, Im) of atanh(x + iy) for x, y >= 0 (NaNs pass through)."""
    one = _c(x, 1.0)
    one_minus_x = _sub(one, x)
    squares = _add(_mul(one_minus_x, one_minus_x), _mul(y, y))
    real = _mul(_c(x, 0.25), _op("log1p", _div(_mul(_c(x, 4.0), x), squares)))
    imaginary = _mul(_c(x, 0.5), _op("atan2", _add(y, y), _sub(_mul(one_minus_x, _add(one, x)), _mul(y, y))))
    magnitude = _hypot(x, y)
    large = _cmp(magnitude, _c(x, _LARGE[dtype_of(x).name]), "gt")
    half_pi = _c(x, math.pi / 2)
    # NOTE: x / |z| times 1 / |z|, not (x / |z|) / |z|, which compiles to x / |z|^2 (XLA's
    # rewrite, compiler/optimize/xla_arithmetic.py) and overflows
    real = _select(large, _mul(_div(x, magnitude), _div(one, magnitude)), real)
    imaginary = _select(large, half_pi, imaginary)
    # a zero real part stays +0 (even beside a NaN); an infinite part gives +0 + i pi/2, with a
    # NaN imaginary part beside an infinite real part (C99's catanh)
    real = _select(_cmp(x, _c(x, 0), "eq"), _c(x, 0), real)
    infinite = _op("or", _is_inf(x), _is_inf(y))
    real = _select(infinite, _c(x, 0), real)
    imaginary = _select(infinite, _select(_is_nan(y), y, half_pi), imaginary)
    return real, imaginary


def atanh(z):
    x, y = parts(z)
    real, imaginary = _atanh_first_quadrant(_op("abs", x), _op("abs", y))
    return make(_with_sign_of(real, x), _with_sign_of(imaginary, y))


def atan(z):
    """-i atanh(iz): the first-quadrant atanh of |y| + i|x|, parts swapped."""
    x, y = parts(z)
    real, imaginary = _atanh_first_quadrant(_op("abs", y), _op("abs", x))
    return make(_with_sign_of(imaginary, x), _with_sign_of(real, y))
