"""jax.scipy.special's gammainc, gammaincc, betainc, i0e, i1e, i0, i1 and the stats
distribution functions built on them, against JAX 0.10.2's values (data/
jax_special_incomplete.npz, made by data/make_special_incomplete_table.py): float64 within
1e-9, float32 within 3e-4 of JAX's float64 values; derivatives too; sharded inputs give the
unsharded values."""

from __future__ import annotations

import os

import numpy as np
import pytest
from special_incomplete_cases import CASES, TOLERANCES

import meshjit
import meshjit.scipy.special
import meshjit.scipy.stats

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_special_incomplete.npz"))


def _check(name: str, actual) -> None:
    actual, expected = np.asarray(actual), TABLE[f"x64_{name}"]
    rtol, atol = TOLERANCES[actual.dtype.name]
    assert actual.shape == expected.shape, name
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_close_to_jax(name):
    actual = np.asarray(CASES[name](meshjit))
    assert actual.dtype == TABLE[name].dtype == np.float32, name
    _check(name, actual)


@pytest.fixture
def x64():
    meshjit.config.update("jax_enable_x64", True)
    yield
    meshjit.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_close_to_jax(name, x64):
    _check(name, CASES[name](meshjit))


def test_sharded_inputs_give_the_unsharded_values():
    mesh = meshjit.make_mesh((2, 4), ("x", "y"), axis_types=(meshjit.sharding.AxisType.Auto,) * 2)
    sharding = meshjit.NamedSharding(mesh, meshjit.P("x", "y"))
    a = np.linspace(0.2, 30.0, 32, dtype=np.float32).reshape(4, 8)
    x = np.linspace(0.0, 40.0, 32, dtype=np.float32).reshape(8, 4).T
    function = meshjit.jit(lambda a, x: (meshjit.scipy.special.gammainc(a, x), meshjit.scipy.special.i1e(x - 20.0)))
    sharded = function(meshjit.device_put(a, sharding), meshjit.device_put(x, sharding))
    for got, want in zip(sharded, function(a, x)):
        assert got.sharding == sharding
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
