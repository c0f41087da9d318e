"""jnp.linalg and jax.scipy.linalg against JAX 0.10.2's values and errors, on float32
(``linalg_cases.py``, ``data/linalg_values.json``) and complex64 matrices
(``linalg_complex_cases.py``, ``data/linalg_complex_values.json``), and jnp.roots, polyfit, i0
and kaiser (``polynomial_cases.py``, ``data/polynomial_values.json``), all made by
``generate_linalg_values.py``: decompositions, what they give, gradients and error messages.
Float32 LAPACK results differ at the ulp level between builds, so values compare within
rtol/atol 2e-4 (JAX's own linalg tests use 1e-3 to 1e-4 for float32)."""

import json
import pathlib

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
import meshjit.scipy.linalg as jsl

import linalg_cases
import linalg_complex_cases
import polynomial_cases

DATA = pathlib.Path(__file__).parent / "data"
MODULES = {"real": (linalg_cases, "linalg_values.json"), "complex": (linalg_complex_cases, "linalg_complex_values.json"),
           "polynomial": (polynomial_cases, "polynomial_values.json")}
EXPECTED = {kind: json.loads((DATA / file_name).read_text()) for kind, (_, file_name) in MODULES.items()}
CASES = {kind: module.cases(jax, jnp, jsl) for kind, (module, _) in MODULES.items()}
TOLERANCE = 2e-4


def leaves(result):
    return tuple(jax.tree_util.tree_leaves(result)) if not hasattr(result, "shape") else result


@pytest.mark.parametrize("kind, name", [(kind, name) for kind in MODULES for name in sorted(CASES[kind])])
def test_matches_jax(kind, name):
    expected = EXPECTED[kind][name]
    if isinstance(expected, str):
        error, _, message = expected.partition(": ")
        with pytest.raises(Exception) as raised:
            CASES[kind][name]()
        assert (type(raised.value).__name__, str(raised.value)) == (error, message)
        return
    actual = MODULES[kind][0].flat(leaves(CASES[kind][name]()))
    assert len(actual) == len(expected)
    pairs = list(zip(expected, actual))
    texts = [(want, have) for want, have in pairs if isinstance(want, str) or isinstance(have, str)]
    assert all(want == have for want, have in texts), texts
    numbers = np.array([(want, have) for want, have in pairs if not isinstance(want, str)], np.float64).reshape(-1, 2)
    np.testing.assert_allclose(numbers[:, 1], numbers[:, 0], rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)


@pytest.mark.parametrize("kind", MODULES)
def test_every_case_has_an_expected_value(kind):
    assert set(CASES[kind]) == set(EXPECTED[kind])
