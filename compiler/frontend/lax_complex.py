"""The transcendental functions of complex numbers, written with the IR's real ops on the
(real, imaginary) parts, so their kernels, sharding and derivatives are the real ops' (and never
numpy's complex libm). ``lax.exp``, ``lax.log``, ... call these for complex operands.

Formulas (x + iy, all in the parts' float type):
  exp  = e^x cos y + i e^x sin y;  expm1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y
  log  = log|z| + i atan2(y, x), |z| as XLA's abs, log1p((L - 1)(L + 1) + S^2) / 2 near |z| = 1
  sqrt = t + i y/(2t) for x >= 0, |y|/(2t) + i copysign(t, y) otherwise, t = sqrt((|x| + |z|)/2)
  sin  = sin x cosh y + i cos x sinh y;  cos = cos x cosh y - i sin x sinh y
  sinh = sinh x cos y + i cosh x sin y;  cosh = cosh x cos y + i sinh x sin y
  tanh = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y), and sign(x) + 2 sin 2y e^-2|x| i once cosh 2x
         overflows;  tan = -i tanh(iz)
  log1p = log|1 + z| + i atan2(y, 1 + x), |1 + z|^2 - 1 = x(x + 2) + y^2 through log1p near 0
  pow  = exp(w log z), with 0^w = 0 for Re w > 0 and 0^0 = 1
sinh uses expm1, so small imaginary parts keep their precision.

Special values are XLA's (JAX 0.10.2's), which follow C99's Annex G and the Array API standard:
a zero imaginary part stays a real +0 result in exp, expm1, sinh, cosh and tanh (inf + 0i -> inf
+ 0i, NaN + 0i -> NaN + 0i), sqrt(x +- inf i) = inf +- inf i (x not NaN), tanh(+-inf + iy)
= +-1 +- 0i. Where XLA's results leave the standard's (NaN beside an infinity in log and sqrt)
meshjit keeps XLA's.
The inverse functions are in lax_complex_inverse.py.
"""

from __future__ import annotations

from meshjit.ir.dtypes import COMPONENT_DTYPE

from .operands import as_operand, canonical_numpy, dtype_of, shape_of
from .trace import bind

# NOTE: the public names, re-exported by ``meshjit.lax``.
__all__ = ("complex", "conj", "imag", "real")


def _op(name: str, *operands, **attrs):
    return bind(name, list(operands), attrs or None)[0]


def _constant(like, value):
    """``value`` as an array of ``like``'s shape and (real) dtype."""
    dtype = dtype_of(like).name
    return _op("broadcast_in_dim", canonical_numpy(value, dtype), shape=tuple(shape_of(like)), broadcast_dimensions=())


def parts(z):
    return _op("real", z), _op("imag", z)


def make(real, imaginary):
    return _op("complex", real, imaginary)


def _mul(a, b):
    return _op("mul", a, b)


def _add(a, b):
    return _op("add", a, b)


def _sub(a, b):
    return _op("sub", a, b)


def _half(x):
    return _mul(x, _constant(x, 0.5))


def _cosh_sinh(y):
    cosh = _half(_add(_op("exp", y), _op("exp", _op("neg", y))))
    sinh = _half(_sub(_op("expm1", y), _op("expm1", _op("neg", y))))
    return cosh, sinh


def _compare(a, b, direction):
    return _op("compare", a, b, direction=direction)


def _is_zero(x):
    return _compare(x, _constant(x, 0), "eq")


def _plus_zero(x):
    """``x + 0``: -0 becomes +0, everything else (NaN included) is unchanged."""
    return _add(x, _constant(x, 0))


def _zero_where_zero(y, value):
    """``value``, and +0 where ``y`` is a zero of either sign (XLA's imaginary part of exp, sinh,
    cosh, tanh and expm1 for a real argument: +0 even for x = inf or NaN)."""
    return _op("select", _is_zero(y), _constant(y, 0), value)


def exp(z):
    x, y = parts(z)
    scale = _op("exp", x)
    return make(_mul(scale, _op("cos", y)), _zero_where_zero(y, _mul(scale, _op("sin", y))))


def _log_magnitude(x, y):
    """log|x + iy|; near |z| = 1 it is log1p((L - 1)(L + 1) + S^2) / 2 of the larger and smaller
    part magnitudes L, S, which keeps a result as small as y^2 / 2."""
    magnitude = _op("abs", make(x, y))
    larger, smaller = _op("max", _op("abs", x), _op("abs", y)), _op("min", _op("abs", x), _op("abs", y))
    one = _constant(x, 1)
    near_one = _half(_op("log1p", _add(_mul(_sub(larger, one), _add(larger, one)), _mul(smaller, smaller))))
    near = _op("and", _compare(magnitude, _constant(x, 0.5), "gt"), _compare(magnitude, _constant(x, 2), "lt"))
    return _op("select", near, near_one, _op("log", magnitude))


