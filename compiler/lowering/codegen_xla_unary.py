"""XLA's float32 exp, exp2, expm1, log, log1p, tanh, logistic and erf (and glibc's powf under
XLA's denormal mode) as kernel helper source,
generated from the tables of ir/xla_math.py (the oracle, which the first tier runs): the same
operations in the same order, each fused multiply-add one ``_fma``, the CPU's denormal flushing
XLA runs under spelled as selects (``_flush_f32``), so a fused kernel gives JAX's bits on any
CPU. Every branch is a select and 2^n is built from the exponent bits, so loops calling these
vectorise (8 or 16 float32 lanes)."""

from __future__ import annotations

from meshjit.ir import xla_math as xm
from meshjit.ir.float_math import word


def _f32(value) -> str:
    """Source text of a float32 given as a bit pattern (int) or a value (float), exactly."""
    number = float(word(value)) if isinstance(value, int) else float(value)
    return f"np.float32({number!r})"


def _horner(name: str, variable: str, coefficients) -> str:
    """``name = P(variable)`` by Horner's rule, every step one ``_fma``."""
    lines = [f"{name} = {_f32(coefficients[0])}"]
    lines += [f"{name} = _fma({variable}, {name}, {_f32(c)})" for c in coefficients[1:]]
    return "\n    ".join(lines)


def _exp_polynomial() -> str:
    lines = [f"p = {_f32(xm.EXP_POLY[0])}"]
    lines += [f"p = _fma(p, r, {_f32(c)})" for c in xm.EXP_POLY[1:]]
    return "\n    ".join(lines)


def xla_unary_math() -> str:
    """The helpers' source (appended to the kernels' prelude, after ``_fma`` and the bit casts
    and XLA's log/log1p of codegen_xla_math.py)."""
    low, high = xm.EXP_CLAMP
    tiny = _f32(0x00800000)
    return f'''

@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _flush_f32(x):
    # the CPU's denormals-are-zero / flush-to-zero, which XLA's code runs under
    return x * np.float32(0.0) if abs(x) < {tiny} else x


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp_parts_f32(z):
    # exp(z) = mantissa * scale for a flushed z (ir/xla_math.py); comparisons let NaN through
    if z < {_f32(low)}:
        z = {_f32(low)}
    if z > {_f32(high)}:
        z = {_f32(high)}
    t = _fma(z, {_f32(xm.EXP_LOG2E)}, np.float32(0.5))
    n = (t + np.float32(12582912.0)) - np.float32(12582912.0)  # t to nearest, |t| < 2^22
    if n > t:
        n = n - np.float32(1.0)  # floor
    if n < np.float32(-127.0):
        n = np.float32(-127.0)
    if n > np.float32(127.0):
        n = np.float32(127.0)
    r = _fma(-n, {_f32(xm.EXP_LN2[0])}, z)
    r = _fma(-n, {_f32(xm.EXP_LN2[1])}, r)
    {_exp_polynomial()}
    mantissa = _fma(p, r * r, r) + np.float32(1.0)
    exponent = _float32_as_int32(n + np.float32(12582912.0)) - np.int32(0x4B400000)
    return mantissa, _int32_as_float32((exponent + np.int32(127)) << np.int32(23))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp_f32(x):
    mantissa, scale = _exp_parts_f32(_flush_f32(x))
    return _flush_f32(mantissa * scale)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp2_f32(x):
    return _exp_f32(_flush_f32(x * {_f32(xm.LN2_F32)}))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _tanh_f32(x):
    z = x
    if z < -{_f32(xm.TANH_CLAMP)}:
        z = -{_f32(xm.TANH_CLAMP)}
    if z > {_f32(xm.TANH_CLAMP)}:
        z = {_f32(xm.TANH_CLAMP)}
    z = _flush_f32(z)
    square = z * z
    {_horner("numerator", "square", xm.TANH_NUMERATOR)}
    {_horner("denominator", "square", xm.TANH_DENOMINATOR)}
    result = _flush_f32((z * numerator) / denominator)
    if abs(x) < {_f32(xm.TANH_SMALL)}:
        result = x
    if abs(x) >= {_f32(xm.TANH_SATURATED)}:
        result = np.float32(1.0) if x > np.float32(0.0) else np.float32(-1.0)
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _expm1_f32(x):
    z = _flush_f32(x)
    value = _exp_f32(z)
    half = _flush_f32(z * np.float32(0.5))
    result = _flush_f32(_tanh_f32(half) * (value + np.float32(1.0)))
    if abs(z) > np.float32(0.5):
        result = value - np.float32(1.0)
    if half == np.float32(0.0):
        result = x
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _logistic_f32(x):
    mantissa, scale = _exp_parts_f32(-_flush_f32(x))
    return _flush_f32(np.float32(1.0) / _flush_f32(_fma(mantissa, scale, np.float32(1.0))))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _erf_f32(x):
    z = _flush_f32(x)
    square = _flush_f32(z * z)
    {_horner("numerator", "square", xm.ERF_NUMERATOR)}
    {_horner("denominator", "square", xm.ERF_DENOMINATOR)}
    result = _flush_f32(_flush_f32(z * numerator) / denominator)
    if abs(z) >= {_f32(xm.ERF_SATURATED)}:
        result = np.float32(1.0) if x > np.float32(0.0) else np.float32(-1.0)
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pow_f32(x, y):
    # the C library's powf (glibc's, which XLA calls; ir/libm_powf.py is its numpy twin) under
    # XLA's denormals-are-zero mode: a denormal result is 0, and glibc reads log2 of a denormal
    # base as -150 there (its scaling by 2^23 reads the base as zero)
    result = np.float32(x ** y)
    if x != np.float32(0.0) and abs(x) < {tiny}:
        result = np.float32(2.0 ** (-150.0 * np.float64(y)))
        if x < np.float32(0.0) and np.floor(y) != y:
            result = np.float32(np.nan)
        if x < np.float32(0.0) and np.floor(y) == y and abs(y) < np.float32(16777216.0):
            if np.fmod(y, np.float32(2.0)) != np.float32(0.0):
                result = -result
    if y == np.float32(0.0):
        result = np.float32(1.0)
    return _flush_f32(result)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _log_f32(x):
    return _xla_log_f32(_flush_f32(x))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _log1p_f32(x):
    return _xla_log1p_f32(_flush_f32(x))
'''
