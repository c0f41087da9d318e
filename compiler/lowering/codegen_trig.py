"""The kernels' float32 sin and cos helpers (``_sin_f32``, ``_cos_f32``) as Python source for
the prelude (codegen_math.py): glibc 2.36's ``sinf``/``cosf``, operation for operation as
``meshjit.ir.libm_sincosf`` computes them with numpy (the reference interpreter's and the first
tier's version), so fused kernels give JAX's bits on every CPU. The constants are read from
that module, so the two cannot drift apart; tests/compiler/test_trig_kernels.py compares them.
"""

from __future__ import annotations

from meshjit.ir import libm_sincosf as libm

# NOTE: written to vectorise: every path (the small argument, the reduction below 120 and the
# one through 4/pi's bits) is computed and the result selected by ``if`` statements LLVM turns
# into selects; integers stay in int64 (bit patterns held as non-negative int64, products of a
# 32-bit mantissa and a 32-bit word below 2^63), wrapping where glibc's uint64 arithmetic wraps.
_TEMPLATE = '''

_INVERSE_PIO4 = np.array({table}, np.int64)


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _sincos_f32(x, cosine):
    # x = n pi/2 + r, |r| <= pi/4 (see meshjit.ir.libm_sincosf); cosine is 0 or 1
    bits = np.int64(_float32_as_int32(x)) & 0xFFFFFFFF
    top = (bits >> 20) & 0x7FF
    z = np.float64(x)
    scaled = z * {inverse}
    if not abs(scaled) < 2147483648.0:
        scaled = 0.0
    fast_n = np.int64((np.int32(scaled) + np.int32(0x800000)) >> np.int32(24))
    fast_r = _fma(-np.float64(fast_n), {half_pi}, z)
    index = (bits >> 26) & 15
    mantissa = ((bits & 0xFFFFFF) | 0x800000) << ((bits >> 23) & 7)
    low = (mantissa * _INVERSE_PIO4[index]) & 0xFFFFFFFF
    fraction = (((mantissa * _INVERSE_PIO4[index + 8]) >> 32) | (low << 32)) + mantissa * _INVERSE_PIO4[index + 4]
    large_n = ((fraction + (1 << 61)) >> 62) & 3
    large_r = np.float64(fraction - (large_n << 62)) * {pi63}
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


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _sin_f32(x):
    return _sincos_f32(np.float32(x), 0)


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _cos_f32(x):
    return _sincos_f32(np.float32(x), 1)
'''


def trig_math() -> str:
    """The prelude's source of ``_sin_f32`` and ``_cos_f32``."""
    c0, c1, c2, c3, c4 = (repr(value) for value in libm.COS)
    s1, s2, s3 = (repr(value) for value in libm.SIN)
    return _TEMPLATE.format(
        table=[int(word) for word in libm.INVERSE_PIO4], inverse=repr(libm.INVERSE_HALF_PI_SCALED),
        half_pi=repr(libm.HALF_PI), pi63=repr(libm.PI63), c0=c0, c1=c1, c2=c2, c3=c3, c4=c4,
        s1=s1, s2=s2, s3=s3, top_pio4=hex(libm.TOP_PIO4), top_fast=hex(libm.TOP_FAST),
        top_tiny=hex(libm.TOP_TINY), top_inf=hex(libm.TOP_INF))
