"""float16 and bfloat16 against JAX 0.10.2: arithmetic, conversions, weak scalars, reductions,
matmuls, gradients, psums, sharded programs and random draws bit for bit with the values in
``data/jax_half_values.npz`` (made by ``data/make_half_table.py`` from ``half_cases.py``), and the
transcendental cases within one ulp."""

from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np
import pytest

import meshjit
from half_cases import CASES, CLOSE_CASES

TABLE = np.load(pathlib.Path(__file__).parent / "data" / "jax_half_values.npz")
_NUMPY = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _expected(name: str) -> np.ndarray:
    dtype = str(TABLE[f"{name}.dtype"])
    stored = TABLE[name]
    return stored.view(_NUMPY[dtype]) if dtype in _NUMPY else stored


def test_the_table_covers_every_case():
    assert {name for name in TABLE.files if not name.endswith(".dtype")} == set(CASES) | set(CLOSE_CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_jax_bit_for_bit(name):
    actual, expected = np.asarray(CASES[name](meshjit)), _expected(name)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.dtype in _NUMPY.values():
        np.testing.assert_array_equal(actual.view(np.uint16), expected.view(np.uint16))
    else:
        np.testing.assert_array_equal(actual, expected)


def _ulps(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """How many representable values of their 16-bit type lie between actual and expected."""
    def ordered(array):
        bits = array.view(np.uint16).astype(np.int32)
        return np.where(bits & 0x8000, 0x8000 - bits, bits)

    return np.abs(ordered(actual) - ordered(expected))


@pytest.mark.parametrize("name", sorted(CLOSE_CASES))
def test_within_one_ulp_of_jax(name):
    actual, expected = np.asarray(CLOSE_CASES[name](meshjit)), _expected(name)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert int(_ulps(actual, expected).max()) <= 1
    # most elements are exact: only values near a rounding boundary of the 16-bit type differ
    assert float((actual.view(np.uint16) == expected.view(np.uint16)).mean()) >= 0.9


def test_dtype_queries_answer_as_jax():
    """JAX 0.10.2's answers: bfloat16 is a floating dtype (numpy's hierarchy lacks it)."""
    import meshjit.numpy as jnp
    from meshjit import dtypes

    assert dtypes.issubdtype(jnp.bfloat16, np.floating) and jnp.issubdtype(jnp.bfloat16, np.inexact)
    assert dtypes.issubdtype(jnp.bfloat16, np.number) and dtypes.issubdtype(jnp.bfloat16, jnp.bfloat16)
    assert not dtypes.issubdtype(jnp.bfloat16, np.integer) and jnp.issubdtype(jnp.float16, np.floating)
    assert dtypes.scalar_type_of(jnp.ones(2, jnp.bfloat16)) is float
    assert jnp.isdtype(jnp.bfloat16, "real floating") and not jnp.isdtype(jnp.bfloat16, "integral")
    assert jnp.finfo(jnp.bfloat16).bits == 16 and jnp.finfo("float16").eps == 2.0**-10
    assert jnp.zeros(3, "bfloat16").dtype == _NUMPY["bfloat16"] and jnp.bfloat16(1.5).dtype == _NUMPY["bfloat16"]
