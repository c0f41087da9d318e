"""tan for cauchy, in IR ops (+, -, *, / and selects, each IEEE-exact), so that the reference
interpreter and the fused kernels give the same bits on every CPU.

XLA's CPU code calls the C library's ``tanf`` and ``tan``. The float32 function here is
glibc 2.36's ``tanf`` (what JAX 0.10.2 runs on Linux), operation for operation: the reduction by
pi/2 in float64, then Sun's fdlibm float kernel (13 odd coefficients, the pi/4 - x transform
above 0.6744, a corrected -1/tan) with glibc's shortcut within 2^-13 of pi/4. It equals glibc's
``tanf`` for every float32 below 3 pi/4 in magnitude (all 2.15e9 of them, checked in C).
The float64 function is fdlibm's ``__kernel_tan`` after a double-double reduction: within one
ulp, and not glibc's ``tan`` (IBM's table-driven one) bit for bit; see docs/random.md.
Both serve cauchy's arguments, pi * (u - 1/2); beyond 3 pi/4 in magnitude they return NaN.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.float_math import word

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of

# fdlibm's odd coefficients of tan(x)/x - 1 (Sun Microsystems, freely redistributable), as bit
# patterns: float32 (k_tanf.c) and float64 (k_tan.c)
_T_F32 = (0x3EAAAAAB, 0x3E088889, 0x3D5D0DD1, 0x3CB327A4, 0x3C11371F, 0x3B6B6916, 0x3ABEDE48,
          0x3A1A26C8, 0x398137B9, 0x38A3F445, 0x3895C07A, 0xB79BAE5F, 0x37D95384)
_T_F64 = (0x3FD5555555555563, 0x3FC111111110FE7A, 0x3FABA1BA1BB341FE, 0x3F9664F48406D637,
          0x3F8226E3E96E8493, 0x3F6D6D22C9560328, 0x3F57DBC8FEE08315, 0x3F4344D8F2F26501,
          0x3F3026F71A8D1068, 0x3F147E88A03792A6, 0x3F12B80F32F0A7E9, 0xBEF375CBDB605373,
          0x3EFB2A7074BF7AD4)


def _word64(bits: int) -> np.float64:
    return np.array(bits, np.uint64).view(np.float64)[()]


# per dtype: coefficients, pi/4 in two parts, the kernel's thresholds (tiny: tan x = x; big:
# reflect about pi/4), the reduction's threshold, the domain's end (3 pi/4), the mask keeping
# the high bits of a value (the corrected -1/tan splits w and -1/w there)
_F32 = dict(coefficients=[word(c) for c in _T_F32], pio4=word(0x3F490FDA), pio4_low=word(0x33222168),
            tiny=word(0x39000000), big=word(0x3F2CA140), reduce=word(0x3F490FDA), end=word(0x4016CBE4),
            bits="u32", high_mask=np.uint32(0xFFFFF000), numpy=np.float32)
_F64 = dict(coefficients=[_word64(c) for c in _T_F64], pio4=_word64(0x3FE921FB54442D18),
            pio4_low=_word64(0x3C81A62633145C07), tiny=2.0 ** -28, big=_word64(0x3FE5942800000000),
            reduce=_word64(0x3FE921FB54442D18), end=_word64(0x4002D97C7F3321D2), bits="u64",
            high_mask=np.uint64(0xFFFFFFFF00000000), numpy=np.float64)
_PIO2_HIGH, _PIO2_LOW = np.float64(np.pi / 2), _word64(0x3C91A62633145C07)  # pi/2 = high + low + O(2^-107)


def tan(x):
    """tan(x) for float32 (glibc's tanf, bit for bit) or float64 (fdlibm's kernel) with
    |x| < 3 pi/4; NaN beyond."""
    spec = _F32 if dtype_of(x).name == "f32" else _F64
    reduce = lax.gt(lax.abs(x), _full(x, spec["reduce"]))
    head, tail = (_reduce_f32 if spec is _F32 else _reduce_f64)(x)
    kernel_x = lax.select(reduce, head, x)
    kernel_y = lax.select(reduce, tail, _full(x, 0.0))
    odd = lax.select(reduce, _full(x, -1.0), _full(x, 1.0))  # tan or -1/tan of the reduced value
    result = _kernel(kernel_x, kernel_y, odd, spec)
    return lax.select(lax.lt(lax.abs(x), _full(x, spec["end"])), result, _full(x, np.nan))


def _full(like, value):
    dtype = dtype_of(like).name
    return lax.full(shape_of(like), np.asarray(value, _F32["numpy"] if dtype == "f32" else _F64["numpy"]), dtype)


def _sign(x):
    return lax.select(lax.gt(x, _full(x, 0.0)), _full(x, 1.0), _full(x, -1.0))


def _reduce_f32(x):
    """x -+ pi/2 as glibc's tanf reduces it: in float64, then split into two float32 parts."""
    wide = lax.convert_element_type(x, "f64")
    sign = _sign(wide)
    reduced = lax.sub(lax.sub(wide, lax.mul(sign, _full(wide, _PIO2_HIGH))), lax.mul(sign, _full(wide, _PIO2_LOW)))
    head = lax.convert_element_type(reduced, "f32")
    tail = lax.convert_element_type(lax.sub(reduced, lax.convert_element_type(head, "f64")), "f32")
    return head, tail


