"""XLA's CPU float32 rsqrt over numpy arrays: the x86 ``rsqrtss`` estimate (``rsqrt_table.py``,
read once off an Intel CPU, so meshjit's values do not depend on the CPU it runs on) refined by
two Newton steps whose multiply-adds are fused. This is what ``jax.lax.rsqrt`` gives on float32
under JAX 0.10.2 on CPU, and what XLA turns ``a / sqrt(b)`` into; the reference interpreter,
the first tier and the kernels' ``_rsqrt_f32`` helper compute it alike.

Inputs that are not positive normal floats take the estimate's own answer: inf at +0 and
below the normal range, -inf at -0, 0 at inf, NaN below zero and at NaN."""

from __future__ import annotations

import numpy as np

from .float_math import fma
from .rsqrt_table import ESTIMATES

TABLE = np.array(ESTIMATES, np.uint32)
_TINY = np.finfo(np.float32).tiny


def estimate(x: np.ndarray) -> np.ndarray:
    """rsqrtss of a positive normal ``x`` = 2^(2k + p) * m: the table's entry for (p, the top
    10 bits of m), with k subtracted from its exponent field."""
    bits = x.view(np.int32)
    exponent = (bits >> 23) - 127
    parity = exponent & 1
    half = (exponent - parity) >> 1
    index = (parity << 10) + ((bits >> 13) & 1023)
    scaled = TABLE[index].view(np.int32) - (half << 23)
    return scaled.view(np.float32)


def newton(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """One Newton step for 1/sqrt(x) as XLA writes it: (y * -0.5) * (x * y * y - 1) + y."""
    residual = fma(x * y, y, np.float32(-1.0))
    return fma(y * np.float32(-0.5), residual, y)


def rsqrt_f32(x) -> np.ndarray:
    """1 / sqrt(x) for a float32 array, as XLA's CPU code computes it."""
    x = np.asarray(x, np.float32)
    normal = (x >= _TINY) & (x < np.inf)
    safe = np.where(normal, x, np.float32(1.0)).astype(np.float32)
    refined = newton(safe, newton(safe, estimate(safe)))
    special = np.where(x < _TINY, np.copysign(np.float32(np.inf), x), np.float32(0.0))  # -0 gives -inf
    special = np.where((x < 0) | np.isnan(x), np.float32(np.nan), special)
    return np.where(normal, refined, special).astype(np.float32)
