"""Row sums whose terms a kernel loop computes (codegen_reductions.py): a loop of cheap ops adds
them into lane accumulators as it goes (``lane_loops``), a loop with a transcendental function
stores them for ``_lane_sum``; either way the kernel gives the first tier's bits (lane_sum in
tier_reductions.py), with sums of both float widths in one loop, beside other reductions, and
with Numba's JIT off (the loops' Python bodies)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from tier_helpers import bits
from python_scripts import run_without_jit

pytestmark = pytest.mark.usefixtures("restore_runtime_state")



def _both_tiers(monkeypatch, program, *arguments) -> list[np.ndarray]:
    """``program``'s results on the first tier and on its kernels, checked bit for bit equal."""
    results = {}
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        results[mode] = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(jax.jit(program)(*arguments))]
    for first, kernel in zip(results["never"], results["sync"]):
        assert first.dtype == kernel.dtype and bits(first) == bits(kernel)
    return results["sync"]


def _inputs(length: int):
    rng = np.random.default_rng(length)
    shape = (max(64, -(-8192 // length)), length)  # large enough to fuse
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
    return x, rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("length", [33, 100, 1000])
def test_float32_and_float64_sums_in_one_loop(monkeypatch, length):
    jax.config.update("jax_enable_x64", True)
    x, y = _inputs(length)
    wide, narrow = _both_tiers(monkeypatch, lambda x, y: ((x * y).astype(jnp.float64).sum(-1) * 3.0,
                                                            ((x - y) * (x - y)).sum(-1)), x, y)
    assert wide.dtype == np.float64 and narrow.dtype == np.float32
    np.testing.assert_allclose(narrow, ((x - y) ** 2).sum(-1), rtol=1e-5)


@pytest.mark.parametrize("length", [40, 129])
def test_sums_beside_other_reductions_in_one_loop(monkeypatch, length):
    x, y = _inputs(length)
    _both_tiers(monkeypatch, lambda x, y: (jnp.exp(x * 1e-3 - y).sum(-1), jnp.exp(x * 1e-3 - y).max(-1),
                                           (x * y).sum(-1), (x * y).min(-1)), x, y)


def test_lane_loops_without_the_jit_give_the_first_tiers_bits(tmp_path):
    script = textwrap.dedent("""
        import os
        import numpy as np
        import meshjit as jax, meshjit.numpy as jnp, meshjit.nn as nn
        from meshjit.compiler.lowering import fusion
        fusion.FUSION_MIN_ELEMENTS = 0
        rng = np.random.default_rng(0)
        x = (rng.standard_normal((5, 200)) * 10.0 ** rng.integers(-3, 4, (5, 200))).astype(np.float32)
        programs = (lambda x: jnp.var(x, -1), lambda x: nn.softmax(x, -1), lambda x: (nn.log_softmax(x, -1) * x).sum(-1))
        for program in programs:
            results = []
            for mode in ("never", "sync"):
                os.environ["MESHJIT_COMPILE"] = mode
                results.append(np.asarray(jax.jit(program)(x)))
            assert results[0].tobytes() == results[1].tobytes(), program
        print("ok")
    """)
    run_without_jit(script, tmp_path)
