"""make_jaxpr of shard_map programs prints what JAX 0.10.2 prints (jaxpr_text/shard_map_cases.py,
JAX's texts in expected_shard_map.json): the shard_map equation and its parameters, variables
typed with their Explicit axes and varying axes, JAX's pvary casts and collective names."""

import json
import pathlib
import sys

import pytest

import meshjit as jax

HERE = pathlib.Path(__file__).parent / "jaxpr_text"
sys.path.insert(0, str(HERE))
from shard_map_cases import cases  # noqa: E402

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

EXPECTED = json.loads((HERE / "expected_shard_map.json").read_text())["texts"]
CASES = {name: rest for name, *rest in cases(jax)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_shard_map_jaxpr_prints_what_jax_prints(name):
    shape, axes, function, arguments = CASES[name]
    with jax.set_mesh(jax.make_mesh(shape, axes)):
        assert str(jax.make_jaxpr(function)(*arguments())) == EXPECTED[name]
