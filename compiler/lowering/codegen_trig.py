"""The kernels' float32 sin and cos helpers (``_sin_f32``, ``_cos_f32``) as Python source for
the prelude (codegen_math.py): glibc 2.36's ``sinf``/``cosf``, operation for operation as
``meshjit.ir.libm_sincosf`` computes them with numpy (the reference interpreter's and the first
tier's version), so fused kernels give JAX's bits on every CPU. The constants are read from
that module, so the two cannot drift apart; tests/compiler/test_trig_kernels.py compares them.
"""

from __future__ import annotations

from meshjit.ir import libm_sincosf as libm
from meshjit.ir import libm_tanf

from .codegen_libm_f32 import libm_math

# NOTE: written to vectorise (1M sin 1.2 ms with numpy's SVML loop; this helper measured 80+ ms
# before, when the loop stayed scalar). What kept LLVM's loop vectoriser out, and what
# replaced it:
# - the helper was too large for LLVM's inliner (cost 350 > 250), so the loop held a call:
#   ``inline="always"`` inlines it in Numba's IR, before LLVM sees the loop;
# - a table lookup by the exponent (a gather, which the AVX2 cost model refuses): 4/pi's bits
#   are seven constant 32-bit words, picked by selects and shifted into glibc's three words;
# - int64 -> float64 and float64 -> int32 conversions and arithmetic right shifts (no packed
#   instruction on AVX2): the quadrant is rounded in float64 (exact: integers below 2^31, a
#   power-of-two scale and floor) and read through the shifter, the remainder converts as two
#   exact 32-bit halves whose sum rounds once, as the conversion does.
# Every path (the small argument, the reduction below 120 and the one through 4/pi's bits) is
# computed and the result selected by ``if`` statements LLVM turns into selects; integers stay
# in int64 (bit patterns held as non-negative int64, products of a 32-bit mantissa and a
# 32-bit word below 2^63), wrapping where glibc's uint64 arithmetic wraps. The values are the
# same bits as before on all 2^32 inputs (checked against glibc, outside the tests).
_TEMPLATE = '''

@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pio2_quadrant_f32(z):
    # glibc's n = ((int32) (z * 2^24 2/pi) + 2^23) >> 24 below 120, in exact float64 steps: n as
    # a float64 and an int64
    scaled = z * {inverse}
    if not abs(scaled) < 2147483648.0:
        scaled = 0.0
    float_n = np.floor((np.trunc(scaled) + 8388608.0) * 5.9604644775390625e-08)
    return float_n, _float64_as_int64(float_n + _SHIFTER) - _SHIFTER_BITS


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pio2_reduce_large_f32(bits):
    # |x| = n pi/2 + r from 120 on: the middle 64 bits of the mantissa times 96 bits of 4/pi
    # (2.62 fixed point). The 96 bits from bit 8 * index (glibc's table words index, index + 4,
    # index + 8) from the 32-bit words d0..d3 from bit 32 * (index >> 2), shifted: selects,
    # not a lookup
    d0, d1, d2, d3 = {d0}, {d1}, {d2}, {d3}
    if (bits & 0x30000000) >= 0x10000000:
        d0, d1, d2, d3 = {d1}, {d2}, {d3}, {d4}
    if (bits & 0x30000000) >= 0x20000000:
        d0, d1, d2, d3 = {d2}, {d3}, {d4}, {d5}
    if (bits & 0x30000000) == 0x30000000:
        d0, d1, d2, d3 = {d3}, {d4}, {d5}, {d6}
    left = (bits >> 23) & 24
    right = 32 - left
    mantissa = ((bits & 0xFFFFFF) | 0x800000) << ((bits >> 23) & 7)
    low = (mantissa * (((d0 << left) | (d1 >> right)) & 0xFFFFFFFF)) & 0xFFFFFFFF
    high = mantissa * (((d2 << left) | (d3 >> right)) & 0xFFFFFFFF)
    fraction = ((high >> 32) | (low << 32)) + mantissa * (((d1 << left) | (d2 >> right)) & 0xFFFFFFFF)
    n = ((fraction + (1 << 61)) >> 62) & 3
    # the remainder, |v| <= 2^61, to float64 in one rounding as two exact halves
    offset = fraction - (n << 62) + (1 << 62)
    upper = _int64_as_float64(((offset >> 32) & 0xFFFFFFFF) + _SHIFTER_BITS) - (_SHIFTER + 1073741824.0)
    lower = _int64_as_float64((offset & 0xFFFFFFFF) | 0x4330000000000000) - 4503599627370496.0
    return (upper * 4294967296.0 + lower) * {pi63}, n


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sincos_f32(x, cosine):
    # x = n pi/2 + r, |r| <= pi/4 (see meshjit.ir.libm_sincosf); cosine is 0 or 1
    bits = np.int64(_float32_as_int32(x)) & 0xFFFFFFFF
    top = (bits >> 20) & 0x7FF
    z = np.float64(x)
    fast_float_n, fast_n = _pio2_quadrant_f32(z)
    fast_r = _fma(-fast_float_n, {half_pi}, z)
    large_r, large_n = _pio2_reduce_large_f32(bits)
    r = z
    n = np.int64(0)
    signed_n = np.int64(0)
    if top >= {top_pio4}:
        r = fast_r
        n = fast_n
        signed_n = fast_n
    if top >= {top_fast}:
        r = large_r
        n = large_n
        signed_n = large_n + (bits >> 31)
    sign = -1.0 if ((signed_n + 1) & 2) != 0 else 1.0  # quadrants 1 and 2
    negate = -1.0 if (signed_n & 2) != 0 else 1.0  # quadrants 2 and 3: the cosine's sign
    xr = r * sign
    x2 = r * r
    sine = _fma((xr * x2) * x2, _fma(x2, {s3}, {s2}), _fma(xr * x2, {s1}, xr))
    x4 = x2 * x2
    c2 = _fma(x2, {c4} * negate, {c3} * negate)
    c1 = _fma(x2, {c1} * negate, {c0} * negate)
    cosine_value = _fma(x4 * x2, c2, _fma(x4, {c2} * negate, c1))
    result = np.float32(cosine_value if ((n ^ cosine) & 1) != 0 else sine)
    if top < {top_tiny}:
        result = np.float32(1.0) if cosine else x
    if top >= {top_inf}:
        result = x - x
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sin_f32(x):
    return _sincos_f32(np.float32(x), 0)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _cos_f32(x):
    return _sincos_f32(np.float32(x), 1)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _tan_f32(x):
    # glibc's tanf (see meshjit.ir.libm_tanf): the reduction without the fma, the float64
    # remainder split in two float32s, fdlibm's kernel in float32
    x = np.float32(x)
    bits = np.int64(_float32_as_int32(x)) & 0xFFFFFFFF
    magnitude = bits & 0x7FFFFFFF
    z = np.float64(x)
    fast_float_n, n = _pio2_quadrant_f32(z)
    reduced = z - fast_float_n * {half_pi}
    large_r, large_n = _pio2_reduce_large_f32(bits)
    if not abs(x) < np.float32(120.0):
        reduced = -large_r if bits >= 0x80000000 else large_r
        n = large_n
    head = np.float32(reduced)
    tail = np.float32(reduced - np.float64(head))
    odd = np.float32(1.0) if (n & 1) == 0 else np.float32(-1.0)
    if magnitude <= {tan_small}:
        head = x
        tail = np.float32(0.0)
        odd = np.float32(1.0)
    result = _tan_kernel_f32(head, tail, odd)
    if magnitude >= 0x7F800000:
        result = x - x
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _tan_kernel_f32(x, y, odd):
    # fdlibm's k_tanf: tan(x + y) (odd = 1) or -1/tan(x + y) (odd = -1), |x + y| <= pi/4
    given = x
    magnitude = np.int64(_float32_as_int32(x)) & 0x7FFFFFFF
    big = magnitude >= {tan_big}
    sign = np.float32(1.0)
    mirrored_x = x
    mirrored_y = y
    if _float32_as_int32(x) < 0:
        sign = np.float32(-1.0)
        mirrored_x = -x
        mirrored_y = -y
    if big:  # above 0.6744: tan(x) = tan(pi/4 - (pi/4 - x)), the difference in two parts
        x = ({pio4} - mirrored_x) + ({pio4_low} - mirrored_y)
        y = np.float32(0.0)
    z = x * x
    w = z * z
    r = {t1} + w * ({t3} + w * ({t5} + w * ({t7} + w * ({t9} + w * {t11}))))
    v = z * ({t2} + w * ({t4} + w * ({t6} + w * ({t8} + w * ({t10} + w * {t12})))))
    s = z * x
    r = y + z * (s * (r + v) + y)
    r = r + {t0} * s
    w = x + r
    two = np.float32(2.0)
    reflected = sign * (odd - two * (x - (w * w / (w + odd) - r)))
    if abs(x) < np.float32(0.0001220703125):  # glibc: within 2^-13 of pi/4, to first order
        reflected = (sign * odd) * (np.float32(1.0) - (two * odd) * x)
    # -1/(x + r) to under an ulp: the high bits of w and of -1/w, and a correction
    high_w = _int32_as_float32(_float32_as_int32(w) & np.int32(-4096))
    a = np.float32(-1.0) / w
    high_a = _int32_as_float32(_float32_as_int32(a) & np.int32(-4096))
    inverse = high_a + a * ((np.float32(1.0) + high_a * high_w) + high_a * (r - (high_w - x)))
    result = w if odd > np.float32(0.0) else inverse
    if big:
        result = reflected
    if magnitude < {tan_tiny}:  # tan(x) = x below 2^-13; -1/x in odd quadrants (+inf at 0)
        result = given
        if odd < np.float32(0.0):
            result = np.float32(np.inf) if given == np.float32(0.0) else np.float32(-1.0) / given
    return result
'''


