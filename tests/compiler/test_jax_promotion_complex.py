"""meshjit.numpy's promotion with complex64/complex128 and weak complex scalars (``1j``) equals
JAX 0.10.2's, x64 off and on (data/jax_promotion_complex.json, written by
generate_jax_promotion_complex.py): every pair with a complex dtype, every dtype with ``1j``,
and whether the product is weakly typed."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import meshjit.numpy as jnp
from meshjit import config

TABLES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_promotion_complex.json").read_text())
SCALARS = {"int": 1, "float": 1.0, "bool": True, "complex": 1j}

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_promote_types_of_every_pair_with_a_complex_dtype(mode):
    config.update("jax_enable_x64", mode == "x64")
    table = TABLES[mode]["promote_types"]
    assert len(table) == 48
    actual = {pair: str(jnp.promote_types(*map(np.dtype, pair.split(",")))) for pair in table}
    assert actual == table


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_result_type_with_weak_complex_scalars(mode):
    config.update("jax_enable_x64", mode == "x64")
    with_scalar = TABLES[mode]["result_type_with_scalar"]
    actual = {key: str(jnp.result_type(jnp.zeros((), np.dtype(key.split(",")[0])), SCALARS[key.split(",")[1]]))
              for key in with_scalar}
    assert actual == with_scalar
    of_scalars = TABLES[mode]["result_type_of_scalars"]
    actual = {key: str(jnp.result_type(*(SCALARS[name] for name in key.split(",")))) for key in of_scalars}
    assert actual == of_scalars


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_weak_type_of_products_with_scalars(mode):
    config.update("jax_enable_x64", mode == "x64")
    table = TABLES[mode]["weak_type_with_scalar"]
    actual = {}
    for key in table:
        name, scalar = key.split(",")
        product = jnp.zeros((), np.dtype(name)) * SCALARS[scalar]
        actual[key] = bool(product.weak_type)
        assert str(product.dtype) == TABLES[mode]["result_type_with_scalar"][key]
    assert actual == table
