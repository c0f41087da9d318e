"""float32 exp, exp2, expm1, log, log1p, tanh, logistic and erf as XLA's CPU backend (jaxlib
0.10.2) computes them, in numpy: the oracle the kernel helpers (compiler/lowering/
codegen_xla_unary.py) and the first tiers follow bit for bit, and what the reference interpreter
and lone eager ops run.

Read off XLA's optimised kernels (``XLA_FLAGS=--xla_dump_to``: the LLVM IR and the object code):
- exp is a Cephes-style polynomial in float32: ``x`` clamped to [-87.8, 88.8], ``n =
  floor(x log2(e) + 1/2)`` clamped to [-127, 127], ``r = x - n ln2`` with ln2 in two parts, a
  degree-5 polynomial, ``1 + r + r^2 p(r)``, times ``2^n`` built from the exponent bits (``n =
  -127`` gives 0);
- tanh is a rational function of degree 13 over 6 in ``x`` clamped to +-7.9988, ``x`` itself
  below ``|x| = 0.0004`` and +-1 from 20 on;
- expm1 is ``exp(x) - 1`` above ``|x| = 1/2`` and ``tanh(x/2) (exp(x) + 1)`` below (``x`` when
  ``x/2`` is zero); logistic is JAX's ``1 / (1 + exp(-x))`` with the last product of exp and the
  add fused; erf is ``x P(x^2) / Q(x^2)``, +-1 from ``|x| = 3.8325``; log and log1p are
  ir/float_math.py's; exp2 is ``exp(x * ln2)`` (JAX's lowering).
- every multiply-add LLVM contracts is one fused multiply-add (``fma``);
- XLA runs with the CPU's denormals-are-zero and flush-to-zero modes: a denormal operand reads
  as zero (log of one is -inf) and a denormal result is zero (exp(-87.5) is 0), except where a
  select passes the operand through (tanh and expm1 of tiny ``x`` are ``x``).

Nothing here depends on the CPU's vector ISA: XLA picks the same algorithm for AVX2 and
AVX-512 (8 lanes either way; the FMAs round once on both). 100% equal to JAX 0.10.2 on 5.5M
inputs per function (random bit patterns, dense ranges, special values; tests/api/
test_xla_float32_math.py keeps a few thousand of them).
"""

from __future__ import annotations

import numpy as np

from .float_math import fma, word, xla_log1p, xla_log_f32

# float32 bit patterns; polynomials highest degree first
EXP_CLAMP = (-87.8, 88.8)
EXP_LOG2E = 0x3FB8AA3B
EXP_LN2 = (0x3F318000, 0xB95E8083)  # high (9 significant bits) and low parts
EXP_POLY = (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA, 0x3F000000)
TANH_CLAMP, TANH_SMALL, TANH_SATURATED = 0x40FFF644, 0.0004, 20.0
TANH_NUMERATOR = (0xA59F25C0, 0x2A61337E, 0xAEBD37FF, 0x335C0041, 0x3779434A, 0x3A270DED, 0x3BA059DC)
TANH_DENOMINATOR = (0x35A0D3D8, 0x38F895D6, 0x3B14AA05, 0x3BA059DD)
ERF_NUMERATOR = (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)
ERF_DENOMINATOR = (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000)
ERF_SATURATED = 0x407547CB
LN2_F32 = 0x3F317218  # float32(ln 2): JAX's exp2(x) is exp(x * ln2)

_F32 = np.float32
_SMALLEST_NORMAL = word(0x00800000)


