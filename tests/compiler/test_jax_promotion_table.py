"""meshjit.numpy's promote_types and result_type equal JAX 0.10.2's for every pair of the IR's
dtypes and every dtype with a weak Python scalar, x64 off and on (data/jax_promotion.json,
written by generate_jax_promotion.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import meshjit.numpy as jnp
from meshjit import config

TABLES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_promotion.json").read_text())
SCALARS = {"int": 1, "float": 1.0, "bool": True}

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_promote_types_of_every_pair(mode):
    config.update("jax_enable_x64", mode == "x64")
    table = TABLES[mode]["promote_types"]
    assert len(table) == 49
    actual = {pair: str(jnp.promote_types(*map(np.dtype, pair.split(",")))) for pair in table}
    assert actual == table


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_result_type_with_weak_python_scalars(mode):
    config.update("jax_enable_x64", mode == "x64")
    with_scalar = TABLES[mode]["result_type_with_scalar"]
    actual = {key: str(jnp.result_type(jnp.zeros((), np.dtype(key.split(",")[0])), SCALARS[key.split(",")[1]]))
              for key in with_scalar}
    assert actual == with_scalar
    of_scalars = TABLES[mode]["result_type_of_scalars"]
    actual = {key: str(jnp.result_type(*(SCALARS[name] for name in key.split(",")))) for key in of_scalars}
    assert actual == of_scalars
