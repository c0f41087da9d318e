"""float32 tan as XLA's CPU code gets it from the C library: glibc 2.36's ``tanf``, computed with
numpy's IEEE-exact float32/float64 operations and integer arithmetic, so the bits are the same on
every CPU.

glibc reduces x by pi/2 as its sinf does (``libm_sincosf``: one fused multiply-subtract below
120 (here unfused: glibc builds tanf without FMA), the bits of 4/pi above), splits the float64 remainder into two float32 parts, and runs Sun's
fdlibm float kernel (13 odd coefficients, the pi/4 - x transform above 0.6744, a corrected
-1/tan for odd quadrants) in float32 arithmetic without fused multiply-adds, with glibc's
first-order shortcut within 2^-13 of pi/4. ``compiler/frontend/random/libm_tan.py`` spells the
same kernel in IR ops for the samplers. Equal to glibc's ``tanf`` over dense sweeps and to JAX
0.10.2's values (tests/api/test_trig_f32.py).
"""

from __future__ import annotations

import numpy as np

from .float_math import word
from .libm_sincosf import _reduce_fast, _reduce_large

# fdlibm's odd coefficients of tan(x)/x - 1 (Sun Microsystems, freely redistributable), as bits
T = [word(bits) for bits in (0x3EAAAAAB, 0x3E088889, 0x3D5D0DD1, 0x3CB327A4, 0x3C11371F, 0x3B6B6916,
                              0x3ABEDE48, 0x3A1A26C8, 0x398137B9, 0x38A3F445, 0x3895C07A, 0xB79BAE5F,
                              0x37D95384)]
PIO4, PIO4_LOW = word(0x3F490FDA), word(0x33222168)
SMALL_BITS, TINY_BITS, BIG_BITS = 0x3F490FDA, 0x39000000, 0x3F2CA140  # pi/4, 2^-13, 0.6744


def tan(x: np.ndarray) -> np.ndarray:
    """glibc's ``tanf`` of every element of float32 ``x``."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    magnitude = bits & np.uint32(0x7FFFFFFF)
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        fast_r, fast_n = _reduce_fast(wide, fused=False)
        large_r, large_n = _reduce_large(bits)
        large_r = np.where(bits >> np.uint32(31) != 0, -large_r, large_r)
        fast = np.abs(x) < np.float32(120)
        reduced = np.where(fast, fast_r, large_r)
        n = np.where(fast, fast_n, large_n)
        head = reduced.astype(np.float32)
        tail = (reduced - head.astype(np.float64)).astype(np.float32)
        small = magnitude <= np.uint32(SMALL_BITS)
        odd = np.where(small | (n & 1 == 0), np.float32(1), np.float32(-1))
        result = _kernel(np.where(small, x, head), np.where(small, np.float32(0), tail), odd)
        return np.where(magnitude >= np.uint32(0x7F800000), x - x, result).astype(np.float32)


def _kernel(x, y, odd):
    """fdlibm's k_tanf: tan(x + y) (odd = 1) or -1/tan(x + y) (odd = -1), |x + y| <= pi/4."""
    one, two = np.float32(1), np.float32(2)
    given = x
    bits = x.view(np.uint32)
    magnitude = bits & np.uint32(0x7FFFFFFF)
    big = magnitude >= np.uint32(BIG_BITS)
    negative = bits >> np.uint32(31) != 0
    sign = np.where(negative, np.float32(-1), one)
    # above 0.6744, tan(x) = tan(pi/4 - (pi/4 - x)), the difference in two parts
    reflected = (PIO4 - np.where(negative, -x, x)) + (PIO4_LOW - np.where(negative, -y, y))
    x = np.where(big, reflected, x)
    y = np.where(big, np.float32(0), y)
    z = x * x
    w = z * z
    r = T[1] + w * (T[3] + w * (T[5] + w * (T[7] + w * (T[9] + w * T[11]))))
    v = z * (T[2] + w * (T[4] + w * (T[6] + w * (T[8] + w * (T[10] + w * T[12])))))
    s = z * x
    r = y + z * (s * (r + v) + y)
    r = r + T[0] * s
    w = x + r
    reflected_result = sign * (odd - two * (x - (w * w / (w + odd) - r)))
    first_order = (sign * odd) * (one - (two * odd) * x)  # glibc: within 2^-13 of pi/4
    reflected_result = np.where(np.abs(x) < np.float32(2.0 ** -13), first_order, reflected_result)
    result = np.where(big, reflected_result, np.where(odd > 0, w, _corrected_inverse(x, r, w)))
    return np.where(magnitude < np.uint32(TINY_BITS), _tiny(given, odd), result)


def _corrected_inverse(x, r, w):
    """-1/(x + r) to under an ulp: the high bits of w and of -1/w, and a correction."""
    def high_part(value):
        return (value.view(np.uint32) & np.uint32(0xFFFFF000)).view(np.float32)

    z = high_part(w)
    v = r - (z - x)  # z + v = x + r
    a = np.float32(-1) / w
    t = high_part(a)
    s = np.float32(1) + t * z
    return t + a * (s + t * v)


def _tiny(x, odd):
    """tan(x) = x below 2^-13; -1/x in odd quadrants (+inf at zero)."""
    inverse = np.where(x == 0, np.float32(np.inf), np.float32(-1) / x)
    return np.where(odd > 0, x, inverse)
