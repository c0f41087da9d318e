"""meshjit.numpy's promote_types and result_type equal JAX 0.10.2's for every pair of the IR's
dtypes and every dtype with a weak Python scalar, x64 off and on (data/jax_promotion.json,
written by generate_jax_promotion.py over JAX's whole dtype list; the pairs of dtypes the IR
lacks are left out)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import meshjit.numpy as jnp
from meshjit import config
from meshjit.ir.dtypes import DTYPES, to_numpy

TABLES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_promotion.json").read_text())
SUPPORTED = {str(to_numpy(name)) for name in DTYPES}
SCALARS = {"int": 1, "float": 1.0, "bool": True, "complex": 1j}


def _supported(table: dict) -> dict:
    """The entries whose dtypes (and scalar kinds) meshjit has."""
    has_complex = "complex64" in SUPPORTED
    return {key: value for key, value in table.items()
            if all(name in SUPPORTED or (name in SCALARS and (name != "complex" or has_complex))
                   for name in key.split(","))}

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_promote_types_of_every_pair(mode):
    config.update("jax_enable_x64", mode == "x64")
    table = _supported(TABLES[mode]["promote_types"])
    assert len(table) == len(DTYPES) ** 2
    actual = {pair: str(jnp.promote_types(*map(np.dtype, pair.split(",")))) for pair in table}
    assert actual == table


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_result_type_with_weak_python_scalars(mode):
    config.update("jax_enable_x64", mode == "x64")
    with_scalar = _supported(TABLES[mode]["result_type_with_scalar"])
    actual = {key: str(jnp.result_type(jnp.zeros((), np.dtype(key.split(",")[0])), SCALARS[key.split(",")[1]]))
              for key in with_scalar}
    assert actual == with_scalar
    of_scalars = _supported(TABLES[mode]["result_type_of_scalars"])
    actual = {key: str(jnp.result_type(*(SCALARS[name] for name in key.split(",")))) for key in of_scalars}
    assert actual == of_scalars