def _pio4_words() -> list[str]:
    """4/pi's bits as the 32-bit words d0..d6 from bit 0, 32, ..., 192 (glibc's table word 4j
    is word j; the last keeps the 24 bits the table has)."""
    table = [int(word) for word in libm.INVERSE_PIO4]
    return [hex(table[4 * j]) for j in range(6)] + [hex((table[23] & 0xFFFFFF) << 8)]


def _float32(value) -> str:
    return f"np.float32({float(value)!r})"


def trig_math() -> str:
    """The prelude's source of ``_sin_f32``, ``_cos_f32`` and ``_tan_f32``."""
    c0, c1, c2, c3, c4 = (repr(value) for value in libm.COS)
    s1, s2, s3 = (repr(value) for value in libm.SIN)
    words = dict(zip(("d0", "d1", "d2", "d3", "d4", "d5", "d6"), _pio4_words()))
    tan = {f"t{k}": _float32(value) for k, value in enumerate(libm_tanf.T)}
    return _TEMPLATE.format(
        inverse=repr(libm.INVERSE_HALF_PI_SCALED),
        half_pi=repr(libm.HALF_PI), pi63=repr(libm.PI63), c0=c0, c1=c1, c2=c2, c3=c3, c4=c4,
        s1=s1, s2=s2, s3=s3, top_pio4=hex(libm.TOP_PIO4), top_fast=hex(libm.TOP_FAST),
        top_tiny=hex(libm.TOP_TINY), top_inf=hex(libm.TOP_INF), **words, **tan,
        pio4=_float32(libm_tanf.PIO4), pio4_low=_float32(libm_tanf.PIO4_LOW), tan_small=hex(libm_tanf.SMALL_BITS),
        tan_big=hex(libm_tanf.BIG_BITS), tan_tiny=hex(libm_tanf.TINY_BITS)) + libm_math()
