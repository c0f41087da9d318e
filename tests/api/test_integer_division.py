"""Integer remainder, floor division, fmod and divmod equal JAX 0.10.2's, divisors of zero included.

XLA defines ``x / 0 == -1`` and ``rem(x, 0) == x``; JAX's numpy functions build on that and divide
by 1 where an integer divisor is 0, so ``x % 0 == 0`` and ``x // 0`` is -2 for nonzero ``x``.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp

CASES = json.loads((Path(__file__).parent / "data" / "jax_integer_division.json").read_text())


def _operands(dtype):
    case = CASES[dtype]
    return case, np.array(case["x"], dtype=dtype), np.array(case["y"], dtype=dtype)


@pytest.mark.parametrize("dtype", sorted(CASES))
@pytest.mark.parametrize("name", ["remainder", "floor_divide", "fmod"])
def test_eager_and_jitted_equal_jax(dtype, name):
    case, x, y = _operands(dtype)
    function = getattr(jnp, name)
    expected = np.array(case[name], dtype=dtype)
    np.testing.assert_array_equal(np.asarray(function(x, y)), expected)
    np.testing.assert_array_equal(np.asarray(meshjit.jit(function)(x, y)), expected)


@pytest.mark.parametrize("dtype", sorted(CASES))
def test_divmod_and_operators_equal_jax(dtype):
    case, x, y = _operands(dtype)
    quotient, remainder = (np.array(values, dtype=dtype) for values in case["divmod"])
    got_quotient, got_remainder = jnp.divmod(x, y)
    np.testing.assert_array_equal(np.asarray(got_quotient), quotient)
    np.testing.assert_array_equal(np.asarray(got_remainder), remainder)
    a, b = jnp.asarray(x), jnp.asarray(y)
    np.testing.assert_array_equal(np.asarray(a // b), quotient)
    np.testing.assert_array_equal(np.asarray(a % b), remainder)