def flush(x: np.ndarray) -> np.ndarray:
    """``x`` with denormals replaced by zeros of their sign (the CPU's DAZ/FTZ modes)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x) < _SMALLEST_NORMAL, x * _F32(0), x).astype(_F32)


def _fma(a, b, c):
    a, b, c = np.broadcast_arrays(*(np.asarray(v, _F32) for v in (a, b, c)))
    return fma(a, b, c)


def _horner(variable, coefficients):
    value = np.full_like(variable, word(coefficients[0]))
    for coefficient in coefficients[1:]:
        value = _fma(variable, value, word(coefficient))
    return value


def _exp_parts(x):
    """``(mantissa, scale)``: exp(x) is their product (XLA's exp before its last multiply)."""
    z = np.minimum(np.maximum(x, _F32(EXP_CLAMP[0])), _F32(EXP_CLAMP[1]))
    n = np.floor(_fma(z, word(EXP_LOG2E), _F32(0.5)))
    n = np.clip(n, _F32(-127), _F32(127))
    r = _fma(-n, word(EXP_LN2[0]), z)
    r = _fma(-n, word(EXP_LN2[1]), r)
    p = np.full_like(r, word(EXP_POLY[0]))
    for coefficient in EXP_POLY[1:]:
        p = _fma(p, r, word(coefficient))
    mantissa = _fma(p, r * r, r) + _F32(1)
    exponent = np.where(np.isnan(n), _F32(0), n).astype(np.int32)
    return mantissa, ((exponent + np.int32(127)) << np.int32(23)).view(_F32)


def _as_f32(x) -> np.ndarray:
    return np.asarray(x, _F32)


def exp(x: np.ndarray) -> np.ndarray:
    """XLA's float32 exp."""
    with np.errstate(all="ignore"):
        mantissa, scale = _exp_parts(flush(_as_f32(x)))
        return flush(mantissa * scale)


def exp2(x: np.ndarray) -> np.ndarray:
    """JAX's float32 exp2: XLA's exp of ``x * ln2``."""
    with np.errstate(all="ignore"):
        return exp(flush(_as_f32(x) * word(LN2_F32)))


def tanh(x: np.ndarray) -> np.ndarray:
    """XLA's float32 tanh."""
    x = _as_f32(x)
    with np.errstate(all="ignore"):
        clamp = word(TANH_CLAMP)
        z = np.where(x < -clamp, -clamp, np.where(x > clamp, clamp, flush(x)))
        square = z * z
        numerator = z * _horner(square, TANH_NUMERATOR)
        result = numerator / _horner(square, TANH_DENOMINATOR)
        result = np.where(np.abs(x) < _F32(TANH_SMALL), x, flush(result))
        return np.where(np.abs(x) >= _F32(TANH_SATURATED), np.copysign(_F32(1), x), result).astype(_F32)


def expm1(x: np.ndarray) -> np.ndarray:
    """XLA's float32 expm1."""
    x = _as_f32(x)
    with np.errstate(all="ignore"):
        value = exp(x)
        half = flush(flush(x) * _F32(0.5))
        near_zero = flush(tanh(half) * (value + _F32(1)))
        result = np.where(np.abs(flush(x)) > _F32(0.5), value - _F32(1), near_zero)
        return np.where(half == 0, x, result).astype(_F32)


def logistic(x: np.ndarray) -> np.ndarray:
    """JAX's float32 logistic, ``1 / (1 + exp(-x))``, as XLA fuses it."""
    with np.errstate(all="ignore"):
        mantissa, scale = _exp_parts(-flush(_as_f32(x)))
        return flush(_F32(1) / flush(_fma(mantissa, scale, _F32(1))))


def erf(x: np.ndarray) -> np.ndarray:
    """XLA's float32 erf."""
    x = _as_f32(x)
    with np.errstate(all="ignore"):
        z = flush(x)
        square = flush(z * z)
        ratio = flush(flush(z * _horner(square, ERF_NUMERATOR)) / _horner(square, ERF_DENOMINATOR))
        return np.where(np.abs(z) >= word(ERF_SATURATED), np.copysign(_F32(1), x), ratio).astype(_F32)


def log(x: np.ndarray) -> np.ndarray:
    """XLA's float32 log (a denormal reads as zero: -inf)."""
    return xla_log_f32(flush(_as_f32(x)))


def log1p(x: np.ndarray) -> np.ndarray:
    """XLA's float32 log1p (a denormal reads as zero)."""
    return xla_log1p(flush(_as_f32(x)))


FUNCTIONS = {"exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log1p": log1p, "tanh": tanh,
             "logistic": logistic, "erf": erf}
