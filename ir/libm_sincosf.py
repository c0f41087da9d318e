"""float32 sin and cos as XLA's CPU code gets them from the C library: glibc 2.36's ``sinf`` and
``cosf`` on a CPU with FMA (their ``__sinf_fma``/``__cosf_fma`` variants, every AVX2 and AVX-512
machine), computed with numpy's IEEE-exact operations, integer arithmetic and
``float_math.fma``, so the bits are the same on every CPU.

The algorithm is Szabolcs Nagy's (Arm optimized-routines, MIT; the numbers glibc ships): in
float64, x is reduced to r in [-pi/4, pi/4] and a quadrant n, by one fused multiply-subtract of
n * pi/2 below 120 and by a 32x96-bit product with the bits of 4/pi above; sin r is
r + r^3 (s1 + r^2 s2 + r^4 s3) and cos r is c0 + r^2 c1 + r^4 c2 + r^6 (c3 + r^2 c4), the
quadrant choosing the polynomial and the signs. The multiply-adds fused are those GCC contracts
when it builds glibc's FMA variant: a C model of these operations equals glibc's
``sinf``/``cosf`` on all 2^32 float32 inputs, and this file equals glibc on 6 million inputs
(both checked against glibc itself, outside meshjit), and JAX 0.10.2's values
(tests/api/test_trig_f32.py). The Numba kernels' helpers (compiler/lowering/codegen_trig.py) follow this file operation for operation.
"""

from __future__ import annotations

import numpy as np

from .float_math import fma

# cos (c0..c4) and sin (s1..s3) coefficients; pi/2 and 2/pi * 2^24 (the quadrant lands in bits
# 24..31 of a truncated product); pi/2 * 2^-62 (the large reduction's fixed-point unit)
COS = tuple(map(float.fromhex, ("0x1p0", "-0x1.ffffffd0c621cp-2", "0x1.55553e1068f19p-5",
                                "-0x1.6c087e89a359dp-10", "0x1.99343027bf8c3p-16")))
SIN = tuple(map(float.fromhex, ("-0x1.555545995a603p-3", "0x1.1107605230bc4p-7", "-0x1.994eb3774cf24p-13")))
HALF_PI, INVERSE_HALF_PI_SCALED, PI63 = map(float.fromhex, ("0x1.921fb54442d18p0", "0x1.45f306dc9c883p+23",
                                                           "0x1.921fb54442d18p-62"))
# 4/pi to 192 bits, each word 8 bits further on than the one before
INVERSE_PIO4 = np.array([
    0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
    0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041],
    np.uint64)
# thresholds on a float32's bits 20..30 (glibc's abstop12): pi/4, 2^-12, 120, inf
TOP_PIO4, TOP_TINY, TOP_FAST, TOP_INF = 0x3F4, 0x398, 0x42F, 0x7F8


def sin(x: np.ndarray) -> np.ndarray:
    """glibc's ``sinf`` of every element of float32 ``x``."""
    return _sincos(x, 0)


def cos(x: np.ndarray) -> np.ndarray:
    """glibc's ``cosf`` of every element of float32 ``x``."""
    return _sincos(x, 1)


def _sincos(x, cosine):
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    top = (bits >> np.uint32(20)) & np.uint32(0x7FF)
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        fast_r, fast_n = _reduce_fast(wide)
        large_r, large_n = _reduce_large(bits)
        small = top < TOP_PIO4
        r = np.where(small, wide, np.where(top < TOP_FAST, fast_r, large_r))
        n = np.where(small, 0, np.where(top < TOP_FAST, fast_n, large_n))
        # the signs follow the quadrant of x, the large reduction's n + x's sign bit (it
        # reduced |x|); the polynomial follows n alone
        signed_n = np.where(small | (top < TOP_FAST), n, n + (bits >> np.uint32(31)).astype(np.int64))
        quadrant = signed_n & 3
        sign = np.where((quadrant == 1) | (quadrant == 2), -1.0, 1.0)
        result = _poly(r * sign, r * r, (signed_n & 2) != 0, ((n ^ cosine) & 1) != 0)
        tiny = np.float32(1.0) if cosine else x
        result = np.where(top < TOP_TINY, tiny, result)
        return np.where(top >= TOP_INF, x - x, result).astype(np.float32)


def _reduce_fast(x, fused=True):
    """r = x - n pi/2 (one rounding; two without ``fused``, as glibc's tanf, built without FMA,
    computes it) and n, |x| < 120."""
    scaled = x * INVERSE_HALF_PI_SCALED
    truncated = np.where(np.abs(scaled) < 2.0 ** 31, scaled, 0.0).astype(np.int32)
    n = (truncated + np.int32(0x800000)) >> np.int32(24)
    multiple = n.astype(np.float64)
    r = fma(-multiple, np.full_like(x, HALF_PI), x) if fused else x - multiple * HALF_PI
    return r, n.astype(np.int64)


def _reduce_large(bits):
    """r and n for |x| >= 120 (and harmlessly for smaller x): x's 24-bit
    mantissa times 96 bits of 4/pi chosen by its exponent, the fraction kept in 2.62 fixed
    point."""
    index = ((bits >> np.uint32(26)) & np.uint32(15)).astype(np.intp)
    shift = ((bits >> np.uint32(23)) & np.uint32(7)).astype(np.uint64)
    mantissa = ((bits & np.uint32(0xFFFFFF)) | np.uint32(0x800000)).astype(np.uint64) << shift
    mask32 = np.uint64(0xFFFFFFFF)
    low = (mantissa * INVERSE_PIO4[index]) & mask32
    middle = mantissa * INVERSE_PIO4[index + 4]
    high = mantissa * INVERSE_PIO4[index + 8]
    fraction = ((high >> np.uint64(32)) | (low << np.uint64(32))) + middle
    n = (fraction + np.uint64(1 << 61)) >> np.uint64(62)
    fraction = fraction - (n << np.uint64(62))
    r = fraction.view(np.int64).astype(np.float64) * PI63
    return r, n.astype(np.int64)


def _poly(x, x2, negate_cos, use_cos):
    """The sine polynomial of x, or where ``use_cos`` the cosine one (negated where
    ``negate_cos``), rounded to float32."""
    def constant(value):
        return np.full_like(x, value)

    s1 = fma(x2, constant(SIN[2]), constant(SIN[1]))
    sine = fma((x * x2) * x2, s1, fma(x * x2, constant(SIN[0]), x))
    c = [np.where(negate_cos, -value, value) for value in COS]
    c2 = fma(x2, c[4], c[3])
    c1 = fma(x2, c[1], c[0])
    x4 = x2 * x2
    cosine = fma(x4 * x2, c2, fma(x4, c[2], c1))
    return np.where(use_cos, cosine, sine).astype(np.float32)
