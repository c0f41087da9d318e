"""jnp.linalg and jax.scipy.linalg against JAX 0.10.2's values and errors
(``data/linalg_values.json``, made by ``generate_linalg_values.py`` from ``linalg_cases.py``):
decompositions, what they give, gradients and error messages. Float32 LAPACK results differ
at the ulp level between builds, so values compare within rtol/atol 2e-4 (JAX's own linalg tests
use 1e-3 to 1e-4 for float32)."""

import json
import pathlib

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
import meshjit.scipy.linalg as jsl

from linalg_cases import cases, flat

EXPECTED = json.loads((pathlib.Path(__file__).parent / "data" / "linalg_values.json").read_text())
CASES = cases(jax, jnp, jsl)
TOLERANCE = 2e-4


def leaves(result):
    return tuple(jax.tree_util.tree_leaves(result)) if not hasattr(result, "shape") else result


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    expected = EXPECTED[name]
    if isinstance(expected, str):
        kind, _, message = expected.partition(": ")
        with pytest.raises(Exception) as raised:
            CASES[name]()
        assert (type(raised.value).__name__, str(raised.value)) == (kind, message)
        return
    actual = flat(leaves(CASES[name]()))
    assert len(actual) == len(expected)
    pairs = list(zip(expected, actual))
    texts = [(want, have) for want, have in pairs if isinstance(want, str) or isinstance(have, str)]
    assert all(want == have for want, have in texts), texts
    numbers = np.array([(want, have) for want, have in pairs if not isinstance(want, str)], np.float64).reshape(-1, 2)
    np.testing.assert_allclose(numbers[:, 1], numbers[:, 0], rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)


def test_every_case_has_an_expected_value():
    assert set(CASES) == set(EXPECTED)
