"""The C library's functions as meshjit spells them for the samplers (glibc 2.36's tanf, log, powf
and pow: compiler/frontend/random/libm_*.py, ir/libm_log.py) against JAX 0.10.2's values
(data/jax_libm_values.npz, made by data/make_libm_table.py): bit for bit over sweeps of every
binade and the edges, through the fused kernels and through the reference interpreter."""

from __future__ import annotations

import os

import numpy as np
import pytest

import meshjit
from meshjit.compiler.frontend.random import libm_log, libm_pow
from meshjit.ir import libm_log as reference_log

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_libm_values.npz"))
CASES = {  # name: (function, operand names), inputs where the sampler's function is defined
    "tan_f32": (meshjit.lax.tan, ("x",)),  # the sampler's float32 tan: lax.tan is glibc's tanf
    "log_f64": (libm_log.log, ("x",)),
    "pow_f32": (libm_pow.pow, ("x", "y")),
    "pow_f64": (libm_pow.pow, ("x", "y")),
}


def _operands(name: str):
    operands = [TABLE[f"{name}_{operand}"] for operand in CASES[name][1]]
    keep = ~(operands[0] < 0)  # pow is defined for x >= 0 (the samplers' bases)
    return [operand[keep] for operand in operands], TABLE[name][keep]


def _assert_same_bits(name: str, got, expected) -> None:
    got = np.asarray(got)
    unsigned = np.uint32 if got.dtype == np.float32 else np.uint64
    same = (got.view(unsigned) == expected.view(unsigned)) | (np.isnan(got) & np.isnan(expected))
    where = np.flatnonzero(~same)
    assert where.size == 0, f"{name}: {where.size} differ, e.g. at {where[:5]}: {got[where[:5]]} vs {expected[where[:5]]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_and_reference_equal_jax(name):
    meshjit.config.update("jax_enable_x64", name.endswith("f64"))
    operands, expected = _operands(name)
    compiled = meshjit.jit(CASES[name][0]).lower(*operands).compile()
    _assert_same_bits(f"{name} (kernels)", compiled(*operands), expected)
    _assert_same_bits(f"{name} (reference)", compiled.run_reference(*operands), expected)


def test_numpy_log_equals_jax():
    # the numpy spelling that erf_inv's float64 reference uses
    _assert_same_bits("log_f64 (numpy)", reference_log.log(TABLE["log_f64_x"]), TABLE["log_f64"])
