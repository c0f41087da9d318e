"""XLA's CPU float32 rsqrt as a kernel helper (``_rsqrt_f32``), the same arithmetic as
``ir/xla_rsqrt.py`` (the reference and the first tier): the ``rsqrtss`` table's estimate, two
Newton steps with explicit fused multiply-adds."""

from __future__ import annotations


def xla_rsqrt_math() -> str:
    """The helper's source, for the kernels' prelude (after the bitcast intrinsics and ``_fma``)."""
    return '''
from meshjit.ir.xla_rsqrt import TABLE as _RSQRT_TABLE

_RSQRT_TINY = np.float32(np.finfo(np.float32).tiny)


@numba.njit(cache=True, nogil=True)
def _rsqrt_estimate_f32(x):
    bits = _float32_as_int32(x)
    exponent = (bits >> 23) - 127
    parity = exponent & 1
    half = (exponent - parity) >> 1
    index = (parity << 10) + ((bits >> 13) & 1023)
    scaled = np.int32(_RSQRT_TABLE[index]) - np.int32(half << 23)
    return _int32_as_float32(np.int32(scaled))


@numba.njit(cache=True, nogil=True)
def _rsqrt_newton_f32(x, y):
    residual = _fma(np.float32(x * y), y, np.float32(-1.0))
    return _fma(np.float32(y * np.float32(-0.5)), residual, y)


@numba.njit(cache=True, nogil=True)
def _rsqrt_f32(x):
    # XLA's CPU rsqrt: inf below the normal range and at +0, -inf at -0, 0 at inf, NaN below zero
    if x != x or x < 0:
        return np.float32(np.nan)
    if x == 0:
        return np.float32(np.inf) if _float32_as_int32(x) == 0 else np.float32(-np.inf)
    if x < _RSQRT_TINY:
        return np.float32(np.inf)
    if x == np.inf:
        return np.float32(0.0)
    return _rsqrt_newton_f32(x, _rsqrt_newton_f32(x, _rsqrt_estimate_f32(x)))
'''