def _reduce_f64(x):
    """x -+ pi/2 as a double-double: x - pi/2's high part is exact (pi/4 < |x| < 3 pi/4)."""
    sign = _sign(x)
    low = lax.mul(sign, _full(x, _PIO2_LOW))
    exact = lax.sub(x, lax.mul(sign, _full(x, _PIO2_HIGH)))
    head = lax.sub(exact, low)
    return head, lax.sub(lax.sub(exact, head), low)


def _kernel(x, y, odd, spec):
    """fdlibm's kernel: tan(x + y) (odd = 1) or -1/tan(x + y) (odd = -1), |x + y| <= pi/4."""
    given = x
    magnitude = lax.abs(x)
    big = lax.ge(magnitude, _full(x, spec["big"]))
    negative = lax.lt(x, _full(x, 0.0))
    # above 0.6744, tan(x) = tan(pi/4 - (pi/4 - x)), the difference evaluated in two parts
    reflected = lax.add(lax.sub(_full(x, spec["pio4"]), lax.select(negative, lax.neg(x), x)),
                        lax.sub(_full(x, spec["pio4_low"]), lax.select(negative, lax.neg(y), y)))
    x = lax.select(big, reflected, x)
    y = lax.select(big, _full(x, 0.0), y)
    r, w = _polynomial(x, y, spec["coefficients"])
    sign = lax.select(negative, _full(x, -1.0), _full(x, 1.0))
    reflected_result = lax.mul(sign, lax.sub(odd, lax.mul(_full(x, 2.0), lax.sub(
        x, lax.sub(lax.div(lax.mul(w, w), lax.add(w, odd)), r)))))
    if spec is _F32:  # glibc's tanf: within 2^-13 of pi/4, the first-order value
        near = lax.lt(lax.abs(x), _full(x, 2.0 ** -13))
        first_order = lax.mul(lax.mul(sign, odd), lax.sub(_full(x, 1.0), lax.mul(lax.mul(_full(x, 2.0), odd), x)))
        reflected_result = lax.select(near, first_order, reflected_result)
    odd_result = _corrected_inverse(x, r, w, spec)
    result = lax.select(big, reflected_result, lax.select(lax.gt(odd, _full(x, 0.0)), w, odd_result))
    return lax.select(lax.lt(magnitude, _full(x, spec["tiny"])), _tiny(given, odd), result)


def _polynomial(x, y, t):
    """r with tan(x + y) = x + r, and w = x + r: x^3 (T1 + ...) split into odd and even powers of
    x^2, as fdlibm groups them."""
    z = lax.mul(x, x)
    w = lax.mul(z, z)

    def chain(indices):
        value = _full(x, t[indices[-1]])
        for index in reversed(indices[:-1]):
            value = lax.add(_full(x, t[index]), lax.mul(w, value))
        return value

    r = chain([1, 3, 5, 7, 9, 11])
    v = lax.mul(z, chain([2, 4, 6, 8, 10, 12]))
    s = lax.mul(z, x)
    r = lax.add(y, lax.mul(z, lax.add(lax.mul(s, lax.add(r, v)), y)))
    r = lax.add(r, lax.mul(_full(x, t[0]), s))
    return r, lax.add(x, r)


def _corrected_inverse(x, r, w, spec):
    """-1/(x + r) to under an ulp: the high bits of w and of -1/w, and a correction."""
    def high_part(value):
        bits = lax.bitcast_convert_type(value, spec["bits"])
        masked = lax.bitwise_and(bits, lax.full(shape_of(value), spec["high_mask"], spec["bits"]))
        return lax.bitcast_convert_type(masked, dtype_of(value).name)

    z = high_part(w)
    v = lax.sub(r, lax.sub(z, x))  # z + v = x + r
    a = lax.div(_full(x, -1.0), w)
    t = high_part(a)
    s = lax.add(_full(x, 1.0), lax.mul(t, z))
    return lax.add(t, lax.mul(a, lax.add(s, lax.mul(t, v))))


def _tiny(x, odd):
    """tan(x) = x below the tiny threshold; -1/x for the reduced case (+inf at zero)."""
    inverse = lax.select(lax.eq(x, _full(x, 0.0)), _full(x, np.inf), lax.div(_full(x, -1.0), x))
    return lax.select(lax.gt(odd, _full(x, 0.0)), x, inverse)
