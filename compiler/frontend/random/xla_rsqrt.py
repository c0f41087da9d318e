"""XLA's CPU float32 rsqrt, in IR ops: the x86 ``rsqrtss`` estimate (a table of this CPU's,
``rsqrt_table.py``) refined by two Newton steps whose multiply-adds LLVM fuses. XLA's simplifier
turns ``a / sqrt(b)`` into ``a * rsqrt(b)`` (gamma's ``c = 1/3 / sqrt(d)``), so gamma's numbers
are JAX's only through this. Inputs that are not positive normal floats take the estimate
itself: inf at zero and below the normal range, 0 at inf, NaN below zero."""

from __future__ import annotations

import numpy as np

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from .rsqrt_table import ESTIMATES

_TABLE = np.array(ESTIMATES, np.uint32)


def _full(x, value, dtype):
    numpy_type = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32}[dtype]
    return lax.full(shape_of(x), np.asarray(value, numpy_type), dtype)


def _estimate(x):
    """rsqrtss of a positive normal ``x`` = 2^(2k + p) * m: the table's estimate for (p, top 10
    bits of m), times 2^-k (subtracted from its exponent field)."""
    bits = lax.bitcast_convert_type(x, "i32")
    exponent = lax.sub(lax.shift_right_logical(bits, _full(x, 23, "i32")), _full(x, 127, "i32"))
    parity = lax.bitwise_and(exponent, _full(x, 1, "i32"))
    half = lax.shift_right_arithmetic(lax.sub(exponent, parity), _full(x, 1, "i32"))
    top = lax.bitwise_and(lax.shift_right_logical(bits, _full(x, 13, "i32")), _full(x, 1023, "i32"))
    index = lax.add(lax.shift_left(parity, _full(x, 10, "i32")), top)
    estimate = lax.gather_along_axis(lax._constant(_TABLE), index, 0, mode="clip")
    scaled = lax.sub(lax.bitcast_convert_type(estimate, "i32"), lax.shift_left(half, _full(x, 23, "i32")))
    return lax.bitcast_convert_type(scaled, "f32")


def _newton(x, y):
    """One Newton step for 1/sqrt(x) as XLA writes it: (y * -0.5) * (x * y * y - 1) + y."""
    dtype = dtype_of(x).name
    residual = lax.fma(lax.mul(x, y), y, _full(x, -1.0, dtype))
    return lax.fma(lax.mul(y, _full(x, -0.5, dtype)), residual, y)


def rsqrt(x):
    """1 / sqrt(x) for float32 ``x`` as XLA's CPU code computes it."""
    tiny = np.finfo(np.float32).tiny
    normal = lax.bitwise_and(lax.ge(x, _full(x, tiny, "f32")), lax.lt(x, _full(x, np.inf, "f32")))
    safe = lax.select(normal, x, _full(x, 1.0, "f32"))
    refined = _newton(safe, _newton(safe, _estimate(safe)))
    special = lax.select(lax.lt(x, _full(x, tiny, "f32")), _full(x, np.inf, "f32"), _full(x, 0.0, "f32"))
    special = lax.select(lax.bitwise_or(lax.lt(x, _full(x, -0.0, "f32")), lax.ne(x, x)), _full(x, np.nan, "f32"),
                         special)
    return lax.select(normal, refined, special)


def rsqrt_f64(x):
    """1 / sqrt(x) for float64 ``x``, near XLA's: XLA refines the AVX-512 ``vrsqrt14`` estimate
    (so JAX's own float64 numbers depend on the vector ISA); this refines the rounded
    1 / sqrt(x) by the same two Newton steps, within a few ulps of it."""
    one = _full(x, 1.0, "f64")
    start = lax.div(one, lax.sqrt(x))
    normal = lax.bitwise_and(lax.ge(x, _full(x, np.finfo(np.float64).tiny, "f64")), lax.lt(x, _full(x, np.inf, "f64")))
    safe = lax.select(normal, x, one)
    return lax.select(normal, _newton(safe, _newton(safe, lax.select(normal, start, one))), start)