def log(z):
    x, y = parts(z)
    return make(_log_magnitude(x, y), _op("atan2", y, x))


def sqrt(z):
    x, y = parts(z)
    y = _plus_zero(y)  # XLA takes an imaginary -0 as +0 here
    magnitude = _op("abs", z)
    t = _op("sqrt", _half(_add(_op("abs", x), magnitude)))
    zero = _constant(x, 0)
    is_zero = _compare(magnitude, zero, "eq")
    twice_t = _op("select", is_zero, _constant(x, 1), _add(t, t))
    other = _op("div", _op("abs", y), twice_t)
    signed_t = _op("select", _compare(y, zero, "lt"), _op("neg", t), t)
    non_negative = _compare(x, zero, "ge")
    real = _op("select", non_negative, t, other)
    imaginary = _op("select", non_negative, _op("div", y, twice_t), signed_t)
    # an infinite imaginary part: +inf + i y for any real part but NaN (C99's csqrt; NaN + inf i
    # gives NaN + NaN i as in XLA, and so do inf + NaN i and -inf + NaN i)
    infinite = _op("and", _compare(_op("abs", y), _constant(y, float("inf")), "eq"), _compare(x, x, "eq"))
    real = _op("select", infinite, _op("abs", y), _op("select", is_zero, zero, real))
    return make(real, _op("select", infinite, y, _op("select", is_zero, y, imaginary)))


def rsqrt(z):
    root = sqrt(z)
    one = make(_constant(_op("real", root), 1), _constant(_op("real", root), 0))
    return _op("div", one, root)


def sin(z):
    """sin x cosh y + i cos x sinh y; a zero real part gives +0 (XLA's)."""
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(y)
    real = _op("select", _is_zero(x), _constant(x, 0), _mul(_op("sin", x), cosh))
    return make(real, _mul(_op("cos", x), sinh))


def cos(z):
    """cos x cosh y - i sin x sinh y; a zero real part gives an imaginary +0 (XLA's)."""
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(y)
    imaginary = _op("select", _is_zero(x), _constant(x, 0), _op("neg", _mul(_op("sin", x), sinh)))
    return make(_mul(_op("cos", x), cosh), imaginary)


def sinh(z):
    """sinh x cos y + i cosh x sin y; +0 for a zero real part's real result and a zero
    imaginary part's imaginary result (XLA's, which keeps inf + 0i and NaN + 0i real)."""
    x, y = parts(z)
    cosh, sinh_x = _cosh_sinh(x)
    real = _plus_zero(_mul(sinh_x, _op("cos", y)))
    return make(real, _zero_where_zero(y, _mul(cosh, _op("sin", y))))


def cosh(z):
    """cosh x cos y + i sinh x sin y, with an imaginary +0 where x or y is zero (XLA's)."""
    x, y = parts(z)
    cosh_x, sinh_x = _cosh_sinh(x)
    imaginary = _zero_where_zero(y, _plus_zero(_mul(sinh_x, _op("sin", y))))
    return make(_mul(cosh_x, _op("cos", y)), imaginary)


def tanh(z):
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(_add(x, x))
    sine = _op("sin", _add(y, y))
    denominator = _add(cosh, _op("cos", _add(y, y)))
    real = _op("div", sinh, denominator)
    imaginary = _op("div", sine, denominator)
    # past |x| = 20 (f32) or 40 (f64) tanh is +-1 to the type's precision and cosh 2x overflows:
    # the imaginary part is 2 sin 2y e^-2|x| there (+0 for an infinite x and a non-finite y)
    limit = 20.0 if dtype_of(x).name == "f32" else 40.0
    magnitude = _op("abs", x)
    finite_y = _op("is_finite", y)
    large = _op("or", _op("and", _compare(magnitude, _constant(x, limit), "gt"), finite_y),
                _compare(magnitude, _constant(x, float("inf")), "eq"))
    tail = _mul(_mul(_constant(x, 2.0), sine), _op("exp", _mul(_constant(x, -2.0), magnitude)))
    real = _op("select", large, _op("sign", x), real)
    imaginary = _op("select", large, _op("select", finite_y, tail, _constant(x, 0)), imaginary)
    return make(real, _zero_where_zero(y, imaginary))


def tan(z):
    """-i tanh(iz)."""
    x, y = parts(z)
    u, v = parts(tanh(make(_op("neg", y), x)))
    return make(v, _op("neg", u))


