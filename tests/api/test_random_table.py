"""meshjit.random against the table of JAX 0.10.2's values (data/jax_random_values.npz, made by
data/make_random_table.py): every value bit for bit, with x64 off and on."""

from __future__ import annotations

import os

import numpy as np
import pytest
from random_cases import CASES, X64_CASES, X64_CLOSE_CASES

import meshjit

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_random_values.npz"))


def _compare(name: str, actual, expected: np.ndarray) -> None:
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype}, JAX has {expected.dtype}"
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape}, JAX has {expected.shape}"
    np.testing.assert_array_equal(actual, expected, err_msg=name)
    if actual.dtype.kind == "f":  # the same bits, signed zeros included
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected), err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_jax(name):
    _compare(name, CASES[name](meshjit), TABLE[name])


@pytest.fixture
def x64():
    meshjit.config.update("jax_enable_x64", True)
    yield
    meshjit.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", sorted(X64_CASES))
def test_equals_jax_with_x64(name, x64):
    _compare(name, X64_CASES[name](meshjit), TABLE[name])


@pytest.mark.parametrize("name", sorted(X64_CLOSE_CASES))
def test_close_to_jax_with_x64(name, x64):
    ulps, call = X64_CLOSE_CASES[name]
    actual, expected = np.asarray(call(meshjit)), TABLE[name]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, name
    np.testing.assert_array_max_ulp(actual, expected, maxulp=ulps)
