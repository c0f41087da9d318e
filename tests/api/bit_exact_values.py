"""Every value meshjit promises bit for bit, computed afresh: the random table's calls (x64 off
and on) and XLA's and glibc's arithmetic as meshjit spells it (ir/float_math.py,
ir/libm_log.py, compiler/frontend/random/xla_float32.py, libm_log.py, libm_tan.py) over sweeps
of inputs, through the reference and through the fused kernels.

``python bit_exact_values.py OUT.npz`` writes them (test_dispatch_guard.py runs it under another
numpy SIMD dispatch); ``values(meshjit)`` returns them in-process.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from random_cases import CASES, X64_CASES, X64_CLOSE_CASES  # noqa: E402


def _sweep(dtype, low: float, high: float, size: int = 4096, seed: int = 0) -> np.ndarray:
    """Random values in [low, high) with the edges every sweep needs: zeros of both signs, the
    smallest denormal and normal, infinities and NaN."""
    values = np.random.default_rng(seed).uniform(low, high, size).astype(dtype)
    info = np.finfo(dtype)
    edges = [0.0, -0.0, float(info.smallest_subnormal), float(info.tiny), 1.0, -1.0, np.inf, -np.inf, np.nan]
    return np.concatenate([np.array(edges, dtype), values])


def _arithmetic(meshjit) -> dict[str, np.ndarray]:
    from meshjit.compiler.frontend.random import libm_log, libm_pow, libm_tan, xla_float32
    from meshjit.ir import libm_log as reference_log
    from meshjit.ir.float_math import erf_inv, fma, xla_log1p, xla_log_f32

    unit32, unit64 = _sweep(np.float32, -1, 1), _sweep(np.float64, -1, 1, seed=1)
    positive32, positive64 = _sweep(np.float32, 0, 1e4, seed=2), _sweep(np.float64, 0, 1e6, seed=3)
    angles32, angles64 = _sweep(np.float32, -2.3, 2.3, seed=4), _sweep(np.float64, -2.3, 2.3, seed=5)
    exponents32, exponents64 = _sweep(np.float32, -90, 90, seed=6), _sweep(np.float64, -710, 710, seed=7)
    out = {
        "fma_f32": fma(unit32, positive32, angles32), "fma_f64": fma(unit64, positive64, angles64),
        "erf_inv_f32": erf_inv(unit32), "erf_inv_f64": erf_inv(unit64),
        "xla_log_f32": xla_log_f32(positive32), "xla_log1p_f32": xla_log1p(unit32),
        "xla_log1p_f64": xla_log1p(unit64), "glibc_log_f64": reference_log.log(positive64),
    }
    spelled = {
        "log_f32": (xla_float32.log, positive32), "log1p_f32": (xla_float32.log1p, unit32),
        "log1p_f64": (xla_float32.log1p, unit64), "erf_f32": (xla_float32.erf, angles32),
        "exp_f32": (xla_float32.exp, exponents32), "exp_f64": (xla_float32.exp_f64, exponents64),
        "glibc_log_f64": (libm_log.log, positive64), "tan_f32": (libm_tan.tan, angles32),
        "tan_f64": (libm_tan.tan, angles64), "erf_inv_f32": (meshjit.lax.erf_inv, unit32),
        "pow_f32": (libm_pow.pow, np.abs(positive32 / np.float32(1e3)), np.abs(angles32) * np.float32(20)),
        "pow_f64": (libm_pow.pow, np.abs(positive64 / 1e5), exponents64),
    }
    for name, (function, *operands) in spelled.items():
        compiled = meshjit.jit(function).lower(*operands).compile()
        out[f"kernel_{name}"] = np.asarray(compiled(*operands))
        out[f"interpreted_{name}"] = np.asarray(compiled.run_reference(*operands))
    return out


def values(meshjit) -> dict[str, np.ndarray]:
    """Name -> array for every bit-exact value; leaves jax_enable_x64 as it found it."""
    out = {name: np.asarray(call(meshjit)) for name, call in CASES.items()}
    before = meshjit.config.read("jax_enable_x64")
    meshjit.config.update("jax_enable_x64", True)
    try:
        calls = {**X64_CASES, **{name: call for name, (_, call) in X64_CLOSE_CASES.items()}}
        out.update({name: np.asarray(call(meshjit)) for name, call in calls.items()})
        out.update(_arithmetic(meshjit))
    finally:
        meshjit.config.update("jax_enable_x64", before)
    return out


if __name__ == "__main__":
    import meshjit

    np.savez(sys.argv[1], **values(meshjit))
