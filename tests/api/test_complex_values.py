"""meshjit's complex64/complex128 results against JAX 0.10.2's (data/jax_complex_values.npz,
made by data/make_complex_table.py from the same source, complex_cases.py): arithmetic,
transcendental functions, reductions and products, autodiff (JAX's conjugate convention and
holomorphic gradients) and jnp.fft, x64 off and on, within the ulps complex_cases states."""

from __future__ import annotations

import os

import numpy as np
import pytest

import complex_cases as cases
import meshjit
import meshjit.numpy as jnp
from meshjit import config

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_complex_values.npz"))

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def _ulps(name: str) -> int:
    return cases.TOLERANCE_ULPS.get(name.split("/")[1], cases.DEFAULT_ULPS)


def assert_close_in_ulps(actual, expected, ulps: int, what: str, floor: float = 1e-3) -> None:
    """Equal dtype and shape, NaNs alike, and |actual - expected| <= ulps * eps * |expected|
    elementwise, with ``floor`` times the result's largest magnitude as the least |expected|
    (a transform's outputs all carry the rounding of its largest values: 1 for the fft cases)."""
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{what}: {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "biu" or ulps == 0:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=what)
    eps = np.finfo(expected.dtype).eps
    finite = np.isfinite(expected)
    scale = np.maximum(np.abs(expected), np.abs(expected[finite]).max(initial=0) * floor)
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite (checked below)
        error = np.abs(actual - expected)
    bad = finite & (error > ulps * eps * scale)
    assert not bad.any(), f"{what}: {int(bad.sum())} elements beyond {ulps} ulps, worst {error[bad].max()}"
    np.testing.assert_array_equal(actual[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)])


@pytest.mark.parametrize("mode", ["x32", "x64"])
@pytest.mark.parametrize("group", ["elementwise", "reduction", "autodiff", "fft"])
def test_values_equal_jax_within_stated_ulps(mode, group):
    config.update("jax_enable_x64", mode == "x64")
    results = getattr(cases, f"{group}_cases")(meshjit, jnp, mode == "x64")
    assert results
    for name, value in results.items():
        floor = 1.0 if group == "fft" else 1e-3
        assert_close_in_ulps(value, TABLE[f"{mode}/{name}"], _ulps(name), f"{mode}/{name}", floor)