def expm1(z):
    x, y = parts(z)
    # e^z - 1 = (e^x cos y - 1) + i e^x sin y, with e^x cos y - 1 = expm1(x) cos y + (cos y - 1)
    # and cos y - 1 = -2 sin^2(y/2), which keeps small arguments exact
    half_sine = _op("sin", _half(y))
    cos_minus_one = _mul(_constant(y, -2.0), _mul(half_sine, half_sine))
    real = _plus_zero(_add(_mul(_op("expm1", x), _op("cos", y)), cos_minus_one))
    negative_infinity = _compare(x, _constant(x, float("-inf")), "eq")
    real = _op("select", negative_infinity, _constant(x, -1.0), real)
    imaginary = _zero_where_zero(y, _mul(_op("exp", x), _op("sin", y)))
    # e^-inf = 0 times a non-finite sin y: -1 + 0i (the Array API standard's expm1)
    vanishing = _op("and", negative_infinity, _op("not", _op("is_finite", y)))
    return make(real, _op("select", vanishing, _constant(y, 0), imaginary))


def exp2(z):
    """e^(z ln 2)."""
    x, y = parts(z)
    ln2 = _constant(x, 0.6931471805599453)
    return exp(make(_mul(x, ln2), _mul(y, ln2)))


def logistic(z):
    """1 / (1 + e^-z)."""
    x, y = parts(z)
    one = make(_constant(x, 1), _constant(x, 0))
    return _op("div", one, _add(one, exp(make(_op("neg", x), _op("neg", y)))))


def log1p(z):
    x, y = parts(z)
    one_plus_x = _add(x, _constant(x, 1))
    # |1 + z|^2 = 1 + (2x + x^2 + y^2): log1p keeps the small ones exact; far from 0 (where the
    # squares may overflow) log|1 + z| is as accurate
    small = _op("compare", _op("abs", z), _constant(x, 0.5), direction="lt")
    near = _half(_op("log1p", _add(_mul(x, _add(x, _constant(x, 2))), _mul(y, y))))
    far = _log_magnitude(one_plus_x, y)
    return make(_op("select", small, near, far), _op("atan2", y, one_plus_x))


def power(base, exponent):
    """``base ** exponent`` for complex operands of one shape and dtype: exp(w log z), with
    z^0 = 1 for every z (NaN and infinities included) and, at z = 0, 0 for a real w > 0 and NaN
    for any other w (JAX's)."""
    result = exp(_op("mul", exponent, log(base)))
    real_base, imaginary_base = parts(base)
    zero = _constant(real_base, 0)
    base_is_zero = _op("and", _is_zero(real_base), _is_zero(imaginary_base))
    real_exponent, imaginary_exponent = parts(exponent)
    exponent_is_zero = _op("and", _is_zero(real_exponent), _is_zero(imaginary_exponent))
    vanishing = _op("and", _compare(real_exponent, zero, "gt"), _is_zero(imaginary_exponent))
    nan = _constant(real_base, float("nan"))
    at_zero = _op("select", vanishing, make(zero, zero), make(nan, nan))
    result = _op("select", base_is_zero, at_zero, result)
    return _op("select", exponent_is_zero, make(_constant(real_base, 1), zero), result)


# The lax functions that take complex operands through the compositions above.
UNARY = {"exp": exp, "log": log, "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos,
         "tanh": tanh, "expm1": expm1, "log1p": log1p, "tan": tan, "exp2": exp2, "logistic": logistic}


def is_complex_operand(value) -> bool:
    return dtype_of(value).name in COMPONENT_DTYPE


# -- lax's complex functions -----------------------------------------------------------------------
def real(x):
    """The real part of a complex array (lax.real: complex operands only)."""
    return _op("real", as_operand(x))


def imag(x):
    """The imaginary part of a complex array (lax.imag: complex operands only)."""
    return _op("imag", as_operand(x))


def conj(x):
    """The complex conjugate; a real operand becomes complex first, as lax.conj does."""
    x = as_operand(x)
    if not is_complex_operand(x):
        target = "c128" if dtype_of(x).name == "f64" else "c64"
        x = _op("convert", x, new_dtype=target)
    return _op("conj", x)


def complex(x, y):  # noqa: A001 - lax's name
    """``x + i y`` from two float arrays of one shape and dtype (a Python scalar takes the other
    operand's type)."""
    x, y = (_constant(y, x) if type(x) in (int, float) else as_operand(x),
            _constant(x, y) if type(y) in (int, float) else as_operand(y))
    return _op("complex", x, y)
