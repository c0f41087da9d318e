"""Explicit mode gives JAX's result shardings and JAX's errors: every case of
``explicit_type_cases.py`` (ops x operand shardings on a 2 x 4 mesh of Explicit axes) traced
under meshjit.jit matches what JAX 0.10.2 gave (``explicit_types.json``): the same result types,
or an exception of the same type with the same first line."""

from __future__ import annotations

import json
import pathlib

import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import PartitionSpec as P

from explicit_type_cases import CASES, run_case

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

EXPECTED = json.loads(pathlib.Path(__file__).with_name("explicit_types.json").read_text())

# Where meshjit words an error differently from JAX, for a reason given here; the exception
# type must still match.
_BROADCAST = ("meshjit broadcasts operands to the full shape before the op, so the message shows the broadcast "
              "operand (f32[8,4@X]) where JAX shows it with unit dims (f32[1,4@X]) or as a scalar")
MESSAGES_DIFFER = {
    "broadcast row X+X": _BROADCAST,
    "outer X X": _BROADCAST,
    "unreduced mul scalar": _BROADCAST,
}


@pytest.fixture(scope="module")
def mesh():
    return meshjit.make_mesh((2, 4), ("X", "Y"))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_explicit_mode_matches_jax(case, mesh):
    name = case[0]
    expected = EXPECTED[name]
    actual = run_case(meshjit, jnp, lax, P, mesh, case)
    if "types" in expected:
        assert actual == expected, f"{name}: JAX gives {expected}, meshjit {actual}"
        return
    assert actual.get("error") == expected["error"], f"{name}: JAX raises {expected}, meshjit gives {actual}"
    if name not in MESSAGES_DIFFER:
        assert actual["message"] == expected["message"]


def test_every_case_has_an_expectation():
    assert sorted(EXPECTED) == sorted(case[0] for case in CASES)
