"""The transcendental functions of complex numbers, written with the IR's real ops on the
(real, imaginary) parts, so their kernels, sharding and derivatives are the real ops' (and never
numpy's complex libm). ``lax.exp``, ``lax.log``, ... call these for complex operands.

Formulas (x + iy, all in the parts' float type):
  exp  = e^x cos y + i e^x sin y
  log  = log|z| + i atan2(y, x), |z| as XLA's abs
  sqrt = t + i y/(2t) for x >= 0, |y|/(2t) + i copysign(t, y) otherwise, t = sqrt((|x| + |z|)/2)
  sin  = sin x cosh y + i cos x sinh y;  cos = cos x cosh y - i sin x sinh y
  tanh = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y), and sign(x) + 0i once cosh 2x overflows
  log1p = log|1 + z| + i atan2(y, 1 + x), |1 + z|^2 - 1 = x(x + 2) + y^2 through log1p near 0
  pow  = exp(w log z), with 0^w = 0 for Re w > 0 and 0^0 = 1
sinh uses expm1, so small imaginary parts keep their precision.
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


def exp(z):
    x, y = parts(z)
    scale = _op("exp", x)
    return make(_mul(scale, _op("cos", y)), _mul(scale, _op("sin", y)))


def log(z):
    x, y = parts(z)
    return make(_op("log", _op("abs", z)), _op("atan2", y, x))


def sqrt(z):
    x, y = parts(z)
    magnitude = _op("abs", z)
    t = _op("sqrt", _half(_add(_op("abs", x), magnitude)))
    zero = _constant(x, 0)
    is_zero = _op("compare", magnitude, zero, direction="eq")
    twice_t = _op("select", is_zero, _constant(x, 1), _add(t, t))
    other = _op("div", _op("abs", y), twice_t)
    signed_t = _op("select", _op("compare", y, zero, direction="lt"), _op("neg", t), t)
    non_negative = _op("compare", x, zero, direction="ge")
    real = _op("select", non_negative, t, other)
    imaginary = _op("select", non_negative, _op("div", y, twice_t), signed_t)
    return make(_op("select", is_zero, zero, real), _op("select", is_zero, y, imaginary))


def rsqrt(z):
    root = sqrt(z)
    one = make(_constant(_op("real", root), 1), _constant(_op("real", root), 0))
    return _op("div", one, root)


def sin(z):
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(y)
    return make(_mul(_op("sin", x), cosh), _mul(_op("cos", x), sinh))


def cos(z):
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(y)
    return make(_mul(_op("cos", x), cosh), _op("neg", _mul(_op("sin", x), sinh)))


def tanh(z):
    x, y = parts(z)
    cosh, sinh = _cosh_sinh(_add(x, x))
    denominator = _add(cosh, _op("cos", _add(y, y)))
    real = _op("div", sinh, denominator)
    imaginary = _op("div", _op("sin", _add(y, y)), denominator)
    # past |x| = 20 (f32) or 40 (f64) tanh is +-1 to the type's precision, and cosh 2x overflows
    limit = 20.0 if dtype_of(x).name == "f32" else 40.0
    large = _op("compare", _op("abs", x), _constant(x, limit), direction="gt")
    real = _op("select", large, _op("sign", x), real)
    imaginary = _op("select", large, _mul(_constant(x, 0), _op("sin", y)), imaginary)
    return make(real, imaginary)


def expm1(z):
    x, y = parts(z)
    # e^z - 1 = (e^x cos y - 1) + i e^x sin y, with e^x cos y - 1 = expm1(x) cos y + (cos y - 1)
    # and cos y - 1 = -2 sin^2(y/2), which keeps small arguments exact
    half_sine = _op("sin", _half(y))
    cos_minus_one = _mul(_constant(y, -2.0), _mul(half_sine, half_sine))
    real = _add(_mul(_op("expm1", x), _op("cos", y)), cos_minus_one)
    return make(real, _mul(_op("exp", x), _op("sin", y)))


def log1p(z):
    x, y = parts(z)
    one_plus_x = _add(x, _constant(x, 1))
    # |1 + z|^2 = 1 + (2x + x^2 + y^2): log1p keeps the small ones exact; far from 0 (where the
    # squares may overflow) log|1 + z| is as accurate
    small = _op("compare", _op("abs", z), _constant(x, 0.5), direction="lt")
    near = _half(_op("log1p", _add(_mul(x, _add(x, _constant(x, 2))), _mul(y, y))))
    far = _op("log", _op("abs", make(one_plus_x, y)))
    return make(_op("select", small, near, far), _op("atan2", y, one_plus_x))


def power(base, exponent):
    """``base ** exponent`` for complex operands of one shape and dtype."""
    logarithm = log(base)
    result = exp(_op("mul", exponent, logarithm))
    real_base, imaginary_base = parts(base)
    zero = _constant(real_base, 0)
    base_is_zero = _op(
        "and",
        _op("compare", real_base, zero, direction="eq"),
        _op("compare", imaginary_base, zero, direction="eq"),
    )
    real_exponent, imaginary_exponent = parts(exponent)
    exponent_is_zero = _op(
        "and",
        _op("compare", real_exponent, zero, direction="eq"),
        _op("compare", imaginary_exponent, zero, direction="eq"),
    )
    one = make(_constant(real_base, 1), zero)
    vanishing = _op("compare", real_exponent, zero, direction="gt")
    at_zero = _op("select", exponent_is_zero, one, _op("select", vanishing, make(zero, zero), result))
    return _op("select", base_is_zero, at_zero, result)


# The lax functions that take complex operands through the compositions above.
UNARY = {"exp": exp, "log": log, "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos,
         "tanh": tanh, "expm1": expm1, "log1p": log1p}


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
