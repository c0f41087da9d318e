"""float32 atan2 (and so arctan, which JAX lowers to atan2(x, 1)) as XLA's CPU code gets it
from the C library: glibc 2.36's ``atan2f``, and through it ``atanf``, run with XLA's
denormals-are-zero and flush-to-zero modes, computed with numpy's IEEE-exact float32 operations,
so the bits are the same on every CPU.

Both are Sun's fdlibm float code (glibc builds them without fused multiply-adds): atanf reduces
|x| by one of atan(1/2), atan(1), atan(3/2), atan(inf) (each in two float32 parts) to |t| <=
7/16 and sums t^3 times an 11-term odd polynomial in t^2 split in two halves; atan2f handles
the signed zeros, infinities and far-apart magnitudes itself and otherwise takes
atanf(|y/x|) into the quadrant (pi - (z - pi_lo) on the left). What XLA's modes change:
glibc reads its arguments' bits (a denormal is not a zero to its tests) but the division y/x
reads a denormal as zero and flushes a denormal quotient to zero (atan2(1e-40, 1e-40) is NaN
in JAX); x = 1 returns atanf(y) before dividing, so arctan keeps a denormal argument. Equal to
glibc's functions in those modes over dense sweeps, and to JAX 0.10.2's values
(tests/api/test_atan_f32.py).
"""

from __future__ import annotations

import numpy as np

from .float_math import word

# atan(1/2), atan(1), atan(3/2), atan(inf) in two parts; the odd polynomial's coefficients
# (fdlibm, Sun Microsystems, freely redistributable; aT[0] is the value of fdlibm's decimal,
# 0x3eaaaaab, not its comment's)
ATAN_HIGH = [word(bits) for bits in (0x3EED6338, 0x3F490FDA, 0x3F7B985E, 0x3FC90FDA)]
ATAN_LOW = [word(bits) for bits in (0x31AC3769, 0x33222168, 0x33140FB4, 0x33A22168)]
AT = [word(bits) for bits in (0x3EAAAAAB, 0xBE4CCCCD, 0x3E124925, 0xBDE38E38, 0x3DBA2E6E, 0xBD9D8795,
                              0x3D886B35, 0xBD6EF16B, 0x3D4BDA59, 0xBD15A221, 0x3C8569D7)]
PI_O_4, PI_O_2, PI, PI_LO = (word(bits) for bits in (0x3F490FDB, 0x3FC90FDB, 0x40490FDB, 0xB3BBBD2E))
TINY = np.float32(1e-30)
# atanf's branch points on |x|'s bits: 2^-29, 7/16, 11/16, 19/16, 39/16, 2^25 (glibc's; fdlibm's is 2^34)
ATAN_TINY, ATAN_SMALL, ATAN_HALF, ATAN_ONE, ATAN_THREE_HALVES, ATAN_HUGE = (
    0x31000000, 0x3EE00000, 0x3F300000, 0x3F980000, 0x401C0000, 0x4C000000)


def atan(x: np.ndarray) -> np.ndarray:
    """glibc's ``atanf`` of every element of float32 ``x``."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        return _atan(x)


def atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """glibc's ``atan2f(y, x)`` elementwise, as XLA's CPU code runs it (denormals as zero)."""
    y, x = np.broadcast_arrays(np.asarray(y, np.float32), np.asarray(x, np.float32))
    with np.errstate(all="ignore"):
        return _atan2(y, x)


def _atan(x):
    one = np.float32(1)
    magnitude = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
    t = np.abs(x)
    # the reduction of each branch: (numerator, denominator) of t, or t itself below 7/16
    branches = [(np.float32(2) * t - one, np.float32(2) + t), (t - one, t + one),
                (t - np.float32(1.5), one + np.float32(1.5) * t), (-one, t)]
    branch = ((magnitude >= ATAN_HALF).astype(np.intp) + (magnitude >= ATAN_ONE) + (magnitude >= ATAN_THREE_HALVES))
    numerator, denominator = branches[3]
    for index in (2, 1, 0):
        numerator = np.where(branch == index, branches[index][0], numerator)
        denominator = np.where(branch == index, branches[index][1], denominator)
    reduced = np.where(magnitude < ATAN_SMALL, x, numerator / denominator)
    z = reduced * reduced
    w = z * z
    s1 = z * (AT[0] + w * (AT[2] + w * (AT[4] + w * (AT[6] + w * (AT[8] + w * AT[10])))))
    s2 = w * (AT[1] + w * (AT[3] + w * (AT[5] + w * (AT[7] + w * AT[9]))))
    small = reduced - reduced * (s1 + s2)
    high, low = (np.array(table, np.float32)[branch] for table in (ATAN_HIGH, ATAN_LOW))
    reduced_result = high - ((reduced * (s1 + s2) - low) - reduced)
    result = np.where(magnitude < ATAN_SMALL, small, np.where(x.view(np.int32) < 0, -reduced_result, reduced_result))
    result = np.where(magnitude < ATAN_TINY, x, result)
    limit = ATAN_HIGH[3] + ATAN_LOW[3]
    result = np.where(magnitude >= ATAN_HUGE, np.where(x.view(np.int32) < 0, -limit, limit), result)
    return np.where(magnitude > 0x7F800000, x + x, result)


def _atan2(y, x):
    y_bits, x_bits = y.view(np.int32), x.view(np.int32)
    y_magnitude, x_magnitude = y_bits & 0x7FFFFFFF, x_bits & 0x7FFFFFFF
    left, below = x_bits < 0, y_bits < 0
    # the quotient as the CPU divides with denormals read as zero and flushed
    quotient = np.abs(_flushed(_flushed(y) / _flushed(x)))
    atan = _atan(np.where(x_bits == 0x3F800000, y, quotient))  # x = 1: atanf(y) itself
    k = (y_magnitude - x_magnitude) >> 23
    z = np.where(k > 60, PI_O_2 + np.float32(0.5) * PI_LO, np.where(left & (k < -60), np.float32(0), atan))
    result = np.where(left, np.where(below, (z - PI_LO) - PI, PI - (z - PI_LO)), np.where(below, -z, z))
    # infinite x: the quadrant's angle of two infinities, or 0 / pi
    quarter = np.where(left, np.float32(3) * PI_O_4 + TINY, PI_O_4 + TINY)
    axis = np.where(left, PI + TINY, np.float32(0))
    at_infinity = np.where(y_magnitude == 0x7F800000, quarter, axis)
    result = np.where(x_magnitude == 0x7F800000, np.where(below, -at_infinity, at_infinity), result)
    # zero x or infinite y: +-pi/2; zero y: y on the right, +-pi on the left
    vertical = np.where(below, -PI_O_2 - TINY, PI_O_2 + TINY)
    result = np.where((x_magnitude == 0) | ((y_magnitude == 0x7F800000) & (x_magnitude != 0x7F800000)), vertical,
                      result)
    result = np.where(y_magnitude == 0, np.where(left, np.where(below, -PI - TINY, PI + TINY), y), result)
    result = np.where(x_bits == 0x3F800000, atan, result)
    return np.where((x_magnitude > 0x7F800000) | (y_magnitude > 0x7F800000), x + y, result).astype(np.float32)


def _flushed(value):
    """``value`` with a denormal replaced by a zero of its sign (what DAZ/FTZ read and write)."""
    return np.where(np.abs(value) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), value), value)
