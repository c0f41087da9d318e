"""The kernels' float32 cbrt and atan2 helpers (``_cbrt_f32``, ``_atan2_f32``) as Python
source for the prelude (codegen_trig.py adds it to its own): glibc 2.36's ``cbrtf`` and
``atan2f`` as XLA's CPU code calls them (denormals read as zero and flushed), operation for
operation as ``meshjit.ir.libm_cbrtf`` and ``meshjit.ir.libm_atanf`` compute them with numpy (the
reference interpreter's and the first tier's version), so fused kernels give JAX's bits on
every CPU. The constants are read from those modules; tests/compiler/test_trig_kernels.py
compares the two versions.
"""

from __future__ import annotations

from meshjit.ir import libm_cbrtf

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
'''


def libm_math() -> str:
    """The prelude's source of ``_cbrt_f32``."""
    factors = {name: repr(float(value)) for name, value in zip(("f_2", "f_1", "f0", "f1", "f2"), libm_cbrtf.CBRT_FACTOR)}
    return _TEMPLATE.format(c0=repr(libm_cbrtf.GUESS[0]), c1=repr(libm_cbrtf.GUESS[1]), c2=repr(libm_cbrtf.GUESS[2]),
                            **factors)
