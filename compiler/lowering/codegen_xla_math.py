"""XLA's float32 log, log1p and erf_inv as kernel helper source, generated from the coefficient
tables of ir/float_math.py (the oracle), so a fused kernel's normal draws are bit for bit the
reference's."""

from __future__ import annotations

import numpy as np

from meshjit.ir.float_math import (
    ERF_INV_F32,
    LOG1P_DENOMINATOR,
    LOG1P_NUMERATOR,
    LOG1P_SMALL,
    LOG_CHAINS,
    LOG_LN2_HIGH,
    LOG_LN2_LOW,
    LOG_MIN_NORMAL,
    LOG_SQRT_HALF,
    word,
)


def _f32(pattern: int) -> str:
    """Source text of the float32 whose bit pattern is ``pattern`` (exact: a float32's repr as
    a float64 converts back to the same float32)."""
    return f"np.float32({float(word(pattern))!r})"


def _horner_f32(name: str, variable: str, coefficients, start: str) -> list[str]:
    lines = [f"{name} = {start}"]
    lines += [f"{name} = _fma({name}, {variable}, np.float32({float(np.float32(c))!r}))" for c in coefficients]
    return lines


def xla_float32_math() -> str:
    """XLA's float32 log, log1p and erf_inv as ir/float_math.py computes them (the oracle):
    the same operations in the same order, each fused multiply-add one ``_fma``, so a fused
    kernel's normal draws are bit for bit the reference's (and JAX's). No fastmath: nothing
    else may be contracted or reordered."""
    chains = [f"    c{index} = _fma(_fma(reduced, {_f32(high)}, {_f32(middle)}), reduced, {_f32(low)})"
              for index, (high, middle, low) in enumerate(LOG_CHAINS)]
    numerator = _horner_f32("numerator", "x", [word(c) for c in LOG1P_NUMERATOR[1:]],
                            f"x * np.float32(0.0) + {_f32(LOG1P_NUMERATOR[0])}")
    denominator = _horner_f32("denominator", "x", [word(c) for c in LOG1P_DENOMINATOR[1:]],
                              f"x * np.float32(0.0) + {_f32(LOG1P_DENOMINATOR[0])}")
    (central_upper, central_shift, central), (_, tail_shift, tail) = ERF_INV_F32
    central_lines = _horner_f32("central", "w_central", central[1:], f"np.float32({central[0]!r})")
    tail_lines = _horner_f32("tail", "w_tail", tail[1:], f"np.float32({tail[0]!r})")
    body = "\n    ".join
    return f'''

@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _xla_log_f32(x):
    one = np.float32(1.0)
    bits = _float32_as_int32(x if x > {_f32(LOG_MIN_NORMAL)} else {_f32(LOG_MIN_NORMAL)})
    # the unbiased exponent as a float32 through the shifter's bits (no int -> float conversion,
    # which Numba's int64 arithmetic would make a scalar one on AVX2)
    biased = np.int32(np.int32(0x4B400000) + ((bits >> np.int32(23)) - np.int32(127)))
    exponent = (_int32_as_float32(biased) - np.float32(12582912.0)) + one
    mantissa = _int32_as_float32((bits & np.int32(0x007FFFFF)) | np.int32(0x3F000000))
    small = mantissa < {_f32(LOG_SQRT_HALF)}
    exponent = exponent - (one if small else np.float32(0.0))
    reduced = (mantissa - one) + (mantissa if small else np.float32(0.0))
    square = reduced * reduced
    cube = square * reduced
{chr(10).join(chains)}
    poly = _fma(_fma(c0, cube, c1), cube, c2)
    poly = _fma(poly, cube, exponent * {_f32(LOG_LN2_LOW)})
    result = _fma(np.float32(-0.5), square, reduced)
    result = _fma(exponent, {_f32(LOG_LN2_HIGH)}, result + poly)
    if not x > np.float32(0.0):
        result = np.float32(np.nan)
    if x == np.float32(0.0):
        result = np.float32(-np.inf)
    if x == np.float32(np.inf):
        result = np.float32(np.inf)
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _xla_log1p_f32(x):
    {body(numerator)}
    {body(denominator)}
    square = x * x
    near_zero = x + _fma(square, np.float32(-0.5), (x * square) * (numerator / denominator))
    far = _xla_log_f32(x + np.float32(1.0))
    return near_zero if abs(x) < {_f32(LOG1P_SMALL)} else far


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _erf_inv_f32(x):
    # both regions' polynomials, then a select: no branch in the loop
    w = -_xla_log1p_f32(x * -x)
    w_central = w - np.float32({central_shift!r})
    w_tail = np.float32(math.sqrt(np.float64(w))) - np.float32({tail_shift!r})  # sqrt rounds once
    {body(central_lines)}
    {body(tail_lines)}
    result = np.float32(0.0)
    if w < np.float32({central_upper!r}):
        result = central * x
    if w >= np.float32({central_upper!r}) and w < np.float32(np.inf):
        result = tail * x
    if w != w:
        result = np.float32(np.nan)
    if abs(x) == np.float32(1.0):
        result = x * np.float32(np.inf)
    return result
'''
