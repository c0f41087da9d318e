"""XLA's CPU float64 rsqrt, near enough, in IR ops, for gamma's ``c = 1/3 / sqrt(d)`` (XLA's
simplifier makes it ``1/3 * rsqrt(d)``). float32's is exact and is ``lax.rsqrt`` itself
(ir/xla_rsqrt.py)."""

from __future__ import annotations

import numpy as np

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of


def _full(x, value, dtype):
    numpy_type = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32}[dtype]
    return lax.full(shape_of(x), np.asarray(value, numpy_type), dtype)


def _newton(x, y):
    """One Newton step for 1/sqrt(x) as XLA writes it: (y * -0.5) * (x * y * y - 1) + y."""
    dtype = dtype_of(x).name
    residual = lax.fma(lax.mul(x, y), y, _full(x, -1.0, dtype))
    return lax.fma(lax.mul(y, _full(x, -0.5, dtype)), residual, y)


def rsqrt_f64(x):
    """1 / sqrt(x) for float64 ``x``, near XLA's: XLA refines the AVX-512 ``vrsqrt14`` estimate
    (so JAX's own float64 numbers depend on the vector ISA); this refines the rounded
    1 / sqrt(x) by the same two Newton steps, within a few ulps of it."""
    one = _full(x, 1.0, "f64")
    start = lax.div(one, lax.sqrt(x))
    normal = lax.bitwise_and(lax.ge(x, _full(x, np.finfo(np.float64).tiny, "f64")), lax.lt(x, _full(x, np.inf, "f64")))
    safe = lax.select(normal, x, one)
    return lax.select(normal, _newton(safe, _newton(safe, lax.select(normal, start, one))), start)
