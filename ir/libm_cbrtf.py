"""float32 cbrt as XLA's CPU code gets it from the C library: glibc 2.36's ``cbrtf`` (glibc's
own: a quadratic first guess on the mantissa in [1/2, 1), one Halley step in float64, the
exponent's third and 2^((e mod 3)/3) applied after). It is built without fused multiply-adds,
so numpy's IEEE-exact float32 and float64 operations repeat it on every CPU. Equal to glibc's
``cbrtf`` over dense sweeps and to JAX 0.10.2's values (tests/api/test_trig_f32.py).
"""

from __future__ import annotations

import numpy as np

CBRT2 = 1.2599210498948731648
GUESS = (0.492659620528969547, 0.697570460207922770, 0.191502161678719066)  # u = g0 + (g1 - g2 m) m
CBRT_FACTOR = np.array([1.0 / 1.5874010519681994748, 1.0 / CBRT2, 1.0, CBRT2, 1.5874010519681994748])


def cbrt(x: np.ndarray) -> np.ndarray:
    """glibc's ``cbrtf`` of every element of float32 ``x``, as XLA's CPU code calls it: with
    denormals read as zero, glibc's frexpf scales a denormal by 2^25 to zero and returns
    0.5 * 2^-151, and ``x > 0`` is false, so every denormal gives -0x1.428a3p-51 (JAX's value)."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        mantissa, exponent = np.frexp(np.abs(x))  # exact: [1/2, 1) and the binary exponent
        denormal = (np.abs(x) < np.finfo(np.float32).tiny) & (x != 0)
        mantissa = np.where(denormal, np.float32(0.5), mantissa)
        exponent = np.where(denormal, -151, exponent)
        wide = mantissa.astype(np.float64)
        u = (GUESS[0] + (GUESS[1] - GUESS[2] * wide) * wide).astype(np.float32)
        t2 = u * u * u
        t2_wide = t2.astype(np.float64)
        remainder = np.fmod(exponent, 3)  # C's %: the sign of the dividend
        ym = ((u.astype(np.float64) * (t2_wide + 2.0 * wide) / (2.0 * t2_wide + wide))
              * CBRT_FACTOR[2 + remainder]).astype(np.float32)
        quotient = np.trunc(exponent / 3).astype(np.int32)  # C's /: toward zero
        result = np.ldexp(np.where((x > 0) & ~denormal, ym, -ym), quotient).astype(np.float32)
        special = (x == 0) | ~np.isfinite(x)
        return np.where(special, x + x, result)
