"""The kernels' float32 cbrt and atan2 helpers (``_cbrt_f32``, ``_atan2_f32``) as Python
source for the prelude (codegen_trig.py adds it to its own): glibc 2.36's ``cbrtf`` and
``atan2f`` as XLA's CPU code calls them (denormals read as zero and flushed), operation for
operation as ``meshjit.ir.libm_cbrtf`` and ``meshjit.ir.libm_atanf`` compute them with numpy (the
reference interpreter's and the first tier's version), so fused kernels give JAX's bits on
every CPU. The constants are read from those modules; tests/compiler/test_trig_kernels.py
compares the two versions.
"""

from __future__ import annotations

import numpy as np

from meshjit.ir import libm_atanf, libm_cbrtf

# NOTE: written to vectorise as codegen_trig.py's helpers are (inlined in Numba's IR, every
# path computed and selected, no table lookups, integers through the shifter); glibc builds
# both without fused multiply-adds and Numba contracts nothing, so each operation rounds alone.
_TEMPLATE = '''

@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _cbrt_f32(x):
    # glibc's cbrtf (see meshjit.ir.libm_cbrtf): x = m 2^e with m in [1/2, 1), a quadratic
    # guess and one Halley step on m in float64, then 2^(e/3) and 2^((e mod 3)/3)
    x = np.float32(x)
    bits = np.int64(_float32_as_int32(x)) & 0xFFFFFFFF
    field = (bits >> 23) & 0xFF
    mantissa = _int32_as_float32(np.int32((bits & 0x7FFFFF) | 0x3F000000))
    exponent = _int64_as_float64(_SHIFTER_BITS + field) - (_SHIFTER + 126.0)
    positive = x > np.float32(0.0)
    if field == 0:  # a denormal read as zero: frexpf's 0.5 * 2^-151, and x > 0 is false
        mantissa = np.float32(0.5)
        exponent = -151.0
        positive = False
    wide = np.float64(mantissa)
    u = np.float32({c0} + ({c1} - {c2} * wide) * wide)
    cube = np.float64(u * u * u)
    quotient = np.trunc(exponent / 3.0)  # C's / on ints: toward zero (exact here)
    remainder = exponent - 3.0 * quotient
    factor = 1.0
    if remainder == -2.0:
        factor = {f_2}
    if remainder == -1.0:
        factor = {f_1}
    if remainder == 1.0:
        factor = {f1}
    if remainder == 2.0:
        factor = {f2}
    root = np.float32(np.float64(u) * (cube + 2.0 * wide) / (2.0 * cube + wide) * factor)
    if not positive:
        root = -root
    scale = _int32_as_float32(np.int32((_float64_as_int64(quotient + _SHIFTER) - _SHIFTER_BITS + 127) << 23))
    result = root * scale  # exact: ldexpf without overflow or underflow
    if x == np.float32(0.0) or not abs(x) < np.float32(np.inf):
        result = x + x
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _atan_f32(x):
    # glibc's atanf (see meshjit.ir.libm_atanf): |x| reduced by atan(1/2), atan(1), atan(3/2)
    # or atan(inf) (one division, its operands selected), then the odd polynomial
    magnitude = np.int64(_float32_as_int32(x)) & 0x7FFFFFFF
    t = abs(x)
    one = np.float32(1.0)
    numerator = -one
    denominator = t
    high = {h3}
    low = {l3}
    if magnitude < {three_halves}:
        numerator = t - np.float32(1.5)
        denominator = one + np.float32(1.5) * t
        high = {h2}
        low = {l2}
    if magnitude < {one_bits}:
        numerator = t - one
        denominator = t + one
        high = {h1}
        low = {l1}
    if magnitude < {half}:
        numerator = np.float32(2.0) * t - one
        denominator = np.float32(2.0) + t
        high = {h0}
        low = {l0}
    reduced = numerator / denominator
    if magnitude < {small}:
        reduced = x
    z = reduced * reduced
    w = z * z
    s1 = z * ({a0} + w * ({a2} + w * ({a4} + w * ({a6} + w * ({a8} + w * {a10})))))
    s2 = w * ({a1} + w * ({a3} + w * ({a5} + w * ({a7} + w * {a9}))))
    result = high - ((reduced * (s1 + s2) - low) - reduced)
    if _float32_as_int32(x) < 0:
        result = -result
    if magnitude < {small}:
        result = reduced - reduced * (s1 + s2)
    if magnitude < {tiny_bits}:
        result = x
    if magnitude >= {huge}:
        result = -{limit} if _float32_as_int32(x) < 0 else {limit}
    if magnitude > 0x7F800000:
        result = x + x
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _flushed_f32(value):
    # a denormal as the zero of its sign (XLA's denormals-are-zero and flush-to-zero)
    return value * np.float32(0.0) if abs(value) < np.float32(1.1754943508222875e-38) else value


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _atan2_f32(y, x):
    # glibc's atan2f with XLA's denormal modes (see meshjit.ir.libm_atanf); x = 1 is atanf(y)
    y = np.float32(y)
    x = np.float32(x)
    y_magnitude = np.int64(_float32_as_int32(y)) & 0x7FFFFFFF
    x_magnitude = np.int64(_float32_as_int32(x)) & 0x7FFFFFFF
    left = _float32_as_int32(x) < 0
    below = _float32_as_int32(y) < 0
    argument = abs(_flushed_f32(_flushed_f32(y) / _flushed_f32(x)))
    if _float32_as_int32(x) == 0x3F800000:
        argument = y
    atan = _atan_f32(argument)  # one atanf for both uses: a second doubled the time
    z = atan
    k = (y_magnitude - x_magnitude) >> 23
    if left & (k < -60):
        z = np.float32(0.0)
    if k > 60:
        z = {far}
    result = -z if below else z
    if left:
        result = (z - {pi_lo}) - {pi} if below else {pi} - (z - {pi_lo})
    if x_magnitude == 0x7F800000:  # the quadrant's angle of two infinities, or 0 / pi
        result = {axis_left} if left else np.float32(0.0)
        if y_magnitude == 0x7F800000:
            result = {quarter_left} if left else {quarter}
        if below:
            result = -result
    if (x_magnitude == 0) | ((y_magnitude == 0x7F800000) & (x_magnitude != 0x7F800000)):
        result = {vertical_below} if below else {vertical}
    if y_magnitude == 0:
        result = y
        if left:
            result = {pi_below} if below else {axis_left}
    if _float32_as_int32(x) == 0x3F800000:
        result = atan
    if (x_magnitude > 0x7F800000) | (y_magnitude > 0x7F800000):
        result = x + y
    return result
'''


def _float32(value) -> str:
    return f"np.float32({float(np.float32(value))!r})"


def _atan_constants() -> dict[str, str]:
    """atanf's and atan2f's constants and bit thresholds, and atan2f's results for the special
    cases, rounded in float32 as glibc computes them (pi + 1e-30 is pi, and so on)."""
    a = libm_atanf
    with np.errstate(all="ignore"):
        results = {"far": a.PI_O_2 + np.float32(0.5) * a.PI_LO, "axis_left": a.PI + a.TINY,
                   "pi_below": -a.PI - a.TINY, "quarter": a.PI_O_4 + a.TINY,
                   "quarter_left": np.float32(3) * a.PI_O_4 + a.TINY, "vertical": a.PI_O_2 + a.TINY,
                   "vertical_below": -a.PI_O_2 - a.TINY, "limit": a.ATAN_HIGH[3] + a.ATAN_LOW[3],
                   "pi": a.PI, "pi_lo": a.PI_LO}
    constants = {name: _float32(value) for name, value in results.items()}
    constants.update({f"h{k}": _float32(value) for k, value in enumerate(a.ATAN_HIGH)})
    constants.update({f"l{k}": _float32(value) for k, value in enumerate(a.ATAN_LOW)})
    constants.update({f"a{k}": _float32(value) for k, value in enumerate(a.AT)})
    bits = ("tiny_bits", "small", "half", "one_bits", "three_halves", "huge")
    constants.update({name: hex(value) for name, value in zip(bits, (a.ATAN_TINY, a.ATAN_SMALL, a.ATAN_HALF, a.ATAN_ONE,
                                                                       a.ATAN_THREE_HALVES, a.ATAN_HUGE))})
    return constants


def libm_math() -> str:
    """The prelude's source of ``_cbrt_f32``, ``_atan_f32`` and ``_atan2_f32``."""
    factors = {name: repr(float(value)) for name, value in zip(("f_2", "f_1", "f0", "f1", "f2"), libm_cbrtf.CBRT_FACTOR)}
    return _TEMPLATE.format(c0=repr(libm_cbrtf.GUESS[0]), c1=repr(libm_cbrtf.GUESS[1]), c2=repr(libm_cbrtf.GUESS[2]),
                            **factors, **_atan_constants())
